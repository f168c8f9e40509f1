//! Replaying stored events into a route, over real HTTP, gRPC and REST on
//! sled: a dry run counts exactly what the run then delivers; the run
//! brings the events of its window that match and pass the route's filter
//! to the route once each, in accept order, at its rate on the server's
//! clock; events the route has (live, or from an earlier replay) are
//! skipped; a replay is paused, resumed and cancelled, and one route has
//! one replay at a time.

use std::time::{Duration, Instant};

use hookd_sdk::client::{
    proto::{Replay, ReplayState, ReplayToRouteRequest},
    Code, HookdClient,
};
use reqwest::StatusCode;
use serde_json::{json, Value};

use crate::{
    harness::{now_secs, signed, tenant, TestServer, ADMIN_TOKEN, DEST_SECRET},
    receiver::{Receiver, Reply},
};

/// Events stored before the routes exist.
const BEFORE: usize = 60;

/// Event `n`: one in three is paid, the others created; its amount is `n`.
fn event(n: usize) -> Vec<u8> {
    let kind = if n.is_multiple_of(3) {
        "order.paid"
    } else {
        "order.created"
    };
    format!(r#"{{"event_id":"evt_{n}","type":"{kind}","data":{{"amount":{n}}}}}"#).into_bytes()
}

/// Posts events `ns` to acme one after another (so their accept order is
/// theirs), each answered 202.
async fn post(s: &TestServer, ns: impl Iterator<Item = usize>) {
    for n in ns {
        let body = event(n);
        let headers = signed(&format!("evt_{n}"), s.clock_secs(), &body);
        let answer = s.post("acme", &headers, &body).await;
        assert_eq!(answer.status, StatusCode::ACCEPTED, "{answer:?}");
    }
}

/// acme with its default route to `default` and, once `routes` is set,
/// `crm` (paid orders of 10 or more, one at a time) and `erp` (all).
fn config(default: &str, routes: Option<(&str, &str)>) -> String {
    let mut toml = tenant("acme", default, "", "", "");
    if let Some((crm, erp)) = routes {
        toml += &format!(
            "[[tenants.routes]]\nname = \"crm\"\nmax_in_flight = 1\n\
             filter = {{ body = {{ data = {{ amount = {{ \"$gte\" = 10 }} }} }} }}\n\
             [tenants.routes.destination]\nurl = \"{crm}\"\nsecret = \"{DEST_SECRET}\"\n\
             [[tenants.routes]]\nname = \"erp\"\n\
             [tenants.routes.destination]\nurl = \"{erp}\"\nsecret = \"{DEST_SECRET}\"\n"
        );
    }
    toml
}

fn asked(route: &str, since_ms: i64, event_type: &str, rate: u32) -> ReplayToRouteRequest {
    ReplayToRouteRequest {
        tenant_id: "acme".into(),
        route: route.into(),
        since_unix_ms: since_ms,
        event_type: event_type.into(),
        rate_per_second: rate,
        ..Default::default()
    }
}

async fn dry_run(admin: &HookdClient, request: &ReplayToRouteRequest) -> u64 {
    let request = ReplayToRouteRequest {
        dry_run: true,
        ..request.clone()
    };
    let answer = admin.replay_to_route(request).await.unwrap();
    assert!(answer.replay.is_none(), "a dry run makes no replay");
    answer.count
}

/// Moves the server's clock a step at a time until replay `id` is done.
async fn until_done(s: &TestServer, admin: &HookdClient, id: &str) -> Replay {
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        let replay = admin.get_replay("acme", id).await.unwrap();
        if replay.state() == ReplayState::Done {
            return replay;
        }
        assert!(Instant::now() < deadline, "not done: {replay:?}");
        s.clock.advance_ms(200);
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
}

/// The amounts of the events `sink` got, in the order it got them.
fn amounts(sink: &Receiver) -> Vec<u64> {
    sink.received()
        .iter()
        .map(|r| {
            let body: Value = serde_json::from_slice(&r.body).unwrap();
            body["data"]["amount"].as_u64().unwrap()
        })
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_replay_brings_history_into_a_new_route_once_each_in_accept_order() {
    let (default, crm, erp) = (
        Receiver::start(Reply::Status(200)).await,
        Receiver::start(Reply::Status(200)).await,
        Receiver::start(Reply::Status(200)).await,
    );
    let mut s = TestServer::start_at(&config(&default.url, None), now_secs());
    let since_ms = s.clock_secs() * 1000;
    post(&s, 0..BEFORE).await;
    s.clock.advance_ms(1_000);
    s.restart(&config(&default.url, Some((&crm.url, &erp.url))));
    // Arrived with the routes in place: on crm live (all pass its filter).
    post(&s, BEFORE..BEFORE + 6).await;
    crm.wait_for(6, Duration::from_secs(10)).await;
    // A replay's window ends when it is made, at the latest.
    s.clock.advance_ms(1_000);
    let admin = s.admin().await;

    // Paid orders: 0, 3, ..., 63 (22). Of those, 0..=9 fail crm's filter
    // (4), 60 and 63 are on crm already (2): 16 to replay.
    let paid = asked("crm", since_ms, "order.paid", 50);
    assert_eq!(dry_run(&admin, &paid).await, 16);
    let started = admin.replay_to_route(paid.clone()).await.unwrap();
    assert_eq!(started.count, 0);
    let id = started.replay.unwrap().id;
    assert!(id.starts_with("rpl_"), "{id}");
    let done = until_done(&s, &admin, &id).await;
    assert_eq!(
        (
            done.scanned,
            done.replayed,
            done.filtered,
            done.already_on_route
        ),
        (22, 16, 4, 2),
        "{done:?}"
    );
    assert_eq!((done.not_matched, done.gone), (0, 0), "{done:?}");
    assert!(
        done.finished_at_ms > 0 && done.position_unix_ms > 0,
        "{done:?}"
    );
    crm.wait_for(22, Duration::from_secs(10)).await;
    let replayed: Vec<u64> = (12..BEFORE as u64).step_by(3).collect();
    assert_eq!(
        amounts(&crm),
        [(60..66).collect(), replayed].concat(),
        "live first, then the replayed ones once each in accept order"
    );
    let headers = &crm.received()[6].headers;
    assert!(
        headers
            .iter()
            .any(|(k, _)| k.eq_ignore_ascii_case("webhook-signature")),
        "replayed deliveries are signed as any other: {headers:?}"
    );

    // Again: everything is on crm now, nothing is made twice.
    assert_eq!(dry_run(&admin, &paid).await, 0);
    let again = admin.replay_to_route(paid).await.unwrap().replay.unwrap();
    let again = until_done(&s, &admin, &again.id).await;
    assert_eq!(
        (again.replayed, again.already_on_route),
        (0, 18),
        "{again:?}"
    );
    tokio::time::sleep(Duration::from_millis(300)).await;
    assert_eq!(crm.received().len(), 22, "nothing sent twice");

    // The default route got each event, untouched by replays (a forward
    // in flight at the restart may have been sent again).
    let ids: std::collections::HashSet<String> = default
        .received()
        .iter()
        .filter_map(|r| r.header("webhook-id").map(str::to_owned))
        .collect();
    assert_eq!(ids.len(), BEFORE + 6);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_replay_is_paced_paused_resumed_and_cancelled() {
    let (default, crm, erp) = (
        Receiver::start(Reply::Status(200)).await,
        Receiver::start(Reply::Status(200)).await,
        Receiver::start(Reply::Status(200)).await,
    );
    let mut s = TestServer::start_at(&config(&default.url, None), now_secs());
    let since_ms = s.clock_secs() * 1000;
    post(&s, 0..BEFORE).await;
    s.clock.advance_ms(1_000);
    s.restart(&config(&default.url, Some((&crm.url, &erp.url))));
    let admin = s.admin().await;

    // 20 a second: 2 a step of the server's clock (10 steps a second).
    let every = asked("erp", since_ms, "", 20);
    assert_eq!(dry_run(&admin, &every).await, BEFORE as u64);
    let id = admin
        .replay_to_route(every.clone())
        .await
        .unwrap()
        .replay
        .unwrap()
        .id;
    erp.wait_for(2, Duration::from_secs(10)).await;
    tokio::time::sleep(Duration::from_millis(300)).await;
    assert_eq!(erp.received().len(), 2, "the clock stands still: one step");
    s.clock.advance_ms(200);
    erp.wait_for(4, Duration::from_secs(10)).await;

    let busy = admin.replay_to_route(every.clone()).await.unwrap_err();
    assert_eq!(busy.code(), Code::FailedPrecondition, "{busy}");

    let paused = admin.pause_replay("acme", &id).await.unwrap();
    assert_eq!(paused.state(), ReplayState::Paused);
    let sent = erp.received().len();
    for _ in 0..10 {
        s.clock.advance_ms(200);
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    tokio::time::sleep(Duration::from_millis(300)).await;
    assert_eq!(erp.received().len(), sent, "a paused replay makes nothing");

    let resumed = admin.resume_replay("acme", &id).await.unwrap();
    assert_eq!(resumed.state(), ReplayState::Running);
    s.clock.advance_ms(200);
    erp.wait_for(sent + 2, Duration::from_secs(10)).await;

    let cancelled = admin.cancel_replay("acme", &id).await.unwrap();
    assert_eq!(cancelled.state(), ReplayState::Cancelled);
    assert!(cancelled.finished_at_ms > 0);
    for _ in 0..10 {
        s.clock.advance_ms(200);
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    let shown = admin.get_replay("acme", &id).await.unwrap();
    let made = shown.replayed as usize;
    assert!(made < BEFORE, "{shown:?}");
    tokio::time::sleep(Duration::from_millis(300)).await;
    assert_eq!(erp.received().len(), made, "nothing made after the cancel");
    let finished = admin.resume_replay("acme", &id).await.unwrap_err();
    assert_eq!(finished.code(), Code::FailedPrecondition, "{finished}");

    // A new replay picks up what the cancelled one did not make.
    let rest = admin.replay_to_route(every).await.unwrap().replay.unwrap();
    let rest = until_done(&s, &admin, &rest.id).await;
    assert_eq!(rest.replayed as usize, BEFORE - made, "{rest:?}");
    erp.wait_for(BEFORE, Duration::from_secs(10)).await;
    let mut got = amounts(&erp);
    got.sort_unstable();
    got.dedup();
    assert_eq!(got.len(), BEFORE, "each event once");

    let listed = admin.list_replays("acme", "erp").await.unwrap();
    assert_eq!(listed.len(), 2);
    assert_eq!(listed[0].id, rest.id, "newest first");
    assert!(admin.list_replays("acme", "crm").await.unwrap().is_empty());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn replay_requests_are_checked_and_served_over_rest() {
    let (default, crm, erp) = (
        Receiver::start(Reply::Status(200)).await,
        Receiver::start(Reply::Status(200)).await,
        Receiver::start(Reply::Status(200)).await,
    );
    let mut s = TestServer::start_at(&config(&default.url, None), now_secs());
    let since_ms = s.clock_secs() * 1000;
    post(&s, 0..12).await;
    s.clock.advance_ms(1_000);
    s.restart(&config(&default.url, Some((&crm.url, &erp.url))));
    let admin = s.admin().await;

    let refused = |route: &str, since: i64| asked(route, since, "", 0);
    let default_route = admin
        .replay_to_route(refused("default", since_ms))
        .await
        .unwrap_err();
    assert_eq!(
        default_route.code(),
        Code::InvalidArgument,
        "{default_route}"
    );
    let unknown = admin
        .replay_to_route(refused("nope", since_ms))
        .await
        .unwrap_err();
    assert_eq!(unknown.code(), Code::NotFound, "{unknown}");
    let no_start = admin.replay_to_route(refused("erp", 0)).await.unwrap_err();
    assert_eq!(no_start.code(), Code::InvalidArgument, "{no_start}");
    let future = admin
        .replay_to_route(refused("erp", since_ms + 3_600_000))
        .await
        .unwrap_err();
    assert_eq!(future.code(), Code::InvalidArgument, "{future}");
    let bad_id = admin.get_replay("acme", "dlv_1").await.unwrap_err();
    assert_eq!(bad_id.code(), Code::InvalidArgument, "{bad_id}");
    let no_such = admin
        .get_replay("acme", "rpl_01J00000000000000000000000")
        .await
        .unwrap_err();
    assert_eq!(no_such.code(), Code::NotFound, "{no_such}");

    // REST: a dry run with a body field, then a run, listed and read.
    let base = format!("http://{}/v1/tenants/acme", s.server().grpc_addr());
    let client = reqwest::Client::new();
    let dry: Value = client
        .post(format!("{base}/routes/erp:replay"))
        .bearer_auth(ADMIN_TOKEN)
        .json(&json!({
            "sinceUnixMs": since_ms.to_string(),
            "bodyPointer": "/data/amount",
            "bodyValueJson": "7",
            "dryRun": true,
        }))
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    assert_eq!(dry["count"], "1", "{dry}");
    let run: Value = client
        .post(format!("{base}/routes/erp:replay"))
        .bearer_auth(ADMIN_TOKEN)
        .json(&json!({ "sinceUnixMs": since_ms.to_string(), "bodyPointer": "/data/amount", "bodyValueJson": "7" }))
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    let id = run["replay"]["id"].as_str().unwrap().to_owned();
    let done = until_done(&s, &admin, &id).await;
    assert_eq!((done.replayed, done.not_matched), (1, 11), "{done:?}");
    erp.wait_for(1, Duration::from_secs(10)).await;
    let listed = client
        .get(format!("{base}/replays?route=erp"))
        .bearer_auth(ADMIN_TOKEN)
        .send()
        .await
        .unwrap();
    assert_eq!(listed.status(), StatusCode::OK);
    let listed: Value = listed.json().await.unwrap();
    assert_eq!(listed["replays"][0]["id"], id.as_str(), "{listed}");
    assert_eq!(
        listed["replays"][0]["state"], "REPLAY_STATE_DONE",
        "{listed}"
    );
    let cancel = client
        .post(format!("{base}/replays/{id}:cancel"))
        .bearer_auth(ADMIN_TOKEN)
        .send()
        .await
        .unwrap();
    assert_eq!(
        cancel.status(),
        StatusCode::CONFLICT,
        "a finished replay is not cancelled"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_replay_waits_while_its_route_has_two_seconds_of_it_queued() {
    let (default, crm) = (
        Receiver::start(Reply::Status(200)).await,
        Receiver::start(Reply::Status(200)).await,
    );
    let erp = Receiver::start(Reply::Gated).await;
    let mut s = TestServer::start_at(&config(&default.url, None), now_secs());
    let since_ms = s.clock_secs() * 1000;
    post(&s, 0..BEFORE).await;
    s.clock.advance_ms(1_000);
    s.restart(&config(&default.url, Some((&crm.url, &erp.url))));
    let admin = s.admin().await;

    // 10 a second: at most 20 queued on erp, whose destination holds
    // every request (8 in flight) until the gate opens.
    let id = admin
        .replay_to_route(asked("erp", since_ms, "", 10))
        .await
        .unwrap()
        .replay
        .unwrap()
        .id;
    for _ in 0..30 {
        s.clock.advance_ms(200);
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    let held = admin.get_replay("acme", &id).await.unwrap();
    assert!(
        (20..=22).contains(&held.replayed),
        "30 steps would make 60; the backlog stops it at 20 (and one step): {held:?}"
    );
    erp.open_gate();
    let done = until_done(&s, &admin, &id).await;
    assert_eq!(done.replayed, BEFORE as u64);
    erp.wait_for(BEFORE, Duration::from_secs(10)).await;
}
