//! `compare`'s result: every figure of one run beside its baseline and the
//! ratio of the two, with latency percentiles and the commit measured,
//! printed as a table or as one JSON object.

use serde::Serialize;

use crate::{
    backlog::BacklogReport,
    forward::ForwardReport,
    report::{Comparison, Summary},
};

/// One figure against its baseline.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Figure {
    /// What was measured, e.g. `unique`, `routes_3`, `postgres`.
    pub name: String,
    /// The figure, in `unit`.
    pub value: f64,
    /// `2xx/s` or `delivered/s`.
    pub unit: &'static str,
    /// What the baseline is, e.g. `bare`, `hookd sled, 1 route`.
    pub baseline_name: String,
    /// The baseline in the same unit (`None`: its phase did not run).
    pub baseline: Option<f64>,
    /// `value / baseline` (`None` without a baseline, or a zero one).
    pub ratio: Option<f64>,
    /// Median latency of the figure's run, milliseconds.
    pub p50_ms: f64,
    /// 99th percentile latency of the figure's run, milliseconds.
    pub p99_ms: f64,
    /// The baseline run's median latency, milliseconds.
    pub baseline_p50_ms: Option<f64>,
    /// The baseline run's 99th percentile latency, milliseconds.
    pub baseline_p99_ms: Option<f64>,
    /// The server's CPU time per request of the figure's run, microseconds
    /// (`None` where it was not read: forwarding figures).
    pub cpu_us_per_request: Option<f64>,
    /// The same of the baseline run.
    pub baseline_cpu_us_per_request: Option<f64>,
    /// The server's context switches per request of the figure's run
    /// (`None` where they were not read, as the CPU time).
    pub switches_per_request: Option<f64>,
    /// The same of the baseline run.
    pub baseline_switches_per_request: Option<f64>,
    /// The server's minor page faults per request of the figure's run
    /// (`None` where they were not read, as the CPU time).
    pub faults_per_request: Option<f64>,
    /// The same of the baseline run.
    pub baseline_faults_per_request: Option<f64>,
    /// The bytes the server passed to write calls per request of the
    /// figure's run (`None` where they were not read, as the CPU time).
    pub written_bytes_per_request: Option<f64>,
    /// The same of the baseline run.
    pub baseline_written_bytes_per_request: Option<f64>,
    /// Requests of the figure's run not answered 2xx, or events not arrived
    /// (of every round's runs, for a figure of several rounds).
    pub failures: u64,
    /// Every round's ratio in the order run, for a figure measured in
    /// several rounds (`--rounds`); the figure is the median round's.
    /// Empty for a figure of one run.
    pub round_ratios: Vec<Option<f64>>,
}

/// A 2xx/s baseline: its figure and percentiles.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Base {
    /// 2xx/s (or delivered/s).
    pub value: f64,
    /// Median latency, milliseconds.
    pub p50_ms: f64,
    /// 99th percentile latency, milliseconds.
    pub p99_ms: f64,
    /// The server's CPU time per request, microseconds, if it was read.
    pub cpu_us: Option<f64>,
    /// The server's context switches per request, if they were read.
    pub switches: Option<f64>,
    /// The server's minor page faults per request, if they were read.
    pub faults: Option<f64>,
    /// The bytes the server wrote per request, if they were read.
    pub written: Option<f64>,
}

impl Base {
    /// A summary's 2xx/s and percentiles.
    pub fn of(summary: &Summary) -> Base {
        Base {
            value: summary.ok_rps,
            p50_ms: summary.latency_ms.p50,
            p99_ms: summary.latency_ms.p99,
            cpu_us: summary.cpu.as_ref().map(|c| c.us_per_request),
            switches: summary.cpu.as_ref().map(|c| c.switches_per_request),
            faults: summary.cpu.as_ref().map(|c| c.faults_per_request),
            written: summary
                .cpu
                .as_ref()
                .and_then(|c| c.written_bytes_per_request),
        }
    }

    /// A rate and its percentiles with none of the server's use read (a
    /// forwarding figure, measured at the sink).
    pub fn rate(value: f64, p50_ms: f64, p99_ms: f64) -> Base {
        Base {
            value,
            p50_ms,
            p99_ms,
            cpu_us: None,
            switches: None,
            faults: None,
            written: None,
        }
    }

    /// The mean of two baselines (e.g. the runs before and after another).
    pub fn mean(a: Base, b: Base) -> Base {
        Base {
            value: (a.value + b.value) / 2.0,
            p50_ms: (a.p50_ms + b.p50_ms) / 2.0,
            p99_ms: (a.p99_ms + b.p99_ms) / 2.0,
            cpu_us: a.cpu_us.zip(b.cpu_us).map(|(a, b)| (a + b) / 2.0),
            switches: a.switches.zip(b.switches).map(|(a, b)| (a + b) / 2.0),
            faults: a.faults.zip(b.faults).map(|(a, b)| (a + b) / 2.0),
            written: a.written.zip(b.written).map(|(a, b)| (a + b) / 2.0),
        }
    }
}

