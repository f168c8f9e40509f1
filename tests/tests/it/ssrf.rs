//! The destination address policy over real gRPC and real HTTP: a
//! destination set over the API may not reach loopback, private, link-local
//! and other internal addresses, neither as a literal (refused at once) nor
//! through a name (dead-lettered at connect time, never retried), unless the
//! operator allows the network; destinations in the config file are trusted.

use std::time::{Duration, Instant};

use hookd_sdk::{
    client::{
        proto::{CreateTenantRequest, DeliveryStatus, UpdateTenantRequest},
        Code, HookdClient,
    },
    signature::{sign, Scheme, Secret},
};
use reqwest::StatusCode;

use crate::{
    harness::tenant,
    harness::{now_secs, order, signed, TestServer},
    process::HookdProcess,
    receiver::{Receiver, Reply},
};

/// The port of a receiver's URL.
fn port_of(dest: &Receiver) -> u16 {
    reqwest::Url::parse(&dest.url).unwrap().port().unwrap()
}

/// Creates tenant `id` forwarding to `destination`; returns (kid, secret).
async fn create(client: &HookdClient, id: &str, destination: &str) -> (String, String) {
    let created = client
        .create_tenant(CreateTenantRequest {
            tenant_id: id.into(),
            destination_url: destination.into(),
            ..Default::default()
        })
        .await
        .unwrap();
    (created.kid, created.secret)
}

/// Sends one signed event and returns its delivery id.
async fn send(s: &TestServer, tenant: &str, kid: &str, secret: &str, event_id: &str) -> String {
    let a = s.post_signed(tenant, kid, secret, event_id).await;
    assert_eq!(a.status, StatusCode::ACCEPTED, "{:?}", a.body);
    a.body["delivery_id"].as_str().unwrap().to_owned()
}

