//! Which certificate authorities forwards trust: the system's roots, the
//! public web roots compiled into hookd, and private CAs configured on top.

use std::path::Path;

use reqwest::Certificate;

use crate::error::InvalidSetting;

/// Reads every PEM certificate in `path`; the error names `key` and says
/// what is wrong with the file.
pub fn load_ca_file(key: &str, path: &Path) -> Result<Vec<Certificate>, InvalidSetting> {
    let invalid = |reason: String| InvalidSetting::new(key, reason);
    let pem = std::fs::read(path)
        .map_err(|e| invalid(format!("{} cannot be read: {e}", path.display())))?;
    let certs = Certificate::from_pem_bundle(&pem)
        .map_err(|e| invalid(format!("{} is not a PEM bundle: {e}", path.display())))?;
    if certs.is_empty() {
        return Err(invalid(format!(
            "{} holds no PEM certificate (-----BEGIN CERTIFICATE-----)",
            path.display()
        )));
    }
    Ok(certs)
}

/// `builder` trusting the built-in roots plus `extra` (private CAs).
///
/// Which certificate authorities forwards trust. Every destination trusts
/// the system's roots (the platform store, or `SSL_CERT_FILE` /
/// `SSL_CERT_DIR`) and the public web roots compiled into hookd, so a
/// machine without a CA bundle still reaches public destinations; on top of
/// them, a private CA for every destination (`[forward] ca_file`) and one per
/// destination (`[tenants.destination] ca_file`).
pub fn trust(
    mut builder: reqwest::ClientBuilder,
    extra: impl IntoIterator<Item = Certificate>,
) -> reqwest::ClientBuilder {
    builder = builder
        .tls_built_in_native_certs(true)
        .tls_built_in_webpki_certs(true);
    for cert in extra {
        builder = builder.add_root_certificate(cert);
    }
    builder
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_file_without_certificates_is_refused_naming_the_key() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("ca.pem");
        std::fs::write(&path, "no certificate here\n").unwrap();
        let e = load_ca_file("forward.ca_file", &path)
            .unwrap_err()
            .to_string();
        assert!(e.starts_with("forward.ca_file: "), "{e}");
        assert!(e.contains("holds no PEM certificate"), "{e}");
        let e = load_ca_file("forward.ca_file", &dir.path().join("absent.pem"))
            .unwrap_err()
            .to_string();
        assert!(e.contains("cannot be read"), "{e}");
    }

    #[test]
    fn every_certificate_of_a_bundle_is_read() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("ca.pem");
        let pem = |name: &str| {
            rcgen::generate_simple_self_signed(vec![name.to_owned()])
                .unwrap()
                .cert
                .pem()
        };
        std::fs::write(&path, pem("a.internal") + &pem("b.internal")).unwrap();
        assert_eq!(load_ca_file("k", &path).unwrap().len(), 2);
    }
}
