//! A tenant's replays, on its routes page: the form that counts or starts a
//! replay of stored events into a route, the replays with how far each got,
//! and Pause, Resume and Cancel.

use hookd_control::model::{
    NewReplay, ReplayAction, ReplayState, ReplayView, DEFAULT_REPLAY_RATE, DEFAULT_ROUTE,
    MAX_REPLAY_RATE,
};
use maud::{html, Markup};

use super::{
    error::DashError,
    layout, route_param,
    session::{PostedForm, Signed},
    tenant_in_path, Dashboard,
};

/// The replay form's fields as typed, kept to fill the form in again after
/// a count.
#[derive(Debug, Clone, Default, PartialEq)]
pub(super) struct Typed {
    route: String,
    since: String,
    until: String,
    event_type: String,
    rate: String,
}

impl Typed {
    fn from_form(form: &PostedForm) -> Typed {
        let field = |name: &str| form.get(name).unwrap_or_default().to_owned();
        Typed {
            route: field("route"),
            since: field("since"),
            until: field("until"),
            event_type: field("event_type"),
            rate: field("rate"),
        }
    }

    /// The replay asked for, checked as ReplayToRoute checks one: a route
    /// other than `default`, a window with a start and not upside down, a
    /// rate from 1 to [`MAX_REPLAY_RATE`] (none: [`DEFAULT_REPLAY_RATE`]).
    fn replay(&self, dry_run: bool) -> Result<NewReplay, DashError> {
        let route = route_param(&self.route)?;
        if route == DEFAULT_ROUTE {
            return Err(DashError::BadInput(format!(
                "route: every accepted event has its delivery on {DEFAULT_ROUTE} already; replay into another route"
            )));
        }
        let time = |field: &str, value: &str| {
            (!value.is_empty())
                .then(|| layout::parse_at(field, value))
                .transpose()
                .map_err(|e| DashError::BadInput(e.to_string()))
        };
        let Some(since_ms) = time("since", &self.since)? else {
            return Err(DashError::BadInput(
                "since: the start of the window is required, like 2026-11-30T00:00:00Z".into(),
            ));
        };
        let until_ms = time("until", &self.until)?;
        if until_ms.is_some_and(|until| until <= since_ms) {
            return Err(DashError::BadInput("until: must be after since".into()));
        }
        let rate_per_sec = match self.rate.as_str() {
            "" => DEFAULT_REPLAY_RATE,
            typed => typed
                .parse()
                .ok()
                .filter(|rate| (1..=MAX_REPLAY_RATE).contains(rate))
                .ok_or_else(|| {
                    DashError::BadInput(format!(
                        "rate: {typed:?} is not a whole number from 1 to {MAX_REPLAY_RATE}"
                    ))
                })?,
        };
        Ok(NewReplay {
            route: route.to_owned(),
            since_ms,
            until_ms,
            event_type: Some(self.event_type.clone()).filter(|t| !t.is_empty()),
            body: None,
            rate_per_sec,
            dry_run,
        })
    }
}

/// What a replay action did, shown above the routes table.
pub(super) enum Outcome {
    /// A count: the deliveries the replay would make now, and the form as
    /// typed.
    Counted(u64, Typed),
    /// A replay started.
    Started(Box<ReplayView>),
    /// A replay paused, resumed or cancelled.
    Steered(Box<ReplayView>),
}

/// The form's Count button (a dry run) or Replay button, as posted.
const DRY_RUN: &str = "dry_run";

/// `POST /t/{tenant}/replays`: counts (Count) or starts (Replay) a replay
/// of the form's window into its route; the tenant and what it did.
pub(super) async fn start(
    dash: &Dashboard,
    signed: &Signed,
    path: &str,
    body: &[u8],
) -> Result<(String, Outcome), DashError> {
    let tenant = tenant_in_path(signed, path)?;
    let form = signed.form(body)?;
    let typed = Typed::from_form(&form);
    let asked = typed.replay(form.get(DRY_RUN).is_some())?;
    let started = dash.backend.replay_to_route(&tenant, asked).await?;
    let outcome = match started.replay {
        Some(replay) => Outcome::Started(Box::new(replay)),
        None => Outcome::Counted(started.count, typed),
    };
    Ok((tenant, outcome))
}

