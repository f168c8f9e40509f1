//! AlertService against the fake backend: who may call each RPC, which
//! requests are refused before the backend (naming the field), paging of
//! the issues view and the acknowledge transitions.

use hookd_proto::{domain::AlertType, v1::alert_service_server::AlertService};

use super::*;
use crate::{
    fake::{alert, GENERATED_SINK_SECRET},
    model::{AlertState, AlertView},
};

fn alerts(backend: &Arc<FakeBackend>) -> AlertApi<FakeBackend> {
    AlertApi::new(Arc::clone(backend))
}

fn settings_of(tenant_id: &str) -> pb::GetAlertSettingsRequest {
    pb::GetAlertSettingsRequest {
        tenant_id: tenant_id.into(),
    }
}

fn set(tenant_id: &str, settings: pb::AlertSettings) -> pb::SetAlertSettingsRequest {
    pb::SetAlertSettingsRequest {
        tenant_id: tenant_id.into(),
        settings: Some(settings),
    }
}

fn list(tenant_id: &str, page_size: u32, page_token: &str) -> pb::ListAlertsRequest {
    pb::ListAlertsRequest {
        tenant_id: tenant_id.into(),
        states: vec![],
        page_size,
        page_token: page_token.into(),
    }
}

fn ack(tenant_id: &str, alert_id: &str) -> pb::AcknowledgeAlertRequest {
    pb::AcknowledgeAlertRequest {
        tenant_id: tenant_id.into(),
        alert_id: alert_id.into(),
    }
}

fn sink(url: &str) -> pb::AlertSink {
    pb::AlertSink {
        url: url.into(),
        ..Default::default()
    }
}

/// Every RPC of AlertService on `tenant_id` with `token`: the codes, in
/// RPC order (OK for a call that succeeded).
async fn every_rpc(api: &AlertApi<FakeBackend>, token: Option<&str>, tenant_id: &str) -> Vec<Code> {
    let code = |r: Result<(), Status>| r.map_or_else(|s| s.code(), |()| Code::Ok);
    vec![
        code(
            api.get_alert_settings(request(token, settings_of(tenant_id)))
                .await
                .map(drop),
        ),
        code(
            api.set_alert_settings(request(token, set(tenant_id, Default::default())))
                .await
                .map(drop),
        ),
        code(
            api.list_alerts(request(token, list(tenant_id, 0, "")))
                .await
                .map(drop),
        ),
        code(
            api.acknowledge_alert(request(token, ack(tenant_id, "alr_1")))
                .await
                .map(drop),
        ),
    ]
}

#[tokio::test]
async fn a_tenant_token_reaches_its_own_alerts_only_and_the_admin_every_tenant() {
    let backend = Arc::new(FakeBackend::new());
    for tenant_id in ["acme", "globex"] {
        backend.add_alert(alert(tenant_id, "alr_1", AlertType::RouteFailing, 1));
    }
    let api = alerts(&backend);
    let denied = every_rpc(&api, Some(ACME), "globex").await;
    assert_eq!(denied, [Code::PermissionDenied; 4]);
    let anonymous = every_rpc(&api, None, "acme").await;
    assert_eq!(anonymous, [Code::Unauthenticated; 4]);
    let stranger = every_rpc(&api, Some("no-such-token"), "acme").await;
    assert_eq!(stranger, [Code::Unauthenticated; 4]);
    assert!(backend.calls().is_empty(), "{:?}", backend.calls());

    assert_eq!(every_rpc(&api, Some(ACME), "acme").await, [Code::Ok; 4]);
    assert_eq!(every_rpc(&api, Some(ADMIN), "globex").await, [Code::Ok; 4]);
    let (code, message) = refused(
        api.list_alerts(request(Some(ACME), list("globex", 0, "")))
            .await,
    );
    assert_eq!(code, Code::PermissionDenied);
    assert!(message.contains("\"globex\""), "{message}");
}

