//! A tenant's routes (with their replays, `replays.rs`), the route selector
//! of the deliveries and dead letters pages, and "Try on a stored event".

use actix_web::{web, HttpResponse};
use hookd_control::model::{
    Cancel, Matched, PastedEvent, ReplayAction, RetryNow, RouteTest, RouteTestResult,
    RouteUnderTest, RouteView, TestEvent, TestedRequest, Waiting, DEFAULT_RAMP_SECS, DEFAULT_ROUTE,
};
use maud::{html, Markup};
use serde::Deserialize;

use super::{
    error::DashError,
    layout,
    replays::{self, Outcome, Typed},
    route_param,
    session::Signed,
    tenant_in_path, Dashboard,
};

/// The route selector of a filter form, `chosen` selected.
pub(super) async fn selector(
    dash: &Dashboard,
    tenant: &str,
    chosen: &str,
) -> Result<Markup, DashError> {
    let routes = dash.backend.list_routes(tenant).await?;
    Ok(html! {
        div {
            label for="route" { "Route" }
            select #route name="route" {
                @for r in &routes {
                    option value=(r.name) selected[r.name == chosen] { (r.name) }
                }
            }
        }
    })
}

/// The version each attempt records of a transform: 8 hex digits.
fn version(v: u32) -> String {
    format!("{v:08x}")
}

/// `GET /t/{tenant}/routes`: `default` first.
pub(super) async fn list(
    dash: web::Data<Dashboard>,
    signed: Signed,
    path: web::Path<String>,
) -> Result<HttpResponse, DashError> {
    let tenant = tenant_in_path(&signed, &path)?;
    let body = page(&dash, &signed, &tenant, None).await?;
    Ok(layout::html(layout::page(
        Some(signed.csrf()),
        Some(&tenant),
        "Routes",
        body,
    )))
}

/// What an action on a route or a replay did, shown above the table.
pub(super) enum Done<'a> {
    /// A Retry now: how many it made due.
    Retried(&'a str, Matched),
    /// A Pause or Resume: the route, and whether it is paused now.
    Held(String, bool),
    /// A Cancel held: how many were dead-lettered.
    Cancelled(&'a str, Matched),
    /// A replay counted, started, paused, resumed or cancelled.
    Replay(Outcome),
}

/// The routes page after an action, saying what it did.
pub(super) async fn answer(
    dash: &Dashboard,
    signed: &Signed,
    tenant: &str,
    done: Done<'_>,
) -> Result<HttpResponse, DashError> {
    let body = page(dash, signed, tenant, Some(done)).await?;
    Ok(layout::html(layout::page(
        Some(signed.csrf()),
        Some(tenant),
        "Routes",
        body,
    )))
}

/// The routes page's body, with what an action just did above the table
/// and the tenant's replays below it.
async fn page(
    dash: &Dashboard,
    signed: &Signed,
    tenant: &str,
    done: Option<Done<'_>>,
) -> Result<Markup, DashError> {
    let routes = dash.backend.list_routes(tenant).await?;
    let replays = dash.backend.replays(tenant, None).await?;
    let names: Vec<&str> = routes.iter().map(|r| r.name.as_str()).collect();
    let typed = match &done {
        Some(Done::Replay(Outcome::Counted(_, typed))) => typed.clone(),
        _ => Typed::default(),
    };
    Ok(html! {
        @match &done {
            Some(Done::Retried(route, done)) => p role="status" #retried {
                "Route " code { (route) } ": " (done.matched) " deliveries waiting for their retry are being attempted now"
                @if done.more { " (more wait: retry again for the rest)" }
                "."
            },
            Some(Done::Held(route, paused)) => p role="status" #held {
                "Route " code { (route) } ": "
                @if *paused {
                    "paused. Events are still accepted and stored; nothing is sent until you resume it."
                } @else {
                    "resumed. Its held deliveries are being sent, ramping up to its full concurrency."
                }
            },
            Some(Done::Cancelled(route, done)) => p role="status" #cancelled {
                "Route " code { (route) } ": " (done.matched) " held deliveries dead-lettered as cancelled, nothing sent; redeliver them from Dead letters"
                @if done.more { " (more are held: cancel again for the rest)" }
                "."
            },
            Some(Done::Replay(outcome)) => (replays::status(outcome)),
            None => {},
        }
        div.scroll { table.routes {
            caption { "Routes; " (DEFAULT_ROUTE) " is the tenant's own destination" }
            thead { tr {
                th scope="col" { "Route" } th scope="col" { "Destination" }
                th scope="col" { "Max in flight" } th scope="col" { "Delay" }
                th scope="col" { "Concurrency limit now" } th scope="col" { "Filter" }
                th scope="col" { "Transform" } th scope="col" { "State" }
                th scope="col" { "Pages" }
            } }
            tbody { @for r in &routes { (row(tenant, r, signed)) } }
        } }
        (replays::section(tenant, signed.csrf(), &names, &replays, &typed))
    })
}

