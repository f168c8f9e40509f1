//! Replays on the dashboard's routes page over plain HTTP: Count says how
//! many events a replay would bring into a route and makes nothing, Replay
//! starts one, and its Pause, Resume and Cancel buttons steer it; bad input,
//! a finished replay, CSRF and the tenant scope are refused.

use hookd_sdk::client::proto::ReplayState;
use reqwest::StatusCode;

use crate::{
    harness::{signed, tenant, TestServer, ADMIN_TOKEN, DEST_SECRET, NOW},
    receiver::{Receiver, Reply},
};

use super::http::{Http, Session};

/// The server's clock when the events are accepted ([`NOW`]).
const SINCE: &str = "2025-11-30T05:20:00Z";

/// Tenants `acme` (to `url`) and `other`; once `crm` is given, acme's route
/// `crm` to it.
fn config(url: &str, crm: Option<&str>) -> String {
    let mut toml = tenant("acme", url, "", "", "");
    if let Some(crm) = crm {
        toml += &format!(
            "[[tenants.routes]]\nname = \"crm\"\n\
             [tenants.routes.destination]\nurl = \"{crm}\"\nsecret = \"{DEST_SECRET}\"\n"
        );
    }
    toml + &tenant("other", url, "", "", "")
}

/// The routes page after posting `form` to `path` in `session`, asserting
/// it answered `status`.
async fn post(
    http: &Http,
    session: &Session,
    path: &str,
    form: &[(&str, &str)],
    status: StatusCode,
) -> String {
    let answer = http.submit(session, "/t/acme/routes", path, form).await;
    assert_eq!(answer.status(), status, "{path} {form:?}");
    answer.text().await.unwrap()
}

