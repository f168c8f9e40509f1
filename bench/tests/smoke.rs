//! Smoke runs of `hookd-bench compare`, `tenants` and `forward` against a
//! debug hookd: the tool works, its counts add up and its JSON parses.
//! Timings are never asserted.

use std::{
    path::PathBuf,
    process::{Command, Stdio},
    sync::{Mutex, OnceLock},
};

use serde_json::Value;

/// The debug `hookd` in this test's target dir, built if missing or stale.
fn hookd_bin() -> PathBuf {
    static BUILT: OnceLock<PathBuf> = OnceLock::new();
    static LOCK: Mutex<()> = Mutex::new(());
    let _guard = LOCK.lock().unwrap();
    BUILT
        .get_or_init(|| {
            let target = std::env::current_exe()
                .unwrap()
                .parent()
                .unwrap()
                .parent()
                .unwrap()
                .to_path_buf();
            let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".into());
            let status = Command::new(cargo)
                .args(["build", "-q", "-p", "hookd-server", "--bin", "hookd"])
                .current_dir(env!("CARGO_MANIFEST_DIR"))
                .status()
                .unwrap();
            let bin = target.join("hookd");
            assert!(status.success() && bin.exists(), "could not build hookd");
            bin
        })
        .clone()
}

/// Runs `hookd-bench compare --json` with `args`, its `unique` phase only
/// (bare server and hookd side by side), and returns its JSON.
fn compare(args: &[&str]) -> Value {
    compare_phases("unique", args)
}

/// Runs `hookd-bench compare --json` with `args` and only `phases`
/// (comma-separated), two HTTP workers, and returns its JSON.
fn compare_phases(phases: &str, args: &[&str]) -> Value {
    let mut all = vec![
        "--workers",
        "2",
        "--ready-timeout-secs",
        "60",
        "--phases",
        phases,
    ];
    all.extend_from_slice(args);
    bench_json("compare", &all)
}

/// Runs `hookd-bench <scenario> --json` against the debug hookd with
/// `args`, expects success and returns its JSON.
fn bench_json(scenario: &str, args: &[&str]) -> Value {
    bench_json_and_pid(scenario, args).0
}

/// [`bench_json`], and the process id hookd-bench ran as.
fn bench_json_and_pid(scenario: &str, args: &[&str]) -> (Value, u32) {
    let hookd = hookd_bin();
    let child = Command::new(env!("CARGO_BIN_EXE_hookd-bench"))
        .env_remove("HOOKD_BENCH_POSTGRES_URL")
        .arg(scenario)
        .arg("--hookd")
        .arg(&hookd)
        .arg("--json")
        .args(args)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let pid = child.id();
    let output = child.wait_with_output().unwrap();
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert!(
        output.status.success(),
        "hookd-bench failed: {}\n{stdout}",
        String::from_utf8_lossy(&output.stderr)
    );
    let json = serde_json::from_str(&stdout).unwrap_or_else(|e| panic!("not JSON ({e}): {stdout}"));
    (json, pid)
}

fn count(side: &Value, map: &str, key: &str) -> u64 {
    side[map][key].as_u64().unwrap_or(0)
}

fn total(side: &Value, map: &str) -> u64 {
    side[map]
        .as_object()
        .unwrap()
        .values()
        .map(|n| n.as_u64().unwrap())
        .sum()
}

#[test]
fn compare_with_duplicates_over_two_tenants_adds_up() {
    let result = compare(&[
        "--count",
        "200",
        "-c",
        "4",
        "--dup-ratio",
        "0.5",
        "--dup-set",
        "20",
        "--tenants",
        "2",
    ]);
    for name in ["bare", "hookd"] {
        let side = &result[name];
        assert_eq!(side["requests"], 200, "{name}: {side}");
        assert_eq!(total(side, "statuses"), 200, "{name}: {side}");
        assert_eq!(total(side, "errors"), 0, "{name}: {side}");
        assert_eq!(count(side, "seed_statuses", "202"), 20, "{name}: {side}");
        assert!(side["latency_ms"]["p99"].as_f64().unwrap() > 0.0, "{side}");
        assert!(side["ok_rps"].as_f64().unwrap() > 0.0, "{side}");
    }
    let hookd = &result["hookd"];
    let duplicates = hookd["duplicates"].as_u64().unwrap();
    assert!(duplicates > 0 && duplicates < 200, "{hookd}");
    assert_eq!(count(hookd, "statuses", "200"), duplicates, "{hookd}");
    assert_eq!(count(hookd, "statuses", "202"), 200 - duplicates, "{hookd}");
    assert_eq!(count(&result["bare"], "statuses", "202"), 200);
    assert!(result["ratio"].as_f64().unwrap() > 0.0, "{result}");
}