/// `POST /t/{tenant}/routes/{route}/retry-now`: every delivery of the
/// route waiting for its retry is attempted now (after its destination
/// came back).
pub(super) async fn retry_now(
    dash: web::Data<Dashboard>,
    signed: Signed,
    path: web::Path<(String, String)>,
    body: web::Bytes,
) -> Result<HttpResponse, DashError> {
    let (tenant, route) = path.into_inner();
    let tenant = tenant_in_path(&signed, &tenant)?;
    signed.form(&body)?;
    let route = route_param(&route)?.to_owned();
    let request = RetryNow {
        route: Some(route.clone()),
        pick: Waiting::All {
            dry_run: false,
            filter: Default::default(),
        },
    };
    let done = dash.backend.retry_now(&tenant, request).await?;
    answer(&dash, &signed, &tenant, Done::Retried(&route, done)).await
}

/// `POST /t/{tenant}/replays`: counts (Count) or starts (Replay) a replay
/// of the form's window into its route.
pub(super) async fn start_replay(
    dash: web::Data<Dashboard>,
    signed: Signed,
    path: web::Path<String>,
    body: web::Bytes,
) -> Result<HttpResponse, DashError> {
    let (tenant, outcome) = replays::start(&dash, &signed, &path, &body).await?;
    answer(&dash, &signed, &tenant, Done::Replay(outcome)).await
}

/// `POST /t/{tenant}/replays/{id}/pause`: stops a running replay where it is.
pub(super) async fn pause_replay(
    dash: web::Data<Dashboard>,
    signed: Signed,
    path: web::Path<(String, String)>,
    body: web::Bytes,
) -> Result<HttpResponse, DashError> {
    steer_replay(dash, signed, path, body, ReplayAction::Pause).await
}

/// `POST /t/{tenant}/replays/{id}/resume`: runs a paused (or failed)
/// replay on from where it stopped.
pub(super) async fn resume_replay(
    dash: web::Data<Dashboard>,
    signed: Signed,
    path: web::Path<(String, String)>,
    body: web::Bytes,
) -> Result<HttpResponse, DashError> {
    steer_replay(dash, signed, path, body, ReplayAction::Resume).await
}

/// `POST /t/{tenant}/replays/{id}/cancel`: ends a replay for good; the
/// deliveries it made stay.
pub(super) async fn cancel_replay(
    dash: web::Data<Dashboard>,
    signed: Signed,
    path: web::Path<(String, String)>,
    body: web::Bytes,
) -> Result<HttpResponse, DashError> {
    steer_replay(dash, signed, path, body, ReplayAction::Cancel).await
}

async fn steer_replay(
    dash: web::Data<Dashboard>,
    signed: Signed,
    path: web::Path<(String, String)>,
    body: web::Bytes,
    action: ReplayAction,
) -> Result<HttpResponse, DashError> {
    let (tenant, id) = path.into_inner();
    let (tenant, outcome) = replays::steer(&dash, &signed, (&tenant, &id), &body, action).await?;
    answer(&dash, &signed, &tenant, Done::Replay(outcome)).await
}

/// `POST /t/{tenant}/routes/{route}/cancel-held`: every delivery a paused
/// route holds is dead-lettered as cancelled, nothing sent (redeliverable).
pub(super) async fn cancel_held(
    dash: web::Data<Dashboard>,
    signed: Signed,
    path: web::Path<(String, String)>,
    body: web::Bytes,
) -> Result<HttpResponse, DashError> {
    let (tenant, route) = path.into_inner();
    let tenant = tenant_in_path(&signed, &tenant)?;
    signed.form(&body)?;
    let route = route_param(&route)?.to_owned();
    let paused = dash.backend.get_route(&tenant, &route).await?.hold.paused;
    if !paused {
        return Err(DashError::Conflict(format!(
            "route {route} is not paused: pause it before cancelling what it holds"
        )));
    }
    let request = Cancel {
        route: Some(route.clone()),
        pick: Waiting::All {
            dry_run: false,
            filter: Default::default(),
        },
    };
    let done = dash.backend.cancel_deliveries(&tenant, request).await?;
    answer(&dash, &signed, &tenant, Done::Cancelled(&route, done)).await
}

/// `POST /t/{tenant}/routes/{route}/pause`: holds the route (events are
/// still accepted and stored, nothing is sent).
pub(super) async fn pause(
    dash: web::Data<Dashboard>,
    signed: Signed,
    path: web::Path<(String, String)>,
    body: web::Bytes,
) -> Result<HttpResponse, DashError> {
    hold(dash, signed, path.into_inner(), body, false).await
}

