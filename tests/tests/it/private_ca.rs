//! Forwarding to an HTTPS destination whose certificate comes from a private
//! CA made at test time: refused as a TLS failure until that CA is trusted,
//! per destination (`[tenants.destination] ca_file`) or for every destination
//! (`[forward] ca_file`), and the system's roots (`SSL_CERT_FILE`) with the
//! real binary.

use std::time::Duration;

use hookd_server::{
    config::{Config, Overrides},
    testing::DeliveryEventKind,
};

use crate::{
    forward::wait_event,
    harness::{now_secs, order, signed, tenant, TestServer},
    pki::Pki,
    process::HookdProcess,
    receiver::{Receiver, Reply},
};

/// Starts hookd with `toml`, sends one event to `shop` and waits for `kind`;
/// returns the event's reason.
async fn forward_once(toml: &str, kind: DeliveryEventKind) -> Option<String> {
    let s = TestServer::start_live(toml);
    let mut feed = s.server().services().feed.subscribe();
    let body = order("evt_ca");
    let answer = s
        .post("shop", &signed("evt_ca", now_secs(), &body), &body)
        .await;
    let id = answer.body["delivery_id"].as_str().unwrap().to_owned();
    wait_event(&mut feed, &id, kind).await.reason
}

#[tokio::test]
async fn a_destination_behind_a_private_ca_fails_the_handshake_without_it() {
    let pki = Pki::new();
    let dest = Receiver::start_tls(&pki, Reply::Status(200)).await;
    let toml = tenant("shop", &dest.url, "", "", "schedule_secs = [0.05]");
    let reason = forward_once(&toml, DeliveryEventKind::RetryScheduled).await;
    let reason = reason.unwrap_or_default();
    assert!(reason.contains("tls handshake failed"), "{reason:?}");
    assert!(dest.received().is_empty());
}

#[tokio::test]
async fn a_per_destination_ca_file_makes_the_destination_trusted() {
    let pki = Pki::new();
    let dest = Receiver::start_tls(&pki, Reply::Status(200)).await;
    let ca = format!("ca_file = {:?}", pki.ca());
    let toml = tenant("shop", &dest.url, "", &ca, "schedule_secs = [0.05]");
    forward_once(&toml, DeliveryEventKind::Delivered).await;
    assert_eq!(dest.received().len(), 1);
}

#[tokio::test]
async fn a_global_ca_file_makes_every_destination_trusted() {
    let pki = Pki::new();
    let dest = Receiver::start_tls(&pki, Reply::Status(200)).await;
    let toml = format!(
        "[forward]\nca_file = {:?}\n{}",
        pki.ca(),
        tenant("shop", &dest.url, "", "", "schedule_secs = [0.05]")
    );
    forward_once(&toml, DeliveryEventKind::Delivered).await;
    assert_eq!(dest.received().len(), 1);
}

#[tokio::test]
async fn a_ca_file_that_is_missing_or_holds_no_certificate_stops_the_start_naming_the_key() {
    let pki = Pki::new();
    let not_pem = pki.ca().with_file_name("junk.pem");
    std::fs::write(&not_pem, "not a certificate\n").unwrap();
    let missing = pki.ca().with_file_name("absent.pem");
    for (file, why) in [
        (&missing, "cannot be read"),
        (&not_pem, "no PEM certificate"),
    ] {
        let ca = format!("ca_file = {file:?}");
        let in_tenant = tenant("shop", "https://localhost:9/hooks", "", &ca, "");
        let e = load(&in_tenant);
        assert!(
            e.contains("destination.ca_file: ") && e.contains(why),
            "{e}"
        );
        let e = load(&format!("[forward]\nca_file = {file:?}\n"));
        assert!(e.contains("forward.ca_file: ") && e.contains(why), "{e}");
    }
}

#[tokio::test]
async fn the_system_roots_are_trusted_so_ssl_cert_file_adds_a_ca() {
    let pki = Pki::new();
    let dest = Receiver::start_tls(&pki, Reply::Status(200)).await;
    let dir = tempfile::tempdir().unwrap();
    let config = dir.path().join("hookd.toml");
    let toml = tenant("acme", &dest.url, "", "", "schedule_secs = [0.05]");
    std::fs::write(&config, toml).unwrap();
    let ca = pki.ca();
    let env = [("SSL_CERT_FILE", ca.to_str().unwrap())];
    let hookd = HookdProcess::spawn(&dir.path().join("data"), &config, &env);
    let body = order("evt_system_ca");
    let (status, answer) = hookd.post("evt_system_ca", now_secs(), &body).await;
    assert_eq!(status, reqwest::StatusCode::ACCEPTED, "{answer}");
    let got = dest.wait_for(1, Duration::from_secs(20)).await;
    assert_eq!(got[0].body, body);
}

/// Loads `toml` as a config file and returns why it is refused.
fn load(toml: &str) -> String {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("hookd.toml");
    std::fs::write(&file, toml).unwrap();
    match Config::load(Some(&file), &Overrides::default())
        .and_then(|c| hookd_server::check_tenants(&c))
    {
        Ok(_) => panic!("the config is accepted:\n{toml}"),
        Err(e) => e.to_string(),
    }
}
