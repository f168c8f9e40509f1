//! Routes: a tenant's destinations, each in one room. A route is declared
//! and validated ([`config`]), runs as a handle its tenant's actor keeps
//! and fans accepted events out to ([`handle`]), passes an event only if
//! its optional filter matches it ([`filter`]), and may rewrite each
//! request it sends with a sandboxed JavaScript transform ([`transform`]).

pub mod config;
pub mod filter;
pub mod handle;
pub mod transform;

pub use config::{RouteConfig, MAX_ROUTES};
pub use handle::RouteHandle;
