//! The client and `hookctl` against hookd's control plane served over a
//! real socket by `hookd-control` itself, on its in-memory fake backend
//! (`hookd_control::fake`, the one fake of the control plane): the bearer
//! header, the paging helpers, status codes, the watch stream and what the
//! CLI prints and exits with.

use std::{
    io::{BufRead, BufReader},
    process::{Command, Stdio},
    sync::Arc,
    time::{Duration, Instant},
};

use futures_util::StreamExt;
use hookd_control::{
    fake::{alert, FakeBackend, FakeServer, ADMIN, GENERATED_SINK_SECRET},
    model::{
        AlertState, AlertView, DeadLetterView, DeliveryEventKind as Kind, DeliveryEventView,
        DeliveryStatus, DeliveryView,
    },
};
use hookd_proto::domain::AlertType;
use hookd_sdk::client::{
    proto::{self, DeliveryEvent},
    Code, DeadLetterFilter, HookdClient,
};

/// The fake with tenants acme, globex, t1, t2 and t3, served.
async fn fake_hookd() -> FakeServer {
    let backend = FakeBackend::new();
    for id in ["t1", "t2", "t3"] {
        backend.add_tenant(id, Some("https://t.test/hooks"));
    }
    FakeServer::start(Arc::new(backend)).await
}

/// Alerts `alr_1` (resolved) to `alr_4` of acme, opened in that order; the
/// others open.
fn seed_alerts(backend: &FakeBackend) {
    for n in 1..=4 {
        let state = match n {
            1 => AlertState::Resolved,
            _ => AlertState::Open,
        };
        backend.add_alert(AlertView {
            state,
            ..alert("acme", &format!("alr_{n}"), AlertType::RouteFailing, n)
        });
    }
}

/// The five tenants of [`fake_hookd`], in the order hookd lists them.
const TENANTS: [&str; 5] = ["acme", "globex", "t1", "t2", "t3"];

async fn admin(server: &FakeServer) -> HookdClient {
    HookdClient::connect(server.endpoint.clone(), ADMIN)
        .await
        .expect("connect")
}