/// The figures' names in `report`, each checked to have a positive value
/// and ratio, no failures, and percentiles.
fn figures(report: &Value) -> Vec<String> {
    let figures = report["figures"].as_array().expect("figures");
    for f in figures {
        assert!(f["value"].as_f64().unwrap() > 0.0, "{f}");
        assert!(f["ratio"].as_f64().unwrap() > 0.0, "{f}");
        assert!(f["baseline"].as_f64().unwrap() > 0.0, "{f}");
        assert!(f["p99_ms"].as_f64().unwrap() > 0.0, "{f}");
        assert_eq!(f["failures"], 0, "{f}");
    }
    figures
        .iter()
        .map(|f| f["name"].as_str().unwrap().to_owned())
        .collect()
}

/// One `compare` prints every ratio: each phase's figure against its
/// baseline, the commit, and the PostgreSQL phase skipped without a URL.
#[test]
fn compare_prints_every_ratio_in_one_run() {
    let report = bench_json(
        "compare",
        &[
            "--workers",
            "2",
            "--ready-timeout-secs",
            "60",
            "--count",
            "40",
            "-c",
            "2",
            "--dup-set",
            "10",
            "--scale-tenants",
            "5",
            "--scale-runs",
            "2",
            "--forward-tenants",
            "2",
            "--drain-timeout-secs",
            "30",
            "--commit",
            "c0ffee",
        ],
    );
    assert_eq!(report["commit"], "c0ffee", "{report}");
    assert_eq!(
        figures(&report),
        [
            "unique",
            "duplicates",
            "tenants_5_run1",
            "tenants_5_run2",
            "routes_3",
            "forward",
            "forward_backlog",
            "alerts_adaptive_on",
            "alerts_adaptive_on_delivered",
            "alerts_adaptive_off_again",
        ],
        "{report}"
    );
    assert_eq!(report["skipped"][0]["phase"], "postgres", "{report}");
    assert_eq!(count(&report["hookd"], "statuses", "202"), 40, "{report}");
    // Each run into the many tenants' hookd is against a run of its own
    // into a one-tenant hookd beside it.
    for (run, figure) in report["figures"].as_array().unwrap()[2..4]
        .iter()
        .enumerate()
    {
        let baseline = figure["baseline_name"].as_str().unwrap();
        assert!(
            baseline.ends_with(&format!("run {} beside it", run + 1)),
            "{figure}"
        );
        assert!(figure["ratio"].as_f64().unwrap() > 0.0, "{figure}");
    }
}

/// With `--rounds 2`, each paired figure is the median of two rounds run
/// in alternating order, with both rounds' ratios; `--rounds 0` is refused.
#[test]
fn compare_rounds_give_each_figure_every_rounds_ratio() {
    let report = compare_phases(
        "unique,routes",
        &["--count", "30", "-c", "2", "--rounds", "2"],
    );
    assert_eq!(figures(&report), ["unique", "routes_3"], "{report}");
    for figure in report["figures"].as_array().unwrap() {
        let rounds = figure["round_ratios"].as_array().expect("round_ratios");
        assert_eq!(rounds.len(), 2, "{figure}");
        assert!(rounds.iter().all(|r| r.as_f64().unwrap() > 0.0), "{figure}");
        assert!(rounds.contains(&figure["ratio"]), "{figure}");
    }
    assert!(
        report["figures"][1]["baseline_name"]
            .as_str()
            .unwrap()
            .ends_with("same round"),
        "{report}"
    );
    let refused = Command::new(env!("CARGO_BIN_EXE_hookd-bench"))
        .args(["compare", "--rounds", "0"])
        .output()
        .unwrap();
    assert!(!refused.status.success());
    assert!(
        String::from_utf8_lossy(&refused.stderr).contains("--rounds must be between 1 and 21"),
        "{}",
        String::from_utf8_lossy(&refused.stderr)
    );
}