impl Figure {
    /// `value` (with its percentiles and failures) against `base`.
    pub fn new(
        name: impl Into<String>,
        unit: &'static str,
        value: Base,
        failures: u64,
        baseline_name: impl Into<String>,
        base: Option<Base>,
    ) -> Figure {
        let ratio = base.and_then(|b| (b.value > 0.0).then(|| value.value / b.value));
        Figure {
            name: name.into(),
            value: value.value,
            unit,
            baseline_name: baseline_name.into(),
            baseline: base.map(|b| b.value),
            ratio,
            p50_ms: value.p50_ms,
            p99_ms: value.p99_ms,
            baseline_p50_ms: base.map(|b| b.p50_ms),
            baseline_p99_ms: base.map(|b| b.p99_ms),
            cpu_us_per_request: value.cpu_us,
            baseline_cpu_us_per_request: base.and_then(|b| b.cpu_us),
            switches_per_request: value.switches,
            baseline_switches_per_request: base.and_then(|b| b.switches),
            faults_per_request: value.faults,
            baseline_faults_per_request: base.and_then(|b| b.faults),
            written_bytes_per_request: value.written,
            baseline_written_bytes_per_request: base.and_then(|b| b.written),
            failures,
            round_ratios: Vec::new(),
        }
    }

    /// Of one figure measured in several rounds, each against its own
    /// baseline, the round whose ratio is the median (the lower of the two
    /// middle ones for an even count; a round without a ratio counts as the
    /// lowest), with every round's ratio in the order run and every round's
    /// failures. Returns the round's index too. `None` without rounds.
    pub fn median_round(rounds: Vec<Figure>) -> Option<(usize, Figure)> {
        let ratio = |f: &Figure| f.ratio.unwrap_or(f64::NEG_INFINITY);
        let mut order: Vec<usize> = (0..rounds.len()).collect();
        order.sort_by(|&a, &b| ratio(&rounds[a]).total_cmp(&ratio(&rounds[b])));
        let median = *order.get(rounds.len().checked_sub(1)? / 2)?;
        let failures = rounds.iter().map(|f| f.failures).sum();
        let round_ratios = match rounds.len() {
            1 => Vec::new(),
            _ => rounds.iter().map(|f| f.ratio).collect(),
        };
        let figure = Figure {
            failures,
            round_ratios,
            ..rounds.into_iter().nth(median)?
        };
        Some((median, figure))
    }

    /// A hookd load's 2xx/s against `base`.
    pub fn ingest(
        name: impl Into<String>,
        summary: &Summary,
        baseline_name: impl Into<String>,
        base: Option<Base>,
    ) -> Figure {
        let value = Base::of(summary);
        Figure::new(
            name,
            "2xx/s",
            value,
            summary.failures(),
            baseline_name,
            base,
        )
    }

    /// A backlog's drain after a restart, forwarding with no ingest beside
    /// it, against the accepted/s of the pull-mode load that made the
    /// backlog; the percentiles are from `/readyz` to each event's arrival.
    pub fn drained(name: impl Into<String>, report: &BacklogReport) -> Figure {
        let d = &report.drain;
        let value = Base::rate(d.delivered_per_sec, d.arrival_ms.p50, d.arrival_ms.p99);
        Figure::new(
            name,
            "delivered/s",
            value,
            d.missing + report.load.failures(),
            "accepted/s of its pull-mode load",
            Some(Base::of(&report.load)),
        )
    }

    /// A forwarding run's delivered/s against its own accepted/s; the
    /// percentiles are from each 202 to the event's arrival.
    pub fn forwarded(name: impl Into<String>, report: &ForwardReport) -> Figure {
        let d = &report.delivery;
        let value = Base::rate(d.delivered_per_sec, d.latency_ms.p50, d.latency_ms.p99);
        let accepted = Base::of(&report.load);
        Figure::new(
            name,
            "delivered/s",
            value,
            d.missing + report.load.failures(),
            "accepted/s of the same run",
            Some(Base::rate(
                d.accepted_per_sec,
                accepted.p50_ms,
                accepted.p99_ms,
            )),
        )
    }
}

/// A per-request column of a figure: its run's, then its baseline's in
/// parentheses, each with `decimals`; `-` where one was not read.
fn per_request_column(figure: Option<f64>, baseline: Option<f64>, decimals: usize) -> String {
    let cell = |v: Option<f64>| v.map_or("-".into(), |v| format!("{v:.decimals$}"));
    format!("{} ({})", cell(figure), cell(baseline))
}

