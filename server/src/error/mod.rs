//! hookd's internal error, typed by what a caller decides on, and its
//! [`Result`]: the storage layer's, which every layer above shares.

pub mod http;

pub use hookd_store::error::{Error, Result};
/// The HTTP face of the error, in `error/http.rs`; the gRPC one is the
/// control plane's mapping in `admin`.
pub use http::{ApiError, ErrorCode};

/// A setting that is not valid, named by its key: what the checks of the
/// config file, of a tenant and of a contract return, before the config
/// loader makes it an [`Error::Config`] or the control plane an invalid
/// argument.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{key}: {reason}")]
pub struct InvalidSetting {
    /// The key at fault, with its place (`tenants[0] (acme)`,
    /// `retry.schedule_secs[2]`).
    pub key: String,
    /// What is wrong with it and what would do.
    pub reason: String,
}

impl InvalidSetting {
    /// `key` is not valid because of `reason`.
    pub fn new(key: impl Into<String>, reason: impl std::fmt::Display) -> Self {
        InvalidSetting {
            key: key.into(),
            reason: reason.to_string(),
        }
    }

    /// The same setting seen from its container: `place` (`tenants[0]
    /// (acme)`, `contracts[1] (order.paid)`) goes before the key.
    pub fn within(self, place: impl std::fmt::Display) -> Self {
        InvalidSetting {
            key: format!("{place}: {}", self.key),
            reason: self.reason,
        }
    }
}

impl From<InvalidSetting> for Error {
    fn from(e: InvalidSetting) -> Error {
        Error::Config {
            key: e.key,
            reason: e.reason,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A config error names its key, and reads as hookd's config errors
    /// always have: `config: <key>: <reason>`.
    #[test]
    fn config_errors_name_their_key() {
        let invalid =
            InvalidSetting::new("max_body_bytes", "0 is out of range").within("tenants[0] (acme)");
        assert_eq!(invalid.key, "tenants[0] (acme): max_body_bytes");
        let error = Error::from(invalid);
        assert_eq!(
            error.to_string(),
            "config: tenants[0] (acme): max_body_bytes: 0 is out of range"
        );
        assert!(matches!(error, Error::Config { key, .. } if key.ends_with("max_body_bytes")));
    }
}
