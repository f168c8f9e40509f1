//! hookd: a multi-tenant inbound webhook receiver. This library holds all of
//! it: [`run`] serves on listeners the caller bound until a shutdown future
//! resolves, [`Server`] runs it on a thread of its own; the `hookd` binary
//! only parses flags, loads the config, starts telemetry and calls
//! [`Server::start`]. `docs/architecture.md` maps the modules.
#![forbid(unsafe_code)]
#![warn(missing_docs)]

mod admin;
mod alerts;
mod app;
mod catalog;
pub mod clock;
pub mod config;
mod contracts;
mod egress;
mod error;
#[cfg(any(test, feature = "fault-injection"))]
mod faults;
mod feed;
mod forward;
mod ingest;
mod ingress;
mod keyring;
mod metrics;
mod rate_limit;
mod routes;
mod run;
mod sweeper;
mod telemetry;
mod tenant;
#[doc(hidden)]
pub mod testing;
mod tls;

pub use app::Server;
pub use error::{Error, ErrorCode, Result};
pub use hookd_domain::ids;
/// Storage: the neutral API, both engines and their records.
use hookd_store as store;
pub use keyring::KeySources;
pub use routes::transform::{
    pool::{use_worker_program as use_transform_worker, WORKER_ARG as TRANSFORM_WORKER_ARG},
    worker::serve as transform_worker,
};
pub use run::{check_tenants, run, Listeners, Runtime};
pub use store::postgres::migrate as migrate_postgres;
pub use store::{SharedSync, SyncOps};
pub use telemetry::{init_logging, LogGuard, OtlpError, OtlpExport, OtlpProtocol};
