//! hookd: a multi-tenant inbound webhook receiver. This library holds all of
//! it; the `hookd` binary only parses flags and calls [`Server::start`].
#![forbid(unsafe_code)]
#![warn(missing_docs)]

mod admin;
mod app;
pub mod catalog;
pub mod clock;
pub mod config;
pub mod error;
pub mod events;
#[cfg(any(test, feature = "fault-injection"))]
pub mod faults;
pub mod forward;
pub mod ids;
pub mod ingest;
pub mod ingress;
pub mod keyring;
pub mod metrics;
pub mod store;
mod sweeper;
pub mod telemetry;
pub mod tenant;
pub mod tls;

pub use app::Server;
