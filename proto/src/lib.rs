//! hookd's gRPC contract: types, clients and servers generated from
//! `proto/hookd/v1/*.proto`.
#![forbid(unsafe_code)]

/// Package `hookd.v1`.
#[allow(missing_docs, clippy::all)]
pub mod v1 {
    tonic::include_proto!("hookd.v1");
}

/// The encoded `FileDescriptorSet` of `hookd.v1` (with source comments), so
/// the control plane can serve gRPC reflection and `grpcurl` needs no
/// `.proto` files.
pub const FILE_DESCRIPTOR_SET: &[u8] = tonic::include_file_descriptor_set!("hookd_descriptor");