/// `POST /t/{tenant}/routes/{route}/resume`: lets a paused route send
/// again at the default ramp.
pub(super) async fn resume(
    dash: web::Data<Dashboard>,
    signed: Signed,
    path: web::Path<(String, String)>,
    body: web::Bytes,
) -> Result<HttpResponse, DashError> {
    hold(dash, signed, path.into_inner(), body, true).await
}

async fn hold(
    dash: web::Data<Dashboard>,
    signed: Signed,
    (tenant, route): (String, String),
    body: web::Bytes,
    resume: bool,
) -> Result<HttpResponse, DashError> {
    let tenant = tenant_in_path(&signed, &tenant)?;
    signed.form(&body)?;
    let route = route_param(&route)?.to_owned();
    let view = match resume {
        false => dash.backend.pause_route(&tenant, &route).await?,
        true => {
            dash.backend
                .resume_route(&tenant, &route, DEFAULT_RAMP_SECS)
                .await?
        }
    };
    answer(
        &dash,
        &signed,
        &tenant,
        Done::Held(view.name, view.hold.paused),
    )
    .await
}

fn row(tenant: &str, r: &RouteView, signed: &Signed) -> Markup {
    let on_route = layout::query(&[("route", &r.name)]);
    html! {
        tr {
            th scope="row" { code { (r.name) } }
            td { @match &r.destination_url { Some(url) => code { (url) }, None => "pulled" } }
            td.max-in-flight { (r.max_in_flight) }
            td.delay { @if r.delay_ms == 0 { "none" } @else { (layout::span_ms(r.delay_ms)) } }
            td.concurrency-limit { @match r.concurrency_limit {
                Some(limit) => (limit),
                None => "not forwarding",
            } }
            td { @match &r.filter_json {
                Some(json) => pre.filter tabindex="0" { (layout::pretty(json.as_bytes())) },
                None => "every event",
            } }
            td.transform-version { @match r.transform_version {
                Some(v) => code { (version(v)) },
                None => "none",
            } }
            td.state { @if r.hold.paused {
                strong { "paused" } ": held, nothing is sent"
            } @else if r.hold.ramp_ends_at_ms.is_some() {
                "ramping up after a resume"
            } @else if r.destination_url.is_some() {
                "sending"
            } @else {
                "waiting to be pulled"
            } }
            td { ul.links {
                li { a href={ "/t/" (tenant) "/deliveries" (on_route) } { "Deliveries" } }
                li { a href={ "/t/" (tenant) "/dead-letters" (on_route) } { "Dead letters" } }
                li { a href={ "/t/" (tenant) "/routes/" (r.name) "/test" } { "Try on an event" } }
            }
            @if r.destination_url.is_some() {
                form.inline method="post" action={ "/t/" (tenant) "/routes/" (r.name) "/retry-now" } {
                    (layout::csrf(signed.csrf()))
                    button type="submit" title="Attempt every delivery waiting for its retry now" { "Retry waiting now" }
                }
                @if r.hold.paused {
                    form.inline method="post" action={ "/t/" (tenant) "/routes/" (r.name) "/resume" } {
                        (layout::csrf(signed.csrf()))
                        button type="submit" title="Send again, ramping up over a minute" { "Resume" }
                    }
                    form.inline method="post" action={ "/t/" (tenant) "/routes/" (r.name) "/cancel-held" } {
                        (layout::csrf(signed.csrf()))
                        button type="submit" title="Dead-letter every held delivery as cancelled, sending nothing; redeliverable" { "Cancel held" }
                    }
                } @else {
                    form.inline method="post" action={ "/t/" (tenant) "/routes/" (r.name) "/pause" } {
                        (layout::csrf(signed.csrf()))
                        button type="submit" title="Keep accepting and storing; send nothing until resumed" { "Pause" }
                    }
                }
            } }
        }
    }
}

/// The test form's fields.
#[derive(Debug, Default, Deserialize)]
pub(super) struct Tried {
    #[serde(default)]
    delivery_id: String,
}

/// `GET /t/{tenant}/routes/{route}/test`: the form, the delivery id
/// filled in when given.
///
/// A tenant's routes (each one's destination, concurrency and the limit it
/// runs with now, filter and transform version), the route selector of the deliveries and dead
/// letters pages, and "Try on a stored event": a route's filter and
/// transform run through `test_route` on a stored delivery or a pasted
/// body, showing the request it would send. Nothing is sent or stored.
pub(super) async fn test_page(
    dash: web::Data<Dashboard>,
    signed: Signed,
    path: web::Path<(String, String)>,
    query: web::Query<Tried>,
) -> Result<HttpResponse, DashError> {
    let (tenant, route) = path.into_inner();
    let tenant = tenant_in_path(&signed, &tenant)?;
    let route = dash
        .backend
        .get_route(&tenant, route_param(&route)?)
        .await?
        .name;
    let body = form(&signed, &tenant, &route, query.delivery_id.trim(), "");
    Ok(test_answer(&signed, &tenant, &route, body))
}

