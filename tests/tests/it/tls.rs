//! Transport security end to end with certificates made at test time: the
//! control plane over TLS with the SDK client and the real `hookctl`, client
//! certificates required by `grpc.tls.client_ca_file`, the HTTPS ingress, and
//! certificates reloaded on SIGHUP.

use std::{
    path::Path,
    time::{Duration, Instant},
};

use hookd_sdk::client::{proto::CreateTenantRequest, ClientError, ClientTls, Code, HookdClient};
use reqwest::StatusCode;
use serde_json::Value;

use crate::{
    harness::{order, signed, TestServer, ACME, ADMIN_TOKEN, NOW},
    pki::Pki,
    process::{hookctl_bin, HookdProcess},
};

fn https(s: &TestServer) -> String {
    format!("https://{}", s.server().grpc_addr())
}

async fn connect(s: &TestServer, tls: ClientTls) -> Result<HookdClient, ClientError> {
    HookdClient::connect_with_tls(https(s), ADMIN_TOKEN, tls).await
}

/// A client hookd must refuse: the connection fails, or (TLS 1.3 checks the
/// client certificate after the client finished its side) the first call does.
async fn assert_refused(s: &TestServer, tls: ClientTls, why: &str) {
    let err = match connect(s, tls).await {
        Err(err) => err,
        Ok(client) => client
            .list_all_tenants()
            .await
            .expect_err(&format!("{why}: the call must fail")),
    };
    assert_eq!(err.code(), Code::Unavailable, "{why}: {err:?}");
}

async fn create_and_list(client: &HookdClient, id: &str) {
    client
        .create_tenant(CreateTenantRequest {
            tenant_id: id.into(),
            ..Default::default()
        })
        .await
        .unwrap();
    let ids: Vec<String> = client
        .list_all_tenants()
        .await
        .unwrap()
        .into_iter()
        .map(|t| t.tenant_id)
        .collect();
    assert!(ids.contains(&id.to_owned()), "{ids:?}");
}

#[tokio::test]
async fn grpc_over_tls_works_with_a_client_that_trusts_the_ca_only() {
    let pki = Pki::new();
    let s = TestServer::start(&pki.grpc_toml(false));
    // A client that connects and never starts its handshake delays nobody.
    let _silent = tokio::net::TcpStream::connect(s.server().grpc_addr())
        .await
        .unwrap();
    let client = connect(&s, ClientTls::new().ca_pem(pki.ca_pem()))
        .await
        .unwrap();
    create_and_list(&client, "tls-sdk").await;

    let stranger = Pki::new();
    assert_refused(&s, ClientTls::new().ca_pem(stranger.ca_pem()), "another CA").await;
    assert_refused(&s, ClientTls::new(), "the web PKI").await;
    let http = format!("http://{}", s.server().grpc_addr());
    let plain = match HookdClient::connect(&http, ADMIN_TOKEN).await {
        Err(err) => err,
        Ok(client) => client.list_all_tenants().await.unwrap_err(),
    };
    assert_eq!(
        plain.code(),
        Code::Unavailable,
        "plaintext to TLS: {plain:?}"
    );
    let err =
        HookdClient::connect_with_tls(http, ADMIN_TOKEN, ClientTls::new().ca_pem(pki.ca_pem()))
            .await
            .unwrap_err();
    assert_eq!(err.code(), Code::InvalidArgument, "{err}");
    assert!(err.to_string().contains("https://"), "{err}");
}

#[tokio::test]
async fn with_a_client_ca_only_clients_with_its_certificates_get_in() {
    let pki = Pki::new();
    let s = TestServer::start(&pki.grpc_toml(true));
    let trusting = || ClientTls::new().ca_pem(pki.ca_pem());
    assert_refused(&s, trusting(), "no client certificate").await;
    let (cert, key) = Pki::new().client_pem();
    assert_refused(
        &s,
        trusting().identity_pem(cert, key),
        "a client certificate from another CA",
    )
    .await;

    let (cert, key) = pki.client_pem();
    let client = connect(&s, trusting().identity_pem(cert, key))
        .await
        .unwrap();
    create_and_list(&client, "tls-mutual").await;
}

