//! Certificates made at test time with rcgen: a CA, a server certificate for
//! 127.0.0.1 and localhost and a client certificate signed by it, written as
//! PEM files into a temp dir.

use std::path::{Path, PathBuf};

use rcgen::{
    BasicConstraints, CertificateParams, CertifiedIssuer, DnType, ExtendedKeyUsagePurpose, IsCa,
    KeyPair, KeyUsagePurpose,
};
use tempfile::TempDir;

/// A CA and two leaves it signed, as PEM files.
pub struct Pki {
    dir: TempDir,
}

impl Pki {
    /// Generates a fresh CA, server and client certificate.
    pub fn new() -> Pki {
        let dir = tempfile::tempdir().unwrap();
        let mut ca_params = CertificateParams::new(Vec::<String>::new()).unwrap();
        ca_params.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
        ca_params
            .distinguished_name
            .push(DnType::CommonName, "hookd test CA");
        ca_params.key_usages = vec![KeyUsagePurpose::KeyCertSign, KeyUsagePurpose::CrlSign];
        let ca = CertifiedIssuer::self_signed(ca_params, KeyPair::generate().unwrap()).unwrap();
        write(dir.path(), "ca.pem", &ca.pem());

        let leaf = |names: Vec<String>, usage: ExtendedKeyUsagePurpose, stem: &str| {
            let key = KeyPair::generate().unwrap();
            let mut params = CertificateParams::new(names).unwrap();
            params.distinguished_name.push(DnType::CommonName, stem);
            params.extended_key_usages = vec![usage];
            let cert = params.signed_by(&key, &ca).unwrap();
            write(dir.path(), &format!("{stem}.pem"), &cert.pem());
            write(dir.path(), &format!("{stem}.key"), &key.serialize_pem());
        };
        leaf(
            vec!["localhost".into(), "127.0.0.1".into()],
            ExtendedKeyUsagePurpose::ServerAuth,
            "server",
        );
        leaf(
            vec!["hookctl".into()],
            ExtendedKeyUsagePurpose::ClientAuth,
            "client",
        );
        Pki { dir }
    }

    fn path(&self, name: &str) -> PathBuf {
        self.dir.path().join(name)
    }

    /// The CA certificate file.
    pub fn ca(&self) -> PathBuf {
        self.path("ca.pem")
    }

    /// The CA certificate, PEM.
    pub fn ca_pem(&self) -> Vec<u8> {
        std::fs::read(self.ca()).unwrap()
    }

    /// The server certificate and key files.
    pub fn server(&self) -> (PathBuf, PathBuf) {
        (self.path("server.pem"), self.path("server.key"))
    }

    /// The client certificate and key files.
    pub fn client(&self) -> (PathBuf, PathBuf) {
        (self.path("client.pem"), self.path("client.key"))
    }

    /// The client certificate and key, PEM.
    pub fn client_pem(&self) -> (Vec<u8>, Vec<u8>) {
        let (cert, key) = self.client();
        (std::fs::read(cert).unwrap(), std::fs::read(key).unwrap())
    }

    /// `[grpc.tls]` with this PKI's server certificate; with `mutual`, clients
    /// need a certificate from this CA.
    pub fn grpc_toml(&self, mutual: bool) -> String {
        let (cert, key) = self.server();
        let mut toml = format!("[grpc.tls]\ncert_file = {cert:?}\nkey_file = {key:?}\n");
        if mutual {
            toml.push_str(&format!("client_ca_file = {:?}\n", self.ca()));
        }
        toml
    }

    /// `[http.tls]` with this PKI's server certificate.
    pub fn http_toml(&self) -> String {
        let (cert, key) = self.server();
        format!("[http.tls]\ncert_file = {cert:?}\nkey_file = {key:?}\n")
    }
}

fn write(dir: &Path, name: &str, contents: &str) {
    std::fs::write(dir.join(name), contents).unwrap();
}
