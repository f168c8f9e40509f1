//! TLS for the control-plane connection: which CA to trust for hookd's certificate
//! and which client certificate to present when hookd asks for one.

use std::{fmt, path::Path};

use tonic::transport::{Certificate, ClientTlsConfig, Identity};

use super::ClientError;

/// TLS settings for [`HookdClient::connect_with_tls`](super::HookdClient::connect_with_tls).
///
/// An `https://` endpoint always uses TLS: with [`ca_pem`](ClientTls::ca_pem) hookd's
/// certificate must chain to that CA, otherwise to the public web PKI (Mozilla's
/// roots). A client certificate is needed only when hookd sets `grpc.tls.client_ca_file`.
///
/// ```no_run
/// use hookd_sdk::client::{ClientTls, HookdClient};
///
/// # async fn demo() -> Result<(), hookd_sdk::client::ClientError> {
/// let tls = ClientTls::from_files(Some("ca.pem".as_ref()), None, None)?;
/// let client = HookdClient::connect_with_tls("https://hookd.internal:50051", "token", tls).await?;
/// # Ok(())
/// # }
/// ```
#[derive(Clone, Default)]
pub struct ClientTls {
    ca_pem: Option<Vec<u8>>,
    identity: Option<(Vec<u8>, Vec<u8>)>,
}

impl ClientTls {
    /// No CA of its own (the web PKI is trusted) and no client certificate.
    pub fn new() -> ClientTls {
        ClientTls::default()
    }

    /// Trusts only the CA certificate(s) in `pem` for hookd's certificate.
    pub fn ca_pem(mut self, pem: impl Into<Vec<u8>>) -> ClientTls {
        self.ca_pem = Some(pem.into());
        self
    }

    /// Presents the PEM certificate chain `cert` with its PEM private key `key`.
    pub fn identity_pem(mut self, cert: impl Into<Vec<u8>>, key: impl Into<Vec<u8>>) -> ClientTls {
        self.identity = Some((cert.into(), key.into()));
        self
    }

    /// Reads the CA, client certificate and key files that are given; a certificate
    /// needs its key and the reverse.
    pub fn from_files(
        ca: Option<&Path>,
        cert: Option<&Path>,
        key: Option<&Path>,
    ) -> Result<ClientTls, ClientError> {
        let mut tls = ClientTls::new();
        if let Some(ca) = ca {
            tls = tls.ca_pem(read(ca)?);
        }
        match (cert, key) {
            (Some(cert), Some(key)) => Ok(tls.identity_pem(read(cert)?, read(key)?)),
            (None, None) => Ok(tls),
            _ => Err(ClientError::Tls(
                "a client certificate and its key go together: give both or neither".into(),
            )),
        }
    }

    /// True when nothing was set: a plain `http://` endpoint is then fine.
    pub fn is_default(&self) -> bool {
        self.ca_pem.is_none() && self.identity.is_none()
    }

    pub(crate) fn config(&self) -> ClientTlsConfig {
        let config = match &self.ca_pem {
            Some(pem) => ClientTlsConfig::new().ca_certificate(Certificate::from_pem(pem)),
            None => ClientTlsConfig::new().with_webpki_roots(),
        };
        match &self.identity {
            Some((cert, key)) => config.identity(Identity::from_pem(cert, key)),
            None => config,
        }
    }
}

fn read(path: &Path) -> Result<Vec<u8>, ClientError> {
    std::fs::read(path)
        .map_err(|e| ClientError::Tls(format!("cannot read {}: {e}", path.display())))
}

/// Never shows the private key.
impl fmt::Debug for ClientTls {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ClientTls")
            .field("custom_ca", &self.ca_pem.is_some())
            .field("client_certificate", &self.identity.is_some())
            .finish()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_certificate_without_its_key_is_refused_and_debug_hides_the_key() {
        let dir = std::env::temp_dir();
        let err = ClientTls::from_files(None, Some(&dir), None).unwrap_err();
        assert!(err.to_string().contains("give both or neither"), "{err}");
        let missing =
            ClientTls::from_files(Some(&dir.join("hookd-no-such-ca.pem")), None, None).unwrap_err();
        assert!(
            missing.to_string().contains("hookd-no-such-ca.pem"),
            "{missing}"
        );
        let tls = ClientTls::new().identity_pem("CERT", "PRIVATE-KEY-MATERIAL");
        let shown = format!("{tls:?}");
        assert!(
            !shown.contains("PRIVATE-KEY-MATERIAL") && shown.contains("client_certificate: true")
        );
        assert!(ClientTls::new().is_default() && !tls.is_default());
    }
}