#[tokio::test]
async fn https_ingress_accepts_a_signed_delivery_from_a_client_trusting_the_ca() {
    let pki = Pki::new();
    let s = TestServer::start(&format!("{}{ACME}", pki.http_toml()));
    let url = format!("https://{}/hooks/acme", s.server().http_addr());
    let body = order("evt_tls");
    let post = |client: reqwest::Client| {
        let mut request = client.post(&url);
        for (name, value) in signed("evt_tls", NOW, &body) {
            request = request.header(name, value);
        }
        request.body(body.clone()).send()
    };
    let trusting = reqwest::Client::builder()
        .add_root_certificate(reqwest::Certificate::from_pem(&pki.ca_pem()).unwrap())
        .build()
        .unwrap();
    let answer = post(trusting).await.unwrap();
    assert_eq!(answer.status(), StatusCode::ACCEPTED);
    let answer: Value = answer.json().await.unwrap();
    assert!(answer["delivery_id"].is_string(), "{answer}");

    let err = post(reqwest::Client::new()).await.unwrap_err();
    assert!(err.is_connect(), "a client without the CA: {err:?}");
    let plain = reqwest::Client::new()
        .get(format!("http://{}/healthz", s.server().http_addr()))
        .send()
        .await;
    assert!(
        plain.is_err() || !plain.unwrap().status().is_success(),
        "plain HTTP is not served on the TLS port"
    );
}

/// Runs the real hookctl against `endpoint` with `args`; returns (exit code, stdout).
async fn hookctl(endpoint: &str, args: &[&str]) -> (i32, String) {
    let out = tokio::process::Command::new(hookctl_bin())
        .args(args)
        .env("HOOKCTL_ENDPOINT", endpoint)
        .env("HOOKD_ADMIN_TOKEN", ADMIN_TOKEN)
        .env_remove("HOOKCTL_TOKEN")
        .env_remove("HOOKCTL_TLS_CA")
        .env_remove("HOOKCTL_TLS_CERT")
        .env_remove("HOOKCTL_TLS_KEY")
        .output()
        .await
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
    let code = out.status.code().unwrap_or(-1);
    if code != 0 {
        eprintln!("hookctl {args:?}: {}", String::from_utf8_lossy(&out.stderr));
    }
    (code, stdout)
}

fn arg(path: &Path) -> &str {
    path.to_str().unwrap()
}

#[tokio::test]
async fn hookctl_talks_to_a_hookd_configured_for_mutual_tls_from_the_environment() {
    let pki = Pki::new();
    let (server_cert, server_key) = pki.server();
    let dir = tempfile::tempdir().unwrap();
    let config = dir.path().join("hookd.toml");
    std::fs::write(&config, pki.http_toml()).unwrap();
    let hookd = HookdProcess::spawn(
        &dir.path().join("data"),
        &config,
        &[
            ("HOOKD_ADMIN_TOKEN", ADMIN_TOKEN),
            ("HOOKD_GRPC__TLS__CERT_FILE", arg(&server_cert)),
            ("HOOKD_GRPC__TLS__KEY_FILE", arg(&server_key)),
            ("HOOKD_GRPC__TLS__CLIENT_CA_FILE", arg(&pki.ca())),
        ],
    );
    let endpoint = hookd.grpc.replacen("http://", "https://", 1);
    let (cert, key) = pki.client();
    let ca = pki.ca();
    let tls = [
        "--tls-ca",
        arg(&ca),
        "--tls-cert",
        arg(&cert),
        "--tls-key",
        arg(&key),
    ];

    let create = [&tls[..], &["--json", "tenants", "create", "tls-cli"]].concat();
    let (code, out) = hookctl(&endpoint, &create).await;
    assert_eq!(code, 0, "{out}");
    let created: Value = serde_json::from_str(&out).unwrap();
    let secret = created["secret"].as_str().unwrap().to_owned();
    let (code, table) = hookctl(&endpoint, &[&tls[..], &["tenants", "list"]].concat()).await;
    assert_eq!(code, 0, "{table}");
    assert!(table.contains("tls-cli"), "{table}");

    let (code, out) = hookctl(&endpoint, &["--tls-ca", arg(&ca), "tenants", "list"]).await;
    assert_eq!(code, 6, "no client certificate: unreachable: {out}");
    let (code, out) = hookctl(&endpoint, &["tenants", "list"]).await;
    assert_eq!(code, 6, "hookd's CA not trusted: {out}");

    let url = format!(
        "{}/hooks/tls-cli",
        hookd.base.replacen("http://", "https://", 1)
    );
    let send = [
        "--tls-ca",
        arg(&ca),
        "send",
        "--url",
        &url,
        "--secret",
        &secret,
    ];
    let (code, out) = hookctl(&endpoint, &send).await;
    assert_eq!(code, 0, "send over HTTPS: {out}");
    assert!(out.contains("202"), "{out}");
}

