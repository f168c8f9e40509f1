//! A tenant's routes on the dashboard over plain HTTP: the routes page of a
//! config-file tenant, one route's dead letters apart from the default
//! route's, "Try on a stored event", which shows the transformed request
//! and sends nothing, and the pages' tenant scope, CSRF and bad input.

use std::time::{Duration, Instant};

use hookd_sdk::client::{
    proto::{DeliveryStatus, ListDeadLettersRequest},
    HookdClient,
};
use hookd_server::testing::DeliveryEventKind;
use reqwest::StatusCode;

use crate::{
    forward::{send, wait_event},
    harness::{tenant, TestServer, ADMIN_TOKEN, DEST_SECRET},
    receiver::{Receiver, Reply},
};

use super::http::{Http, Session};

/// The `audit` route's transform: a path per event type and a header.
const TRANSFORM: &str = r#"addHandler("transform", (request, context) => {
  request.path = "/audit/" + request.body.type;
  request.headers["x-route"] = context.route;
  return request;
});"#;

/// Tenant `shop` forwarding to `url`, with route `audit` (a filter, a
/// transform, `max_in_flight = 3`) forwarding to `url` too.
fn config(url: &str) -> String {
    format!(
        "{}[[tenants.routes]]\nname = \"audit\"\nmax_in_flight = 3\n\
         filter = {{ body = {{ type = \"order.paid\" }} }}\n\
         transform = '''\n{TRANSFORM}\n'''\n\
         [tenants.routes.destination]\nurl = \"{url}/in\"\nsecret = \"{DEST_SECRET}\"\n",
        tenant("shop", url, "", "", "")
    )
}

/// A page's HTML, asserting it answered `status`.
async fn page(http: &Http, session: &Session, path: &str, status: StatusCode) -> String {
    let answer = http.get(session, path).await;
    assert_eq!(answer.status(), status, "{path}");
    answer.text().await.unwrap()
}