/// A database of its own on the test server named by
/// `HOOKD_TEST_POSTGRES_URL` (made with `psql`), or `None` to skip.
fn postgres_database() -> Option<String> {
    let Ok(url) = std::env::var("HOOKD_TEST_POSTGRES_URL") else {
        assert!(
            std::env::var_os("HOOKD_REQUIRE_POSTGRES").is_none(),
            "HOOKD_REQUIRE_POSTGRES is set but HOOKD_TEST_POSTGRES_URL is not"
        );
        return None;
    };
    let name = format!("hookd_bench_{}", std::process::id());
    let status = Command::new("psql")
        .arg(&url)
        .args(["-q", "-c", &format!("CREATE DATABASE {name}")])
        .status()
        .expect("psql runs");
    assert!(status.success(), "could not create the database {name}");
    let (server, _db) = url.rsplit_once('/').expect("a URL with a database");
    Some(format!("{server}/{name}"))
}

/// With a PostgreSQL URL, `compare` measures hookd on it against sled.
#[test]
fn compare_measures_postgres_against_sled_when_given_a_url() {
    let Some(url) = postgres_database() else {
        eprintln!("skipped: HOOKD_TEST_POSTGRES_URL is not set");
        return;
    };
    let report = compare_phases(
        "postgres,unique",
        &["--count", "30", "-c", "2", "--postgres-url", &url],
    );
    assert_eq!(figures(&report), ["unique", "postgres"], "{report}");
    assert!(report["skipped"].as_array().unwrap().is_empty(), "{report}");
}

#[test]
fn every_scheme_is_signed_so_hookd_accepts_it() {
    for scheme in ["standard", "hookd", "stripe", "github", "shopify", "slack"] {
        let result = compare(&["--count", "20", "-c", "2", "--scheme", scheme]);
        let hookd = &result["hookd"];
        assert_eq!(count(hookd, "statuses", "202"), 20, "{scheme}: {hookd}");
        assert_eq!(total(hookd, "errors"), 0, "{scheme}: {hookd}");
    }
}

#[test]
fn a_timed_run_stops_by_itself() {
    let result = compare(&[
        "--duration-secs",
        "0.5",
        "-c",
        "2",
        "--max-requests",
        "100000",
    ]);
    for name in ["bare", "hookd"] {
        let side = &result[name];
        let requests = side["requests"].as_u64().unwrap();
        assert!(requests > 0, "{name}: {side}");
        assert_eq!(
            total(side, "statuses") + total(side, "errors"),
            requests,
            "{name}: {side}"
        );
        assert_eq!(side["plan_exhausted"], false, "{name}: {side}");
    }
}

/// `hookd-bench tenants` starts hookd once per count and reports each.
#[test]
fn the_tenants_scenario_reports_every_count() {
    let rows = bench_json("tenants", &["--counts", "1,5", "--count", "30", "-c", "3"]);
    let rows = rows.as_array().unwrap();
    assert_eq!(rows.len(), 2);
    for (row, tenants) in rows.iter().zip([1, 5]) {
        assert_eq!(row["tenants"], tenants);
        assert_eq!(row["failures"], 0, "{row}");
        assert!(row["rss_idle_kib"].as_u64().unwrap() > 0, "{row}");
    }
}

/// `hookd-bench forward` with `first`, then 4 connections, 2 tenants and
/// 8 forwards in flight each.
fn small_forward<'a>(first: &[&'a str]) -> Vec<&'a str> {
    let rest = [
        "-c",
        "4",
        "--tenants",
        "2",
        "--max-in-flight",
        "8",
        "--drain-timeout-secs",
        "60",
    ];
    first.iter().copied().chain(rest).collect()
}

/// A forwarding tally: `n` events arrived, none missing, twice, unknown or
/// without an id, at a positive rate.
fn every_one_arrived_once(tally: &Value, n: u64) {
    assert_eq!(tally["arrived"], n, "{tally}");
    for zero in ["missing", "duplicates", "unexpected", "without_id"] {
        assert_eq!(tally[zero], 0, "{zero}: {tally}");
    }
    assert!(
        tally["delivered_per_sec"].as_f64().unwrap() > 0.0,
        "{tally}"
    );
}

/// `hookd-bench forward`: every accepted event arrives at the sink once.
#[test]
fn the_forward_scenario_delivers_every_accepted_event_once() {
    let report = bench_json("forward", &small_forward(&["--count", "200"]));
    let load = &report["load"];
    assert_eq!(count(load, "statuses", "202"), 200, "{load}");
    assert_eq!(total(load, "errors"), 0, "{load}");
    let delivery = &report["delivery"];
    assert_eq!(delivery["accepted"], 200, "{delivery}");
    every_one_arrived_once(delivery, 200);
    assert!(
        delivery["latency_ms"]["max"].as_f64().unwrap() > 0.0,
        "{delivery}"
    );
    assert_eq!(report["tenants"], 2);
    assert_eq!(report["engine"], "sled");
    assert!(report["steady"].is_null(), "not paced: {report}");
}