/// Polls a delivery until it has left the queue; returns (status, attempts, last error).
async fn settled(admin: &HookdClient, tenant: &str, delivery_id: &str) -> (i32, usize, String) {
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        let d = admin.get_delivery(tenant, delivery_id).await.unwrap();
        if d.status == DeliveryStatus::Delivered as i32 || d.status == DeliveryStatus::Dead as i32 {
            let error = d
                .attempts
                .last()
                .map(|a| a.error.clone())
                .unwrap_or_default();
            return (d.status, d.attempts.len(), error);
        }
        assert!(
            Instant::now() < deadline,
            "{delivery_id} still pending: {d:?}"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

#[tokio::test]
async fn a_tenant_token_cannot_point_its_destination_at_internal_addresses() {
    let dest = Receiver::start(Reply::Status(200)).await;
    let port = port_of(&dest);
    let s = TestServer::start("");
    let admin = s.admin().await;
    create(&admin, "shop", "").await;
    let token = admin.create_token("shop", "ci").await.unwrap().token;
    let scoped = s.client(&token).await;

    let denied = [
        (
            format!("http://127.0.0.1:{port}/hooks"),
            "127.0.0.1 is loopback",
        ),
        ("http://10.0.0.1/hooks".into(), "10.0.0.1 is private"),
        (
            "http://169.254.169.254/latest/meta-data/".into(),
            "169.254.169.254 is link-local",
        ),
        (
            format!("http://[::ffff:127.0.0.1]:{port}/hooks"),
            "is loopback",
        ),
        (
            format!("http://2130706433:{port}/"),
            "127.0.0.1 is loopback",
        ),
        (format!("http://0x7f.1:{port}/"), "127.0.0.1 is loopback"),
        (format!("http://[::1]:{port}/"), "::1 is loopback"),
        (format!("http://0.0.0.0:{port}/"), "0.0.0.0 is unspecified"),
        (
            "http://100.64.0.1/".into(),
            "100.64.0.1 is carrier-grade NAT",
        ),
        ("http://[fd00::1]/".into(), "fd00::1 is private"),
    ];
    for (url, rule) in &denied {
        let err = scoped
            .update_tenant(UpdateTenantRequest {
                tenant_id: "shop".into(),
                destination_url: Some(url.clone()),
                ..Default::default()
            })
            .await
            .expect_err(&format!("{url} must be refused"));
        assert_eq!(err.code(), Code::InvalidArgument, "{url}: {err}");
        let message = err.status().unwrap().message().to_owned();
        assert!(
            message.contains(rule) && message.contains("[forward] allow_networks"),
            "{url}: {message}"
        );
    }
    assert_eq!(
        scoped.get_tenant("shop").await.unwrap().destination_url,
        "",
        "a refused update changes nothing"
    );

    let err = admin
        .create_tenant(CreateTenantRequest {
            tenant_id: "internal".into(),
            destination_url: "http://192.168.1.1/hooks".into(),
            ..Default::default()
        })
        .await
        .unwrap_err();
    assert_eq!(err.code(), Code::InvalidArgument, "{err}");
    assert_eq!(
        admin.get_tenant("internal").await.unwrap_err().code(),
        Code::NotFound,
        "a refused create leaves no tenant"
    );
    assert!(dest.received().is_empty());
}

#[tokio::test]
async fn a_name_resolving_to_loopback_dead_letters_after_one_attempt_and_never_connects() {
    let dest = Receiver::start(Reply::Status(200)).await;
    let s = TestServer::start_live("");
    let admin = s.admin().await;
    let url = format!("http://localhost:{}/hooks", port_of(&dest));
    let (kid, secret) = create(&admin, "shop", &url).await;

    // More deliveries than the breaker's threshold (5): a refused address is
    // not a failing destination, so none of them is held back by the breaker.
    for i in 0..7 {
        let delivery_id = send(&s, "shop", &kid, &secret, &format!("evt_{i}")).await;
        let (status, attempts, error) = settled(&admin, "shop", &delivery_id).await;
        assert_eq!(status, DeliveryStatus::Dead as i32, "{error}");
        assert_eq!(attempts, 1, "never retried: {error}");
        assert!(
            error.starts_with("destination address not allowed (")
                && error.contains("localhost")
                && !error.contains("127.0.0.1"),
            "{error}"
        );
    }
    assert!(
        dest.received().is_empty(),
        "the sink on 127.0.0.1 received {} requests",
        dest.received().len()
    );
}

#[tokio::test]
async fn allow_networks_lets_local_destinations_through_and_config_destinations_are_trusted() {
    let dest = Receiver::start(Reply::Status(200)).await;
    let port = port_of(&dest);
    let config = format!(
        "[forward]\nallow_networks = [\"127.0.0.0/8\"]\n{}",
        tenant(
            "from-file",
            &format!("http://localhost:{port}/hooks"),
            "",
            "",
            ""
        )
    );
    let s = TestServer::start_live(&config);
    let admin = s.admin().await;
    let (kid, secret) = create(&admin, "literal", &dest.url).await;
    let (name_kid, name_secret) =
        create(&admin, "by-name", &format!("http://localhost:{port}/hooks")).await;
    for (tenant, kid, secret) in [
        ("literal", &kid, &secret),
        ("by-name", &name_kid, &name_secret),
    ] {
        let delivery_id = send(&s, tenant, kid, secret, "evt_allowed").await;
        let (status, _, error) = settled(&admin, tenant, &delivery_id).await;
        assert_eq!(
            status,
            DeliveryStatus::Delivered as i32,
            "{tenant}: {error}"
        );
    }
    let body = order("evt_file");
    let a = s
        .post("from-file", &signed("evt_file", now_secs(), &body), &body)
        .await;
    assert_eq!(a.status, StatusCode::ACCEPTED, "{:?}", a.body);
    dest.wait_for(3, Duration::from_secs(10)).await;

    // 10.0.0.0/8 is still refused: the setting widens only what it names.
    let err = admin
        .update_tenant(UpdateTenantRequest {
            tenant_id: "literal".into(),
            destination_url: Some("http://10.1.2.3/hooks".into()),
            ..Default::default()
        })
        .await
        .unwrap_err();
    assert_eq!(err.code(), Code::InvalidArgument, "{err}");
}

#[tokio::test]
async fn a_config_file_destination_on_loopback_needs_no_allowance() {
    let dest = Receiver::start(Reply::Status(200)).await;
    let s = TestServer::start_live(&tenant(
        "from-file",
        &format!("http://localhost:{}/hooks", port_of(&dest)),
        "",
        "",
        "",
    ));
    let body = order("evt_file");
    let a = s
        .post("from-file", &signed("evt_file", now_secs(), &body), &body)
        .await;
    assert_eq!(a.status, StatusCode::ACCEPTED, "{:?}", a.body);
    assert_eq!(dest.wait_for(1, Duration::from_secs(10)).await.len(), 1);
}

#[tokio::test]
async fn the_environment_form_of_allow_networks_works_in_the_real_binary() {
    let dir = tempfile::tempdir().unwrap();
    let config = dir.path().join("hookd.toml");
    std::fs::write(&config, "").unwrap();
    let token = "hka_env_allow_networks_test_token";
    let mut hookd = HookdProcess::spawn(
        &dir.path().join("data"),
        &config,
        &[
            ("HOOKD_FORWARD__ALLOW_NETWORKS", r#"["127.0.0.1/32"]"#),
            ("HOOKD_ADMIN_TOKEN", token),
        ],
    );
    let admin = HookdClient::connect(hookd.grpc.clone(), token)
        .await
        .unwrap();
    create(&admin, "local", "http://127.0.0.1:9000/hooks").await;
    let err = admin
        .create_tenant(CreateTenantRequest {
            tenant_id: "other".into(),
            destination_url: "http://127.0.0.2:9000/hooks".into(),
            ..Default::default()
        })
        .await
        .unwrap_err();
    assert_eq!(err.code(), Code::InvalidArgument, "{err}");
    assert!(hookd.terminate().success());
}

#[tokio::test]
async fn a_redirect_cannot_bounce_a_delivery_to_a_denied_address() {
    let inside = Receiver::start_on("127.0.0.2:0".parse().unwrap(), Reply::Status(200)).await;
    let allowed = Receiver::start(Reply::Redirect(307, inside.url.clone())).await;
    let s = TestServer::start_live("[forward]\nallow_networks = [\"127.0.0.1/32\"]\n");
    let admin = s.admin().await;
    let (kid, secret) = create(&admin, "shop", &allowed.url).await;
    let delivery_id = send(&s, "shop", &kid, &secret, "evt_redirect").await;
    let (status, attempts, error) = settled(&admin, "shop", &delivery_id).await;
    assert_eq!(status, DeliveryStatus::Dead as i32, "{error}");
    assert_eq!(attempts, 1);
    assert!(error.contains("307"), "{error}");
    assert_eq!(allowed.received().len(), 1);
    assert!(inside.received().is_empty(), "the redirect was followed");
}

#[tokio::test]
async fn a_proxy_from_the_environment_cannot_carry_a_delivery_past_the_policy() {
    let proxy = Receiver::start(Reply::Status(200)).await;
    let proxy_url = format!("http://127.0.0.1:{}", port_of(&proxy));
    let dir = tempfile::tempdir().unwrap();
    let config = dir.path().join("hookd.toml");
    std::fs::write(&config, "").unwrap();
    let token = "hka_proxy_env_test_token_0123";
    let mut hookd = HookdProcess::spawn(
        &dir.path().join("data"),
        &config,
        &[
            ("HOOKD_ADMIN_TOKEN", token),
            ("HTTP_PROXY", &proxy_url),
            ("http_proxy", &proxy_url),
            ("ALL_PROXY", &proxy_url),
            ("NO_PROXY", ""),
            ("no_proxy", ""),
        ],
    );
    let admin = HookdClient::connect(hookd.grpc.clone(), token)
        .await
        .unwrap();
    let (kid, secret) = create(&admin, "shop", "http://localhost:9/hooks").await;
    let key = Secret::from_provider(Scheme::Standard, &kid, &secret).unwrap();
    let body = order("evt_proxy");
    let mut request = reqwest::Client::new()
        .post(format!("{}/hooks/shop", hookd.base))
        .body(body.clone());
    for (name, value) in sign(Scheme::Standard, &key, "evt_proxy", now_secs(), &body) {
        request = request.header(name, value);
    }
    let answer: serde_json::Value = request.send().await.unwrap().json().await.unwrap();
    let delivery_id = answer["delivery_id"].as_str().expect("accepted").to_owned();
    let (status, attempts, error) = settled(&admin, "shop", &delivery_id).await;
    assert_eq!(status, DeliveryStatus::Dead as i32, "{error}");
    assert_eq!(attempts, 1);
    assert!(
        error.contains("not allowed") && !error.contains("127.0.0.1"),
        "{error}"
    );
    assert!(
        proxy.received().is_empty(),
        "the delivery went out through the proxy"
    );
    assert!(hookd.terminate().success());
}