/// Polls until `shop`'s route `route` has a dead letter; returns its id.
async fn dead_on(admin: &HookdClient, route: &str) -> String {
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        let dead = admin
            .list_dead_letters(ListDeadLettersRequest {
                tenant_id: "shop".into(),
                route: route.into(),
                ..Default::default()
            })
            .await
            .unwrap()
            .dead_letters;
        if let Some(d) = dead.first() {
            return d.delivery_id.clone();
        }
        assert!(Instant::now() < deadline, "no dead letter on {route}");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

#[tokio::test]
async fn the_routes_page_and_route_service_show_the_concurrency_limit_now() {
    let dest = Receiver::start(Reply::Status(204)).await;
    let s = TestServer::start(&tenant(
        "shop",
        &dest.url,
        "max_in_flight = 8\nadaptive_concurrency = true\nmin_in_flight = 3",
        "",
        "",
    ));
    let http = Http::new(&s);
    let session = http.sign_in(ADMIN_TOKEN).await;
    let wanted = "<td class=\"concurrency-limit\">3</td>";
    // The dispatcher shows its limit once it has looked at its queue.
    let deadline = Instant::now() + Duration::from_secs(10);
    let shown = loop {
        let shown = page(&http, &session, "/t/shop/routes", StatusCode::OK).await;
        if shown.contains(wanted) || Instant::now() > deadline {
            break shown;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    };
    assert!(shown.contains(wanted), "{wanted} in {shown}");
    let route = s.admin().await.get_route("shop", "default").await.unwrap();
    assert_eq!(
        (route.max_in_flight, route.concurrency_limit),
        (8, 3),
        "an adaptive limit starts at min_in_flight"
    );
}

#[tokio::test]
async fn the_routes_page_lists_a_config_file_tenants_routes() {
    let dest = Receiver::start(Reply::Status(204)).await;
    let s = TestServer::start(&config(&dest.url));
    let http = Http::new(&s);
    let session = http.sign_in(ADMIN_TOKEN).await;
    let shown = page(&http, &session, "/t/shop/routes", StatusCode::OK).await;
    for wanted in [
        ">default<",
        ">audit<",
        &format!("{}/in", dest.url),
        "<td class=\"max-in-flight\">3</td>",
        "&quot;type&quot;: &quot;order.paid&quot;",
        "/t/shop/dead-letters?route=audit",
        "/t/shop/deliveries?route=audit",
        "/t/shop/routes/audit/test",
    ] {
        assert!(shown.contains(wanted), "{wanted} in {shown}");
    }
    let version = shown
        .split("class=\"transform-version\"><code>")
        .nth(1)
        .and_then(|rest| rest.split('<').next())
        .unwrap_or_default();
    assert!(
        version.len() == 8 && version.chars().all(|c| c.is_ascii_hexdigit()),
        "{version:?} in {shown}"
    );
    let deliveries = page(&http, &session, "/t/shop/deliveries", StatusCode::OK).await;
    assert!(
        deliveries.contains("href=\"/t/shop/routes\""),
        "in the navigation"
    );
}

#[tokio::test]
async fn a_routes_dead_letters_page_lists_that_routes_and_not_the_defaults() {
    let dest = Receiver::start(Reply::Status(400)).await;
    let s = TestServer::start_live(&config(&dest.url));
    let mut feed = s.server().services().feed.subscribe();
    let default_id = send(&s, "shop", "evt_both").await;
    wait_event(&mut feed, &default_id, DeliveryEventKind::DeadLettered).await;
    let admin = s.admin().await;
    let audit_id = dead_on(&admin, "audit").await;
    assert_ne!(audit_id, default_id);
    let http = Http::new(&s);
    let session = http.sign_in(ADMIN_TOKEN).await;

    let audit = page(
        &http,
        &session,
        "/t/shop/dead-letters?route=audit",
        StatusCode::OK,
    )
    .await;
    assert!(audit.contains(&audit_id), "{audit}");
    assert!(!audit.contains(&default_id), "{audit}");
    assert!(
        audit.contains("<input type=\"hidden\" name=\"route\" value=\"audit\">"),
        "the redeliver forms keep the route: {audit}"
    );
    let default = page(&http, &session, "/t/shop/dead-letters", StatusCode::OK).await;
    assert!(default.contains(&default_id) && !default.contains(&audit_id));
    let deliveries = page(
        &http,
        &session,
        "/t/shop/deliveries?route=audit",
        StatusCode::OK,
    )
    .await;
    assert!(deliveries.contains(&audit_id) && !deliveries.contains(&default_id));

    // Redeliver by filter on the route acts on that route only.
    let redelivered = http
        .submit(
            &session,
            "/t/shop/dead-letters?route=audit",
            "/t/shop/dead-letters/redeliver",
            &[("scope", "matching"), ("route", "audit")],
        )
        .await;
    assert_eq!(redelivered.status(), StatusCode::OK);
    assert!(redelivered.text().await.unwrap().contains("Queued 1 "));
    let original = admin.get_delivery("shop", &default_id).await.unwrap();
    assert_eq!(
        original.status(),
        DeliveryStatus::Dead,
        "the default's is untouched"
    );

    let unknown = page(
        &http,
        &session,
        "/t/shop/dead-letters?route=nope",
        StatusCode::NOT_FOUND,
    )
    .await;
    assert!(unknown.contains("role=\"alert\""), "{unknown}");
    assert!(unknown.contains("nope"), "{unknown}");
}

#[tokio::test]
async fn trying_a_route_on_a_stored_delivery_shows_the_transformed_request_and_sends_nothing() {
    let dest = Receiver::start(Reply::Status(204)).await;
    let s = TestServer::start(&config(&dest.url));
    let id = send(&s, "shop", "evt_try").await;
    dest.wait_for(2, Duration::from_secs(10)).await;
    let http = Http::new(&s);
    let session = http.sign_in(ADMIN_TOKEN).await;
    let delivery = page(
        &http,
        &session,
        &format!("/t/shop/deliveries/{id}"),
        StatusCode::OK,
    )
    .await;
    let link = format!("/t/shop/routes/audit/test?delivery_id={id}");
    assert!(delivery.contains(&link), "Try on route audit: {delivery}");
    let form = page(&http, &session, &link, StatusCode::OK).await;
    assert!(form.contains(&format!("value=\"{id}\"")), "{form}");

    let tried = http
        .submit(
            &session,
            &link,
            "/t/shop/routes/audit/test",
            &[("delivery_id", &id), ("body", "")],
        )
        .await;
    assert_eq!(tried.status(), StatusCode::OK);
    let result = tried.text().await.unwrap();
    for wanted in [
        "<strong>Filter passed</strong>",
        "<code id=\"tested-method\">POST</code>",
        "<code id=\"tested-path\">/audit/order.paid</code>",
        "x-route",
        "&quot;event_id&quot;: &quot;evt_try&quot;",
    ] {
        assert!(result.contains(wanted), "{wanted} in {result}");
    }
    tokio::time::sleep(Duration::from_millis(100)).await;
    assert_eq!(dest.received().len(), 2, "the test sent nothing");

    // A pasted body the filter refuses.
    let refused = http
        .submit(
            &session,
            "/t/shop/routes/audit/test",
            "/t/shop/routes/audit/test",
            &[("delivery_id", ""), ("body", r#"{"type":"order.lost"}"#)],
        )
        .await;
    assert_eq!(refused.status(), StatusCode::OK);
    let result = refused.text().await.unwrap();
    assert!(
        result.contains("<strong>Filter did not pass</strong>"),
        "{result}"
    );
}

#[tokio::test]
async fn route_pages_keep_tenant_scope_csrf_and_name_bad_input() {
    let dest = Receiver::start(Reply::Status(204)).await;
    let s = TestServer::start(&(config(&dest.url) + &tenant("other", &dest.url, "", "", "")));
    let token = s
        .admin()
        .await
        .create_token("other", "dash")
        .await
        .unwrap()
        .token;
    let http = Http::new(&s);
    let scoped = http.sign_in(&token).await;
    for path in ["/t/shop/routes", "/t/shop/routes/audit/test"] {
        page(&http, &scoped, path, StatusCode::FORBIDDEN).await;
    }
    page(&http, &scoped, "/t/other/routes", StatusCode::OK).await;

    let admin = http.sign_in(ADMIN_TOKEN).await;
    let unknown = page(
        &http,
        &admin,
        "/t/shop/routes/nope/test",
        StatusCode::NOT_FOUND,
    )
    .await;
    assert!(unknown.contains("nope"), "{unknown}");
    page(
        &http,
        &admin,
        "/t/shop/deliveries?route=nope",
        StatusCode::NOT_FOUND,
    )
    .await;
    page(
        &http,
        &admin,
        "/t/shop/deliveries?route=Not%20a%20route",
        StatusCode::BAD_REQUEST,
    )
    .await;
    let forged = http
        .post_raw(
            &admin.0,
            "/t/shop/routes/audit/test",
            &[("delivery_id", ""), ("body", "{}")],
        )
        .await;
    assert_eq!(forged.status(), StatusCode::FORBIDDEN, "no CSRF token");
    let neither = http
        .submit(
            &admin,
            "/t/shop/routes/audit/test",
            "/t/shop/routes/audit/test",
            &[("delivery_id", ""), ("body", "")],
        )
        .await;
    assert_eq!(neither.status(), StatusCode::BAD_REQUEST);
    assert!(neither
        .text()
        .await
        .unwrap()
        .contains("delivery id or a pasted body"));
}
