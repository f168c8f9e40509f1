//! `hookd-bench forward --rates R1,R2,...`: one paced run of
//! `--duration-secs` per rate, in the order given, each with a fresh hookd,
//! sink and (on PostgreSQL) database; each run's steady verdict, and the
//! highest rate whose backlog stayed flat: the rate hookd sustains.

use std::net::SocketAddr;

use anyhow::bail;
use serde::Serialize;

use super::{measure_on, print_report, steady::WARMUP_SECS, ForwardArgs, ForwardReport};
use crate::{scenario::Scenario, storage};

/// The runs of `--rates` and the rate they show sustained.
#[derive(Debug, Serialize)]
pub struct SweepReport {
    /// The engine hookd stored its data in: `sled` or `postgres`.
    pub engine: &'static str,
    /// One run per rate, in the order tried.
    pub runs: Vec<SweepRun>,
    /// The highest rate tried whose backlog stayed flat, requests a second
    /// (`None`: none did).
    pub sustained_per_sec: Option<f64>,
}

/// One run of `--rates`.
#[derive(Debug, Serialize)]
pub struct SweepRun {
    /// The rate it was paced at, requests a second, as given.
    pub rate_per_sec: f64,
    /// What it measured, its steady state among it.
    #[serde(flatten)]
    pub report: ForwardReport,
}

impl SweepRun {
    /// Whether the run's backlog stayed flat while hookd took in the rate
    /// it was paced at (a rate not taken in is not sustained, however
    /// flat what was taken in stayed).
    fn flat(&self) -> bool {
        let steady = self.report.steady.as_ref();
        steady.is_some_and(|s| s.verdict.is_flat())
            && took_in(self.rate_per_sec, self.report.delivery.accepted_per_sec)
    }
}

impl SweepReport {
    /// Each run's verdict, then the rate sustained.
    pub fn text(&self) -> String {
        let mut out = format!("--rates on {}:\n", self.engine);
        for run in &self.runs {
            let verdict = match &run.report.steady {
                Some(steady) => steady.verdict.text(),
                None => "no steady state (not paced)".to_owned(),
            };
            out += &format!(
                "  {}/s (accepted {:.0}/s): {verdict}\n",
                run.rate_per_sec, run.report.delivery.accepted_per_sec
            );
        }
        out + &sustained_line(self.engine, self.sustained_per_sec)
    }
}

/// Runs `args.rates` in turn as `scenario` says, printing each run's report
/// as it ends, then the summary (or, with `--json`, everything at the end).
pub async fn run(args: &mut ForwardArgs, scenario: &Scenario) -> anyhow::Result<()> {
    let rates = args.rates.clone();
    check(args, scenario, &rates)?;
    let mut runs = Vec::with_capacity(rates.len());
    for (i, &rate) in rates.iter().enumerate() {
        args.load.rate = Some(rate);
        let spec = args.load.plan_spec()?;
        let opts = args.load.options(SocketAddr::from(([127, 0, 0, 1], 0)))?;
        let report = measure_on(args.postgres_url.as_deref(), scenario, &spec, &opts).await?;
        if !args.load.json {
            let n = rates.len();
            print!("run {} of {n}, at {rate}/s:\n{}\n", i + 1, report.text());
        }
        runs.push(SweepRun {
            rate_per_sec: rate,
            report,
        });
    }
    let flat: Vec<(f64, bool)> = runs.iter().map(|r| (r.rate_per_sec, r.flat())).collect();
    let report = SweepReport {
        engine: storage::engine_of(args.postgres_url.as_deref()),
        runs,
        sustained_per_sec: sustained(&flat),
    };
    print_report(args.load.json, &report, SweepReport::text)
}

/// Refuses, before anything starts, a rate that is not a positive number,
/// a run too short for a verdict, and what `scenario` cannot measure.
fn check(args: &mut ForwardArgs, scenario: &Scenario, rates: &[f64]) -> anyhow::Result<()> {
    for &rate in rates {
        if !(rate.is_finite() && rate > 0.0) {
            bail!("--rates takes positive numbers of requests a second, got {rate}");
        }
        args.load.rate = Some(rate);
        args.load.pace()?;
        scenario.check(&args.load.plan_spec()?)?;
    }
    let secs = args.load.duration()?.map_or(0.0, |d| d.as_secs_f64());
    if secs < (WARMUP_SECS + 1) as f64 {
        bail!(
            "--rates judges each run after a {WARMUP_SECS} s warm-up: give --duration-secs {} or more",
            WARMUP_SECS + 1
        );
    }
    Ok(())
}

