//! Where a secret comes from: inline, an environment variable or a file
//! (exactly one), loaded into memory that is zeroed when dropped.

use std::path::{Path, PathBuf};

use secrecy::SecretString;
use zeroize::Zeroizing;

/// Why a secret could not be had; the caller names the key it was under.
#[derive(Debug, thiserror::Error)]
pub enum SecretSourceError {
    /// `secret_env` names a variable that is not set.
    #[error("environment variable {0} is not set")]
    EnvNotSet(String),
    /// `secret_file` cannot be read.
    #[error("cannot read secret file {path}: {source}", path = .path.display())]
    Unreadable {
        /// The file.
        path: PathBuf,
        /// Why.
        source: std::io::Error,
    },
    /// None of the three is given.
    #[error("one of secret, secret_env or secret_file is required")]
    Missing,
    /// More than one is given.
    #[error("give only one of secret, secret_env or secret_file")]
    Ambiguous,
}

/// Reads a secret given inline, by env var name or by file path (exactly one).
pub fn load_secret(
    inline: Option<&SecretString>,
    env: Option<&str>,
    file: Option<&Path>,
) -> Result<SecretString, SecretSourceError> {
    match (inline, env, file) {
        (Some(s), None, None) => Ok(s.clone()),
        (None, Some(name), None) => std::env::var(name)
            .map(SecretString::from)
            .map_err(|_| SecretSourceError::EnvNotSet(name.to_owned())),
        (None, None, Some(path)) => std::fs::read_to_string(path)
            .map(|s| {
                let s = Zeroizing::new(s);
                SecretString::from(s.trim_end_matches(['\r', '\n']))
            })
            .map_err(|source| SecretSourceError::Unreadable {
                path: path.to_owned(),
                source,
            }),
        (None, None, None) => Err(SecretSourceError::Missing),
        _ => Err(SecretSourceError::Ambiguous),
    }
}
