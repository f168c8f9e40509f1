//! Refused requests: the log every tenant's refusals are kept in
//! ([`RejectionLog`]) and the values it takes and gives.

use serde::{Deserialize, Serialize};

use crate::error::Result;

/// Refused requests of every tenant, for the dashboard and
/// `ListRejections` (see `api::rejections` for what is kept). A record
/// is durable after the next [`super::Storage::durable_barrier`]; the ingress
/// waits for it before answering the refusal.
pub trait RejectionLog: Send + Sync + 'static {
    /// Stores `rejection`, its body cut to
    /// [`super::rejections::KEPT_BODY_BYTES`] (and dropped when the
    /// signature was not valid).
    fn record(&self, rejection: Rejection) -> Result<()>;

    /// Up to `size` of the tenant's rejections passing `filter`, newest
    /// first, from before `token` (the previous page's next token), and the
    /// token of the next page; a token this did not issue is an error.
    fn list(
        &self,
        tenant_id: &str,
        filter: &RejectionFilter,
        size: usize,
        token: Option<&str>,
    ) -> Result<(Vec<Rejection>, Option<String>)>;

    /// The tenant's rejections at or after `since_ms` by code, most
    /// frequent first; at most `cap` records are counted.
    fn count_by_code(
        &self,
        tenant_id: &str,
        since_ms: i64,
        cap: usize,
    ) -> Result<Vec<(String, u64)>>;

    /// Deletes every rejection of a deleted tenant; returns how many went.
    fn drop_tenant(&self, tenant_id: &str) -> Result<usize>;

    /// Deletes up to `batch` of the tenant's rejections older than
    /// `before_ms`; returns how many went.
    fn sweep(&self, tenant_id: &str, before_ms: i64, batch: usize) -> Result<usize>;

    /// Whether each of `tenants` has rejections recorded before
    /// `before_ms`, in order: a pass sweeps only those.
    fn sweep_due(&self, tenants: &[String], before_ms: i64) -> Result<Vec<bool>>;
}

/// Most body bytes kept with a content refusal.
pub const KEPT_BODY_BYTES: usize = 4096;

/// One refused request.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Rejection {
    /// The tenant it was sent to.
    pub tenant_id: String,
    /// When it was refused, Unix ms.
    pub at_ms: i64,
    /// `req_<ulid>`, as the sender's answer carried it.
    pub request_id: String,
    /// The error code the sender got (`INVALID_JSON`, `BAD_SIGNATURE`, …).
    pub code: String,
    /// The sender's answer's message.
    pub reason: String,
    /// True for content refused after a valid signature; false for a bad
    /// or missing signature.
    pub signature_valid: bool,
    /// The body's full size in bytes.
    pub body_bytes: u64,
    /// The first [`KEPT_BODY_BYTES`] of the body; always empty when the
    /// signature was not valid.
    pub body: Vec<u8>,
}

/// Which rejections a listing shows.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct RejectionFilter {
    /// Only the one with this request id.
    pub request_id: Option<String>,
    /// Only content refusals (`Some(true)`) or only signature failures
    /// (`Some(false)`).
    pub signature_valid: Option<bool>,
}
