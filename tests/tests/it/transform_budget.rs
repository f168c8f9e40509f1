//! A transform's budget holds whatever the script does: every loop the
//! engine runs natively (inside a built-in, where its interrupt is never
//! checked) is stopped within the CPU budget plus the stated margin, in a
//! handler and in a top level; other tenants' transforms deliver while a
//! tenant's hostile ones run and while it tests them; and a transform that
//! would hang when run again (a time bomb) never runs at start-up, so hookd
//! restarts with it stored.

use std::{
    sync::Arc,
    time::{Duration, Instant},
};

use hookd_sdk::client::proto::{
    test_route_request::{Event, Route as RouteChoice},
    DeliveryStatus, InlineRoute, PastedEvent, TestRouteRequest,
};
use hookd_server::{
    ids::{DeliveryId, EventId, TenantId},
    testing::{
        Transform, TransformBody, TransformContext, TransformError, TransformLimits, TransformPool,
        TransformRequest, KILL_MARGIN, WATCH_INTERVAL,
    },
};
use reqwest::StatusCode;

use crate::{
    harness::{order, TestServer, ADMIN_TOKEN},
    process::{hookd_bin, HookdProcess},
    receiver::{Receiver, Reply},
    route_service::{create_tenant, new_route, LOCAL_DESTINATIONS},
};

