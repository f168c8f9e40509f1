//! `--hmac-file`: a tenant's `[hmac]` table (scheme `hmac`), as JSON or YAML
//! with the config file's key names.

use std::path::Path;

use anyhow::Context;
use hookd_sdk::signature::HmacFields;

/// The `[hmac]` table in `path`, as written (hookd checks it).
///
/// `--hmac-file`: a tenant's `[hmac]` table (scheme `hmac`), as JSON or YAML
/// with the config file's key names, for `send` to sign with and for
/// `tenants create|update` to give the control plane.
pub fn read_hmac_fields(path: &Path) -> anyhow::Result<HmacFields> {
    let text = std::fs::read_to_string(path)
        .with_context(|| format!("reading the --hmac-file {}", path.display()))?;
    serde_norway::from_str(&text)
        .with_context(|| format!("{} is not an [hmac] table", path.display()))
}
