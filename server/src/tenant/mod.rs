//! Tenants: the ingest gate each runs its deliveries through, the actix
//! actor that owns it and is the only writer of its tenant's state (the
//! snapshot of settings, keys and contracts it publishes), the registry
//! that routes to them, and the checks a delivery passes inside its tenant.

mod actor;
mod commit;
mod filters;
mod gate;
mod handshake;
mod headers;
mod registry;
mod replay;
mod routes;
mod slot;
mod snapshot;
mod validate;

pub use gate::Gate;
pub use handshake::HandshakeRequest;
pub use registry::{Registry, TenantHandle};
pub use replay::{replay_cache, ReplayCache, Scope as ReplayScope};
pub use routes::RouteHandle;
pub(crate) use validate::pasted_event_id;
