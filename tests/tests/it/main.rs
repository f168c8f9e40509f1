//! Black-box tests of hookd over real HTTP: an in-process server on port 0
//! for most, the real `hookd` binary for crash, restart and log tests.

mod binary;
mod cli;
mod control;
mod edge;
mod forward;
mod harness;
mod ingest;
mod limits;
mod process;
mod receiver;
mod telemetry;
mod vectors;
