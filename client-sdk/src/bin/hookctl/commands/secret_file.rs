//! Secrets the operator supplies (`--secret-file PATH`, `-` for stdin), read
//! from a file or a pipe, never from an argument.

use std::{io::Read, path::Path};

use anyhow::{bail, Context};

/// The secret in `path` (`-`: stdin), one trailing line break dropped.
///
/// Secrets the operator supplies (`--secret-file PATH`, `-` for stdin): read
/// from a file or a pipe, never from an argument, so they stay out of shell
/// history and process lists.
pub fn read_secret(path: &Path) -> anyhow::Result<String> {
    let mut text = String::new();
    if path == Path::new("-") {
        std::io::stdin()
            .read_to_string(&mut text)
            .context("reading the secret from stdin")?;
    } else {
        text = std::fs::read_to_string(path)
            .with_context(|| format!("reading the secret from {}", path.display()))?;
    }
    let secret = text
        .strip_suffix('\n')
        .map(|rest| rest.strip_suffix('\r').unwrap_or(rest))
        .unwrap_or(&text);
    if secret.is_empty() {
        bail!("the secret in {} is empty", path.display());
    }
    Ok(secret.to_owned())
}

/// What the text output shows of a new secret: hookd sends back only the
/// ones it generated.
pub fn shown(secret: &str) -> String {
    match secret.is_empty() {
        true => "(supplied; not shown)".to_owned(),
        false => secret.to_owned(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn one_trailing_line_break_is_dropped_and_empty_is_refused() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("secret");
        for (written, read) in [("pdl_1\n", "pdl_1"), ("pdl_2\r\n", "pdl_2"), ("a b", "a b")] {
            std::fs::write(&file, written).unwrap();
            assert_eq!(read_secret(&file).unwrap(), read);
        }
        std::fs::write(&file, "\n").unwrap();
        let err = read_secret(&file).unwrap_err().to_string();
        assert!(err.contains("is empty"), "{err}");
        let err = read_secret(&dir.path().join("absent")).unwrap_err();
        assert!(format!("{err:#}").contains("absent"), "{err:#}");
    }
}