/// `POST /t/{tenant}/routes/{route}/test`: runs the route on the event
/// and shows what it found above the form.
pub(super) async fn test(
    dash: web::Data<Dashboard>,
    signed: Signed,
    path: web::Path<(String, String)>,
    body: web::Bytes,
) -> Result<HttpResponse, DashError> {
    let (tenant, route) = path.into_inner();
    let tenant = tenant_in_path(&signed, &tenant)?;
    let route = route_param(&route)?.to_owned();
    let form_in = signed.form(&body)?;
    let delivery_id = form_in.get("delivery_id").unwrap_or_default();
    let pasted = form_in.get("body").unwrap_or_default();
    let event = match (delivery_id.is_empty(), pasted.is_empty()) {
        (false, true) => TestEvent::Delivery(delivery_id.to_owned()),
        (true, false) => TestEvent::Pasted(PastedEvent {
            body: pasted.as_bytes().to_vec(),
            headers: vec![("content-type".into(), "application/json".into())],
            ..PastedEvent::default()
        }),
        _ => {
            return Err(DashError::BadInput(
                "give a stored delivery id or a pasted body, one of the two".into(),
            ))
        }
    };
    let test = RouteTest {
        route: RouteUnderTest::Saved(route.clone()),
        event,
    };
    let found = dash.backend.test_route(&tenant, test).await?;
    let body = html! {
        (outcome(&found))
        (form(&signed, &tenant, &route, delivery_id, pasted))
    };
    Ok(test_answer(&signed, &tenant, &route, body))
}

fn test_answer(signed: &Signed, tenant: &str, route: &str, body: Markup) -> HttpResponse {
    let title = format!("Try route {route}");
    layout::html(layout::page(
        Some(signed.csrf()),
        Some(tenant),
        &title,
        body,
    ))
}

fn form(signed: &Signed, tenant: &str, route: &str, delivery_id: &str, pasted: &str) -> Markup {
    html! {
        p { "Runs this route's filter and transform on an event, as a forward would, and shows the request it would send. Nothing is sent or stored." }
        form.stack method="post" action={ "/t/" (tenant) "/routes/" (route) "/test" } {
            (layout::csrf(signed.csrf()))
            label for="delivery_id" { "A stored delivery id (of any route)" }
            input #delivery_id type="text" name="delivery_id" value=(delivery_id) placeholder="dlv_…";
            label for="body" { "Or a pasted JSON body" }
            textarea #body name="body" rows="8" { (pasted) }
            button type="submit" { "Try" }
        }
    }
}

fn outcome(found: &RouteTestResult) -> Markup {
    html! {
        section.outcome aria-labelledby="test-result" role="status" {
            h2 #test-result { "Result" }
            p #test-filter {
                strong { @if found.matched { "Filter passed" } @else { "Filter did not pass" } }
                @if !found.filter_result.is_empty() { " (" (found.filter_result) ")" }
            }
            @if found.dropped {
                p #test-dropped { "The transform dropped the event: nothing would be sent." }
            }
            @if let Some(e) = &found.transform_error {
                p #test-error { "The transform failed: " (e) }
            }
            @if let Some(v) = found.transform_version {
                p { "Transform version " code { (version(v)) } }
            }
            @if let Some(request) = &found.request { (tested(request)) }
        }
    }
}

fn tested(r: &TestedRequest) -> Markup {
    html! {
        h3 { "The request it would send" }
        dl.facts {
            dt { "Method" } dd { code #tested-method { (r.method) } }
            dt { "Path" } dd { code #tested-path { (r.path) } }
            dt { "Query" } dd { code #tested-query { (r.query) } }
        }
        h3 { "Headers " small { "(before hookd's signature headers)" } }
        dl.headers { @for (name, value) in &r.headers { dt { (name) } dd { code { (value) } } } }
        h3 { "Body " small { "(" (layout::size(r.body.len())) ")" } }
        pre.body tabindex="0" aria-label="Body" { (layout::pretty(&r.body)) }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_empty_route_is_the_default_and_a_malformed_one_is_refused() {
        assert_eq!(route_param("").unwrap(), DEFAULT_ROUTE);
        assert_eq!(route_param(" audit ").unwrap(), "audit");
        let refused = route_param("Not a route").unwrap_err().to_string();
        assert!(refused.starts_with("route: "), "{refused}");
        assert_eq!(version(0xab), "000000ab");
    }
}