/// `POST /t/{tenant}/replays/{id}/pause|resume|cancel`: steers a replay;
/// the tenant and what it did.
pub(super) async fn steer(
    dash: &Dashboard,
    signed: &Signed,
    (tenant, id): (&str, &str),
    body: &[u8],
    action: ReplayAction,
) -> Result<(String, Outcome), DashError> {
    let tenant = tenant_in_path(signed, tenant)?;
    signed.form(body)?;
    let replay = dash
        .backend
        .act_on_replay(&tenant, replay_id(id)?, action)
        .await?;
    Ok((tenant, Outcome::Steered(Box::new(replay))))
}

/// A replay id in a path: `rpl_` and letters and digits.
fn replay_id(value: &str) -> Result<&str, DashError> {
    match value.strip_prefix("rpl_") {
        Some(rest) if !rest.is_empty() && rest.chars().all(|c| c.is_ascii_alphanumeric()) => {
            Ok(value)
        }
        _ => Err(DashError::BadInput(format!(
            "replay: {value:?} is not a replay id (rpl_...)"
        ))),
    }
}

/// A replay's state as the page shows it.
fn state_name(state: ReplayState) -> &'static str {
    match state {
        ReplayState::Running => "running",
        ReplayState::Paused => "paused",
        ReplayState::Cancelled => "cancelled",
        ReplayState::Done => "done",
        ReplayState::Failed => "failed",
    }
}

/// What a replay action did, in words.
pub(super) fn status(outcome: &Outcome) -> Markup {
    match outcome {
        Outcome::Counted(count, typed) => html! {
            p role="status" #replay-count {
                (count) " event" @if *count != 1 { "s" } " would be replayed into route "
                code { (typed.route) } " now. Nothing was made: press Replay to make them."
            }
        },
        Outcome::Started(r) => html! {
            p role="status" #replay-started {
                "Replay " code { (r.id) } " into route " code { (r.route) } " started, at most "
                (r.rate_per_sec) " deliveries a second. It is listed below with how far it got."
            }
        },
        Outcome::Steered(r) => html! {
            p role="status" #replay-steered {
                "Replay " code { (r.id) } ": "
                @match r.state {
                    ReplayState::Paused => "paused where it was.",
                    ReplayState::Running => "running on from where it stopped.",
                    ReplayState::Cancelled => "cancelled. The deliveries it made stay.",
                    other => { (state_name(other)) "." },
                }
            }
        },
    }
}

/// The routes page's Replays section: the form (when the tenant has a route
/// besides `default` among `routes`, its route names), filled in with
/// `typed`, and the tenant's replays, newest first; `csrf` is the session's
/// token its forms carry.
pub(super) fn section(
    tenant: &str,
    csrf: &str,
    routes: &[&str],
    replays: &[ReplayView],
    typed: &Typed,
) -> Markup {
    let targets: Vec<&str> = routes
        .iter()
        .copied()
        .filter(|name| *name != DEFAULT_ROUTE)
        .collect();
    html! {
        section aria-labelledby="replays" {
            h2 #replays { "Replays" }
            p { "A replay brings the events this tenant accepted in a window into a route other than " code { (DEFAULT_ROUTE) } ", oldest first, at a rate: each gets one new delivery on the route if the route's filter passes it now and the route has none of it yet. Count first: it makes nothing." }
            @if targets.is_empty() {
                p.empty #no-replay-routes { "Replays go into a route other than " code { (DEFAULT_ROUTE) } "; this tenant has none." }
            } @else {
                form.filters method="post" action={ "/t/" (tenant) "/replays" } {
                    (layout::csrf(csrf))
                    div {
                        label for="replay-route" { "Into route" }
                        select #replay-route name="route" {
                            @for name in &targets {
                                option value=(name) selected[*name == typed.route] { (name) }
                            }
                        }
                    }
                    div {
                        label for="replay-since" { "Accepted since (UTC)" }
                        input #replay-since type="text" name="since" value=(typed.since) placeholder="2026-11-30T00:00:00Z" required;
                    }
                    div {
                        label for="replay-until" { "Accepted before (UTC; empty: now)" }
                        input #replay-until type="text" name="until" value=(typed.until) placeholder="2026-12-01T00:00:00Z";
                    }
                    div {
                        label for="replay-type" { "Event type" }
                        input #replay-type type="search" name="event_type" value=(typed.event_type) placeholder="order.paid";
                    }
                    div {
                        label for="replay-rate" { "Deliveries a second" }
                        input #replay-rate type="number" name="rate" min="1" max=(MAX_REPLAY_RATE) value=(typed.rate) placeholder=(DEFAULT_REPLAY_RATE);
                    }
                    button type="submit" name=(DRY_RUN) value="1" title="Count the deliveries the replay would make now; make nothing" { "Count" }
                    button type="submit" title="Start the replay" { "Replay" }
                }
            }
            @if replays.is_empty() {
                p.empty #no-replays { "No replays yet." }
            } @else {
                div.scroll { table.replays {
                    caption { "Replays, newest first" }
                    thead { tr {
                        th scope="col" { "Replay" } th scope="col" { "Route" }
                        th scope="col" { "Window" } th scope="col" { "State" }
                        th scope="col" { "Replayed / scanned" } th scope="col" { "Position" }
                        th scope="col" { "Last error" } th scope="col" { "Actions" }
                    } }
                    tbody { @for r in replays { (row(tenant, csrf, r)) } }
                } }
            }
        }
    }
}

