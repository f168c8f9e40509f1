//! hookd client SDK: the webhook signature schemes hookd accepts, for senders (sign)
//! and for the receiver (verify), and [`client::HookdClient`], the typed admin client
//! for hookd's gRPC control plane that the `hookctl` CLI is built on.
//!
//! The [`signature`] module depends on no HTTP or gRPC crate, so the server verifies
//! with exactly the code senders sign with.
//!
//! Features: `signature` is always built; `client` adds the gRPC admin client (tonic,
//! tokio); `cli` adds the `hookctl` binary (clap, reqwest, ...). Both are on by
//! default; `default-features = false, features = ["signature"]` builds the
//! signature schemes alone.
//!
//! ```no_run
//! use hookd_sdk::client::{proto::CreateTenantRequest, HookdClient};
//!
//! # async fn demo() -> Result<(), hookd_sdk::client::ClientError> {
//! let client = HookdClient::connect("http://127.0.0.1:50051", "admin-token").await?;
//! let created = client
//!     .create_tenant(CreateTenantRequest {
//!         tenant_id: "acme".into(),
//!         destination_url: "http://127.0.0.1:9000/hooks".into(),
//!         ..Default::default()
//!     })
//!     .await?;
//! println!("sign with {} (kid {})", created.secret, created.kid);
//! for tenant in client.list_all_tenants().await? {
//!     println!("{} -> {}", tenant.tenant_id, tenant.ingest_path);
//! }
//! # Ok(())
//! # }
//! ```
#![forbid(unsafe_code)]
#![warn(missing_docs)]

#[cfg(feature = "client")]
pub mod client;
mod error;
pub mod signature;
