//! Over real gRPC: a tenant's `public_url` (checked, stored, shown, changed)
//! and signing secrets the operator supplies instead of hookd generating
//! them (checked for the scheme, never sent back).

use hookd_sdk::client::{
    proto::{CreateTenantRequest, UpdateTenantRequest},
    Code, HookdClient,
};
use reqwest::StatusCode;

use crate::harness::{TestServer, NOW};

const PUBLIC: &str = "https://hooks.example.com/hooks/shop";

/// Sends a Standard Webhooks delivery signed with `secret`.
async fn send(s: &TestServer, tenant: &str, kid: &str, secret: &str, id: &str) -> StatusCode {
    s.post_signed(tenant, kid, secret, id).await.status
}

fn invalid<T: std::fmt::Debug>(result: Result<T, hookd_sdk::client::ClientError>, field: &str) {
    let err = result.expect_err(field);
    assert_eq!(err.code(), Code::InvalidArgument, "{field}: {err:?}");
    assert!(err.to_string().contains(field), "{field}: {err}");
}

async fn create(admin: &HookdClient, request: CreateTenantRequest) -> String {
    admin.create_tenant(request).await.unwrap().secret
}

#[tokio::test]
async fn a_public_url_is_checked_stored_and_changed() {
    let s = TestServer::start("");
    let admin = s.admin().await;
    let request = |url: &str| CreateTenantRequest {
        tenant_id: "shop".into(),
        public_url: url.into(),
        ..Default::default()
    };
    for bad in [
        "/hooks/shop",
        "ftp://hooks.example.com/x",
        "https://hooks.example.com/x?a=1",
        "https://hooks.example.com/x#f",
    ] {
        invalid(admin.create_tenant(request(bad)).await, "public_url");
    }
    let created = admin.create_tenant(request(PUBLIC)).await.unwrap();
    assert_eq!(created.tenant.unwrap().public_url, PUBLIC);
    assert_eq!(admin.get_tenant("shop").await.unwrap().public_url, PUBLIC);
    let update = |url: &str| UpdateTenantRequest {
        tenant_id: "shop".into(),
        public_url: Some(url.into()),
        ..Default::default()
    };
    invalid(
        admin.update_tenant(update("https://x.example/?q")).await,
        "public_url",
    );
    assert_eq!(admin.get_tenant("shop").await.unwrap().public_url, PUBLIC);
    let moved = "https://edge.example.com/in/shop";
    let view = admin.update_tenant(update(moved)).await.unwrap();
    assert_eq!(view.public_url, moved);
    let view = admin.update_tenant(update("")).await.unwrap();
    assert_eq!(view.public_url, "");
    admin.update_tenant(update(moved)).await.unwrap();
    let keep = UpdateTenantRequest {
        tenant_id: "shop".into(),
        enabled: Some(false),
        ..Default::default()
    };
    assert_eq!(admin.update_tenant(keep).await.unwrap().public_url, moved);
}

#[tokio::test]
async fn a_provided_secret_signs_and_is_never_sent_back() {
    let s = TestServer::start("");
    let admin = s.admin().await;
    let provided = "whsec_cHJvdmlkZWQtYnktdGhlLXByb3ZpZGVyLTAx";
    let shown = create(
        &admin,
        CreateTenantRequest {
            tenant_id: "own".into(),
            secret: provided.into(),
            ..Default::default()
        },
    )
    .await;
    assert_eq!(shown, "", "a supplied secret is not echoed");
    assert_eq!(
        send(&s, "own", "k1", provided, "e1").await,
        StatusCode::ACCEPTED
    );

    let next = "whsec_bmV4dC1mcm9tLXRoZS1wcm92aWRlci0wMg==";
    let rotated = admin.rotate_secret_to("own", 60, next).await.unwrap();
    assert_eq!((rotated.kid.as_str(), rotated.secret.as_str()), ("k2", ""));
    assert_eq!(
        send(&s, "own", "k2", next, "e2").await,
        StatusCode::ACCEPTED
    );
    assert_eq!(
        send(&s, "own", "k1", provided, "e3").await,
        StatusCode::ACCEPTED
    );
    s.clock.set_secs(NOW + 61);
    assert_eq!(
        send(&s, "own", "k2", next, "e4").await,
        StatusCode::ACCEPTED
    );

    let generated = admin.rotate_secret("own", 0).await.unwrap();
    assert!(generated.secret.starts_with("whsec_"), "empty: generated");
}

