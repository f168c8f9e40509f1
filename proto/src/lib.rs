//! hookd's gRPC contract: types, clients and servers generated from
//! `proto/hookd/v1/*.proto`.
#![forbid(unsafe_code)]

/// Package `hookd.v1`.
#[allow(missing_docs, clippy::all)]
pub mod v1 {
    tonic::include_proto!("hookd.v1");
}