#[tokio::test]
async fn malformed_requests_are_refused_naming_the_field_before_the_backend() {
    let backend = Arc::new(FakeBackend::new());
    let api = alerts(&backend);
    let rule = |kind: &str, window_secs: f64| pb::AlertRule {
        r#type: kind.into(),
        enabled: true,
        threshold: 5,
        window_secs,
        mode: String::new(),
        overridden: false,
    };
    let bad_settings = [
        (
            pb::AlertSettings {
                sink: None,
                rules: vec![rule("route.failing", 60.0), rule("route.burning", 60.0)],
            },
            "rules[1].type",
        ),
        (
            pb::AlertSettings {
                sink: None,
                rules: vec![rule("handshake.failed", f64::NAN)],
            },
            "rules[0].window_secs",
        ),
        (
            pb::AlertSettings {
                sink: Some(sink("mailto:ops@example.test")),
                rules: vec![],
            },
            "sink.url",
        ),
        (
            pb::AlertSettings {
                sink: Some(pb::AlertSink {
                    secret: "hunter2".into(),
                    ..sink("https://ops.test/alerts")
                }),
                rules: vec![],
            },
            "sink.secret",
        ),
    ];
    for (settings, field) in bad_settings {
        let (code, message) = refused(
            api.set_alert_settings(request(Some(ADMIN), set("acme", settings)))
                .await,
        );
        assert_eq!(code, Code::InvalidArgument, "{message}");
        assert!(message.starts_with(field), "{field}: {message}");
        assert!(!message.contains("hunter2"), "{message}");
    }
    let missing = pb::SetAlertSettingsRequest {
        tenant_id: "acme".into(),
        settings: None,
    };
    let (code, message) = refused(api.set_alert_settings(request(Some(ADMIN), missing)).await);
    assert_eq!(code, Code::InvalidArgument);
    assert!(message.contains("settings is required"), "{message}");
    let unspecified = pb::ListAlertsRequest {
        states: vec![pb::AlertState::Open as i32, 0],
        ..list("acme", 0, "")
    };
    let (code, message) = refused(api.list_alerts(request(Some(ADMIN), unspecified)).await);
    assert_eq!(code, Code::InvalidArgument);
    assert!(message.starts_with("states[1]"), "{message}");
    let (code, message) = refused(
        api.acknowledge_alert(request(Some(ADMIN), ack("acme", "")))
            .await,
    );
    assert_eq!(code, Code::InvalidArgument);
    assert!(message.contains("alert_id"), "{message}");
    let (code, message) = refused(
        api.get_alert_settings(request(Some(ADMIN), settings_of("Acme")))
            .await,
    );
    assert_eq!(code, Code::InvalidArgument);
    assert!(message.contains("tenant_id"), "{message}");
    assert!(backend.calls().is_empty(), "{:?}", backend.calls());
}