#[tokio::test]
async fn a_secret_that_is_not_the_schemes_form_is_refused_and_changes_nothing() {
    let s = TestServer::start("");
    let admin = s.admin().await;
    let bad = CreateTenantRequest {
        tenant_id: "bad".into(),
        secret: "whsec_not base64!".into(),
        ..Default::default()
    };
    let err = admin.create_tenant(bad).await.unwrap_err();
    assert_eq!(err.code(), Code::InvalidArgument, "{err:?}");
    let message = err.to_string();
    assert!(
        message.contains("secret") && message.contains("standard"),
        "{message}"
    );
    assert!(
        !message.contains("not base64!"),
        "the value is not echoed: {message}"
    );
    assert_eq!(
        admin.get_tenant("bad").await.unwrap_err().code(),
        Code::NotFound
    );

    let good = create(
        &admin,
        CreateTenantRequest {
            tenant_id: "good".into(),
            ..Default::default()
        },
    )
    .await;
    let err = admin
        .rotate_secret_to("good", 60, "whsec_%%%")
        .await
        .unwrap_err();
    assert_eq!(err.code(), Code::InvalidArgument, "{err:?}");
    assert!(err.to_string().contains("secret"), "{err}");
    assert_eq!(admin.list_secrets("good").await.unwrap().len(), 1);
    assert_eq!(
        send(&s, "good", "k1", &good, "e1").await,
        StatusCode::ACCEPTED
    );
}

/// Runs hookctl against `s` with `stdin`, for `--json` output.
async fn hookctl_json(s: &TestServer, args: &[&str], stdin: &str) -> serde_json::Value {
    use tokio::io::AsyncWriteExt;
    let mut child = tokio::process::Command::new(crate::process::hookctl_bin())
        .arg("--json")
        .args(args)
        .env(
            "HOOKCTL_ENDPOINT",
            format!("http://{}", s.server().grpc_addr()),
        )
        .env("HOOKD_ADMIN_TOKEN", crate::harness::ADMIN_TOKEN)
        .env_remove("HOOKCTL_TOKEN")
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let mut input = child.stdin.take().unwrap();
    input.write_all(stdin.as_bytes()).await.unwrap();
    drop(input);
    let out = child.wait_with_output().await.unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "hookctl {args:?}: {stdout} {stderr}");
    serde_json::from_str(&stdout).unwrap_or_else(|e| panic!("{e}: {stdout}"))
}

#[tokio::test]
async fn hookctl_reads_a_supplied_secret_from_a_file_or_stdin_and_sets_the_public_url() {
    crate::process::hookctl_bin();
    let s = TestServer::start("");
    let file = s.dir.path().join("provider-secret");
    let provided = "whsec_ZnJvbS1hLWZpbGUtb2YtdGhlLW9wZXJhdG9y";
    std::fs::write(&file, format!("{provided}\n")).unwrap();
    let path = file.display().to_string();
    let create = [
        "tenants",
        "create",
        "cli",
        "--secret-file",
        &path,
        "--public-url",
        PUBLIC,
    ];
    let created = hookctl_json(&s, &create, "").await;
    assert_eq!(created["secret"], "", "{created}");
    assert_eq!(created["tenant"]["public_url"], PUBLIC, "{created}");
    assert_eq!(
        send(&s, "cli", "k1", provided, "e1").await,
        StatusCode::ACCEPTED
    );

    let next = "whsec_ZnJvbS1zdGRpbi1vZi10aGUtb3BlcmF0b3I=";
    let rotate = ["secrets", "rotate", "cli", "--secret-file", "-"];
    let rotated = hookctl_json(&s, &rotate, &format!("{next}\n")).await;
    assert_eq!(
        (&rotated["kid"], &rotated["secret"]),
        (&"k2".into(), &"".into())
    );
    assert_eq!(
        send(&s, "cli", "k2", next, "e2").await,
        StatusCode::ACCEPTED
    );

    let update = ["tenants", "update", "cli", "--public-url", ""];
    let updated = hookctl_json(&s, &update, "").await;
    assert_eq!(updated["public_url"], "", "{updated}");
}
