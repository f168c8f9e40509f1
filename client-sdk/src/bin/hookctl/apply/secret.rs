//! Secrets by reference: `{file: PATH}`, `{env: NAME}`, or inline `{value: ...}`
//! only with `--allow-inline-secrets`.

use std::path::{Path, PathBuf};

use anyhow::{bail, Context};
use serde::{Deserialize, Serialize};

/// Where a secret is: written as a mapping of one key. Its `Debug` never
/// shows an inline value.
///
/// Secrets by reference: `{file: PATH}`, `{env: NAME}`, or inline `{value: ...}`
/// only with `--allow-inline-secrets`. A reference is read only when apply
/// sends its secret (a tenant's creation, or `--rotate-secrets`).
#[derive(Clone, PartialEq, Eq, Deserialize, Serialize)]
#[serde(try_from = "RefKeys", into = "RefKeys")]
pub enum SecretRef {
    /// A file holding the secret (one trailing line break dropped); relative
    /// to the file's directory.
    File(PathBuf),
    /// An environment variable of hookctl's.
    Env(String),
    /// The secret itself, written in the file.
    Value(String),
}

impl std::fmt::Debug for SecretRef {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.describe())
    }
}

/// The mapping as written: exactly one key.
#[derive(Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
struct RefKeys {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    file: Option<PathBuf>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    env: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    value: Option<String>,
}

impl TryFrom<RefKeys> for SecretRef {
    type Error = &'static str;

    fn try_from(keys: RefKeys) -> Result<Self, Self::Error> {
        match (keys.file, keys.env, keys.value) {
            (Some(path), None, None) => Ok(SecretRef::File(path)),
            (None, Some(name), None) => Ok(SecretRef::Env(name)),
            (None, None, Some(value)) => Ok(SecretRef::Value(value)),
            _ => Err("a secret is one of {file: PATH}, {env: NAME} or {value: ...}"),
        }
    }
}

impl From<SecretRef> for RefKeys {
    fn from(secret: SecretRef) -> Self {
        let mut keys = RefKeys {
            file: None,
            env: None,
            value: None,
        };
        match secret {
            SecretRef::File(path) => keys.file = Some(path),
            SecretRef::Env(name) => keys.env = Some(name),
            SecretRef::Value(value) => keys.value = Some(value),
        }
        keys
    }
}

impl SecretRef {
    /// The reference for export: an environment variable named after the
    /// tenant, e.g. `HOOKD_SECRET_ACME_EU` for `acme-eu`.
    pub fn placeholder(prefix: &str, tenant_id: &str) -> SecretRef {
        let name = tenant_id.to_ascii_uppercase().replace('-', "_");
        SecretRef::Env(format!("{prefix}_{name}"))
    }

    /// Whether the secret is written in the file itself.
    pub fn is_inline(&self) -> bool {
        matches!(self, SecretRef::Value(_))
    }

    /// The secret, with `base` the directory relative file paths start from.
    pub fn resolve(&self, base: &Path) -> anyhow::Result<String> {
        let secret = match self {
            SecretRef::Value(value) => value.clone(),
            SecretRef::Env(name) => {
                std::env::var(name).with_context(|| format!("reading the secret from ${name}"))?
            }
            SecretRef::File(path) => {
                let path = base.join(path);
                let text = std::fs::read_to_string(&path)
                    .with_context(|| format!("reading the secret from {}", path.display()))?;
                let text = text.strip_suffix('\n').unwrap_or(&text);
                text.strip_suffix('\r').unwrap_or(text).to_owned()
            }
        };
        if secret.is_empty() {
            bail!("the secret {} names is empty", self.describe());
        }
        Ok(secret)
    }

    /// Where the secret is, never the secret.
    pub fn describe(&self) -> String {
        match self {
            SecretRef::File(path) => format!("file {}", path.display()),
            SecretRef::Env(name) => format!("${name}"),
            SecretRef::Value(_) => "an inline value".to_owned(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn references_resolve_from_files_and_the_environment() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("acme.secret"), "pdl_1\r\n").unwrap();
        let file = SecretRef::File("acme.secret".into());
        assert_eq!(file.resolve(dir.path()).unwrap(), "pdl_1");
        let unset = SecretRef::Env("HOOKCTL_TEST_SURELY_UNSET_SECRET".into());
        let err = format!("{:#}", unset.resolve(dir.path()).unwrap_err());
        assert!(err.contains("$HOOKCTL_TEST_SURELY_UNSET_SECRET"), "{err}");
        std::fs::write(dir.path().join("empty"), "\n").unwrap();
        let err = SecretRef::File("empty".into()).resolve(dir.path());
        assert!(err.unwrap_err().to_string().contains("is empty"));
    }

    #[test]
    fn a_reference_is_one_key() {
        let read = |yaml: &str| serde_norway::from_str::<SecretRef>(yaml);
        assert_eq!(read("{env: S}").unwrap(), SecretRef::Env("S".into()));
        assert_eq!(read("{file: a/b}").unwrap(), SecretRef::File("a/b".into()));
        let err = read("{env: S, file: x}").unwrap_err().to_string();
        assert!(err.contains("a secret is one of"), "{err}");
        assert!(read("{path: x}")
            .unwrap_err()
            .to_string()
            .contains("unknown field"));
        let yaml = serde_norway::to_string(&SecretRef::Env("S".into())).unwrap();
        assert_eq!(yaml.trim(), "env: S");
    }

    #[test]
    fn debug_never_shows_an_inline_value() {
        let inline = SecretRef::Value("whsec_c2VjcmV0".into());
        assert_eq!(format!("{inline:?}"), "an inline value");
    }

    #[test]
    fn placeholders_are_environment_names() {
        assert_eq!(
            SecretRef::placeholder("HOOKD_SECRET", "acme-eu_2"),
            SecretRef::Env("HOOKD_SECRET_ACME_EU_2".into())
        );
    }
}