/// The databases `hookd-bench forward` running as `pid` made on the
/// server at `url` and left behind.
fn databases_left(url: &str, pid: u32) -> String {
    let query = format!("SELECT datname FROM pg_database WHERE datname ~ '^hookd_bench_{pid}_'");
    let output = Command::new("psql")
        .arg(url)
        .args(["-Atc", &query])
        .output()
        .expect("psql runs");
    assert!(output.status.success(), "psql failed: {output:?}");
    String::from_utf8_lossy(&output.stdout).trim().to_owned()
}

/// `hookd-bench forward --postgres-url`: hookd runs on a database of the
/// run's own, made on the server and dropped after, once and with
/// `--backlog` (both hookds on the same database: the backlog arrives).
#[test]
fn the_forward_scenario_runs_on_a_database_of_its_own_on_postgres() {
    let Ok(url) = std::env::var("HOOKD_TEST_POSTGRES_URL") else {
        eprintln!("skipped: HOOKD_TEST_POSTGRES_URL is not set");
        return;
    };
    let pg = ["--postgres-url", url.as_str()];
    let (report, pid) = bench_json_and_pid(
        "forward",
        &small_forward(&[&["--count", "200"][..], &pg].concat()),
    );
    assert_eq!(report["engine"], "postgres", "{report}");
    every_one_arrived_once(&report["delivery"], 200);
    assert_eq!(databases_left(&url, pid), "");
    let (report, pid) = bench_json_and_pid(
        "forward",
        &small_forward(&[&["--backlog", "200"][..], &pg].concat()),
    );
    assert_eq!(report["engine"], "postgres", "{report}");
    every_one_arrived_once(&report["drain"], 200);
    assert_eq!(databases_left(&url, pid), "");
}

/// `hookd-bench forward --rate R`: R requests a second for the duration,
/// spread over it (not sent as fast as hookd answers), each arriving once.
#[test]
fn a_paced_forward_run_sends_at_its_rate_for_its_duration() {
    let report = bench_json(
        "forward",
        &small_forward(&["--rate", "200", "--duration-secs", "1"]),
    );
    let load = &report["load"];
    assert_eq!(count(load, "statuses", "202"), 200, "{load}");
    assert_eq!(load["plan_exhausted"], false, "{load}");
    let elapsed = load["elapsed_secs"].as_f64().unwrap();
    assert!(
        elapsed >= 0.99,
        "the last of 200 requests at 200/s goes out at 995 ms: {load}"
    );
    every_one_arrived_once(&report["delivery"], 200);
    let steady = &report["steady"];
    assert_eq!(steady["offered_per_sec"], 200.0, "{steady}");
    let series = steady["series"].as_array().unwrap();
    let sum = |key: &str| series.iter().map(|s| s[key].as_u64().unwrap()).sum::<u64>();
    assert_eq!((sum("accepted"), sum("delivered")), (200, 200), "{steady}");
    let last = series.last().unwrap();
    assert_eq!(last["backlog"], 0, "{steady}");
    assert_eq!(last["backlog_age_secs"], 0.0, "{steady}");
    // One second of load: nothing after the warm-up to judge.
    assert_eq!(steady["verdict"]["shape"], "too_short", "{steady}");
}

/// `hookd-bench forward --rates`: one paced run per rate, in order, each
/// delivering every event once with its own steady state, and the
/// sustained rate the highest of those whose verdict is flat.
#[test]
fn a_rates_sweep_runs_each_rate_and_names_the_highest_flat_one() {
    let report = bench_json(
        "forward",
        &small_forward(&["--rates", "40,20", "--duration-secs", "6"]),
    );
    assert_eq!(report["engine"], "sled", "{report}");
    let runs = report["runs"].as_array().unwrap();
    let rates: Vec<f64> = runs
        .iter()
        .map(|r| r["rate_per_sec"].as_f64().unwrap())
        .collect();
    assert_eq!(rates, [40.0, 20.0], "{report}");
    let mut flat = Vec::new();
    for (run, rate) in runs.iter().zip([240, 120]) {
        every_one_arrived_once(&run["delivery"], rate);
        assert_eq!(run["engine"], "sled", "{run}");
        let verdict = &run["steady"]["verdict"];
        assert_eq!(verdict["to_second"], 6, "{verdict}");
        match verdict["shape"].as_str() {
            Some("flat") => flat.push(run["rate_per_sec"].as_f64().unwrap()),
            Some("not_flat") => {}
            other => panic!("a 6 s run is judged: {other:?}"),
        }
    }
    let highest = flat.into_iter().reduce(f64::max);
    assert_eq!(report["sustained_per_sec"].as_f64(), highest, "{report}");
}