#[tokio::test]
async fn settings_are_replaced_whole_and_a_generated_secret_is_shown_once() {
    let backend = Arc::new(FakeBackend::new());
    let api = alerts(&backend);
    let new = pb::AlertSettings {
        sink: Some(pb::AlertSink {
            format: pb::AlertSinkFormat::Slack.into(),
            ..sink("https://ops.test/alerts")
        }),
        rules: vec![pb::AlertRule {
            r#type: "verification.failure_spike".into(),
            enabled: true,
            threshold: 20,
            window_secs: 60.0,
            mode: String::new(),
            overridden: false,
        }],
    };
    let first = api
        .set_alert_settings(request(Some(ACME), set("acme", new.clone())))
        .await
        .unwrap()
        .into_inner();
    assert_eq!(first.generated_secret, GENERATED_SINK_SECRET);
    let shown = first.settings.unwrap();
    let shown_sink = shown.sink.clone().unwrap();
    assert_eq!(
        (shown_sink.secret.as_str(), shown_sink.has_secret),
        ("", true)
    );
    assert_eq!(shown_sink.format(), pb::AlertSinkFormat::Slack);
    let spike = &shown.rules[3];
    assert_eq!(
        (spike.r#type.as_str(), spike.threshold, spike.window_secs),
        ("verification.failure_spike", 20, 60.0)
    );
    let again = api
        .set_alert_settings(request(Some(ACME), set("acme", new)))
        .await
        .unwrap()
        .into_inner();
    assert_eq!(again.generated_secret, "", "the sink keeps its secret");
    let read = api
        .get_alert_settings(request(Some(ADMIN), settings_of("acme")))
        .await
        .unwrap()
        .into_inner();
    assert_eq!(read, shown);
    let (code, _) = refused(
        api.get_alert_settings(request(Some(ADMIN), settings_of("ghost")))
            .await,
    );
    assert_eq!(code, Code::NotFound);
}

#[tokio::test]
async fn the_issues_view_pages_newest_first_and_filters_by_state() {
    let backend = Arc::new(FakeBackend::new());
    backend.limit_pages(2);
    for (n, state) in [
        (1, AlertState::Resolved),
        (2, AlertState::Open),
        (3, AlertState::Acknowledged),
        (4, AlertState::Open),
        (5, AlertState::Open),
    ] {
        backend.add_alert(AlertView {
            state,
            ..alert("acme", &format!("alr_{n}"), AlertType::RouteFailing, n)
        });
    }
    backend.add_alert(alert("globex", "alr_9", AlertType::RouteFailing, 9));
    let api = alerts(&backend);
    let mut ids = Vec::new();
    let mut token = String::new();
    loop {
        let page = api
            .list_alerts(request(Some(ACME), list("acme", 0, &token)))
            .await
            .unwrap()
            .into_inner();
        assert!(page.alerts.len() <= 2);
        ids.extend(page.alerts.into_iter().map(|a| a.id));
        if page.next_page_token.is_empty() {
            break;
        }
        token = page.next_page_token;
    }
    assert_eq!(ids, ["alr_5", "alr_4", "alr_3", "alr_2", "alr_1"]);
    let open = pb::ListAlertsRequest {
        states: vec![
            pb::AlertState::Open as i32,
            pb::AlertState::Acknowledged as i32,
        ],
        ..list("acme", 1000, "")
    };
    backend.limit_pages(u32::MAX);
    let page = api
        .list_alerts(request(Some(ACME), open))
        .await
        .unwrap()
        .into_inner();
    let states: Vec<_> = page.alerts.iter().map(|a| a.state()).collect();
    use pb::AlertState::{Acknowledged, Open};
    assert_eq!(states, [Open, Open, Acknowledged, Open]);
    let (code, message) = refused(
        api.list_alerts(request(Some(ACME), list("acme", 0, "not-a-token")))
            .await,
    );
    assert_eq!(code, Code::InvalidArgument);
    assert!(message.contains("page_token"), "{message}");
}

#[tokio::test]
async fn acknowledging_is_idempotent_and_refused_once_resolved() {
    let backend = Arc::new(FakeBackend::new());
    backend.add_alert(alert("acme", "alr_open", AlertType::HandshakeFailed, 1));
    backend.add_alert(AlertView {
        state: AlertState::Resolved,
        resolved_at_unix_ms: Some(2),
        ..alert("acme", "alr_done", AlertType::HandshakeFailed, 1)
    });
    let api = alerts(&backend);
    let first = api
        .acknowledge_alert(request(Some(ACME), ack("acme", "alr_open")))
        .await
        .unwrap()
        .into_inner();
    assert_eq!(first.state(), pb::AlertState::Acknowledged);
    assert!(first.acknowledged_at_unix_ms > 0);
    let again = api
        .acknowledge_alert(request(Some(ACME), ack("acme", "alr_open")))
        .await
        .unwrap()
        .into_inner();
    assert_eq!(again, first, "no change the second time");
    let (code, message) = refused(
        api.acknowledge_alert(request(Some(ACME), ack("acme", "alr_done")))
            .await,
    );
    assert_eq!(code, Code::FailedPrecondition, "{message}");
    let (code, _) = refused(
        api.acknowledge_alert(request(Some(ACME), ack("acme", "alr_ghost")))
            .await,
    );
    assert_eq!(code, Code::NotFound);
}
