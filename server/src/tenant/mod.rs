//! Tenants: one actix actor each, the registry that routes to them, and the
//! checks a delivery passes inside its tenant.

mod actor;
pub mod messages;
mod registry;
mod slot;
mod validate;

pub use actor::{replay_cache, ReplayCache, TenantActor};
pub use registry::{Registry, TenantHandle};