/// Waits (bounded) until `needle` was logged `times` times.
fn wait_logged(hookd: &HookdProcess, needle: &str, times: usize) {
    let deadline = Instant::now() + Duration::from_secs(10);
    while hookd.logs().matches(needle).count() < times {
        assert!(
            Instant::now() < deadline,
            "{needle:?} not logged {times}x:\n{}",
            hookd.logs()
        );
        std::thread::sleep(Duration::from_millis(20));
    }
}

fn hangup(hookd: &HookdProcess) {
    let pid = nix::unistd::Pid::from_raw(hookd.child.id() as i32);
    nix::sys::signal::kill(pid, nix::sys::signal::Signal::SIGHUP).unwrap();
}

/// Whether a client trusting `pki`'s CA gets through to both listeners.
async fn trusted_by(hookd: &HookdProcess, pki: &Pki) -> (bool, bool) {
    let grpc = hookd.grpc.replacen("http://", "https://", 1);
    let tls = ClientTls::new().ca_pem(pki.ca_pem());
    let grpc_ok = match HookdClient::connect_with_tls(grpc, ADMIN_TOKEN, tls).await {
        Ok(client) => client.list_all_tenants().await.is_ok(),
        Err(_) => false,
    };
    let https = reqwest::Client::builder()
        .add_root_certificate(reqwest::Certificate::from_pem(&pki.ca_pem()).unwrap())
        .build()
        .unwrap();
    let healthz = format!("{}/healthz", hookd.base.replacen("http://", "https://", 1));
    let http_ok = https.get(healthz).send().await.is_ok();
    (grpc_ok, http_ok)
}

#[tokio::test]
async fn sighup_reloads_the_certificates_and_a_broken_file_keeps_the_old_one() {
    let (old, new) = (Pki::new(), Pki::new());
    let dir = tempfile::tempdir().unwrap();
    let (cert, key) = (dir.path().join("tls.pem"), dir.path().join("tls.key"));
    let install = |pki: &Pki| {
        let (pki_cert, pki_key) = pki.server();
        std::fs::copy(pki_cert, &cert).unwrap();
        std::fs::copy(pki_key, &key).unwrap();
    };
    install(&old);
    let config = dir.path().join("hookd.toml");
    let files = format!("cert_file = {cert:?}\nkey_file = {key:?}\n");
    std::fs::write(&config, format!("[http.tls]\n{files}[grpc.tls]\n{files}")).unwrap();
    let hookd = HookdProcess::spawn(
        &dir.path().join("data"),
        &config,
        &[("HOOKD_ADMIN_TOKEN", ADMIN_TOKEN)],
    );
    assert_eq!(trusted_by(&hookd, &old).await, (true, true));
    assert_eq!(trusted_by(&hookd, &new).await, (false, false));

    install(&new);
    hangup(&hookd);
    wait_logged(&hookd, "TLS certificate reloaded", 2);
    assert_eq!(
        trusted_by(&hookd, &new).await,
        (true, true),
        "new certificate served"
    );
    assert_eq!(
        trusted_by(&hookd, &old).await,
        (false, false),
        "old one retired"
    );

    std::fs::write(&key, "not a key").unwrap();
    hangup(&hookd);
    wait_logged(&hookd, "TLS certificate not reloaded", 2);
    assert_eq!(
        trusted_by(&hookd, &new).await,
        (true, true),
        "still serving"
    );
}