/// `hookd-bench forward --alone`: the tenant `alone` is loaded in the same
/// run, round robin with the others; its events arrive at a sink of its
/// own, each once, and the report tallies them apart from the others'.
#[test]
fn an_alone_tenant_is_loaded_and_tallied_beside_the_others() {
    let report = bench_json(
        "forward",
        &small_forward(&["--count", "300", "--routes", "2", "--alone"]),
    );
    let load = &report["load"];
    assert_eq!(count(load, "statuses", "202"), 300, "{load}");
    let (delivery, alone) = (&report["delivery"], &report["alone"]);
    assert_eq!(delivery["accepted"], 200, "{delivery}");
    assert_eq!(alone["accepted"], 100, "{alone}");
    every_one_arrived_once(delivery, 200);
    every_one_arrived_once(&report["routes"][0], 200);
    every_one_arrived_once(alone, 100);
    assert_eq!(report["tenants"], 2);
}

/// `hookd-bench hostile --side-by-side`: each round's benign and hostile
/// phase run at once in two hookd processes, each loaded in full; the
/// endless transform forwards nothing, and the round's ratio is reported.
#[test]
fn the_hostile_scenario_runs_both_phases_side_by_side() {
    let report = bench_json(
        "hostile",
        &[
            "--rounds",
            "1",
            "--backlog",
            "4",
            "--side-by-side",
            "--count",
            "200",
            "-c",
            "4",
        ],
    );
    let phases = report["phases"].as_array().unwrap();
    let names: Vec<&str> = phases
        .iter()
        .map(|p| p["transform"].as_str().unwrap())
        .collect();
    assert_eq!(names, ["benign", "hostile"], "{report}");
    for phase in phases {
        assert_eq!(phase["backlog_accepted"], 4, "{phase}");
        assert_eq!(count(&phase["load"], "statuses", "202"), 200, "{phase}");
    }
    assert_eq!(phases[1]["backlog_forwarded"], 0, "{report}");
    assert_eq!(report["side_by_side"], true);
    let ratios = report["round_p99_ratios"].as_array().unwrap();
    assert_eq!(ratios.len(), 1, "{report}");
    assert!(ratios[0].as_f64().unwrap() > 0.0, "{report}");
}

/// `hookd-bench forward --backlog N`: N deliveries accepted in pull mode,
/// hookd restarted on the same data dir with a destination, and every one
/// of them arrives at the sink once; the report names the drain's figure.
#[test]
fn the_forward_backlog_drains_every_accepted_event_after_a_restart() {
    let report = bench_json("forward", &small_forward(&["--backlog", "200"]));
    let load = &report["load"];
    assert_eq!(count(load, "statuses", "202"), 200, "{load}");
    let drain = &report["drain"];
    assert_eq!(drain["backlog"], 200, "{drain}");
    every_one_arrived_once(drain, 200);
    assert!(drain["hookd_cpu_secs"].as_f64().unwrap() >= 0.0, "{drain}");
    assert_eq!(report["tenants"], 2);
    assert_eq!(report["engine"], "sled");
}

/// `forward` refuses duplicates and an in-flight limit hookd would refuse,
/// before starting anything.
#[test]
fn the_forward_scenario_refuses_flags_it_cannot_measure() {
    for (args, expected) in [
        (["--dup-ratio", "0.5"], "--dup-ratio"),
        (["--max-in-flight", "0"], "--max-in-flight"),
        (["--max-in-flight", "1025"], "--max-in-flight"),
        (["--drain-timeout-secs", "0"], "--drain-timeout-secs"),
    ] {
        let output = Command::new(env!("CARGO_BIN_EXE_hookd-bench"))
            .args(["forward", "--count", "1", "--hookd", "/nonexistent/hookd"])
            .args(args)
            .output()
            .unwrap();
        let stderr = String::from_utf8_lossy(&output.stderr);
        assert!(!output.status.success(), "{args:?} was accepted");
        assert!(stderr.contains(expected), "{args:?}: {stderr}");
    }
}

