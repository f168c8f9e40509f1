//! The issues view over real HTTP and the control plane's backend: the
//! dashboard's Alerts page and its Acknowledge form, ListAlerts' pages and
//! filter, and SetAlertSettings' refusals.

use hookd_control::model::{
    AlertFilter, AlertRuleView, AlertSinkFormat, AlertState, NewAlertSettings, NewAlertSink,
    PageRequest,
};
use hookd_sdk::client::proto::CreateTenantRequest;

use super::{advance_until, flapping_tenant, post_with, verified, SINK_SECRET};
use crate::{
    harness::{now_secs, tenant, TestServer},
    receiver::{Receiver, Reply},
};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_issues_page_lists_an_alert_and_acknowledges_it_with_the_pages_csrf_token() {
    use crate::{dashboard::http::Http, harness::ADMIN_TOKEN};
    let sink = Receiver::start(Reply::Status(200)).await;
    let dest = Receiver::start(Reply::Status(200)).await;
    let rules = "[[tenants.alerts.rules]]\ntype = \"verification.failure_spike\"\nthreshold = 2\n";
    let s = TestServer::start_at(&flapping_tenant(&dest.url, &sink.url, rules), now_secs());
    let wrong = "whsec_d3Jvbmctc2VjcmV0LWZyb20tYS1yb3RhdGVkLXByb3ZpZGVy";
    for i in 0..3 {
        assert_eq!(
            post_with(&s, "acme", wrong, &format!("evt_bad_{i}")).await,
            401
        );
    }
    advance_until(&s, &sink, 1, 10).await;
    let events = verified(&sink, SINK_SECRET);
    let alert_id = events[0].1["alert_id"].as_str().unwrap().to_owned();

    let http = Http::new(&s);
    let session = http.sign_in(ADMIN_TOKEN).await;
    let deliveries = http
        .get(&session, "/t/acme/deliveries")
        .await
        .text()
        .await
        .unwrap();
    assert!(
        deliveries.contains("href=\"/t/acme/alerts\""),
        "linked from the tenant's pages"
    );
    let page = http.get(&session, "/t/acme/alerts").await;
    assert_eq!(page.status(), 200);
    let page = page.text().await.unwrap();
    assert!(page.contains("verification.failure_spike"), "{page}");
    assert!(page.contains(&alert_id), "{page}");
    assert!(page.contains(">open<"), "{page}");

    let ack = format!("/t/acme/alerts/{alert_id}/acknowledge");
    let answer = http.submit(&session, "/t/acme/alerts", &ack, &[]).await;
    assert!(
        answer.status().is_success() || answer.status() == 303,
        "{}",
        answer.status()
    );
    let after = http
        .get(&session, "/t/acme/alerts?state=acknowledged")
        .await
        .text()
        .await
        .unwrap();
    assert!(
        after.contains(&alert_id) && after.contains(">acknowledged<"),
        "{after}"
    );
    let forged = http.post_raw(&session.0, &ack, &[("csrf", "forged")]).await;
    assert_eq!(
        forged.status(),
        403,
        "a form without the page's token is refused"
    );
    let listed = s
        .server()
        .control()
        .list_alerts(
            "acme",
            AlertFilter {
                states: vec![AlertState::Acknowledged],
            },
            PageRequest {
                size: 10,
                token: None,
            },
        )
        .await
        .unwrap();
    assert_eq!(listed.items.len(), 1);
    assert!(listed.items[0].acknowledged_at_unix_ms.is_some());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn bad_alert_settings_are_refused_naming_the_field_and_change_nothing() {
    use hookd_control::Error;
    let s = TestServer::start_at(
        &tenant("acme", "http://127.0.0.1:9/", "", "", ""),
        now_secs(),
    );
    s.admin()
        .await
        .create_tenant(CreateTenantRequest {
            tenant_id: "shop".into(),
            ..Default::default()
        })
        .await
        .unwrap();
    let control = s.server().control();
    let sink = |url: &str, secret: Option<&str>| NewAlertSettings {
        sink: Some(NewAlertSink {
            url: url.into(),
            format: AlertSinkFormat::Slack,
            secret: secret.map(str::to_owned),
        }),
        rules: Vec::new(),
    };
    let good = "https://ops.example.com/alerts";
    let refused = [
        (sink("ftp://ops.example.com/", None), "sink.url"),
        (sink("http://10.0.0.7/alerts", None), "sink.url"),
        (sink(good, Some("not-a-secret")), "sink.secret"),
        (
            NewAlertSettings {
                sink: None,
                rules: vec![AlertRuleView {
                    alert_type: "route.on_fire".into(),
                    enabled: true,
                    threshold: 0,
                    window_secs: 0.0,
                    mode: None,
                    overridden: false,
                }],
            },
            "rules[0].type",
        ),
        (
            NewAlertSettings {
                sink: None,
                rules: vec![AlertRuleView {
                    alert_type: "route.failing".into(),
                    enabled: true,
                    threshold: 1,
                    window_secs: 0.5,
                    mode: Some("sometimes".into()),
                    overridden: false,
                }],
            },
            "rules[0].window_secs",
        ),
    ];
    for (settings, field) in refused {
        match control.set_alert_settings("shop", settings).await {
            Err(Error::InvalidArgument(why)) => assert!(why.starts_with(field), "{why}"),
            other => panic!("{field}: {other:?}"),
        }
    }
    let unchanged = control.get_alert_settings("shop").await.unwrap();
    assert_eq!(unchanged.sink, None);
    assert_eq!(
        unchanged.rules.len(),
        10,
        "every type, its default filled in"
    );
    match control.set_alert_settings("acme", sink(good, None)).await {
        Err(Error::FailedPrecondition(why)) => assert!(why.contains("config file"), "{why}"),
        other => panic!("a config-file tenant: {other:?}"),
    }

    let set = control
        .set_alert_settings("shop", sink(good, Some(SINK_SECRET)))
        .await
        .unwrap();
    assert_eq!(set.generated_secret, None, "a given secret is not echoed");
    let again = control
        .set_alert_settings("shop", sink(good, None))
        .await
        .unwrap();
    assert_eq!(
        again.generated_secret, None,
        "an existing sink keeps its secret"
    );
    let view = again.settings.sink.unwrap();
    assert_eq!(
        (view.url.as_str(), view.format, view.has_secret),
        (good, AlertSinkFormat::Slack, true)
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn alerts_list_newest_first_in_pages_and_by_state() {
    use hookd_control::Error;
    let dest = Receiver::start(Reply::Status(200)).await;
    let sink = Receiver::start(Reply::Status(200)).await;
    let rules = "[[tenants.alerts.rules]]\ntype = \"verification.failure_spike\"\nthreshold = 1\nwindow_secs = 2.0\n";
    let s = TestServer::start_at(&flapping_tenant(&dest.url, &sink.url, rules), now_secs());
    let wrong = "whsec_d3Jvbmctc2VjcmV0LWZyb20tYS1yb3RhdGVkLXByb3ZpZGVy";
    for round in 0..3 {
        assert_eq!(
            post_with(&s, "acme", wrong, &format!("evt_bad_{round}")).await,
            401
        );
        advance_until(&s, &sink, 2 * round + 1, 5).await;
        advance_until(&s, &sink, 2 * round + 2, 10).await;
    }
    let opened: Vec<String> = verified(&sink, SINK_SECRET)
        .into_iter()
        .filter(|(_, e)| e["state"] == "open")
        .map(|(_, e)| e["alert_id"].as_str().unwrap().to_owned())
        .collect();
    assert_eq!(opened.len(), 3, "three alerts, each opened and resolved");
    let control = s.server().control();
    let list = |states: Vec<AlertState>, token: Option<String>| {
        let control = control.clone();
        async move {
            control
                .list_alerts(
                    "acme",
                    AlertFilter { states },
                    PageRequest { size: 2, token },
                )
                .await
        }
    };
    let first = list(vec![], None).await.unwrap();
    let ids: Vec<&str> = first.items.iter().map(|a| a.id.as_str()).collect();
    assert_eq!(
        ids,
        [opened[2].as_str(), opened[1].as_str()],
        "newest first"
    );
    let second = list(vec![], first.next_token.clone()).await.unwrap();
    assert_eq!(second.items.len(), 1);
    assert_eq!(second.items[0].id, opened[0]);
    assert_eq!(second.next_token, None);
    let resolved = list(vec![AlertState::Resolved], None).await.unwrap();
    assert_eq!(resolved.items.len(), 2);
    assert!(list(vec![AlertState::Open], None)
        .await
        .unwrap()
        .items
        .is_empty());
    match list(vec![], Some("alr_not_issued".into())).await {
        Err(Error::InvalidArgument(why)) => assert!(why.contains("page_token"), "{why}"),
        other => panic!("{other:?}"),
    }
    match control.acknowledge_alert("acme", &opened[0]).await {
        Err(Error::FailedPrecondition(why)) => assert!(why.contains("resolved"), "{why}"),
        other => panic!("{other:?}"),
    }
    match control.acknowledge_alert("acme", "alr_unknown").await {
        Err(Error::NotFound(_)) => {}
        other => panic!("{other:?}"),
    }
}