fn row(tenant: &str, csrf: &str, r: &ReplayView) -> Markup {
    let action = |verb: &str| format!("/t/{tenant}/replays/{}/{verb}", r.id);
    let (pause, resume, cancel) = match r.state {
        ReplayState::Running => (true, false, true),
        ReplayState::Paused | ReplayState::Failed => (false, true, true),
        ReplayState::Done | ReplayState::Cancelled => (false, false, false),
    };
    html! {
        tr {
            th scope="row" { code { (r.id) } }
            td { code { (r.route) } }
            td.replay-window {
                (layout::at(r.since_ms)) " to " (layout::at(r.until_ms))
                @if let Some(t) = &r.event_type { ", type " code { (t) } }
            }
            td.replay-state { span class={ "status " (state_name(r.state)) } { (state_name(r.state)) } }
            td.replay-progress { (r.counts.replayed) " / " (r.counts.scanned) }
            td.replay-position { (r.position_ms.map(layout::at).unwrap_or_else(|| "-".into())) }
            td { (r.last_error.as_deref().unwrap_or("")) }
            td {
                @if pause {
                    form.inline method="post" action=(action("pause")) {
                        (layout::csrf(csrf))
                        button type="submit" title="Stop it where it is" { "Pause" }
                    }
                }
                @if resume {
                    form.inline method="post" action=(action("resume")) {
                        (layout::csrf(csrf))
                        button type="submit" title="Run it on from where it stopped" { "Resume" }
                    }
                }
                @if cancel {
                    form.inline method="post" action=(action("cancel")) {
                        (layout::csrf(csrf))
                        button type="submit" title="End it for good; the deliveries it made stay" { "Cancel" }
                    }
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use hookd_control::model::ReplayCounts;

    use super::*;

    fn typed(route: &str, since: &str, until: &str, rate: &str) -> Typed {
        Typed {
            route: route.into(),
            since: since.into(),
            until: until.into(),
            event_type: String::new(),
            rate: rate.into(),
        }
    }

    fn refused(t: Typed) -> String {
        match t.replay(true) {
            Err(DashError::BadInput(message)) => message,
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn a_replay_needs_a_named_route_a_start_and_a_rate_in_bounds() {
        let form = PostedForm::checked(
            b"csrf=t&route=crm&since=2025-11-30T05%3A20%3A00Z&until=&event_type=order.paid&rate=&dry_run=1",
            "t",
        )
        .unwrap();
        let asked = Typed::from_form(&form).replay(true).unwrap();
        assert_eq!(
            asked,
            NewReplay {
                route: "crm".into(),
                since_ms: 1_764_480_000_000,
                until_ms: None,
                event_type: Some("order.paid".into()),
                body: None,
                rate_per_sec: DEFAULT_REPLAY_RATE,
                dry_run: true,
            }
        );
        let window = typed(
            "crm",
            "2025-11-30T05:20:00Z",
            "2025-11-30T06:20:00Z",
            "5000",
        )
        .replay(false)
        .unwrap();
        assert_eq!(
            (window.until_ms, window.rate_per_sec, window.dry_run),
            (Some(1_764_483_600_000), MAX_REPLAY_RATE, false)
        );

        let at = "2025-11-30T05:20:00Z";
        assert!(refused(typed("", at, "", "")).contains("default"));
        assert!(refused(typed("default", at, "", "")).contains("default"));
        assert!(refused(typed("Not a route", at, "", "")).starts_with("route: "));
        assert!(refused(typed("crm", "", "", "")).contains("since"));
        assert!(refused(typed("crm", "yesterday", "", "")).contains("since"));
        assert!(refused(typed("crm", at, at, "")).contains("until"));
        for rate in ["0", "5001", "fast", "-1"] {
            assert!(
                refused(typed("crm", at, "", rate)).starts_with("rate: "),
                "{rate}"
            );
        }
    }

    #[test]
    fn replay_ids_in_paths_are_checked() {
        assert_eq!(replay_id("rpl_01J0000000").unwrap(), "rpl_01J0000000");
        for bad in ["rpl_", "dlv_1", "rpl_a.b", "rpl_../x"] {
            assert!(replay_id(bad).is_err(), "{bad}");
        }
    }

    fn replay(id: &str, state: ReplayState) -> ReplayView {
        ReplayView {
            id: id.into(),
            tenant_id: "acme".into(),
            route: "crm".into(),
            since_ms: 1_764_480_000_000,
            until_ms: 1_764_483_600_000,
            event_type: None,
            body: None,
            rate_per_sec: 10,
            state,
            created_at_ms: 1_764_483_600_000,
            finished_at_ms: None,
            counts: ReplayCounts {
                scanned: 60,
                replayed: 12,
                ..ReplayCounts::default()
            },
            position_ms: Some(1_764_480_030_000),
            last_error: None,
        }
    }

    #[test]
    fn each_replay_offers_the_actions_its_state_allows() {
        let replays = [
            replay("rpl_1", ReplayState::Running),
            replay("rpl_2", ReplayState::Paused),
            replay("rpl_3", ReplayState::Failed),
            replay("rpl_4", ReplayState::Done),
            replay("rpl_5", ReplayState::Cancelled),
        ];
        let shown = section("acme", "t", &[], &replays, &Typed::default()).into_string();
        let offered =
            |id: &str, verb: &str| shown.contains(&format!("/t/acme/replays/{id}/{verb}"));
        let wanted = [
            ("rpl_1", [true, false, true]),
            ("rpl_2", [false, true, true]),
            ("rpl_3", [false, true, true]),
            ("rpl_4", [false, false, false]),
            ("rpl_5", [false, false, false]),
        ];
        for (id, actions) in wanted {
            let got = ["pause", "resume", "cancel"].map(|verb| offered(id, verb));
            assert_eq!(got, actions, "{id}");
        }
        assert!(shown.contains("12 / 60"), "{shown}");
        assert!(
            shown.contains("2025-11-30T05:20:30Z"),
            "the position as a time: {shown}"
        );
        assert!(
            shown.contains("id=\"no-replay-routes\""),
            "no route besides default"
        );
        assert!(!shown.contains("action=\"/t/acme/replays\""), "so no form");
    }

    #[test]
    fn a_count_keeps_the_form_as_typed_and_says_how_many() {
        let typed = typed("crm", "2025-11-30T05:20:00Z", "", "7");
        let counted = status(&Outcome::Counted(1, typed.clone())).into_string();
        assert!(
            counted.contains("1 event would be replayed into route <code>crm</code>"),
            "{counted}"
        );
        let counted = status(&Outcome::Counted(5, typed.clone())).into_string();
        assert!(counted.contains("5 events would be replayed"), "{counted}");
        let routes = ["default", "audit", "crm"];
        let shown = section("acme", "t", &routes, &[], &typed).into_string();
        assert!(shown.contains("<option value=\"crm\" selected>"), "{shown}");
        assert!(shown.contains("<option value=\"audit\">"), "{shown}");
        assert!(!shown.contains("<option value=\"default\""), "{shown}");
        assert!(shown.contains("value=\"2025-11-30T05:20:00Z\""), "{shown}");
        assert!(
            shown.contains("name=\"rate\" min=\"1\" max=\"5000\" value=\"7\""),
            "{shown}"
        );
        assert!(shown.contains("No replays yet."), "{shown}");
    }
}
