//! Black-box tests of hookd over real HTTP: an in-process server on port 0
//! for most, the real `hookd` binary for crash, restart and log tests.

mod binary;
mod cli;
mod control;
mod forward;
mod harness;
mod ingest;
mod limits;
mod messages;
mod pki;
mod process;
mod receiver;
mod telemetry;
mod tls;
mod vectors;