/// Whether `accepted_per_sec` is within 5 % of the `rate` asked for.
fn took_in(rate: f64, accepted_per_sec: f64) -> bool {
    accepted_per_sec >= 0.95 * rate
}

/// The highest of the rates (each with whether its backlog stayed flat)
/// whose backlog stayed flat, whatever the others did.
fn sustained(rates: &[(f64, bool)]) -> Option<f64> {
    rates
        .iter()
        .filter(|(_, flat)| *flat)
        .map(|(rate, _)| *rate)
        .reduce(f64::max)
}

/// The summary's last line.
fn sustained_line(engine: &str, sustained: Option<f64>) -> String {
    let rate = sustained.map_or("none".to_owned(), |r| format!("{r}/s"));
    format!(
        "sustained rate: the highest rate of those tried whose backlog stayed flat: {rate} ({engine})\n"
    )
}

#[cfg(test)]
mod tests {
    use clap::Parser;

    use super::{super::scenario as forward_scenario, *};
    use crate::{Cli, Command};

    fn parse(args: &[&str]) -> Result<ForwardArgs, clap::Error> {
        let all = ["hookd-bench", "forward"].iter().chain(args);
        match Cli::try_parse_from(all)?.command {
            Command::Forward(args) => Ok(args),
            other => panic!("not forward: {other:?}"),
        }
    }

    #[test]
    fn rates_are_a_list_that_excludes_a_single_rate_a_backlog_and_a_count() {
        let args = parse(&["--rates", "500,1000,2000"]).unwrap();
        assert_eq!(args.rates, [500.0, 1000.0, 2000.0]);
        assert_eq!(args.load.rate, None);
        for other in [["--rate", "10"], ["--backlog", "10"], ["--count", "10"]] {
            let err = parse(&[&["--rates", "500"][..], &other].concat()).unwrap_err();
            assert_eq!(
                err.kind(),
                clap::error::ErrorKind::ArgumentConflict,
                "{other:?}"
            );
        }
        let args = parse(&["--postgres-url", "postgres://u@h/db"]).unwrap();
        assert_eq!(args.postgres_url.as_deref(), Some("postgres://u@h/db"));
        assert!(args.rates.is_empty());
    }

    #[test]
    fn rates_and_durations_that_cannot_give_a_verdict_are_refused() {
        for (flags, expected) in [
            (&["--rates", "1000,0"][..], "--rates takes positive"),
            (
                &["--rates", "1000", "--duration-secs", "5.5"][..],
                "--duration-secs 6",
            ),
            (
                &["--rates", "1000", "--max-in-flight", "0"][..],
                "--max-in-flight",
            ),
        ] {
            let mut args = parse(flags).unwrap();
            let (scenario, rates) = (forward_scenario(&args).unwrap(), args.rates.clone());
            let err = check(&mut args, &scenario, &rates).unwrap_err();
            assert!(err.to_string().contains(expected), "{flags:?}: {err}");
        }
        let mut args = parse(&["--rates", "1000,2000", "--duration-secs", "6"]).unwrap();
        let scenario = forward_scenario(&args).unwrap();
        check(&mut args, &scenario, &[1000.0, 2000.0]).unwrap();
    }

    #[test]
    fn a_rate_accepted_more_than_5_percent_short_was_not_taken_in() {
        assert!(took_in(3_000.0, 2_990.0));
        assert!(took_in(3_000.0, 2_850.0));
        assert!(!took_in(3_000.0, 2_378.0));
    }

    #[test]
    fn the_sustained_rate_is_the_highest_flat_one_in_any_order() {
        let tried = [
            (2_000.0, true),
            (4_000.0, false),
            (3_000.0, true),
            (500.0, true),
        ];
        assert_eq!(sustained(&tried), Some(3_000.0));
        assert_eq!(sustained(&[(1_000.0, false)]), None);
        assert_eq!(
            sustained_line("postgres", Some(3_000.0)),
            "sustained rate: the highest rate of those tried whose backlog stayed flat: 3000/s (postgres)\n"
        );
        assert!(sustained_line("sled", None).ends_with("flat: none (sled)\n"));
    }
}
