//! Error types of the signature module: why a delivery, a secret or a scheme name was
//! rejected, worded for an operator and never carrying key or body bytes.

/// Why a delivery was refused; the server maps `code()` onto the wire and logs `Display`.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum VerifyError {
    /// A header the scheme cannot verify without is absent (or empty).
    #[error("signature header {header} is missing")]
    MissingSignature {
        /// Canonical name of the absent header.
        header: &'static str,
    },
    /// A header is present but cannot be read as the scheme's format.
    #[error("signature header is malformed: {reason}")]
    InvalidSignatureFormat {
        /// Which rule the header broke, in plain words.
        reason: &'static str,
    },
    /// The signed timestamp is not a plain non-negative integer.
    #[error("timestamp is not an integer")]
    InvalidTimestamp,
    /// No live key produced any of the presented signatures.
    #[error("signature does not match any current or previous secret")]
    BadSignature,
    /// The signature is genuine but older than the tenant's tolerance.
    #[error("timestamp too old ({age_secs} s old)")]
    StaleTimestamp {
        /// Seconds between the signed timestamp and now.
        age_secs: i64,
    },
    /// The signature is genuine but dated further ahead than the tenant's tolerance.
    #[error("timestamp too far in the future ({ahead_secs} s ahead)")]
    FutureTimestamp {
        /// Seconds the signed timestamp lies ahead of now.
        ahead_secs: i64,
    },
}

impl VerifyError {
    /// Stable machine-readable code so clients can branch without parsing prose.
    pub fn code(&self) -> &'static str {
        match self {
            Self::MissingSignature { .. } => "MISSING_SIGNATURE",
            Self::InvalidSignatureFormat { .. } => "INVALID_SIGNATURE_FORMAT",
            Self::InvalidTimestamp => "INVALID_TIMESTAMP",
            Self::BadSignature => "BAD_SIGNATURE",
            Self::StaleTimestamp { .. } => "STALE_TIMESTAMP",
            Self::FutureTimestamp { .. } => "FUTURE_TIMESTAMP",
        }
    }
}

/// A secret string that cannot become a signing key, reported when a tenant configures it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum InvalidSecret {
    /// An empty key would let anyone sign.
    #[error("secret is empty")]
    Empty,
    /// Standard Webhooks secrets carry their key as base64 after `whsec_`.
    #[error("secret is not valid base64 after its prefix")]
    NotBase64,
    /// A key pair's half that is not a key of the scheme's algorithm (wrong
    /// length, not a point on the curve, not PKCS#8).
    #[error("secret is not a key of the scheme's algorithm")]
    NotAKey,
}

/// A scheme name from configuration that hookd does not implement.
pub use hookd_domain::UnknownScheme;
