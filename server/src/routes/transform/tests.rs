//! The transform sandbox against the route-transform spec: both handler
//! forms, drop, errors by kind, hostile code stopped within its limits, no
//! state kept between runs, and the returned request validated.

use std::time::{Duration, Instant};

use serde_json::json;

use super::*;

fn request() -> TransformRequest {
    TransformRequest {
        method: "POST".into(),
        path: "/hooks/acme".into(),
        query: "a=1".into(),
        headers: vec![
            ("Content-Type".into(), "application/json".into()),
            ("x-tag".into(), "one".into()),
            ("x-tag".into(), "two".into()),
        ],
        body: TransformBody::Json(json!({"type": "order.paid", "amount": 1250})),
    }
}

fn context() -> TransformContext {
    TransformContext {
        tenant: TenantId::try_from("acme".to_owned()).expect("tenant id"),
        route: "rt_billing".into(),
        event_id: EventId::new("evt_1"),
        delivery_id: DeliveryId::new("dlv_1"),
        attempt: 2,
    }
}

/// [`Transform::new`] and the check a save makes, on this thread.
fn compile(code: &str, version: u32) -> Result<Transform, TransformError> {
    let transform = Transform::new(code, version)?;
    sandbox::check(code, &TransformLimits::default())?;
    Ok(transform)
}

fn run(code: &str) -> Result<TransformOutcome, TransformError> {
    run_with(code, &TransformLimits::default())
}

fn run_with(code: &str, limits: &TransformLimits) -> Result<TransformOutcome, TransformError> {
    compile(code, 1)?.run_here(&request(), &context(), limits)
}

fn sent(code: &str) -> TransformRequest {
    match run(code) {
        Ok(TransformOutcome::Send(request)) => request,
        other => panic!("expected a request to send, got {other:?}"),
    }
}

fn header<'a>(request: &'a TransformRequest, name: &str) -> Option<&'a str> {
    request
        .headers
        .iter()
        .find(|(n, _)| n.eq_ignore_ascii_case(name))
        .map(|(_, v)| v.as_str())
}

#[test]
fn identity_returns_the_request_with_headers_folded() {
    let out = sent(r#"addHandler("transform", (request, context) => request)"#);
    assert_eq!(out.method, "POST");
    assert_eq!(out.path, "/hooks/acme");
    assert_eq!(out.query, "a=1");
    assert_eq!(header(&out, "content-type"), Some("application/json"));
    assert_eq!(header(&out, "x-tag"), Some("one, two"));
    assert_eq!(out.headers.len(), 2);
    assert_eq!(out.body, request().body);
}

#[test]
fn hookdeck_form_rewrites_path_query_header_and_body() {
    let out = sent(
        r#"addHandler("transform", (request, context) => {
            request.path = "/billing/" + request.body.type;
            request.query = "from=" + context.tenant + "&attempt=" + context.attempt;
            request.headers["x-event-type"] = request.body.type;
            delete request.headers["x-tag"];
            request.body = { kind: request.body.type, cents: request.body.amount, route: context.route };
            return request;
        });"#,
    );
    assert_eq!(out.path, "/billing/order.paid");
    assert_eq!(out.query, "from=acme&attempt=2");
    assert_eq!(header(&out, "x-event-type"), Some("order.paid"));
    assert_eq!(header(&out, "x-tag"), None);
    assert_eq!(
        out.body,
        TransformBody::Json(json!({"kind": "order.paid", "cents": 1250, "route": "rt_billing"}))
    );
}

#[test]
fn plain_function_form_rewrites_and_may_return_text() {
    let out = sent(
        r#"function transform(request, context) {
            return { ...request, path: "/v2" + request.path, body: "id=" + context.event_id };
        }"#,
    );
    assert_eq!(out.path, "/v2/hooks/acme");
    assert_eq!(out.body, TransformBody::Text("id=evt_1".into()));
}