/// Native loops of the engine that run for hours, or allocate without
/// bound, without reaching the interrupt: each an expression.
const NATIVE_LOOPS: [(&str, &str); 19] = [
    ("join", r#"Array.prototype.join.call({ length: 1e15 }, "")"#),
    ("toString", "Array.prototype.toString.call(Object.assign(Object.create(Array.prototype), { length: 1e15 }))"),
    ("toLocaleString", "Array.prototype.toLocaleString.call({ length: 1e15 })"),
    ("fill", "Array.prototype.fill.call({ length: 1e15 }, 0)"),
    ("copyWithin", "Array.prototype.copyWithin.call({ length: 1e15 }, 1, 0)"),
    ("reverse", "Array.prototype.reverse.call({ length: 1e15 })"),
    ("indexOf", "Array.prototype.indexOf.call({ length: 1e15 }, 1)"),
    ("lastIndexOf", "Array.prototype.lastIndexOf.call({ length: 1e15 }, 1)"),
    ("includes", "Array.prototype.includes.call({ length: 1e15 }, 1)"),
    ("forEach over holes", "Array.prototype.forEach.call({ length: 1e15 }, () => {})"),
    ("sort of an array-like", "Array.prototype.sort.call({ length: 1e15 })"),
    ("flat", "Array.prototype.flat.call({ length: 1e15 })"),
    (
        "concat of a spreadable array-like",
        "[].concat({ length: 1e15, [Symbol.isConcatSpreadable]: true })",
    ),
    ("typed-array sort", "new Float64Array(1 << 20).map((_, i) => (i * 7919) % 1000003).sort()"),
    ("repeat", r#""ab".repeat(2 ** 28)"#),
    ("padStart", r#""x".padStart(2 ** 29, "yz")"#),
    ("regexp backtracking", r#"/^(a+)+$/.test("a".repeat(40) + "b")"#),
    ("deep recursion", "(function f(n) { return f(n + 1) + 1; })(0)"),
    ("JSON.stringify of a sparse array", "JSON.stringify(Object.assign([], { length: 2 ** 31 }))"),
];

/// How far past its budget a stopped run's worker may have spent CPU: the
/// margin, one reading interval, and the time the kill takes to land.
fn bound(limits: &TransformLimits) -> Duration {
    limits.cpu() + KILL_MARGIN + WATCH_INTERVAL + Duration::from_millis(20)
}

fn request() -> TransformRequest {
    TransformRequest {
        method: "POST".into(),
        path: "/hooks/acme".into(),
        query: String::new(),
        headers: vec![("content-type".into(), "application/json".into())],
        body: TransformBody::Json(serde_json::json!({"type": "order.paid"})),
    }
}

fn context() -> TransformContext {
    TransformContext {
        tenant: TenantId::try_from("acme".to_owned()).unwrap(),
        route: "spin".into(),
        event_id: EventId::new("evt_1"),
        delivery_id: DeliveryId::new("dlv_1"),
        attempt: 1,
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn every_native_loop_is_stopped_within_its_budget_plus_the_margin() {
    hookd_server::use_transform_worker(hookd_bin().to_owned());
    let limits = TransformLimits::default();
    let pool = TransformPool::shared();
    let runs = NATIVE_LOOPS.iter().flat_map(|(name, expression)| {
        let handler = format!(r#"addHandler("transform", (r) => {{ {expression}; return r; }});"#);
        let top_level = format!(r#"{expression}; addHandler("transform", (r) => r);"#);
        [("handler", handler), ("top level", top_level)].map(|(place, code)| {
            let share = pool.route_share();
            async move {
                let transform = Transform::new(&code, 1).unwrap();
                let started = Instant::now();
                let (ran, cpu) = transform
                    .run_measured(&share, &request(), &context(), &limits)
                    .await;
                (*name, place, ran, cpu, started.elapsed())
            }
        })
    });
    for (name, place, ran, cpu, took) in futures_util::future::join_all(runs).await {
        let error = ran.expect_err(&format!("{name} in a {place} was stopped"));
        assert!(
            matches!(
                error,
                TransformError::Timeout { .. }
                    | TransformError::Starved { .. }
                    | TransformError::OutOfMemory { .. }
                    | TransformError::StackOverflow
            ),
            "{name} in a {place}: {error}"
        );
        assert!(
            cpu <= bound(&limits),
            "{name} in a {place} spent {cpu:?} of CPU, past {:?}",
            bound(&limits)
        );
        assert!(
            took <= limits.wall() + KILL_MARGIN + Duration::from_secs(2),
            "{name} in a {place} took {took:?}"
        );
    }
    // The workers killed for them are replaced: the next run works.
    let fine = Transform::new(r#"addHandler("transform", (r) => r);"#, 1).unwrap();
    let share = pool.route_share();
    let ran = fine.run(&share, &request(), &context(), &limits).await;
    assert!(ran.is_ok(), "{ran:?}");
}

/// A route of the hostile tenant whose transform joins an endless
/// array-like in its handler.
const HOSTILE: &str = r#"addHandler("transform", (r) => { Array.prototype.join.call({ length: 1e15 }, ""); return r; });"#;

/// The other tenant's transform.
const TAGS: &str = r#"addHandler("transform", (r) => { r.headers["x-seen"] = "yes"; return r; });"#;

#[tokio::test(flavor = "multi_thread")]
async fn hostile_transforms_and_their_tests_leave_other_tenants_delivering() {
    let sink = Receiver::start(Reply::Status(200)).await;
    let theirs = Receiver::start(Reply::Status(200)).await;
    let s = TestServer::start_live(LOCAL_DESTINATIONS);
    let admin = s.admin().await;
    let (hkid, hsecret) = create_tenant(&admin, "hostile", "").await;
    for route in ["spin-a", "spin-b", "spin-c"] {
        admin
            .create_route(new_route("hostile", route, &sink.url, HOSTILE))
            .await
            .unwrap();
    }
    let (kid, secret) = create_tenant(&admin, "good", "").await;
    admin
        .create_route(new_route("good", "tagged", &theirs.url, TAGS))
        .await
        .unwrap();
    for n in 0..12 {
        let sent = s
            .post_signed("hostile", &hkid, &hsecret, &format!("evt_h{n}"))
            .await;
        assert_eq!(sent.status, StatusCode::ACCEPTED, "{:?}", sent.body);
    }
    // Two hostile route tests at once, as the review's did.
    let admin = Arc::new(admin);
    let tests: Vec<_> = (0..2)
        .map(|_| {
            let admin = admin.clone();
            tokio::spawn(async move {
                admin
                    .test_route(TestRouteRequest {
                        tenant_id: "hostile".into(),
                        route: Some(RouteChoice::Inline(InlineRoute {
                            filter_json: String::new(),
                            transform: HOSTILE.into(),
                            destination_url: String::new(),
                        })),
                        event: Some(Event::Pasted(PastedEvent {
                            body: order("evt_t"),
                            ..Default::default()
                        })),
                    })
                    .await
            })
        })
        .collect();
    let started = Instant::now();
    for n in 0..10 {
        let sent = s
            .post_signed("good", &kid, &secret, &format!("evt_g{n}"))
            .await;
        assert_eq!(sent.status, StatusCode::ACCEPTED, "{:?}", sent.body);
    }
    let got = theirs.wait_for(10, Duration::from_secs(20)).await;
    assert!(got.iter().all(|r| r.header("x-seen") == Some("yes")));
    let took = started.elapsed();
    for test in tests {
        let shown = test.await.unwrap().unwrap();
        assert!(shown.transform_error.contains("CPU budget"), "{shown:?}");
    }
    assert!(sink.received().is_empty(), "no hostile run sent anything");
    assert!(
        took < Duration::from_secs(20),
        "the other tenant's 10 events took {took:?}"
    );
    // The hostile tenant's deliveries failed on their budget.
    let deadline = Instant::now() + Duration::from_secs(20);
    loop {
        let failed = admin
            .list_all_route_deliveries("hostile", "spin-a", DeliveryStatus::TransformFailed)
            .await
            .unwrap();
        if let Some(failed) = failed.first() {
            assert!(failed.last_error.contains("CPU budget"), "{failed:?}");
            break;
        }
        assert!(Instant::now() < deadline, "no hostile run failed");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

fn spawn(data: &std::path::Path, config: &std::path::Path) -> HookdProcess {
    let env = [("HOOKD_ADMIN_TOKEN", ADMIN_TOKEN)];
    tokio::task::block_in_place(|| HookdProcess::spawn(data, config, &env))
}

/// A transform fine when saved that spins natively once the wall clock
/// passes `at_ms`.
fn time_bomb(at_ms: i64) -> String {
    format!(
        r#"if (Date.now() > {at_ms}) {{ Array.prototype.join.call({{ length: 1e15 }}, ""); }}
addHandler("transform", (r) => r);"#
    )
}

#[tokio::test(flavor = "multi_thread")]
async fn a_stored_time_bomb_does_not_stop_hookd_from_starting() {
    let sink = Receiver::start(Reply::Status(200)).await;
    let dir = tempfile::tempdir().unwrap();
    let config = dir.path().join("hookd.toml");
    std::fs::write(&config, LOCAL_DESTINATIONS).unwrap();
    let data = dir.path().join("data");
    let now_ms = || {
        let since = std::time::UNIX_EPOCH.elapsed().unwrap();
        i64::try_from(since.as_millis()).unwrap()
    };
    let fuse_ms;
    {
        let hookd = spawn(&data, &config);
        let admin = hookd.admin().await;
        create_tenant(&admin, "acme", "").await;
        fuse_ms = now_ms() + 1000;
        admin
            .create_route(new_route("acme", "bomb", &sink.url, &time_bomb(fuse_ms)))
            .await
            .unwrap();
        drop(hookd);
    }
    while now_ms() <= fuse_ms {
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    let started = Instant::now();
    let hookd = spawn(&data, &config);
    let health = reqwest::get(format!("{}/healthz", hookd.base))
        .await
        .unwrap();
    assert_eq!(health.status(), StatusCode::OK);
    let took = started.elapsed();
    assert!(
        took < Duration::from_secs(5),
        "healthz answered after {took:?}"
    );
}
