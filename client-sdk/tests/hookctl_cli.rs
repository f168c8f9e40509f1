//! Runs the real `hookctl` binary: its help, the exit codes scripts rely on when hookd
//! is unreachable or no token is set, and `send` against a fake ingest that checks the
//! signature with the SDK's own verifier.

use std::{
    io::{BufRead, BufReader, Read, Write},
    net::TcpListener,
    process::{Command, Output},
    thread::{self, JoinHandle},
    time::{SystemTime, UNIX_EPOCH},
};

use hookd_sdk::signature::{verify, Scheme, Secret};

const STANDARD_SECRET: &str = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw";

/// `hookctl` with a clean environment, so a developer's own tokens cannot leak in.
fn hookctl(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_hookctl"))
        .args(args)
        .env_remove("HOOKD_ADMIN_TOKEN")
        .env_remove("HOOKCTL_TOKEN")
        .env_remove("HOOKCTL_ENDPOINT")
        .env_remove("HOOKCTL_SECRET")
        .output()
        .expect("hookctl runs")
}

fn stdout(output: &Output) -> String {
    String::from_utf8_lossy(&output.stdout).into_owned()
}

fn stderr(output: &Output) -> String {
    String::from_utf8_lossy(&output.stderr).into_owned()
}

/// A port nothing listens on: bound by us a moment ago, then released.
fn closed_port() -> u16 {
    let listener = TcpListener::bind("127.0.0.1:0").expect("bind");
    listener.local_addr().expect("addr").port()
}

#[test]
fn help_lists_every_command_and_the_exit_codes() {
    let output = hookctl(&["--help"]);
    assert_eq!(output.status.code(), Some(0));
    let help = stdout(&output);
    for command in [
        "tenants",
        "secrets",
        "tokens",
        "deliveries",
        "dead-letters",
        "contracts",
        "routes",
        "alerts",
        "send",
        "tail",
    ] {
        assert!(help.contains(command), "--help lacks {command}:\n{help}");
    }
    for flag in ["--endpoint", "--token", "--json", "HOOKCTL_ENDPOINT"] {
        assert!(help.contains(flag), "--help lacks {flag}:\n{help}");
    }
    assert!(help.contains("Exit codes:"), "{help}");
    assert!(help.contains("6  hookd unreachable"), "{help}");
}

#[test]
fn an_unreachable_control_plane_exits_6() {
    let endpoint = format!("http://127.0.0.1:{}", closed_port());
    for args in [
        vec!["tenants", "list"],
        vec!["--json", "deliveries", "get", "acme", "dlv_1"],
    ] {
        let mut argv = vec!["--endpoint", endpoint.as_str(), "--token", "t"];
        argv.extend(args);
        let output = hookctl(&argv);
        assert_eq!(output.status.code(), Some(6), "{}", stderr(&output));
        assert!(
            stderr(&output).contains("cannot connect"),
            "{}",
            stderr(&output)
        );
        assert!(stdout(&output).is_empty());
    }
}

#[test]
fn a_missing_token_exits_4_before_connecting() {
    let endpoint = format!("http://127.0.0.1:{}", closed_port());
    let output = hookctl(&["--endpoint", &endpoint, "tenants", "list"]);
    assert_eq!(output.status.code(), Some(4), "{}", stderr(&output));
    assert!(stderr(&output).contains("no token"), "{}", stderr(&output));
}

#[test]
fn usage_errors_exit_2() {
    for args in [
        vec!["tenants", "frobnicate"],
        vec!["tenants", "update", "acme"],
        vec!["tenants", "delete", "acme"],
        vec!["send", "--url", "not a url", "--secret", "x"],
        vec![
            "send",
            "--url",
            "http://x/",
            "--secret",
            "x",
            "--scheme",
            "rot13",
        ],
    ] {
        let output = hookctl(&args);
        assert_eq!(
            output.status.code(),
            Some(2),
            "{args:?}: {}",
            stderr(&output)
        );
    }
}

/// What the fake ingest received.
struct Received {
    headers: Vec<(String, String)>,
    body: Vec<u8>,
}

/// Accepts one request on a free port, answers `status` with `answer`, and hands back
/// what it received.
fn fake_ingest(status: &'static str, answer: &'static str) -> (String, JoinHandle<Received>) {
    let listener = TcpListener::bind("127.0.0.1:0").expect("bind");
    let url = format!("http://{}/hooks/acme", listener.local_addr().expect("addr"));
    let handle = thread::spawn(move || {
        let (stream, _) = listener.accept().expect("accept");
        let mut reader = BufReader::new(stream);
        let mut headers = Vec::new();
        let mut line = String::new();
        reader.read_line(&mut line).expect("request line");
        loop {
            line.clear();
            reader.read_line(&mut line).expect("header line");
            let Some((name, value)) = line.trim_end().split_once(':') else {
                break;
            };
            headers.push((name.trim().to_owned(), value.trim().to_owned()));
        }
        let length = headers
            .iter()
            .find(|(name, _)| name.eq_ignore_ascii_case("content-length"))
            .map_or(0, |(_, value)| value.parse().expect("content-length"));
        let mut body = vec![0; length];
        reader.read_exact(&mut body).expect("body");
        let response = format!(
            "HTTP/1.1 {status}\r\ncontent-type: application/json\r\ncontent-length: {}\r\n\
             connection: close\r\n\r\n{answer}",
            answer.len()
        );
        reader
            .get_mut()
            .write_all(response.as_bytes())
            .expect("answer");
        Received { headers, body }
    });
    (url, handle)
}

