//! Tenants: the ingest gate each runs its deliveries through, the actix actor
//! that supervises it, the registry that routes to them, and the checks a
//! delivery passes inside its tenant.

mod actor;
mod gate;
pub mod messages;
mod registry;
mod slot;
mod validate;

pub use gate::{replay_cache, Gate, ReplayCache};
pub use registry::{Registry, TenantHandle};
