//! Black-box tests of hookd over real HTTP: an in-process server on port 0
//! for most, the real `hookd` binary for crash, restart and log tests.

mod binary;
mod bounds;
mod cli;
mod contracts;
mod control;
mod crash;
mod dashboard;
mod durability;
mod edge;
mod event_ids;
mod faults;
mod forward;
mod harness;
mod ingest;
mod limits;
mod messages;
mod pg_server;
mod pki;
mod postgres;
mod postgres_load;
mod postgres_restart;
mod private_ca;
mod process;
mod queue;
mod receiver;
mod rejections;
mod replay;
mod sealed;
mod signature_headers;
mod ssrf;
mod telemetry;
mod tls;
mod tokens;
mod vectors;