fn now() -> i64 {
    let since_epoch = SystemTime::now().duration_since(UNIX_EPOCH).expect("clock");
    i64::try_from(since_epoch.as_secs()).expect("seconds fit")
}

#[test]
fn send_signs_a_webhook_that_the_verifier_accepts() {
    let (url, ingest) = fake_ingest("202 Accepted", r#"{"delivery_id":"dlv_1"}"#);
    let output = hookctl(&[
        "send",
        "--url",
        &url,
        "--scheme",
        "standard",
        "--secret",
        STANDARD_SECRET,
        "--event-id",
        "evt_cli_1",
    ]);
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    assert!(stdout(&output).contains("202"), "{}", stdout(&output));
    assert!(stdout(&output).contains("dlv_1"), "{}", stdout(&output));

    let received = ingest.join().expect("ingest thread");
    let secret = Secret::from_provider(Scheme::Standard, "k1", STANDARD_SECRET).expect("secret");
    let verified = verify(
        Scheme::Standard,
        &received.headers,
        &received.body,
        &[secret],
        now(),
        300,
    )
    .expect("hookctl's signature verifies");
    assert_eq!(verified.header_event_id.as_deref(), Some("evt_cli_1"));
    let body: serde_json::Value = serde_json::from_slice(&received.body).expect("json body");
    assert_eq!(body["type"], "test.event");
    assert_eq!(body["event_id"], "evt_cli_1");
}

#[test]
fn send_reports_a_rejection_with_its_status_and_exit_code() {
    let answer = r#"{"code":"BAD_SIGNATURE","message":"signature does not match","details":{},"request_id":"req_1"}"#;
    let (url, ingest) = fake_ingest("401 Unauthorized", answer);
    let output = hookctl(&[
        "--json",
        "send",
        "--url",
        &url,
        "--scheme",
        "github",
        "--secret",
        "not-the-right-one",
        "--body",
        r#"{"action":"opened"}"#,
    ]);
    assert_eq!(output.status.code(), Some(4), "{}", stderr(&output));
    let document: serde_json::Value =
        serde_json::from_slice(&output.stdout).expect("one JSON document");
    assert_eq!(document["status"], 401);
    assert_eq!(document["body"]["code"], "BAD_SIGNATURE");
    assert_eq!(
        ingest.join().expect("ingest thread").body,
        br#"{"action":"opened"}"#
    );
}

#[test]
fn send_to_a_closed_port_exits_6() {
    let url = format!("http://127.0.0.1:{}/hooks/acme", closed_port());
    let output = hookctl(&["send", "--url", &url, "--secret", STANDARD_SECRET]);
    assert_eq!(output.status.code(), Some(6), "{}", stderr(&output));
}

#[test]
fn send_answered_429_exits_7_retry_later() {
    let answer = r#"{"code":"RATE_LIMITED","message":"tenant rate limit exceeded","details":{},"request_id":"req_1"}"#;
    let (url, ingest) = fake_ingest("429 Too Many Requests", answer);
    let output = hookctl(&["send", "--url", &url, "--secret", STANDARD_SECRET]);
    assert_eq!(output.status.code(), Some(7), "{}", stderr(&output));
    assert!(stdout(&output).contains("429"), "{}", stdout(&output));
    ingest.join().expect("ingest thread");
}

#[test]
fn completions_cover_every_command_for_each_shell() {
    for (shell, marker) in [
        ("bash", "complete -F"),
        ("zsh", "#compdef hookctl"),
        ("fish", "complete -c hookctl"),
    ] {
        let output = hookctl(&["completions", shell]);
        assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
        let script = stdout(&output);
        assert!(script.contains(marker), "{shell} script lacks {marker:?}");
        for word in ["dead-letters", "redeliver", "all-matching", "endpoint"] {
            assert!(script.contains(word), "{shell} script lacks {word}");
        }
    }
    assert_eq!(hookctl(&["completions", "tcsh"]).status.code(), Some(2));
}

#[test]
fn man_prints_a_roff_page_from_the_command_definitions() {
    let output = hookctl(&["man"]);
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    let page = stdout(&output);
    assert!(
        page.starts_with(".ie") || page.contains(".TH hookctl"),
        "{page}"
    );
    for word in [
        "tenants",
        "dead\\-letters",
        "HOOKCTL_ENDPOINT",
        "Exit codes",
    ] {
        assert!(page.contains(word), "man page lacks {word}");
    }
}
