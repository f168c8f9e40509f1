//! TLS for hookd's two listeners, from the PEM files named in `[http.tls]`
//! and `[grpc.tls]`, with rustls (ring). Files are read and checked when the
//! configuration is validated, so a missing file, a key that does not match
//! its certificate or an empty CA file stops hookd at start with an error
//! naming the key, never later on the first handshake.

use std::{path::Path, sync::Arc};

use rustls::{
    crypto::{ring, CryptoProvider},
    pki_types::{pem::PemObject, CertificateDer, PrivateKeyDer},
    server::WebPkiClientVerifier,
    RootCertStore, ServerConfig,
};
use tonic::transport::{Certificate, Identity, ServerTlsConfig};

use crate::{
    config::{GrpcTlsConfig, HttpTlsConfig},
    error::{Error, Result},
};

/// The rustls configuration of the HTTPS ingress (no client certificates:
/// senders prove themselves with signatures).
pub fn http_server_config(tls: &HttpTlsConfig) -> Result<ServerConfig> {
    let (certs, key) = identity("http.tls", &tls.cert_file, &tls.key_file)?;
    let builder = ServerConfig::builder_with_provider(provider())
        .with_safe_default_protocol_versions()
        .map_err(|e| Error::Config(format!("http.tls: {e}")))?;
    builder
        .with_no_client_auth()
        .with_single_cert(certs, key)
        .map_err(|e| unusable("http.tls", &tls.cert_file, &tls.key_file, e))
}

/// The TLS configuration of the gRPC control plane; with `client_ca_file`,
/// clients must present a certificate signed by that CA.
pub fn grpc_server_config(tls: &GrpcTlsConfig) -> Result<ServerTlsConfig> {
    let (certs, key) = identity("grpc.tls", &tls.cert_file, &tls.key_file)?;
    let mut roots = RootCertStore::empty();
    let mut client_ca = None;
    if let Some(path) = &tls.client_ca_file {
        let pem = read("grpc.tls.client_ca_file", path)?;
        for cert in certificates("grpc.tls.client_ca_file", path, &pem)? {
            roots.add(cert).map_err(|e| {
                Error::Config(format!(
                    "grpc.tls.client_ca_file: {} holds a certificate that cannot be a CA: {e}",
                    path.display()
                ))
            })?;
        }
        client_ca = Some(pem);
    }
    // Building the rustls configuration tonic will build checks the key
    // against the certificate and the CA file now rather than at serve time.
    let builder = ServerConfig::builder_with_provider(provider())
        .with_safe_default_protocol_versions()
        .map_err(|e| Error::Config(format!("grpc.tls: {e}")))?;
    let builder = if roots.is_empty() {
        builder.with_no_client_auth()
    } else {
        let verifier = WebPkiClientVerifier::builder_with_provider(Arc::new(roots), provider())
            .build()
            .map_err(|e| Error::Config(format!("grpc.tls.client_ca_file: {e}")))?;
        builder.with_client_cert_verifier(verifier)
    };
    builder
        .with_single_cert(certs, key)
        .map_err(|e| unusable("grpc.tls", &tls.cert_file, &tls.key_file, e))?;

    let identity = Identity::from_pem(
        read("grpc.tls.cert_file", &tls.cert_file)?,
        read("grpc.tls.key_file", &tls.key_file)?,
    );
    let config = ServerTlsConfig::new().identity(identity);
    Ok(match client_ca {
        Some(pem) => config
            .client_ca_root(Certificate::from_pem(pem))
            .client_auth_optional(false),
        None => config,
    })
}

fn provider() -> Arc<CryptoProvider> {
    Arc::new(ring::default_provider())
}

/// The certificate chain and key of `section`, both checked to parse.
fn identity(
    section: &str,
    cert_file: &Path,
    key_file: &Path,
) -> Result<(Vec<CertificateDer<'static>>, PrivateKeyDer<'static>)> {
    let cert_key = format!("{section}.cert_file");
    let certs = certificates(&cert_key, cert_file, &read(&cert_key, cert_file)?)?;
    let key_key = format!("{section}.key_file");
    let key = PrivateKeyDer::from_pem_slice(&read(&key_key, key_file)?).map_err(|e| {
        Error::Config(format!(
            "{key_key}: {} holds no PEM private key: {e}",
            key_file.display()
        ))
    })?;
    Ok((certs, key))
}

