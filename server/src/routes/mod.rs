//! Routes: the rule engines a tenant's routes run. An accepted event goes
//! to every route whose optional filter matches it ([`filter`]); a route
//! may rewrite each request it sends with a sandboxed JavaScript transform
//! ([`transform`], compiled when the route is saved and applied at forward
//! time). A route's declaration is config (`config/route.rs`), its running
//! handle and fan-out the tenant's (`tenant/routes.rs`).

pub mod filter;
pub mod transform;
