//! `hookctl apply`, `diff` and `export`, the real binary, against a running
//! hookd: a second apply changes nothing, diff shows exactly a change made
//! over the API (and exits 2), `export | apply` changes nothing and rebuilds
//! the same tenants on another hookd, `--prune` removes what the file no
//! longer names while config-file tenants are left alone, secrets are
//! sent again only with `--rotate-secrets`, and a tenant's `alerts:` (its
//! sink and rules) is applied, diffed and exported the same way.

use std::{path::Path, process::Stdio};

use hookd_sdk::{
    client::proto::{
        AlertRule, AlertSettings, AlertSink, AlertSinkFormat, UpdateRouteRequest,
        UpdateTenantRequest,
    },
    signature::{sign, Scheme, Secret},
};
use reqwest::StatusCode;
use serde_json::Value;
use tokio::io::AsyncWriteExt;

use crate::{
    harness::{TestServer, ACME, ADMIN_TOKEN},
    process::hookctl_bin,
    route_service::LOCAL_DESTINATIONS,
};

/// The secret the file gives tenant `shop`, by reference to a file.
const SHOP_SECRET: &str = "whsec_c2hvcC1zZWNyZXQtZm9yLXRoZS1hcHBseS10ZXN0cw==";

/// Tenants with a route, a default-route filter and a contract, an hmac
/// spec and a verify token; `shop`'s secret (and `fb`'s verify token) from
/// `shop.secret` beside the file.
const FILE: &str = r#"
version: 1
tenants:
  - id: shop
    destination_url: http://127.0.0.1:9/in
    required_fields: [type]
    tolerance_secs: 300
    rate_limit: {per_sec: 50}
    secret: {file: shop.secret}
    routes:
      - name: default
        filter: {body: {type: {$startsWith: "order."}}}
        delay_ms: 250
      - name: audit
        destination_url: http://127.0.0.1:9/audit
        max_in_flight: 3
        retry: {schedule_secs: [1, 5], jitter: 0}
        filter: {body: {type: order.paid}}
    contracts:
      - type: order.paid
        schema:
          type: object
          required: [type, id]
          properties: {id: {type: integer}}
        example: {type: order.paid, id: 7}
  - id: pager
    enabled: false
    event_id_field: /data/id
    max_body_bytes: 4096
  - id: forms
    scheme: hmac
    hmac: {signature: "header:X-Sig", prefix: "sha256="}
  - id: fb
    scheme: meta
    verify_token: {file: shop.secret}
"#;

/// What one hookctl run did.
struct Run {
    code: i32,
    stdout: String,
    stderr: String,
}

/// Runs hookctl against `s` in `dir`, with `stdin` piped in and `env` set.
async fn hookctl(
    s: &TestServer,
    dir: &Path,
    args: &[&str],
    stdin: &str,
    env: &[(&str, &str)],
) -> Run {
    let mut child = tokio::process::Command::new(hookctl_bin())
        .args(args)
        .current_dir(dir)
        .env(
            "HOOKCTL_ENDPOINT",
            format!("http://{}", s.server().grpc_addr()),
        )
        .env("HOOKD_ADMIN_TOKEN", ADMIN_TOKEN)
        .env_remove("HOOKCTL_TOKEN")
        .env_remove("HOOKCTL_OUTPUT")
        .envs(env.iter().copied())
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut pipe = child.stdin.take().unwrap();
    pipe.write_all(stdin.as_bytes()).await.unwrap();
    drop(pipe);
    let out = child.wait_with_output().await.unwrap();
    Run {
        code: out.status.code().unwrap_or(-1),
        stdout: String::from_utf8_lossy(&out.stdout).into_owned(),
        stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
    }
}

/// A directory holding `hookd.yaml` (`file`) and `shop.secret`.
fn workdir(file: &str) -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("hookd.yaml"), file).unwrap();
    std::fs::write(dir.path().join("shop.secret"), format!("{SHOP_SECRET}\n")).unwrap();
    dir
}

