//! Requests a tenant refused: content refused after a valid signature, and
//! bad or missing signatures.

/// One refused request.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RejectionView {
    /// The tenant it was sent to.
    pub tenant_id: String,
    /// When it was refused, Unix ms.
    pub at_ms: i64,
    /// The request id its answer carried.
    pub request_id: String,
    /// The error code the sender got.
    pub code: String,
    /// The message the sender got.
    pub reason: String,
    /// True when the signature was valid and the content was refused.
    pub signature_valid: bool,
    /// The body's full size in bytes.
    pub body_bytes: u64,
    /// The first 4 KiB of the body; empty when the signature was not valid.
    pub body: Vec<u8>,
}

/// Which rejections a listing shows.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct RejectionFilter {
    /// Only the one with this request id.
    pub request_id: Option<String>,
    /// Only content refusals (`Some(true)`) or only signature failures
    /// (`Some(false)`); `None`: both.
    pub signature_valid: Option<bool>,
}
