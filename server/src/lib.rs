//! hookd: a multi-tenant inbound webhook receiver. This library holds all of
//! it: [`run`] serves on listeners the caller bound until a shutdown future
//! resolves, [`Server`] runs it on a thread of its own; the `hookd` binary
//! only parses flags, loads the config, starts telemetry and calls
//! [`Server::start`]. `docs/architecture.md` maps the modules.
#![forbid(unsafe_code)]
#![warn(missing_docs)]

mod admin;
mod app;
pub mod catalog;
pub mod clock;
pub mod config;
pub mod contracts;
mod dashboard;
pub mod egress;
pub mod error;
#[cfg(any(test, feature = "fault-injection"))]
pub mod faults;
pub mod feed;
pub mod forward;
pub mod ids;
pub mod ingest;
pub mod ingress;
pub mod keyring;
pub mod metrics;
pub mod rate_limit;
mod run;
pub mod store;
pub mod sweeper;
pub mod telemetry;
pub mod tenant;
pub mod tls;

pub use app::Server;
pub use run::{run, Listeners, Runtime};
