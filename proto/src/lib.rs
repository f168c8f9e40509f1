//! hookd's gRPC contract: types, clients and servers generated from
//! `proto/hookd/v1/*.proto`, and the hand-written shared vocabulary in
//! [`domain`]. With the `json` feature every `hookd.v1` message is also
//! `serde::Serialize` and `Deserialize` in the proto3 JSON mapping.
#![forbid(unsafe_code)]

pub mod domain;
mod redacted;

/// Package `hookd.v1`.
#[allow(missing_docs, clippy::all)]
pub mod v1 {
    tonic::include_proto!("hookd.v1");
    #[cfg(feature = "json")]
    include!(concat!(env!("OUT_DIR"), "/hookd.v1.serde.rs"));
}

/// The encoded `FileDescriptorSet` of `hookd.v1` (with source comments), so
/// the control plane can serve gRPC reflection and `grpcurl` needs no
/// `.proto` files.
pub const FILE_DESCRIPTOR_SET: &[u8] = tonic::include_file_descriptor_set!("hookd_descriptor");

/// Largest request message hookd's services accept: 4 MiB. Requests carry ids, settings and secrets, never a webhook body, so a
/// larger one is a mistake or an attack and is answered `OUT_OF_RANGE`.
pub const MAX_REQUEST_BYTES: usize = 4 * 1024 * 1024;

/// Largest response message hookd's services send and the SDK client accepts:
/// 80 MiB, room for one webhook body at the largest `max_body_bytes` a tenant
/// may have (64 MiB) plus its headers and stored attempts. Clients in other
/// languages should raise their receive limit (grpcio's default is 4 MiB) to
/// this when their tenants accept bodies near the limit.
pub const MAX_RESPONSE_BYTES: usize = 80 * 1024 * 1024;

/// Pull stops adding deliveries once its response would pass 4 MiB; a single
/// delivery larger than that is still handed out, alone.
pub const PULL_RESPONSE_BUDGET_BYTES: usize = 4 * 1024 * 1024;