#[test]
fn context_names_the_delivery_and_has_an_empty_env() {
    let out = sent(r#"addHandler("transform", (r, c) => ({ ...r, body: c }));"#);
    assert_eq!(
        out.body,
        TransformBody::Json(json!({
            "tenant": "acme", "route": "rt_billing", "event_id": "evt_1",
            "delivery_id": "dlv_1", "attempt": 2, "env": {}
        }))
    );
}

#[test]
fn text_body_reaches_the_handler_as_a_string() {
    let transform = compile(
        r#"addHandler("transform", (r) => ({ ...r, body: typeof r.body + ":" + r.body }))"#,
        1,
    )
    .expect("compiles");
    let mut input = request();
    input.body = TransformBody::from_bytes(b"a=1&b=2").expect("text");
    let out = transform.run_here(&input, &context(), &TransformLimits::default());
    match out {
        Ok(TransformOutcome::Send(out)) => {
            assert_eq!(out.body, TransformBody::Text("string:a=1&b=2".into()))
        }
        other => panic!("expected a request, got {other:?}"),
    }
}

#[test]
fn null_undefined_and_false_drop_the_event() {
    for body in ["return null;", "return;", "return false;"] {
        let code = format!(r#"addHandler("transform", (request) => {{ {body} }})"#);
        assert_eq!(run(&code), Ok(TransformOutcome::Drop), "{body}");
    }
}

#[test]
fn a_throw_keeps_its_message() {
    let err =
        run(r#"addHandler("transform", () => { throw new TypeError("no amount in order") })"#)
            .expect_err("throws");
    assert_eq!(
        err,
        TransformError::Threw("TypeError: no amount in order (line 1)".into())
    );
    assert_eq!(
        err.to_string(),
        "transform threw: TypeError: no amount in order (line 1)"
    );
}

#[test]
fn a_thrown_string_and_a_long_message_are_kept_short() {
    let err =
        run(r#"addHandler("transform", () => { throw "x".repeat(100000) })"#).expect_err("throws");
    match err {
        TransformError::Threw(message) => {
            assert!(message.starts_with("xxx"), "{message}");
            assert!(
                message.len() <= MAX_MESSAGE_BYTES,
                "{} bytes",
                message.len()
            );
        }
        other => panic!("expected Threw, got {other:?}"),
    }
}

#[test]
fn compile_refuses_bad_syntax_no_handler_and_oversized_code() {
    assert!(matches!(
        compile("addHandler('transform', (r) => {", 1),
        Err(TransformError::Syntax(_))
    ));
    assert_eq!(
        compile("const x = 1;", 1).map(|_| ()),
        Err(TransformError::NoHandler)
    );
    let big = format!(
        "function transform(r) {{ return r }} //{}",
        "x".repeat(MAX_CODE_BYTES)
    );
    assert_eq!(
        compile(&big, 1).map(|_| ()),
        Err(TransformError::TooLarge(Oversize::Code))
    );
    let ok = compile("function transform(r) { return r }", 7).expect("compiles");
    assert_eq!(ok.version(), 7);
    assert_eq!(ok.code(), "function transform(r) { return r }");
}

#[test]
fn a_syntax_error_names_its_line() {
    assert_eq!(
        compile("function transform(r) {\n\n  let = ;\n}", 1).map(|_| ()),
        Err(TransformError::Syntax(
            "unexpected token in expression: ';' (line 3)".into()
        ))
    );
}

#[test]
fn a_leading_use_strict_directive_is_honoured() {
    let code = "'use strict';\nfunction transform(r) { undeclared = 1; return r }";
    assert_eq!(
        run(code),
        Err(TransformError::Threw(
            "ReferenceError: undeclared is not defined (line 2)".into()
        ))
    );
    let sloppy = "function transform(r) { undeclared = 1; return r }";
    assert!(matches!(run(sloppy), Ok(TransformOutcome::Send(_))));
}

#[test]
fn a_top_level_const_handler_is_found_and_runs_in_the_smallest_limits() {
    let limits = TransformLimits::new(MIN_MEMORY_BYTES, DEFAULT_CPU).expect("limits");
    let out = run_with("const transform = (r) => ({ ...r, path: '/c' });", &limits);
    assert!(matches!(out, Ok(TransformOutcome::Send(r)) if r.path == "/c"));
}

#[test]
fn an_async_handler_is_a_bad_result() {
    let err = run(r#"addHandler("transform", async (r) => r)"#).expect_err("refused");
    assert!(matches!(err, TransformError::BadResult(why) if why.contains("Promise")));
}

#[test]
fn a_runtime_syntax_error_thrown_by_the_code_is_a_throw() {
    let err = run(r#"addHandler("transform", () => { throw new SyntaxError("mine") })"#)
        .expect_err("throws");
    assert_eq!(
        err,
        TransformError::Threw("SyntaxError: mine (line 1)".into())
    );
}

#[test]
fn an_endless_loop_is_stopped_within_its_budget() {
    let code = r#"addHandler("transform", (r) => { while (true) {} })"#;
    let transform = compile(code, 1).expect("compiles");
    let limits = TransformLimits::default();
    let started = Instant::now();
    let err = transform
        .run_here(&request(), &context(), &limits)
        .expect_err("stopped");
    let took = started.elapsed();
    assert_eq!(
        err,
        TransformError::Timeout {
            budget: DEFAULT_CPU
        }
    );
    assert!(
        took >= DEFAULT_CPU,
        "stopped after {took:?}, before its budget"
    );
    assert!(
        took < Duration::from_millis(500),
        "stopped only after {took:?}"
    );
}

#[test]
fn an_endless_loop_at_the_top_level_fails_compile_with_a_timeout() {
    assert_eq!(
        compile("for (;;) {}", 1).map(|_| ()),
        Err(TransformError::Timeout {
            budget: DEFAULT_CPU
        })
    );
}

#[test]
fn a_caught_interrupt_still_stops_the_script() {
    let err = run(
        r#"addHandler("transform", (r) => { for (;;) { try { while (true) {} } catch (e) {} } })"#,
    )
    .expect_err("stopped");
    assert_eq!(
        err,
        TransformError::Timeout {
            budget: DEFAULT_CPU
        }
    );
}

/// The default memory limit with the hard CPU limit, so the memory cap is
/// what stops a bomb even in an unoptimized build.
fn memory_bound() -> TransformLimits {
    TransformLimits::new(DEFAULT_MEMORY_BYTES, MAX_CPU).expect("limits")
}

#[test]
fn an_allocation_bomb_runs_out_of_memory() {
    let code =
        r#"addHandler("transform", (r) => { let a = []; while (true) a.push(new Array(1e6)); })"#;
    let started = Instant::now();
    let err = run_with(code, &memory_bound()).expect_err("stopped");
    assert_eq!(
        err,
        TransformError::OutOfMemory {
            limit_bytes: DEFAULT_MEMORY_BYTES
        }
    );
    assert!(
        started.elapsed() < MAX_CPU,
        "stopped only after {:?}",
        started.elapsed()
    );
}

#[test]
fn a_string_bomb_runs_out_of_memory() {
    let code = r#"addHandler("transform", (r) => { const a = []; while (true) a.push("x".repeat(1e5) + a.length); })"#;
    let err = run_with(code, &memory_bound()).expect_err("stopped");
    assert_eq!(
        err,
        TransformError::OutOfMemory {
            limit_bytes: DEFAULT_MEMORY_BYTES
        }
    );
}

#[test]
fn a_caught_out_of_memory_ends_in_the_budget() {
    let code = r#"addHandler("transform", (r) => {
        for (;;) { try { const a = []; while (true) a.push(new Array(1e6)); } catch (e) {} }
    })"#;
    let limits = TransformLimits::new(4 << 20, Duration::from_millis(200)).expect("limits");
    let err = run_with(code, &limits).expect_err("stopped");
    assert_eq!(
        err,
        TransformError::Timeout {
            budget: Duration::from_millis(200)
        }
    );
}

#[test]
fn deep_recursion_is_a_stack_overflow_not_a_crash() {
    let err = run(r#"function f(n) { return f(n + 1) + 1 } addHandler("transform", (r) => f(0))"#)
        .expect_err("stopped");
    assert_eq!(err, TransformError::StackOverflow);
}

#[test]
fn a_run_after_hostile_ones_works() {
    let _ = run(r#"addHandler("transform", (r) => { while (true) {} })"#);
    let _ = run(
        r#"addHandler("transform", (r) => { let a = []; while (true) a.push(new Array(1e6)); })"#,
    );
    let _ = run(r#"function f() { return f() } addHandler("transform", () => f())"#);
    let out = sent(r#"addHandler("transform", (r) => r)"#);
    assert_eq!(out.path, "/hooks/acme");
}

#[test]
fn runs_do_not_see_each_others_globals() {
    let code = r#"
        addHandler("transform", (r) => {
            const seen = typeof globalThis.leak === "undefined" ? "fresh" : "leaked";
            globalThis.leak = 1;
            Object.prototype.polluted = true;
            return { ...r, body: seen };
        });"#;
    let transform = compile(code, 1).expect("compiles");
    for _ in 0..2 {
        match transform.run_here(&request(), &context(), &TransformLimits::default()) {
            Ok(TransformOutcome::Send(out)) => {
                assert_eq!(out.body, TransformBody::Text("fresh".into()))
            }
            other => panic!("expected a request, got {other:?}"),
        }
    }
}

#[test]
fn no_io_timers_or_loader_are_reachable() {
    let out = sent(
        r#"addHandler("transform", (r) => {
            const names = ["setTimeout", "setInterval", "fetch", "require", "process", "std", "os",
                           "XMLHttpRequest", "WebSocket", "Deno", "performance", "print"];
            const found = names.filter((n) => typeof globalThis[n] !== "undefined");
            const viaEval = eval("typeof setTimeout") + "," + Function("return typeof require")();
            console.log("discarded", r.body);
            return { ...r, body: { found, viaEval } };
        })"#,
    );
    assert_eq!(
        out.body,
        TransformBody::Json(json!({"found": [], "viaEval": "undefined,undefined"}))
    );
    let err = run(r#"addHandler("transform", () => { import("os"); return null })"#);
    assert!(err.is_err() || err == Ok(TransformOutcome::Drop));
}

#[test]
fn bad_results_are_refused_with_a_reason() {
    let cases = [
        (r#"return { ...r, path: "hooks" }"#, "path"),
        (r#"return { ...r, path: "//evil.example/x" }"#, "path"),
        (r#"return { ...r, path: "/a b" }"#, "path"),
        (
            r#"return { ...r, headers: { "x-a": "one\r\nx-b: two" } }"#,
            "x-a",
        ),
        (
            r#"return { ...r, headers: { "bad name": "v" } }"#,
            "bad name",
        ),
        (r#"return { ...r, headers: { "x-n": 5 } }"#, "x-n"),
        (r#"return { ...r, body: 42 }"#, "body"),
        (r#"return { ...r, query: "a=1#frag" }"#, "query"),
        (r#"return { ...r, method: "DELETE" }"#, "method"),
        (r#"return "not a request""#, "object"),
        (
            r#"const o = { ...r }; o.body = { o }; o.body.o = o; return o"#,
            "serializ",
        ),
    ];
    for (body, mentions) in cases {
        let code = format!(r#"addHandler("transform", (r) => {{ {body} }})"#);
        match run(&code) {
            Err(TransformError::BadResult(why)) => {
                assert!(
                    why.contains(mentions),
                    "{body}: {why:?} should mention {mentions:?}"
                )
            }
            other => panic!("{body}: expected BadResult, got {other:?}"),
        }
    }
}

#[test]
fn an_oversized_result_is_too_large() {
    let limits = TransformLimits::new(64 << 20, Duration::from_secs(1)).expect("limits");
    let err = run_with(
        r#"addHandler("transform", (r) => ({ ...r, body: "x".repeat(5 * 1024 * 1024) }))"#,
        &limits,
    )
    .expect_err("too large");
    assert_eq!(err, TransformError::TooLarge(Oversize::Output));
}

#[test]
fn limits_refuse_out_of_bounds_values() {
    assert_eq!(TransformLimits::default().memory_bytes(), 16 << 20);
    assert_eq!(TransformLimits::default().cpu(), Duration::from_millis(50));
    assert!(TransformLimits::new(MIN_MEMORY_BYTES, MAX_CPU).is_ok());
    assert!(TransformLimits::new(MAX_MEMORY_BYTES, Duration::from_millis(1)).is_ok());
    assert_eq!(
        TransformLimits::new(MIN_MEMORY_BYTES - 1, DEFAULT_CPU),
        Err(InvalidLimits::Memory)
    );
    assert_eq!(
        TransformLimits::new(DEFAULT_MEMORY_BYTES, MAX_CPU + Duration::from_millis(1)),
        Err(InvalidLimits::Cpu)
    );
    assert_eq!(
        TransformLimits::new(DEFAULT_MEMORY_BYTES, Duration::ZERO),
        Err(InvalidLimits::Cpu)
    );
    assert_eq!(
        TransformLimits::new(MAX_MEMORY_BYTES + 1, DEFAULT_CPU),
        Err(InvalidLimits::Memory)
    );
}

#[test]
fn body_from_bytes_is_json_text_or_refused() {
    assert_eq!(
        TransformBody::from_bytes(br#"{"a":1}"#),
        Ok(TransformBody::Json(json!({"a": 1})))
    );
    assert_eq!(
        TransformBody::from_bytes(b"plain"),
        Ok(TransformBody::Text("plain".into()))
    );
    assert_eq!(
        TransformBody::from_bytes(&[0xff, 0xfe]),
        Err(TransformError::NotText)
    );
    assert_eq!(
        TransformBody::Json(json!({"a": 1})).to_bytes(),
        br#"{"a":1}"#
    );
}
