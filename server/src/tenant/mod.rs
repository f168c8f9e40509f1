//! Tenants: each running tenant's actor, the registry mapping ids to them, the
//! services they share, and the checks a delivery passes inside its tenant.

mod actor;
mod commit;
mod filters;
mod gate;
mod handle;
mod handshake;
mod headers;
mod registry;
mod replay;
pub(crate) mod report;
mod services;
mod settings;
mod slot;
mod snapshot;
mod state;
#[cfg(test)]
mod tests;
mod validate;

pub use gate::Gate;
pub use handle::TenantHandle;
pub use handshake::HandshakeRequest;
pub use registry::Registry;
pub use replay::{replay_cache, ReplayCache, Scope as ReplayScope};
pub use services::Services;
pub use settings::{resolve_tenants, TenantSettings};

pub(crate) use validate::pasted_event_id;
