//! TLS for hookd's two listeners, from the PEM files named in `[http.tls]` and
//! `[grpc.tls]`, with rustls (ring).

use std::{
    path::{Path, PathBuf},
    sync::{Arc, PoisonError, RwLock},
};

use rustls::{
    crypto::{ring, CryptoProvider},
    pki_types::{pem::PemObject, CertificateDer, PrivateKeyDer},
    server::{ClientHello, ResolvesServerCert, WebPkiClientVerifier},
    sign::CertifiedKey,
    RootCertStore, ServerConfig,
};
use serde::{Deserialize, Serialize};

use crate::error::{Error, Result};

/// `[http.tls]`: the ingress certificate.
///
/// TLS for hookd's two listeners, from the PEM files named in `[http.tls]`
/// and `[grpc.tls]`, with rustls (ring). Files are read and checked when the
/// configuration is validated, so a missing file, a key that does not match
/// its certificate or an empty CA file stops hookd at start with an error
/// naming the key, never later on the first handshake.
#[derive(Debug, Clone, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct HttpTlsConfig {
    /// PEM certificate chain, leaf first.
    pub cert_file: PathBuf,
    /// PEM private key (PKCS#8, PKCS#1 or SEC1).
    pub key_file: PathBuf,
}

/// `[grpc.tls]`: the control-plane certificate and, optionally, the CA that
/// client certificates must be signed by.
#[derive(Debug, Clone, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct GrpcTlsConfig {
    /// PEM certificate chain, leaf first.
    pub cert_file: PathBuf,
    /// PEM private key (PKCS#8, PKCS#1 or SEC1).
    pub key_file: PathBuf,
    /// PEM CA certificate(s); when set, a client without a certificate
    /// signed by one of them is refused at the handshake.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub client_ca_file: Option<PathBuf>,
}

/// The certificate and key a listener presents, re-read from their files by
/// [`CertSource::reload`] (on SIGHUP): new handshakes get the new pair, open
/// connections keep the one they started with.
#[derive(Debug)]
pub struct CertSource {
    section: &'static str,
    cert_file: PathBuf,
    key_file: PathBuf,
    current: RwLock<Arc<CertifiedKey>>,
}

impl CertSource {
    fn load(section: &'static str, cert_file: &Path, key_file: &Path) -> Result<Arc<CertSource>> {
        Ok(Arc::new(CertSource {
            section,
            cert_file: cert_file.to_path_buf(),
            key_file: key_file.to_path_buf(),
            current: RwLock::new(Arc::new(certified(section, cert_file, key_file)?)),
        }))
    }

    /// Reads the files again; on any error the pair in use stays.
    pub fn reload(&self) -> Result<()> {
        let fresh = certified(self.section, &self.cert_file, &self.key_file)?;
        *self.current.write().unwrap_or_else(PoisonError::into_inner) = Arc::new(fresh);
        Ok(())
    }

    /// `http.tls` or `grpc.tls`.
    pub fn section(&self) -> &'static str {
        self.section
    }
}

impl ResolvesServerCert for CertSource {
    fn resolve(&self, _hello: ClientHello<'_>) -> Option<Arc<CertifiedKey>> {
        Some(Arc::clone(
            &self.current.read().unwrap_or_else(PoisonError::into_inner),
        ))
    }
}

/// A listener's rustls configuration and the source of its certificate.
#[derive(Debug)]
pub struct ListenerTls {
    /// What the listener serves with.
    pub config: ServerConfig,
    /// What SIGHUP reloads.
    pub cert: Arc<CertSource>,
}

/// The HTTPS ingress: no client certificates (senders prove themselves with
/// signatures).
pub fn http_server_config(tls: &HttpTlsConfig) -> Result<ListenerTls> {
    let cert = CertSource::load("http.tls", &tls.cert_file, &tls.key_file)?;
    let config = ServerConfig::builder_with_provider(provider())
        .with_safe_default_protocol_versions()
        .map_err(|e| Error::config("http.tls", e))?
        .with_no_client_auth()
        .with_cert_resolver(cert.clone());
    Ok(ListenerTls { config, cert })
}