/// A phase that did not run, and why.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Skipped {
    /// The phase.
    pub phase: String,
    /// Why it did not run.
    pub reason: String,
}

/// Everything one `compare` measured.
#[derive(Debug, Default, Serialize)]
pub struct Report {
    /// The commit measured (`--commit`, else `git rev-parse HEAD`).
    pub commit: Option<String>,
    /// Concurrent connections of every load.
    pub connections: usize,
    /// Seconds each timed load lasts (`None` for a `--count` run).
    pub duration_secs: Option<f64>,
    /// The bare server on the load as given (the `unique` phase).
    pub bare: Option<Summary>,
    /// hookd on the same load.
    pub hookd: Option<Summary>,
    /// hookd's 2xx/s over the bare server's on it.
    pub ratio: Option<f64>,
    /// Every figure, in the order measured.
    pub figures: Vec<Figure>,
    /// Phases that did not run.
    pub skipped: Vec<Skipped>,
}

impl Report {
    /// Keeps the head-to-head phase's two sides and their ratio.
    pub fn set_head_to_head(&mut self, comparison: Comparison) {
        self.ratio = Some(comparison.ratio);
        self.bare = Some(comparison.bare);
        self.hookd = Some(comparison.hookd);
    }

    /// The table of every figure, then the skipped phases.
    pub fn text(&self) -> String {
        let mut out = format!(
            "\nevery ratio, commit {}\n{:<28} {:>14} {:<12} {:>14}  {:<46} {:>7} {:>9} {:>9} {:>17} {:>22} {:>22} {:>22}\n",
            self.commit.as_deref().unwrap_or("unknown"),
            "figure",
            "value",
            "unit",
            "baseline",
            "baseline is",
            "ratio",
            "p50 ms",
            "p99 ms",
            "CPU µs/req (base)",
            "switches/req (base)",
            "faults/req (base)",
            "written B/req (base)",
        );
        for f in &self.figures {
            out += &format!(
                "{:<28} {:>14.0} {:<12} {:>14} {:<46} {:>7} {:>9.3} {:>9.3} {:>17} {:>22} {:>22} {:>22}{}\n",
                f.name,
                f.value,
                f.unit,
                f.baseline.map_or("-".into(), |b| format!("{b:.0}")),
                format!(" {}", f.baseline_name),
                f.ratio.map_or("-".into(), |r| format!("{r:.3}")),
                f.p50_ms,
                f.p99_ms,
                per_request_column(f.cpu_us_per_request, f.baseline_cpu_us_per_request, 1),
                per_request_column(f.switches_per_request, f.baseline_switches_per_request, 2),
                per_request_column(f.faults_per_request, f.baseline_faults_per_request, 2),
                per_request_column(
                    f.written_bytes_per_request,
                    f.baseline_written_bytes_per_request,
                    0
                ),
                match f.failures {
                    0 => String::new(),
                    n => format!("  ({n} failures)"),
                },
            );
        }
        for f in self.figures.iter().filter(|f| f.round_ratios.len() > 1) {
            let ratios: Vec<String> = f
                .round_ratios
                .iter()
                .map(|r| r.map_or("-".into(), |r| format!("{r:.3}")))
                .collect();
            out += &format!(
                "{}: {} rounds, ratios {} in the order run; the row above is the median round's\n",
                f.name,
                f.round_ratios.len(),
                ratios.join(" "),
            );
        }
        for s in &self.skipped {
            out += &format!("{}: skipped ({})\n", s.phase, s.reason);
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn base(value: f64) -> Base {
        Base {
            value,
            p50_ms: 1.0,
            p99_ms: 4.0,
            cpu_us: Some(value / 100.0),
            switches: Some(value / 40_000.0),
            faults: Some(value / 20_000.0),
            written: Some(value / 10.0),
        }
    }

    #[test]
    fn a_figure_is_its_value_over_its_baseline() {
        let f = Figure::new(
            "routes_3",
            "2xx/s",
            base(850.0),
            0,
            "1 route",
            Some(base(1000.0)),
        );
        assert_eq!(f.ratio, Some(0.85));
        assert_eq!(f.baseline_p99_ms, Some(4.0));
        let none = Figure::new("postgres", "2xx/s", base(5.0), 0, "sled", None);
        assert_eq!((none.baseline, none.ratio), (None, None));
        let zero = Figure::new("x", "2xx/s", base(5.0), 0, "y", Some(base(0.0)));
        assert_eq!(zero.ratio, None, "no ratio over a zero baseline, not inf");
    }

    #[test]
    fn the_json_is_one_object_with_every_figure_and_the_commit() {
        let report = Report {
            commit: Some("0123abc".into()),
            connections: 64,
            duration_secs: Some(10.0),
            figures: vec![Figure::new(
                "unique",
                "2xx/s",
                base(16_000.0),
                0,
                "bare",
                Some(base(90_000.0)),
            )],
            skipped: vec![Skipped {
                phase: "postgres".into(),
                reason: "no --postgres-url".into(),
            }],
            ..Report::default()
        };
        let json = serde_json::to_value(&report).unwrap();
        assert_eq!(json["commit"], "0123abc");
        assert_eq!(json["connections"], 64);
        let figure = &json["figures"][0];
        for key in [
            "name",
            "value",
            "unit",
            "baseline_name",
            "baseline",
            "ratio",
            "p50_ms",
            "p99_ms",
            "baseline_p50_ms",
            "baseline_p99_ms",
            "cpu_us_per_request",
            "baseline_cpu_us_per_request",
            "switches_per_request",
            "baseline_switches_per_request",
            "faults_per_request",
            "baseline_faults_per_request",
            "written_bytes_per_request",
            "baseline_written_bytes_per_request",
            "failures",
            "round_ratios",
        ] {
            assert!(figure.get(key).is_some(), "{key} missing: {figure}");
        }
        assert_eq!(figure["baseline"], 90_000.0);
        assert!((figure["ratio"].as_f64().unwrap() - 16.0 / 90.0).abs() < 1e-9);
        assert_eq!(json["skipped"][0]["phase"], "postgres");
        assert!(json["bare"].is_null() && json["ratio"].is_null(), "{json}");
        let text = report.text();
        assert!(text.contains("commit 0123abc"), "{text}");
        assert!(text.contains("160.0 (900.0)"), "{text}");
        assert!(text.contains("0.40 (2.25)"), "{text}");
        assert!(text.contains("0.80 (4.50)"), "{text}");
        assert!(text.contains("1600 (9000)"), "{text}");
        assert!(
            text.contains("postgres: skipped (no --postgres-url)"),
            "{text}"
        );
    }

    fn round(value: f64, baseline: f64, failures: u64) -> Figure {
        Figure::new(
            "routes_3",
            "2xx/s",
            base(value),
            failures,
            "1 route",
            Some(base(baseline)),
        )
    }

    #[test]
    fn several_rounds_give_the_median_round_with_every_ratio() {
        let rounds = vec![
            round(900.0, 1000.0, 0),
            round(700.0, 1000.0, 2),
            round(800.0, 1000.0, 0),
            round(950.0, 1000.0, 1),
            round(600.0, 1000.0, 0),
        ];
        let (index, figure) = Figure::median_round(rounds).unwrap();
        assert_eq!(index, 2);
        assert_eq!((figure.value, figure.ratio), (800.0, Some(0.8)));
        assert_eq!(
            figure.round_ratios,
            [Some(0.9), Some(0.7), Some(0.8), Some(0.95), Some(0.6)]
        );
        assert_eq!(figure.failures, 3, "every round's failures count");
        let report = Report {
            figures: vec![figure],
            ..Report::default()
        };
        let text = report.text();
        assert!(
            text.contains(
                "routes_3: 5 rounds, ratios 0.900 0.700 0.800 0.950 0.600 in the order run"
            ),
            "{text}"
        );
    }

    #[test]
    fn an_even_count_of_rounds_gives_the_lower_middle_one() {
        let rounds = vec![
            round(900.0, 1000.0, 0),
            round(500.0, 1000.0, 0),
            round(800.0, 1000.0, 0),
            round(600.0, 1000.0, 0),
        ];
        let (index, figure) = Figure::median_round(rounds).unwrap();
        assert_eq!((index, figure.ratio), (3, Some(0.6)));
    }

    #[test]
    fn one_round_is_the_figure_as_it_was_and_a_round_without_ratio_is_lowest() {
        let (index, one) = Figure::median_round(vec![round(900.0, 1000.0, 1)]).unwrap();
        assert_eq!((index, one.ratio, one.failures), (0, Some(0.9), 1));
        assert!(one.round_ratios.is_empty());
        assert!(!Report {
            figures: vec![one],
            ..Report::default()
        }
        .text()
        .contains("rounds"));
        let rounds = vec![
            round(900.0, 0.0, 0),
            round(800.0, 1000.0, 0),
            round(700.0, 1000.0, 0),
        ];
        let (index, figure) = Figure::median_round(rounds).unwrap();
        assert_eq!((index, figure.ratio), (2, Some(0.7)));
        assert_eq!(figure.round_ratios, [None, Some(0.8), Some(0.7)]);
        assert!(Figure::median_round(Vec::new()).is_none());
    }
}
