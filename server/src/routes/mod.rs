//! Routes: a tenant's destinations. Each accepted event fans out to every
//! route of its tenant whose optional filter matches it.

pub mod filter;