/// The control plane (ALPN `h2` for gRPC, `http/1.1` for REST clients that
/// do not speak HTTP/2); with `client_ca_file`, clients must present a
/// certificate signed by that CA.
pub fn grpc_server_config(tls: &GrpcTlsConfig) -> Result<ListenerTls> {
    let cert = CertSource::load("grpc.tls", &tls.cert_file, &tls.key_file)?;
    let builder = ServerConfig::builder_with_provider(provider())
        .with_safe_default_protocol_versions()
        .map_err(|e| Error::config("grpc.tls", e))?;
    let builder = match &tls.client_ca_file {
        None => builder.with_no_client_auth(),
        Some(path) => {
            let key = "grpc.tls.client_ca_file";
            let mut roots = RootCertStore::empty();
            for ca in certificates(key, path, &read(key, path)?)? {
                roots.add(ca).map_err(|e| {
                    Error::config(
                        key,
                        format!(
                            "{} holds a certificate that cannot be a CA: {e}",
                            path.display()
                        ),
                    )
                })?;
            }
            let verifier = WebPkiClientVerifier::builder_with_provider(Arc::new(roots), provider())
                .build()
                .map_err(|e| Error::config(key, e))?;
            builder.with_client_cert_verifier(verifier)
        }
    };
    let mut config = builder.with_cert_resolver(cert.clone());
    config.alpn_protocols = vec![b"h2".to_vec(), b"http/1.1".to_vec()];
    Ok(ListenerTls { config, cert })
}

fn provider() -> Arc<CryptoProvider> {
    Arc::new(ring::default_provider())
}

/// The certificate chain and key of `section`, checked to belong together.
fn certified(section: &str, cert_file: &Path, key_file: &Path) -> Result<CertifiedKey> {
    let (certs, key) = identity(section, cert_file, key_file)?;
    CertifiedKey::from_der(certs, key, &provider())
        .map_err(|e| unusable(section, cert_file, key_file, e))
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
        Error::config(
            key_key,
            format!("{} holds no PEM private key: {e}", key_file.display()),
        )
    })?;
    Ok((certs, key))
}

/// Every PEM certificate in `pem`; at least one.
fn certificates(key: &str, path: &Path, pem: &[u8]) -> Result<Vec<CertificateDer<'static>>> {
    let certs = CertificateDer::pem_slice_iter(pem)
        .collect::<std::result::Result<Vec<_>, _>>()
        .map_err(|e| Error::config(key, format!("{} is not valid PEM: {e}", path.display())))?;
    if certs.is_empty() {
        return Err(Error::config(
            key,
            format!("{} holds no PEM certificate", path.display()),
        ));
    }
    Ok(certs)
}

fn read(key: &str, path: &Path) -> Result<Vec<u8>> {
    std::fs::read(path)
        .map_err(|e| Error::config(key, format!("cannot read {}: {e}", path.display())))
}

fn unusable(section: &str, cert: &Path, key: &Path, e: rustls::Error) -> Error {
    Error::config(
        section,
        format!(
            "{} and {} are not a usable certificate and key: {e}",
            cert.display(),
            key.display()
        ),
    )
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
    fn reload_swaps_the_pair_and_a_broken_file_keeps_the_old_one() {
        let dir = tempfile::tempdir().unwrap();
        let (one, two) = (self_signed(), self_signed());
        let cert_file = write(dir.path(), "c.pem", &one.cert.pem());
        let key_file = write(dir.path(), "k.pem", &one.signing_key.serialize_pem());
        let source = CertSource::load("grpc.tls", &cert_file, &key_file).unwrap();
        let presented = |s: &CertSource| s.current.read().unwrap().cert[0].clone();
        assert_eq!(presented(&source), *one.cert.der());

        write(dir.path(), "c.pem", &two.cert.pem());
        write(dir.path(), "k.pem", &two.signing_key.serialize_pem());
        source.reload().unwrap();
        assert_eq!(presented(&source), *two.cert.der());

        write(dir.path(), "k.pem", &one.signing_key.serialize_pem());
        let e = source.reload().unwrap_err().to_string();
        assert!(e.contains("not a usable certificate and key"), "{e}");
        assert_eq!(presented(&source), *two.cert.der(), "the old pair stays");
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
