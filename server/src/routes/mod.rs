//! Routes: a tenant's destinations. Each accepted event fans out to every
//! route of its tenant whose optional filter matches it ([`filter`]); a
//! route may rewrite each request it sends with a sandboxed JavaScript
//! transform ([`transform`]).

pub mod filter;
pub mod transform;