/// Waits until the backend has served `method`.
async fn called(backend: &FakeBackend, method: &str) {
    let deadline = Instant::now() + Duration::from_secs(10);
    while !backend.calls().contains(&method) {
        assert!(
            Instant::now() < deadline,
            "{method} never called: {:?}",
            backend.calls()
        );
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
}

fn accepted(delivery_id: &str) -> DeliveryEventView {
    DeliveryEventView {
        kind: Kind::Accepted,
        tenant_id: "acme".into(),
        delivery_id: delivery_id.into(),
        event_id: format!("evt_{delivery_id}"),
        at_ms: 1_700_000_000_000,
        attempt: None,
        status_code: None,
        reason: None,
        redelivered_as: None,
        next_attempt_at_ms: None,
    }
}

#[tokio::test]
async fn list_all_tenants_follows_every_page_with_the_token() {
    let server = fake_hookd().await;
    server.backend.limit_pages(2);
    let ids: Vec<String> = admin(&server)
        .await
        .list_all_tenants()
        .await
        .expect("all pages")
        .into_iter()
        .map(|tenant| tenant.tenant_id)
        .collect();
    assert_eq!(ids, TENANTS);
    let pages = server
        .backend
        .calls()
        .iter()
        .filter(|c| **c == "list_tenants")
        .count();
    assert_eq!(pages, 3, "pages of two");
}

#[tokio::test]
async fn statuses_keep_their_code_and_message() {
    let server = fake_hookd().await;
    let wrong = HookdClient::connect(server.endpoint.as_str(), "nope")
        .await
        .expect("connect");
    let err = wrong.list_all_tenants().await.expect_err("bad token");
    assert_eq!(err.code(), Code::Unauthenticated);
    assert!(
        server.backend.calls().is_empty(),
        "refused before the backend"
    );

    let err = admin(&server)
        .await
        .get_tenant("ghost")
        .await
        .expect_err("unknown tenant");
    assert_eq!(err.code(), Code::NotFound);
    assert_eq!(err.to_string(), "NOT_FOUND: no tenant has the id \"ghost\"");
}

#[tokio::test]
async fn list_all_dead_letters_sends_the_filter_on_every_page() {
    let server = fake_hookd().await;
    server.backend.limit_pages(2);
    for (n, reason) in [(1, "503"), (2, "400 Bad Request"), (3, "503"), (4, "503")] {
        server.backend.add_dead_letter(DeadLetterView {
            tenant_id: "acme".into(),
            delivery_id: format!("dlv_{n}"),
            event_id: format!("evt_{n}"),
            reason: format!("last: {reason}"),
            dead_at_ms: 1_700_000_000_000,
            attempt_count: 5,
            last_status_code: None,
            route: "default".into(),
        });
    }
    let filter = DeadLetterFilter {
        reason_contains: "503".to_owned(),
        ..Default::default()
    };
    let dead = admin(&server)
        .await
        .list_all_dead_letters("acme", &filter)
        .await
        .expect("all pages");
    let ids: Vec<&str> = dead.iter().map(|d| d.delivery_id.as_str()).collect();
    assert_eq!(ids, ["dlv_1", "dlv_3", "dlv_4"]);
    let pages = server
        .backend
        .calls()
        .iter()
        .filter(|c| **c == "list_dead_letters")
        .count();
    assert_eq!(pages, 2, "the second page is filtered too");
}

#[tokio::test]
async fn watch_deliveries_yields_events_until_the_stream_ends() {
    let server = fake_hookd().await;
    let mut events = admin(&server)
        .await
        .watch_deliveries("")
        .await
        .expect("watch");
    called(&server.backend, "watch").await;
    for id in ["dlv_1", "dlv_2"] {
        server.backend.events.send(accepted(id)).expect("a watcher");
    }
    let mut seen: Vec<DeliveryEvent> = Vec::new();
    for _ in 0..2 {
        seen.push(
            events
                .next()
                .await
                .expect("an event")
                .expect("not an error"),
        );
    }
    server.stop().await;
    let end = events.next().await.expect("hookd's last word");
    assert_eq!(end.expect_err("stopping").code(), Code::Unavailable);
    assert!(events.next().await.is_none(), "then the stream ends");
    let ids: Vec<&str> = seen.iter().map(|e| e.delivery_id.as_str()).collect();
    assert_eq!(ids, ["dlv_1", "dlv_2"]);
}

/// Runs `hookctl` against `endpoint` off the runtime's threads, so the fake keeps serving.
async fn hookctl(endpoint: &str, args: &[&str]) -> (Option<i32>, String, String) {
    let mut command = Command::new(env!("CARGO_BIN_EXE_hookctl"));
    command
        .args(["--endpoint", endpoint])
        .args(args)
        .env_remove("HOOKCTL_TOKEN")
        .env("HOOKD_ADMIN_TOKEN", ADMIN);
    let output = tokio::task::spawn_blocking(move || command.output())
        .await
        .expect("join")
        .expect("hookctl runs");
    (
        output.status.code(),
        String::from_utf8_lossy(&output.stdout).into_owned(),
        String::from_utf8_lossy(&output.stderr).into_owned(),
    )
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn hookctl_prints_tables_and_json_and_exits_by_status() {
    let server = fake_hookd().await;
    let endpoint = server.endpoint.as_str();

    let (code, out, err) = hookctl(endpoint, &["--json", "tenants", "list"]).await;
    assert_eq!(code, Some(0), "{err}");
    let document: serde_json::Value = serde_json::from_str(&out).expect("one JSON document");
    assert_eq!(document["tenants"].as_array().map(Vec::len), Some(5));
    assert_eq!(document["tenants"][4]["ingest_path"], "/hooks/t3");

    let (code, out, _) = hookctl(endpoint, &["tenants", "list"]).await;
    assert_eq!(code, Some(0));
    let header = out.lines().next().expect("header line");
    assert!(header.starts_with("TENANT_ID  SCHEME"), "{out}");
    assert_eq!(out.lines().count(), 6, "{out}");

    let (code, _, err) = hookctl(endpoint, &["tenants", "get", "ghost"]).await;
    assert_eq!(code, Some(3), "{err}");
    assert!(err.contains("NOT_FOUND"), "{err}");

    let (code, _, err) = hookctl(endpoint, &["--token", "nope", "tenants", "list"]).await;
    assert_eq!(code, Some(4), "{err}");

    let (code, _, err) = hookctl(endpoint, &["tenants", "create", "acme"]).await;
    assert_eq!(code, Some(5), "{err}");
    assert!(err.contains("ALREADY_EXISTS"), "{err}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn hookctl_shows_new_secrets_once_with_a_warning() {
    let server = fake_hookd().await;
    let endpoint = server.endpoint.as_str();
    let (code, out, err) = hookctl(endpoint, &["tenants", "create", "initech"]).await;
    assert_eq!(code, Some(0), "{err}");
    assert!(out.contains("whsec_c2VjcmV0"), "{out}");
    assert!(out.contains("whsec_ZGVzdA=="), "{out}");
    assert!(out.contains("shown only this once"), "{out}");

    let (code, out, err) = hookctl(endpoint, &["--json", "tenants", "create", "umbrella"]).await;
    assert_eq!(code, Some(0), "{err}");
    let document: serde_json::Value = serde_json::from_str(&out).expect("stdout is JSON only");
    assert_eq!(document["destination_secret"], "whsec_ZGVzdA==");
    assert!(err.contains("shown only this once"), "{err}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn hookctl_tail_prints_one_line_per_event() {
    let server = fake_hookd().await;
    let mut child = Command::new(env!("CARGO_BIN_EXE_hookctl"))
        .args([
            "--endpoint",
            &server.endpoint,
            "--json",
            "tail",
            "--tenant",
            "acme",
        ])
        .env_remove("HOOKCTL_TOKEN")
        .env("HOOKD_ADMIN_TOKEN", ADMIN)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("hookctl runs");
    let stdout = child.stdout.take().expect("stdout");
    let lines = tokio::task::spawn_blocking(move || {
        BufReader::new(stdout)
            .lines()
            .take(2)
            .map(|line| line.expect("a line"))
            .collect::<Vec<String>>()
    });
    called(&server.backend, "watch").await;
    for id in ["dlv_1", "dlv_2"] {
        server.backend.events.send(accepted(id)).expect("a watcher");
    }
    let lines = lines.await.expect("two lines");
    // hookd stopping ends the stream with UNAVAILABLE: hookctl exits 6.
    server.stop().await;
    let status = tokio::task::spawn_blocking(move || child.wait())
        .await
        .expect("join")
        .expect("hookctl exits");
    assert_eq!(status.code(), Some(6));
    let events: Vec<serde_json::Value> = lines
        .iter()
        .map(|line| serde_json::from_str(line).expect("one JSON value per line"))
        .collect();
    assert_eq!(events[1]["kind"], "accepted");
    assert_eq!(events[1]["delivery_id"], "dlv_2");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn hookctl_output_is_a_table_wide_json_or_yaml() {
    let server = fake_hookd().await;
    let endpoint = server.endpoint.as_str();

    let (code, out, err) = hookctl(endpoint, &["--output", "wide", "tenants", "list"]).await;
    assert_eq!(code, Some(0), "{err}");
    let header = out.lines().next().expect("header line");
    for column in [
        "TENANT_ID",
        "INGEST_PATH",
        "MAX_BODY_BYTES",
        "TOLERANCE_SECS",
    ] {
        assert!(header.contains(column), "{column} in {out}");
    }
    assert_eq!(out.lines().count(), 6, "{out}");
    assert!(out.lines().nth(5).unwrap().contains("/hooks/t3"), "{out}");

    let (code, out, err) = hookctl(endpoint, &["-o", "yaml", "tenants", "list"]).await;
    assert_eq!(code, Some(0), "{err}");
    let document: serde_json::Value = serde_norway::from_str(&out).expect("one YAML document");
    assert_eq!(document["tenants"].as_array().map(Vec::len), Some(5));
    assert_eq!(document["tenants"][4]["ingest_path"], "/hooks/t3");

    let (code, out, err) = hookctl(endpoint, &["tenants", "get", "t2", "-o", "yaml"]).await;
    assert_eq!(code, Some(0), "{err}");
    let document: serde_json::Value = serde_norway::from_str(&out).expect("one YAML document");
    assert_eq!(document["tenant_id"], "t2");

    let (code, out, err) = hookctl(endpoint, &["-o", "json", "tenants", "get", "t2"]).await;
    assert_eq!(code, Some(0), "{err}");
    let document: serde_json::Value = serde_json::from_str(&out).expect("one JSON document");
    assert_eq!(document["enabled"], true);

    let (code, out, err) = hookctl(endpoint, &["-o", "wide", "tenants", "get", "t2"]).await;
    assert_eq!(code, Some(0), "{err}");
    assert!(
        out.lines()
            .any(|l| l.starts_with("ingest_path:") && l.ends_with("/hooks/t2")),
        "{out}"
    );

    let (code, _, err) = hookctl(endpoint, &["-o", "xml", "tenants", "list"]).await;
    assert_eq!(code, Some(2), "{err}");
    assert!(err.contains("wide") && err.contains("yaml"), "{err}");
}

#[tokio::test]
async fn route_calls_reach_route_service_and_keep_its_codes() {
    let server = fake_hookd().await;
    let client = admin(&server).await;
    let made = client
        .create_route(hookd_sdk::client::proto::CreateRouteRequest {
            tenant_id: "acme".into(),
            name: "audit".into(),
            filter_json: "{}".into(),
            ..Default::default()
        })
        .await
        .unwrap();
    assert_eq!(
        (made.name.as_str(), made.filter_json.as_str()),
        ("audit", "{}")
    );
    let names: Vec<String> = client
        .list_routes("acme")
        .await
        .unwrap()
        .into_iter()
        .map(|r| r.name)
        .collect();
    assert_eq!(names, ["default", "audit"]);
    let undeletable = client
        .delete_route("acme", "default", true)
        .await
        .unwrap_err();
    assert_eq!(undeletable.code(), Code::FailedPrecondition);
    client.delete_route("acme", "audit", false).await.unwrap();
    let gone = client.get_route("acme", "audit").await.unwrap_err();
    assert_eq!(gone.code(), Code::NotFound);
    assert_eq!(
        server.backend.calls(),
        [
            "create_route",
            "list_routes",
            "delete_route",
            "delete_route",
            "get_route"
        ]
    );
}

#[tokio::test]
async fn alert_calls_reach_alert_service_and_list_all_alerts_follows_pages() {
    let server = fake_hookd().await;
    server.backend.limit_pages(2);
    seed_alerts(&server.backend);
    let client = admin(&server).await;
    let all = client.list_all_alerts("acme", &[]).await.unwrap();
    let ids: Vec<&str> = all.iter().map(|a| a.id.as_str()).collect();
    assert_eq!(ids, ["alr_4", "alr_3", "alr_2", "alr_1"]);
    let open = client
        .list_all_alerts("acme", &[proto::AlertState::Resolved])
        .await
        .unwrap();
    assert_eq!(open.len(), 1);
    let acked = client.acknowledge_alert("acme", "alr_2").await.unwrap();
    assert_eq!(acked.state(), proto::AlertState::Acknowledged);
    let resolved = client.acknowledge_alert("acme", "alr_1").await.unwrap_err();
    assert_eq!(resolved.code(), Code::FailedPrecondition);
    let settings = proto::AlertSettings {
        sink: Some(proto::AlertSink {
            url: "https://ops.test/alerts".into(),
            ..Default::default()
        }),
        rules: vec![],
    };
    let set = client.set_alert_settings("acme", settings).await.unwrap();
    assert_eq!(set.generated_secret, GENERATED_SINK_SECRET);
    let read = client.get_alert_settings("acme").await.unwrap();
    assert_eq!(Some(read), set.settings);
    let lists = server.backend.calls();
    let lists = lists.iter().filter(|c| **c == "list_alerts").count();
    assert_eq!(lists, 3, "two pages of two and one filtered page");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn hookctl_alerts_lists_acknowledges_and_prints_a_new_sink_secret_once() {
    let server = fake_hookd().await;
    seed_alerts(&server.backend);
    let endpoint = server.endpoint.as_str();

    server.backend.limit_pages(2);
    let (code, out, err) = hookctl(endpoint, &["alerts", "list", "acme"]).await;
    assert_eq!(code, Some(0), "{err}");
    assert!(out.starts_with("ID "), "{out}");
    assert_eq!(out.lines().count(), 3, "{out}");
    assert!(err.contains("--page-token 2"), "{err}");
    let (code, out, err) = hookctl(endpoint, &["alerts", "list", "acme", "--all"]).await;
    assert_eq!(code, Some(0), "{err}");
    assert_eq!(out.lines().count(), 5, "{out}");
    let (code, out, err) = hookctl(
        endpoint,
        &["--json", "alerts", "list", "acme", "--state", "resolved"],
    )
    .await;
    assert_eq!(code, Some(0), "{err}");
    let document: serde_json::Value = serde_json::from_str(&out).expect("one JSON document");
    assert_eq!(document["alerts"][0]["id"], "alr_1");
    assert_eq!(document["alerts"][0]["state"], "resolved");
    assert_eq!(document["alerts"].as_array().map(Vec::len), Some(1));

    let (code, out, err) = hookctl(endpoint, &["--json", "alerts", "ack", "acme", "alr_3"]).await;
    assert_eq!(code, Some(0), "{err}");
    let document: serde_json::Value = serde_json::from_str(&out).expect("one JSON document");
    assert_eq!(document["state"], "acknowledged");
    let (code, _, err) = hookctl(endpoint, &["alerts", "ack", "acme", "alr_1"]).await;
    assert_eq!(code, Some(5), "{err}");
    assert!(err.contains("FAILED_PRECONDITION"), "{err}");

    let set = [
        "alerts",
        "settings",
        "set",
        "acme",
        "--sink-url",
        "https://ops.test/alerts",
        "--sink-format",
        "slack",
        "--rule",
        "verification.failure_spike:20:60",
        "--rule",
        "route.failing:1:30:first_failure",
        "--disable",
        "handshake.failed",
    ];
    let (code, out, err) = hookctl(endpoint, &set).await;
    assert_eq!(code, Some(0), "{err}");
    assert!(out.contains(GENERATED_SINK_SECRET), "{out}");
    assert!(out.contains("shown only this once"), "{out}");
    let (code, out, err) = hookctl(endpoint, &set).await;
    assert_eq!(code, Some(0), "{err}");
    assert!(!out.contains("whsec_"), "a kept secret is not shown: {out}");

    let (code, out, err) =
        hookctl(endpoint, &["--json", "alerts", "settings", "get", "acme"]).await;
    assert_eq!(code, Some(0), "{err}");
    let document: serde_json::Value = serde_json::from_str(&out).expect("one JSON document");
    assert_eq!(document["sink"]["url"], "https://ops.test/alerts");
    assert_eq!(document["sink"]["format"], "slack");
    let rule = |kind: &str| {
        document["rules"]
            .as_array()
            .and_then(|rules| rules.iter().find(|r| r["type"] == kind))
            .cloned()
            .unwrap_or_else(|| panic!("no rule {kind} in {document}"))
    };
    assert_eq!(rule("verification.failure_spike")["threshold"], 20);
    assert_eq!(rule("route.failing")["mode"], "first_failure");
    assert_eq!(rule("handshake.failed")["enabled"], false);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn hookctl_alert_settings_refuse_bad_rules_and_secrets_without_echoing_them() {
    let server = fake_hookd().await;
    let endpoint = server.endpoint.as_str();
    let dir = tempfile::tempdir().unwrap();
    let secret_file = dir.path().join("sink-secret");
    std::fs::write(&secret_file, "hunter2\n").unwrap();
    let secret_path = secret_file.to_str().unwrap();
    let with = |extra: &[&'static str]| {
        let mut argv = vec!["alerts", "settings", "set", "acme"];
        argv.extend_from_slice(extra);
        argv
    };
    for usage in [
        with(&[
            "--sink-url",
            "https://ops.test",
            "--rule",
            "route.failing:many:60",
        ]),
        with(&["--sink-url", "https://ops.test", "--no-sink"]),
        with(&["--no-sink", "--sink-format", "slack"]),
        with(&["--no-sink", "--sink-secret-file", "-"]),
        with(&["--rule", "route.failing:1:60"]),
    ] {
        let (code, _, err) = hookctl(endpoint, &usage).await;
        assert_eq!(code, Some(2), "{usage:?}: {err}");
    }
    let mut bad_secret = with(&["--sink-url", "https://ops.test", "--sink-secret-file"]);
    bad_secret.push(secret_path);
    let (code, _, err) = hookctl(endpoint, &bad_secret).await;
    assert_eq!(code, Some(5), "{err}");
    assert!(
        err.contains("sink.secret") && !err.contains("hunter2"),
        "{err}"
    );
    let (code, _, err) = hookctl(
        endpoint,
        &with(&["--no-sink", "--rule", "route.on_fire:1:60"]),
    )
    .await;
    assert_eq!(code, Some(5), "{err}");
    assert!(err.contains("rules[0].type"), "{err}");
    std::fs::write(&secret_file, "whsec_c2VjcmV0\n").unwrap();
    let (code, out, err) = hookctl(endpoint, &bad_secret).await;
    assert_eq!(code, Some(0), "{err}");
    assert!(
        !out.contains("whsec_"),
        "a supplied secret is not shown: {out}"
    );
}

/// Event `n` of acme, delivered on `default`, received at `received_at_ms`.
fn received(n: u32, received_at_ms: i64) -> DeliveryView {
    DeliveryView {
        tenant_id: "acme".into(),
        delivery_id: format!("dlv_{n}"),
        event_id: format!("evt_{n}"),
        status: DeliveryStatus::Delivered,
        received_at_ms,
        attempt_count: 1,
        next_attempt_at_ms: None,
        last_error: None,
        redelivery_of: None,
        redelivered_as: None,
        attempts: Vec::new(),
        redirects: Vec::new(),
        route: "default".into(),
        routes: Vec::new(),
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn hookctl_replays_a_window_into_a_route_and_steers_the_replay() {
    let server = fake_hookd().await;
    for (n, at) in [(1, 1_000), (2, 2_000), (3, 5_000)] {
        server.backend.add_delivery(received(n, at));
    }
    admin(&server)
        .await
        .create_route(proto::CreateRouteRequest {
            tenant_id: "acme".into(),
            name: "crm".into(),
            ..Default::default()
        })
        .await
        .unwrap();
    let endpoint = server.endpoint.as_str();
    let window = [
        "routes", "replay", "acme", "crm", "--since", "1000", "--until", "5000",
    ];

    let (code, out, err) = hookctl(endpoint, &[&window[..], &["--dry-run"]].concat()).await;
    assert_eq!(code, Some(0), "{err}");
    assert_eq!(out, "2 events would be replayed into crm\n");
    let open_ended = [
        "--json",
        "routes",
        "replay",
        "acme",
        "crm",
        "--since",
        "1970-01-01T00:00:01Z",
        "--dry-run",
    ];
    let (code, out, err) = hookctl(endpoint, &open_ended).await;
    assert_eq!(code, Some(0), "{err}");
    let document: serde_json::Value = serde_json::from_str(&out).expect("one JSON document");
    assert_eq!(
        (&document["count"], &document["dry_run"]),
        (&3.into(), &true.into())
    );
    let (code, _, err) = hookctl(endpoint, &window[..4]).await;
    assert_eq!(code, Some(2), "--since is required: {err}");

    let run = [&["--json"][..], &window, &["--rate", "20"]].concat();
    let (code, out, err) = hookctl(endpoint, &run).await;
    assert_eq!(code, Some(0), "{err}");
    let document: serde_json::Value = serde_json::from_str(&out).expect("one JSON document");
    assert_eq!(document["state"], "running", "{document}");
    assert_eq!(document["rate_per_second"], 20, "{document}");
    let id = document["id"].as_str().expect("an id").to_owned();
    let (code, _, err) = hookctl(endpoint, &window).await;
    assert_eq!(code, Some(5), "one replay of a route at a time: {err}");
    assert!(err.contains("FAILED_PRECONDITION"), "{err}");

    let (code, out, err) = hookctl(endpoint, &["routes", "replays", "acme"]).await;
    assert_eq!(code, Some(0), "{err}");
    let mut lines = out.lines();
    assert!(lines.next().is_some_and(|h| h.starts_with("ID ")), "{out}");
    let row: Vec<&str> = lines
        .next()
        .expect("one replay")
        .split_whitespace()
        .collect();
    assert_eq!(row, [id.as_str(), "crm", "running", "0/0", "-"], "{out}");
    let (code, out, _) =
        hookctl(endpoint, &["routes", "replays", "acme", "--route", "audit"]).await;
    assert_eq!((code, out.lines().count()), (Some(0), 1), "{out}");

    for (action, state) in [
        ("replay-pause", "paused"),
        ("replay-resume", "running"),
        ("replay-cancel", "cancelled"),
    ] {
        let (code, out, err) = hookctl(endpoint, &["routes", action, "acme", &id]).await;
        assert_eq!(code, Some(0), "{action}: {err}");
        let shown: Vec<&str> = out
            .lines()
            .find(|line| line.starts_with("state"))
            .map(|line| line.split_whitespace().collect())
            .unwrap_or_default();
        assert_eq!(shown, ["state:", state], "{action}: {out}");
    }
    let (code, _, err) = hookctl(endpoint, &["routes", "replay-resume", "acme", &id]).await;
    assert_eq!(code, Some(5), "a cancelled replay is finished: {err}");
    let (code, out, err) = hookctl(
        endpoint,
        &["--json", "routes", "replay-status", "acme", &id],
    )
    .await;
    assert_eq!(code, Some(0), "{err}");
    let document: serde_json::Value = serde_json::from_str(&out).expect("one JSON document");
    assert_eq!(
        (&document["state"], &document["until_unix_ms"]),
        (&"cancelled".into(), &5_000.into())
    );
    let (code, _, err) = hookctl(endpoint, &["routes", "replay-status", "acme", "rpl_nope"]).await;
    assert_eq!(code, Some(3), "{err}");
}