/// The replay form's fields: into `route` from [`SINCE`], at `rate`.
fn window<'a>(route: &'a str, rate: &'a str) -> Vec<(&'a str, &'a str)> {
    vec![
        ("route", route),
        ("since", SINCE),
        ("until", ""),
        ("event_type", ""),
        ("rate", rate),
    ]
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_routes_page_counts_starts_and_steers_a_replay() {
    let (dest, crm) = (
        Receiver::start(Reply::Status(200)).await,
        Receiver::start(Reply::Status(200)).await,
    );
    let mut s = TestServer::start(&config(&dest.url, None));
    assert_eq!(s.clock_secs(), NOW);
    for n in 0..5 {
        let event_id = format!("evt_{n}");
        let body = format!(r#"{{"event_id":"{event_id}","type":"order.paid"}}"#).into_bytes();
        let answer = s
            .post("acme", &signed(&event_id, s.clock_secs(), &body), &body)
            .await;
        assert_eq!(answer.status, StatusCode::ACCEPTED, "{answer:?}");
    }
    s.clock.advance_ms(1_000);
    s.restart(&config(&dest.url, Some(&crm.url)));
    let admin = s.admin().await;
    let http = Http::new(&s);
    let session = http.sign_in(ADMIN_TOKEN).await;

    let shown = http.get(&session, "/t/acme/routes").await;
    assert_eq!(shown.status(), StatusCode::OK);
    let shown = shown.text().await.unwrap();
    for wanted in [
        "<h2 id=\"replays\">Replays</h2>",
        "action=\"/t/acme/replays\"",
        "<option value=\"crm\">crm</option>",
        "No replays yet.",
    ] {
        assert!(shown.contains(wanted), "{wanted} in {shown}");
    }
    assert!(
        !shown.contains("<option value=\"default\""),
        "default takes no replay: {shown}"
    );

    // Count: the five events, nothing made; the form keeps what was typed.
    let mut count = window("crm", "1");
    count.push(("dry_run", "1"));
    let counted = post(&http, &session, "/t/acme/replays", &count, StatusCode::OK).await;
    assert!(
        counted.contains("5 events would be replayed into route <code>crm</code>"),
        "{counted}"
    );
    assert!(counted.contains(&format!("value=\"{SINCE}\"")), "{counted}");
    assert!(admin.list_replays("acme", "").await.unwrap().is_empty());

    // Replay, one a second: the clock stands still, so it keeps running.
    let started = post(
        &http,
        &session,
        "/t/acme/replays",
        &window("crm", "1"),
        StatusCode::OK,
    )
    .await;
    let replays = admin.list_replays("acme", "crm").await.unwrap();
    assert_eq!(replays.len(), 1, "{replays:?}");
    let id = replays[0].id.clone();
    assert_eq!(replays[0].rate_per_second, 1);
    for wanted in [
        format!("Replay <code>{id}</code> into route <code>crm</code> started"),
        format!("action=\"/t/acme/replays/{id}/pause\""),
        format!("action=\"/t/acme/replays/{id}/cancel\""),
        "<span class=\"status running\">running</span>".to_owned(),
    ] {
        assert!(started.contains(&wanted), "{wanted} in {started}");
    }
    let busy = post(
        &http,
        &session,
        "/t/acme/replays",
        &window("crm", ""),
        StatusCode::CONFLICT,
    )
    .await;
    assert!(busy.contains("not finished"), "one at a time: {busy}");

    let state = || async { admin.get_replay("acme", &id).await.unwrap().state() };
    let paused = post(
        &http,
        &session,
        &format!("/t/acme/replays/{id}/pause"),
        &[],
        StatusCode::OK,
    )
    .await;
    assert!(paused.contains("paused where it was."), "{paused}");
    assert!(
        paused.contains(&format!("action=\"/t/acme/replays/{id}/resume\"")),
        "{paused}"
    );
    assert_eq!(state().await, ReplayState::Paused);
    let resumed = post(
        &http,
        &session,
        &format!("/t/acme/replays/{id}/resume"),
        &[],
        StatusCode::OK,
    )
    .await;
    assert!(
        resumed.contains("running on from where it stopped."),
        "{resumed}"
    );
    assert_eq!(state().await, ReplayState::Running);
    let cancelled = post(
        &http,
        &session,
        &format!("/t/acme/replays/{id}/cancel"),
        &[],
        StatusCode::OK,
    )
    .await;
    assert!(
        cancelled.contains("cancelled. The deliveries it made stay."),
        "{cancelled}"
    );
    assert!(
        !cancelled.contains(&format!("action=\"/t/acme/replays/{id}/")),
        "a finished replay offers no action: {cancelled}"
    );
    assert_eq!(state().await, ReplayState::Cancelled);
    let finished = post(
        &http,
        &session,
        &format!("/t/acme/replays/{id}/resume"),
        &[],
        StatusCode::CONFLICT,
    )
    .await;
    assert!(finished.contains("role=\"alert\""), "{finished}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn replay_forms_refuse_bad_input_forged_posts_and_other_tenants() {
    let dest = Receiver::start(Reply::Status(200)).await;
    let s = TestServer::start(&config(&dest.url, Some(&dest.url)));
    let http = Http::new(&s);
    let session = http.sign_in(ADMIN_TOKEN).await;

    for (form, status, said) in [
        (window("default", ""), StatusCode::BAD_REQUEST, "default"),
        (window("nope", ""), StatusCode::NOT_FOUND, "nope"),
        (window("crm", "0"), StatusCode::BAD_REQUEST, "rate: "),
        (window("crm", "5001"), StatusCode::BAD_REQUEST, "rate: "),
        (
            vec![("route", "crm"), ("since", "")],
            StatusCode::BAD_REQUEST,
            "since: ",
        ),
        (
            vec![("route", "crm"), ("since", SINCE), ("until", SINCE)],
            StatusCode::BAD_REQUEST,
            "until: ",
        ),
    ] {
        let refused = post(&http, &session, "/t/acme/replays", &form, status).await;
        assert!(refused.contains(said), "{said} in {refused}");
    }
    post(
        &http,
        &session,
        "/t/acme/replays/dlv_1/pause",
        &[],
        StatusCode::BAD_REQUEST,
    )
    .await;
    post(
        &http,
        &session,
        "/t/acme/replays/rpl_01J00000000000000000000000/cancel",
        &[],
        StatusCode::NOT_FOUND,
    )
    .await;
    assert!(s
        .admin()
        .await
        .list_replays("acme", "")
        .await
        .unwrap()
        .is_empty());

    let forged = http
        .post_raw(&session.0, "/t/acme/replays", &window("crm", ""))
        .await;
    assert_eq!(forged.status(), StatusCode::FORBIDDEN, "no CSRF token");

    let token = s
        .admin()
        .await
        .create_token("other", "dash")
        .await
        .unwrap()
        .token;
    let scoped = http.sign_in(&token).await;
    let theirs = http
        .submit(
            &scoped,
            "/t/other/routes",
            "/t/acme/replays",
            &window("crm", ""),
        )
        .await;
    assert_eq!(theirs.status(), StatusCode::FORBIDDEN);
    assert!(s
        .admin()
        .await
        .list_replays("acme", "")
        .await
        .unwrap()
        .is_empty());
}