/// Every PEM certificate in `pem`; at least one.
fn certificates(key: &str, path: &Path, pem: &[u8]) -> Result<Vec<CertificateDer<'static>>> {
    let certs = CertificateDer::pem_slice_iter(pem)
        .collect::<std::result::Result<Vec<_>, _>>()
        .map_err(|e| Error::Config(format!("{key}: {} is not valid PEM: {e}", path.display())))?;
    if certs.is_empty() {
        return Err(Error::Config(format!(
            "{key}: {} holds no PEM certificate",
            path.display()
        )));
    }
    Ok(certs)
}

fn read(key: &str, path: &Path) -> Result<Vec<u8>> {
    std::fs::read(path)
        .map_err(|e| Error::Config(format!("{key}: cannot read {}: {e}", path.display())))
}

fn unusable(section: &str, cert: &Path, key: &Path, e: rustls::Error) -> Error {
    Error::Config(format!(
        "{section}: {} and {} are not a usable certificate and key: {e}",
        cert.display(),
        key.display()
    ))
}

#[cfg(test)]
mod tests {
    use std::path::PathBuf;

    use super::*;

    fn write(dir: &Path, name: &str, contents: &str) -> PathBuf {
        let path = dir.join(name);
        std::fs::write(&path, contents).unwrap();
        path
    }

    fn self_signed() -> rcgen::CertifiedKey<rcgen::KeyPair> {
        rcgen::generate_simple_self_signed(vec!["localhost".into()]).unwrap()
    }

    #[test]
    fn a_matching_certificate_and_key_are_accepted() {
        let dir = tempfile::tempdir().unwrap();
        let pair = self_signed();
        let cert_file = write(dir.path(), "c.pem", &pair.cert.pem());
        let key_file = write(dir.path(), "k.pem", &pair.signing_key.serialize_pem());
        http_server_config(&HttpTlsConfig {
            cert_file: cert_file.clone(),
            key_file: key_file.clone(),
        })
        .unwrap();
        grpc_server_config(&GrpcTlsConfig {
            cert_file: cert_file.clone(),
            key_file,
            client_ca_file: Some(cert_file),
        })
        .unwrap();
    }

    #[test]
    fn errors_name_the_key_and_the_file() {
        let dir = tempfile::tempdir().unwrap();
        let (one, other) = (self_signed(), self_signed());
        let cert_file = write(dir.path(), "c.pem", &one.cert.pem());
        let key_file = write(dir.path(), "k.pem", &one.signing_key.serialize_pem());
        let other_key = write(dir.path(), "other.pem", &other.signing_key.serialize_pem());
        let empty = write(dir.path(), "empty.pem", "");
        let grpc = |cert: &Path, key: &Path, ca: Option<&Path>| {
            grpc_server_config(&GrpcTlsConfig {
                cert_file: cert.into(),
                key_file: key.into(),
                client_ca_file: ca.map(Into::into),
            })
            .unwrap_err()
            .to_string()
        };
        let e = grpc(&dir.path().join("missing.pem"), &key_file, None);
        assert!(
            e.contains("grpc.tls.cert_file") && e.contains("missing.pem"),
            "{e}"
        );
        let e = grpc(&cert_file, &empty, None);
        assert!(
            e.contains("grpc.tls.key_file") && e.contains("no PEM private key"),
            "{e}"
        );
        let e = grpc(&cert_file, &other_key, None);
        assert!(e.contains("not a usable certificate and key"), "{e}");
        let e = grpc(&cert_file, &key_file, Some(&empty));
        assert!(
            e.contains("grpc.tls.client_ca_file") && e.contains("no PEM certificate"),
            "{e}"
        );
        let e = http_server_config(&HttpTlsConfig {
            cert_file: empty.clone(),
            key_file,
        })
        .unwrap_err()
        .to_string();
        assert!(e.contains("http.tls.cert_file"), "{e}");
    }
}