async fn apply_ok(s: &TestServer, dir: &Path, args: &[&str]) -> String {
    let mut all = vec!["apply", "-f", "hookd.yaml"];
    all.extend_from_slice(args);
    let run = hookctl(s, dir, &all, "", &[]).await;
    assert_eq!(run.code, 0, "apply {args:?}: {}{}", run.stdout, run.stderr);
    run.stdout
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_second_apply_changes_nothing() {
    let s = TestServer::start(&format!("{LOCAL_DESTINATIONS}{ACME}"));
    let dir = workdir(FILE);
    let first = apply_ok(&s, dir.path(), &[]).await;
    for head in [
        "+ create tenant shop",
        "+ create route shop/audit",
        "+ create contract shop/order.paid",
        "+ create tenant pager",
    ] {
        assert!(first.contains(head), "{head} in:\n{first}");
    }
    assert!(
        !first.contains(SHOP_SECRET),
        "a supplied secret is never printed:\n{first}"
    );
    assert!(first.contains("secret: (set)"), "{first}");

    let second = apply_ok(&s, dir.path(), &[]).await;
    assert!(
        second.starts_with("No changes: hookd matches the file."),
        "{second}"
    );
    let diff = hookctl(&s, dir.path(), &["diff", "-f", "hookd.yaml"], "", &[]).await;
    assert_eq!(diff.code, 0, "{}{}", diff.stdout, diff.stderr);

    let admin = s.admin().await;
    let pager = admin.get_tenant("pager").await.unwrap();
    assert!(!pager.enabled && pager.max_body_bytes == 4096, "{pager:?}");
    assert_eq!(pager.event_id_field, "/data/id");
    assert!(admin.get_tenant("fb").await.unwrap().has_verify_token);
    let forms = admin.get_tenant("forms").await.unwrap();
    assert_eq!(forms.hmac.unwrap().prefix, "sha256=");
    let audit = admin.get_route("shop", "audit").await.unwrap();
    assert_eq!(audit.retry.unwrap().schedule_secs, [1.0, 5.0]);
    let default = admin.get_route("shop", "default").await.unwrap();
    assert_eq!(
        default.delay_ms, 250,
        "the default route's delay from the file"
    );
    let contracts = admin.list_contracts("shop").await.unwrap().contracts;
    assert_eq!(contracts.len(), 1);
    assert_eq!(
        contracts[0].revision, 1,
        "the second apply put no new revision"
    );

    // fb answers Meta's handshake with the token the file referenced.
    let token = SHOP_SECRET.replace('=', "%3D");
    let handshake =
        format!("/hooks/fb?hub.mode=subscribe&hub.verify_token={token}&hub.challenge=c1");
    let answer = s.get(&handshake).await;
    assert_eq!(answer.status(), StatusCode::OK);
    assert_eq!(answer.text().await.unwrap(), "c1");

    // The tenant verifies with the secret the file referenced.
    let secret = Secret::from_provider(Scheme::Standard, "k", SHOP_SECRET).unwrap();
    let body = br#"{"type":"order.paid","id":7}"#;
    let mut headers = sign(Scheme::Standard, &secret, "evt_1", s.clock_secs(), body);
    headers.push(("content-type".into(), "application/json".into()));
    assert_eq!(
        s.post("shop", &headers, body).await.status,
        StatusCode::ACCEPTED
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn diff_shows_exactly_a_change_made_over_the_api() {
    let s = TestServer::start(LOCAL_DESTINATIONS);
    let dir = workdir(FILE);
    apply_ok(&s, dir.path(), &[]).await;
    let admin = s.admin().await;
    admin
        .update_tenant(UpdateTenantRequest {
            tenant_id: "shop".into(),
            tolerance_secs: Some(600),
            ..Default::default()
        })
        .await
        .unwrap();
    admin
        .update_route(UpdateRouteRequest {
            tenant_id: "shop".into(),
            name: "audit".into(),
            filter_json: Some(String::new()),
            ..Default::default()
        })
        .await
        .unwrap();

    let diff = hookctl(&s, dir.path(), &["diff", "-f", "hookd.yaml"], "", &[]).await;
    assert_eq!(diff.code, 2, "{}{}", diff.stdout, diff.stderr);
    assert_eq!(
        diff.stdout,
        "~ update tenant shop\n    tolerance_secs: 600 -> 300\n\
         ~ update route shop/audit\n    filter: (none) -> {\"body\":{\"type\":\"order.paid\"}}\n\
         2 resources to change.\n"
    );
    let json = hookctl(
        &s,
        dir.path(),
        &["diff", "-f", "hookd.yaml", "--json"],
        "",
        &[],
    )
    .await;
    assert_eq!(json.code, 2, "{}", json.stderr);
    let plan: Value = serde_json::from_str(&json.stdout).unwrap();
    assert_eq!(plan["changes"][0]["fields"][0]["field"], "tolerance_secs");
    assert_eq!(plan["changes"][0]["fields"][0]["old"], 600);

    apply_ok(&s, dir.path(), &[]).await;
    let diff = hookctl(&s, dir.path(), &["diff", "-f", "hookd.yaml"], "", &[]).await;
    assert_eq!(diff.code, 0, "{}", diff.stdout);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn export_then_apply_changes_nothing_and_rebuilds_elsewhere() {
    let s = TestServer::start(&format!("{LOCAL_DESTINATIONS}{ACME}"));
    let dir = workdir(FILE);
    apply_ok(&s, dir.path(), &[]).await;
    let export = hookctl(&s, dir.path(), &["export"], "", &[]).await;
    assert_eq!(export.code, 0, "{}", export.stderr);
    assert!(
        export.stdout.contains("env: HOOKD_SECRET_SHOP"),
        "{}",
        export.stdout
    );
    assert!(!export.stdout.contains(SHOP_SECRET), "{}", export.stdout);
    assert!(
        !export.stdout.contains("id: acme"),
        "config-file tenant exported"
    );
    assert!(export
        .stderr
        .contains("tenant acme is declared in hookd's config file"));

    let again = hookctl(&s, dir.path(), &["apply", "-f", "-"], &export.stdout, &[]).await;
    assert_eq!(again.code, 0, "{}", again.stderr);
    assert!(again.stdout.starts_with("No changes"), "{}", again.stdout);

    let other = TestServer::start(LOCAL_DESTINATIONS);
    let names = ["SHOP", "PAGER", "FORMS", "FB"].map(|id| format!("HOOKD_SECRET_{id}"));
    let mut secrets: Vec<(&str, &str)> = names.iter().map(|n| (n.as_str(), SHOP_SECRET)).collect();
    secrets.push(("HOOKD_VERIFY_TOKEN_FB", SHOP_SECRET));
    let rebuilt = hookctl(
        &other,
        dir.path(),
        &["apply", "-f", "-"],
        &export.stdout,
        &secrets,
    )
    .await;
    assert_eq!(rebuilt.code, 0, "{}{}", rebuilt.stdout, rebuilt.stderr);
    assert!(
        rebuilt.stdout.contains("verify_token: (set)"),
        "{}",
        rebuilt.stdout
    );
    let copy = hookctl(&other, dir.path(), &["export"], "", &[]).await;
    assert_eq!(
        copy.stdout, export.stdout,
        "the same tenants on the other hookd"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn prune_removes_what_the_file_no_longer_names() {
    let s = TestServer::start(&format!("{LOCAL_DESTINATIONS}{ACME}"));
    let dir = workdir(FILE);
    apply_ok(&s, dir.path(), &[]).await;
    let smaller = FILE
        .split("    contracts:")
        .next()
        .unwrap()
        .replace("      - name: audit\n", "      - name: gone\n        retry: {}\n")
        .replace("        destination_url: http://127.0.0.1:9/audit\n", "")
        .replace("        max_in_flight: 3\n        retry: {schedule_secs: [1, 5], jitter: 0}\n        filter: {body: {type: order.paid}}\n", "");
    std::fs::write(dir.path().join("hookd.yaml"), &smaller).unwrap();

    let kept = hookctl(&s, dir.path(), &["diff", "-f", "hookd.yaml"], "", &[]).await;
    assert_eq!(kept.code, 2, "{}{}", kept.stdout, kept.stderr);
    for note in [
        "note: route shop/audit is not in the file: left as it is (--prune deletes it)",
        "note: contract shop/order.paid is not in the file: left as it is (--prune deletes it)",
        "note: tenant pager is not in the file: left as it is (--prune deletes it)",
        "note: tenant fb is not in the file: left as it is (--prune deletes it)",
    ] {
        assert!(kept.stdout.contains(note), "{note} in:\n{}", kept.stdout);
    }
    assert!(
        kept.stdout.contains("+ create route shop/gone"),
        "{}",
        kept.stdout
    );

    let pruned = apply_ok(&s, dir.path(), &["--prune"]).await;
    for head in [
        "- delete route shop/audit",
        "- delete contract shop/order.paid",
        "- delete tenant pager",
        "- delete tenant forms",
        "note: tenant acme is declared in hookd's config file: not deleted",
    ] {
        assert!(pruned.contains(head), "{head} in:\n{pruned}");
    }
    let admin = s.admin().await;
    let tenants: Vec<String> = admin
        .list_all_tenants()
        .await
        .unwrap()
        .into_iter()
        .map(|t| t.tenant_id)
        .collect();
    assert_eq!(tenants, ["acme", "shop"]);
    assert!(!pruned.contains("delete tenant acme"), "{pruned}");
    let routes: Vec<String> = admin
        .list_routes("shop")
        .await
        .unwrap()
        .into_iter()
        .map(|r| r.name)
        .collect();
    assert_eq!(routes, ["default", "gone"]);
    assert!(admin
        .list_contracts("shop")
        .await
        .unwrap()
        .contracts
        .is_empty());
    let diff = hookctl(
        &s,
        dir.path(),
        &["diff", "-f", "hookd.yaml", "--prune"],
        "",
        &[],
    )
    .await;
    assert_eq!(diff.code, 0, "{}", diff.stdout);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn rotate_secrets_sends_the_files_secrets_again() {
    const NEW: &str = "whsec_bmV3LXNob3Atc2VjcmV0LWZvci10aGUtcm90YXRpb24=";
    let s = TestServer::start(LOCAL_DESTINATIONS);
    let dir = workdir(FILE);
    apply_ok(&s, dir.path(), &[]).await;
    std::fs::write(dir.path().join("shop.secret"), NEW).unwrap();

    let diff = hookctl(&s, dir.path(), &["diff", "-f", "hookd.yaml"], "", &[]).await;
    assert_eq!(diff.code, 0, "secrets are not compared: {}", diff.stdout);
    let args = ["diff", "-f", "hookd.yaml", "--rotate-secrets"];
    let diff = hookctl(&s, dir.path(), &args, "", &[]).await;
    assert_eq!(diff.code, 2, "{}{}", diff.stdout, diff.stderr);
    assert_eq!(
        diff.stdout,
        "~ update tenant shop\n    secret: (changed)\n\
         ~ update tenant fb\n    verify_token: (changed)\n\
         2 resources to change.\n"
    );

    apply_ok(&s, dir.path(), &["--rotate-secrets"]).await;
    let secrets = s.admin().await.list_secrets("shop").await.unwrap();
    assert_eq!(
        secrets.len(),
        2,
        "the old secret stays accepted: {secrets:?}"
    );
    let secret = Secret::from_provider(Scheme::Standard, "k", NEW).unwrap();
    let body = br#"{"type":"order.paid","id":8}"#;
    let mut headers = sign(Scheme::Standard, &secret, "evt_2", s.clock_secs(), body);
    headers.push(("content-type".into(), "application/json".into()));
    assert_eq!(
        s.post("shop", &headers, body).await.status,
        StatusCode::ACCEPTED
    );
}

/// A tenant with its own Slack sink (secret from `shop.secret`) and two
/// overrides, and one with `alerts: {}`.
const ALERTS_FILE: &str = r#"
version: 1
tenants:
  - id: shop
    secret: {file: shop.secret}
    alerts:
      sink: {url: "http://127.0.0.1:9/alerts", format: slack, secret: {file: shop.secret}}
      rules:
        - {type: route.failing, threshold: 3, mode: first_failure}
        - {type: verification.failure_spike, enabled: false}
  - id: quiet
    alerts: {}
"#;

/// The rule of `kind` in `settings`.
fn rule<'a>(settings: &'a AlertSettings, kind: &str) -> &'a AlertRule {
    settings.rules.iter().find(|r| r.r#type == kind).unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn alerts_applied_twice_change_nothing_the_second_time() {
    let s = TestServer::start(LOCAL_DESTINATIONS);
    let dir = workdir(ALERTS_FILE);
    let first = apply_ok(&s, dir.path(), &[]).await;
    assert!(first.contains("+ create alerts shop"), "{first}");
    assert!(first.contains("sink.secret: (set)"), "{first}");
    assert!(!first.contains("alerts quiet"), "{first}");
    assert!(!first.contains(SHOP_SECRET), "{first}");

    let second = apply_ok(&s, dir.path(), &[]).await;
    assert!(
        second.starts_with("No changes: hookd matches the file."),
        "{second}"
    );
    let settings = s.admin().await.get_alert_settings("shop").await.unwrap();
    let sink = settings.sink.clone().unwrap();
    assert_eq!(sink.url, "http://127.0.0.1:9/alerts");
    assert_eq!(sink.format, i32::from(AlertSinkFormat::Slack));
    assert!(sink.has_secret);
    let failing = rule(&settings, "route.failing");
    assert_eq!(
        (failing.threshold, failing.mode.as_str()),
        (3, "first_failure")
    );
    assert!(!rule(&settings, "verification.failure_spike").enabled);

    // A sink given without a secret gets one from hookd, shown this once.
    let bare = workdir("tenants: [{id: pager, alerts: {sink: {url: \"http://127.0.0.1:9/a\"}}}]");
    let made = apply_ok(&s, bare.path(), &[]).await;
    assert!(made.contains("generated sink secret: whsec_"), "{made}");
    assert!(made.contains("shown only this once"), "{made}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn diff_shows_exactly_an_alert_rule_changed_over_the_api() {
    let s = TestServer::start(LOCAL_DESTINATIONS);
    let dir = workdir(ALERTS_FILE);
    apply_ok(&s, dir.path(), &[]).await;
    let admin = s.admin().await;
    let changed = AlertSettings {
        sink: Some(AlertSink {
            url: "http://127.0.0.1:9/alerts".into(),
            format: AlertSinkFormat::Slack.into(),
            ..Default::default()
        }),
        rules: vec![
            AlertRule {
                r#type: "route.failing".into(),
                enabled: true,
                threshold: 9,
                window_secs: 0.0,
                mode: "first_failure".into(),
                overridden: false,
            },
            AlertRule {
                r#type: "verification.failure_spike".into(),
                enabled: false,
                ..Default::default()
            },
        ],
    };
    admin.set_alert_settings("shop", changed).await.unwrap();

    let diff = hookctl(&s, dir.path(), &["diff", "-f", "hookd.yaml"], "", &[]).await;
    assert_eq!(diff.code, 2, "{}{}", diff.stdout, diff.stderr);
    let lines: Vec<&str> = diff.stdout.lines().collect();
    assert_eq!(lines.len(), 3, "{}", diff.stdout);
    assert_eq!(lines[0], "~ update alerts shop");
    assert!(lines[1].starts_with("    route.failing: {"), "{}", lines[1]);
    assert_eq!(lines[2], "1 resource to change.");
    let json = hookctl(
        &s,
        dir.path(),
        &["diff", "-f", "hookd.yaml", "--json"],
        "",
        &[],
    )
    .await;
    let plan: Value = serde_json::from_str(&json.stdout).unwrap();
    let fields = &plan["changes"][0]["fields"];
    assert_eq!(fields.as_array().unwrap().len(), 1, "{fields}");
    assert_eq!(fields[0]["field"], "route.failing");
    assert_eq!(fields[0]["old"]["threshold"], 9);
    assert_eq!(fields[0]["new"]["threshold"], 3);

    apply_ok(&s, dir.path(), &[]).await;
    let diff = hookctl(&s, dir.path(), &["diff", "-f", "hookd.yaml"], "", &[]).await;
    assert_eq!(diff.code, 0, "{}", diff.stdout);
    let settings = admin.get_alert_settings("shop").await.unwrap();
    assert!(
        settings.sink.unwrap().has_secret,
        "the sink kept its secret"
    );
}

/// An override made over the API for a type the file does not name is a
/// change too: applying the file takes the type back to the default.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn diff_shows_an_alert_override_the_file_does_not_name() {
    let s = TestServer::start(LOCAL_DESTINATIONS);
    let dir = workdir(ALERTS_FILE);
    apply_ok(&s, dir.path(), &[]).await;
    let admin = s.admin().await;
    let mut settings = admin.get_alert_settings("quiet").await.unwrap();
    assert!(settings.rules.iter().all(|r| !r.overridden), "{settings:?}");
    settings.rules = vec![AlertRule {
        r#type: "handshake.failed".into(),
        enabled: false,
        ..Default::default()
    }];
    admin.set_alert_settings("quiet", settings).await.unwrap();
    let now = admin.get_alert_settings("quiet").await.unwrap();
    assert!(rule(&now, "handshake.failed").overridden);
    assert!(!rule(&now, "route.failing").overridden);

    let diff = hookctl(&s, dir.path(), &["diff", "-f", "hookd.yaml"], "", &[]).await;
    assert_eq!(diff.code, 2, "{}{}", diff.stdout, diff.stderr);
    assert!(
        diff.stdout.contains("~ update alerts quiet"),
        "{}",
        diff.stdout
    );
    assert!(
        diff.stdout.contains("handshake.failed: {\"enabled\":false"),
        "{}",
        diff.stdout
    );

    apply_ok(&s, dir.path(), &[]).await;
    let diff = hookctl(&s, dir.path(), &["diff", "-f", "hookd.yaml"], "", &[]).await;
    assert_eq!(diff.code, 0, "{}", diff.stdout);
    let after = admin.get_alert_settings("quiet").await.unwrap();
    assert!(after.rules.iter().all(|r| !r.overridden), "{after:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn export_then_apply_round_trips_alerts() {
    let s = TestServer::start(LOCAL_DESTINATIONS);
    let dir = workdir(ALERTS_FILE);
    apply_ok(&s, dir.path(), &[]).await;
    let export = hookctl(&s, dir.path(), &["export"], "", &[]).await;
    assert_eq!(export.code, 0, "{}", export.stderr);
    for text in [
        "env: HOOKD_ALERT_SECRET_SHOP",
        "format: slack",
        "type: route.failing",
        "mode: first_failure",
    ] {
        assert!(
            export.stdout.contains(text),
            "{text} in:\n{}",
            export.stdout
        );
    }
    assert!(!export.stdout.contains(SHOP_SECRET), "{}", export.stdout);
    let again = hookctl(&s, dir.path(), &["apply", "-f", "-"], &export.stdout, &[]).await;
    assert_eq!(again.code, 0, "{}", again.stderr);
    assert!(again.stdout.starts_with("No changes"), "{}", again.stdout);

    let other = TestServer::start(LOCAL_DESTINATIONS);
    let secrets = [
        ("HOOKD_SECRET_SHOP", SHOP_SECRET),
        ("HOOKD_SECRET_QUIET", SHOP_SECRET),
        ("HOOKD_ALERT_SECRET_SHOP", SHOP_SECRET),
    ];
    let rebuilt = hookctl(
        &other,
        dir.path(),
        &["apply", "-f", "-"],
        &export.stdout,
        &secrets,
    )
    .await;
    assert_eq!(rebuilt.code, 0, "{}{}", rebuilt.stdout, rebuilt.stderr);
    let copy = hookctl(&other, dir.path(), &["export"], "", &[]).await;
    assert_eq!(
        copy.stdout, export.stdout,
        "the same alerts on the other hookd"
    );
}

const ADAPTIVE_FILE: &str = r#"
version: 1
tenants:
  - id: shop
    secret: {file: shop.secret}
    routes:
      - name: audit
        destination_url: "http://127.0.0.1:9/audit"
        max_in_flight: 16
        adaptive_concurrency: true
        min_in_flight: 2
        latency_target_ms: 250
"#;

/// A route's adaptive concurrency keys are applied, compared and exported
/// like its other settings.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_routes_adaptive_concurrency_is_applied_and_diffed() {
    let s = TestServer::start(LOCAL_DESTINATIONS);
    let dir = workdir(ADAPTIVE_FILE);
    apply_ok(&s, dir.path(), &[]).await;
    let admin = s.admin().await;
    let route = admin.get_route("shop", "audit").await.unwrap();
    assert!(route.adaptive_concurrency, "{route:?}");
    assert_eq!((route.min_in_flight, route.latency_target_ms), (2, 250));
    let diff = hookctl(&s, dir.path(), &["diff", "-f", "hookd.yaml"], "", &[]).await;
    assert_eq!(diff.code, 0, "{}", diff.stdout);

    admin
        .update_route(UpdateRouteRequest {
            tenant_id: "shop".into(),
            name: "audit".into(),
            min_in_flight: Some(4),
            ..Default::default()
        })
        .await
        .unwrap();
    let diff = hookctl(&s, dir.path(), &["diff", "-f", "hookd.yaml"], "", &[]).await;
    assert_eq!(diff.code, 2, "{}{}", diff.stdout, diff.stderr);
    assert!(
        diff.stdout.contains("min_in_flight: 4 -> 2"),
        "{}",
        diff.stdout
    );
    apply_ok(&s, dir.path(), &[]).await;
    assert_eq!(
        admin
            .get_route("shop", "audit")
            .await
            .unwrap()
            .min_in_flight,
        2
    );
    let export = hookctl(&s, dir.path(), &["export"], "", &[]).await;
    assert!(
        export.stdout.contains("adaptive_concurrency: true"),
        "{}",
        export.stdout
    );
}