/// `hookd-bench isolation`: a round of both phases in a second each;
/// `quiet` is answered 202 and its events arrive in both, `flood` only
/// beside it in the flooded phase, half of its requests refused for their
/// signature, and every figure and ratio is a number.
#[test]
fn the_isolation_scenario_reports_both_phases_and_their_ratios() {
    let report = bench_json(
        "isolation",
        &[
            "--rounds",
            "1",
            "--duration-secs",
            "1",
            "--quiet-rate",
            "50",
            "--flood-factor",
            "4",
            "--slow-ms",
            "50",
            "-c",
            "4",
            "--drain-timeout-secs",
            "30",
        ],
    );
    let phases = report["phases"].as_array().unwrap();
    let names: Vec<&str> = phases
        .iter()
        .map(|p| p["phase"].as_str().unwrap())
        .collect();
    assert_eq!(names, ["alone", "flooded"], "{report}");
    for phase in phases {
        assert_eq!(count(&phase["quiet"], "statuses", "202"), 50, "{phase}");
        every_one_arrived_once(&phase["delivery"], 50);
        assert!(phase["quiet"]["latency_ms"]["p99"].as_f64().unwrap() > 0.0);
    }
    assert!(phases[0]["flood"].is_null(), "{report}");
    let flood = &phases[1]["flood"];
    assert_eq!(count(flood, "statuses", "202"), 100, "{flood}");
    assert_eq!(count(flood, "statuses", "401"), 100, "{flood}");
    for side in ["alone", "flooded"] {
        for figure in [
            "ingest_p50_ms",
            "ingest_p99_ms",
            "delivery_p50_ms",
            "delivery_p99_ms",
        ] {
            let value = report[side][figure].as_f64();
            assert!(value.is_some_and(|v| v > 0.0), "{side} {figure}: {report}");
        }
    }
    for ratio in ["ingest_p99", "delivery_p50", "delivery_p99"] {
        let value = report["ratios"][ratio].as_f64();
        assert!(value.is_some_and(|v| v > 0.0), "{ratio}: {report}");
    }
    assert_eq!(report["round_ratios"].as_array().unwrap().len(), 1);
    assert!(report["isolated"].is_boolean(), "{report}");
}

/// `hookd-bench replay`: a round of both phases in a second each; in both,
/// `backfill`'s history is accepted whole before the restart and `live` is
/// answered 202; only the replaying phase orders a replay, over REST with
/// the admin token, and reads its progress; every figure is a number.
#[test]
fn the_replay_scenario_replays_beside_live_ingest_and_reports_the_ratio() {
    let report = bench_json(
        "replay",
        &[
            "--rounds",
            "1",
            "--duration-secs",
            "1",
            "--live-rate",
            "50",
            "--history",
            "300",
            "--replay-rate",
            "100",
            "-c",
            "4",
        ],
    );
    let phases = report["phases"].as_array().unwrap();
    let names: Vec<&str> = phases
        .iter()
        .map(|p| p["phase"].as_str().unwrap())
        .collect();
    assert_eq!(names, ["alone", "replaying"], "{report}");
    for phase in phases {
        assert_eq!(count(&phase["history"], "statuses", "202"), 300, "{phase}");
        assert_eq!(count(&phase["live"], "statuses", "202"), 50, "{phase}");
        assert!(phase["live"]["latency_ms"]["p99"].as_f64().unwrap() > 0.0);
    }
    assert!(phases[0]["replay"].is_null(), "{report}");
    assert_eq!(phases[0]["crm_forwarded"], 0, "{report}");
    let replay = &phases[1]["replay"];
    assert!(
        replay["id"].as_str().unwrap().starts_with("rpl_"),
        "{replay}"
    );
    assert!(replay["replayed_at_end"].as_u64().unwrap() > 0, "{replay}");
    assert!(replay["last_error"].is_null(), "{replay}");
    for side in ["alone", "replaying"] {
        for figure in ["ingest_p50_ms", "ingest_p99_ms"] {
            let value = report[side][figure].as_f64();
            assert!(value.is_some_and(|v| v > 0.0), "{side} {figure}: {report}");
        }
    }
    assert!(
        report["ingest_p99_ratio"].as_f64().unwrap() > 0.0,
        "{report}"
    );
    assert_eq!(report["round_ratios"].as_array().unwrap().len(), 1);
    assert!(report["within"].is_boolean(), "{report}");
}
