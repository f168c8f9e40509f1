//! `hookd-bench compare`: every ratio in one run. Each phase starts the
//! servers it needs as child processes on 127.0.0.1, loads them for
//! `--duration-secs` (or `--count`) and stops them:
//!
//! - `unique`: the bare actix-web server and hookd under the same load (as
//!   given: unique deliveries unless `--dup-ratio` says otherwise);
//! - `duplicates`: the same with every timed request a replay;
//! - `tenants`: one hookd with `--scale-tenants` tenants, loaded
//!   `--scale-runs` times in a row, the store growing, each run against a
//!   run of a one-tenant hookd loaded beside it as often (both stores grow
//!   alike), the two back to back in alternating order;
//! - `routes`: hookd with `--routes` routes per tenant (the others pulled:
//!   the fan-out in the acknowledging commit) against a one-route hookd
//!   run beside it;
//! - `forward`: delivered/s to a local sink against accepted/s, then
//!   `forward_backlog`: a backlog accepted in pull mode drained after a
//!   restart with a destination (forwarding alone), against the accepted/s
//!   of its load;
//! - `postgres`: hookd on PostgreSQL (`--postgres-url`) against sled;
//! - `features`: alerts (an operator sink, every rule on) and adaptive
//!   concurrency on, against both off in the runs before and after.
//!
//! With `--rounds N`, `unique`, `duplicates` and `routes` run N rounds, each
//! the figure's run and its baseline's back to back (the baseline first in
//! the first round, second in the next, and so on), and the figure is the
//! round with the median ratio; every round's ratio is printed with it.
//! In `tenants` each of the `--scale-runs` runs is N such rounds into the
//! same two hookds, so the stores grow through every round.

mod configs;
mod forwarding;
mod ingest;
mod rounds;

use std::{net::SocketAddr, path::PathBuf, time::Duration};

use anyhow::bail;
use clap::{Args, ValueEnum};

use crate::{
    load::LoadOptions,
    plan::PlanSpec,
    positive_secs,
    ratios::{Base, Report},
    servers::{self, HookdSpec},
    LoadArgs,
};

/// One part of `compare`; they run in this order.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, ValueEnum)]
pub enum Phase {
    /// Bare server and hookd, the load as given.
    Unique,
    /// Bare server and hookd, every timed request a duplicate.
    Duplicates,
    /// Many tenants, several runs into the same hookd.
    Tenants,
    /// Several routes per tenant against one.
    Routes,
    /// Delivered/s to a local sink.
    Forward,
    /// PostgreSQL against sled.
    Postgres,
    /// Alerts and adaptive concurrency on against off.
    Features,
}

/// The flags of `hookd-bench compare`.
#[derive(Debug, Args)]
pub struct CompareArgs {
    /// The hookd binary (default: target/release/hookd beside this binary's target dir).
    #[arg(long)]
    hookd: Option<PathBuf>,
    /// HTTP workers of both servers (0: one per core, both servers' default).
    #[arg(long, default_value_t = 0)]
    workers: usize,
    /// hookd's log filter; its default `info` logs one line per accepted delivery.
    #[arg(long, default_value = "info")]
    hookd_log_filter: String,
    /// Seconds to wait for hookd's /readyz (many tenants start slowly).
    #[arg(long, default_value_t = 600)]
    ready_timeout_secs: u64,
    /// The phases to run, comma-separated (default: every one).
    #[arg(
        long,
        value_enum,
        value_delimiter = ',',
        default_value = "unique,duplicates,tenants,routes,forward,postgres,features"
    )]
    phases: Vec<Phase>,
    /// Routes per tenant in the `routes` phase (2..=16), the others pulled:
    /// every accepted event is written once per route in the acknowledging commit.
    #[arg(long, default_value_t = 3)]
    routes: usize,
    /// Rounds of the `unique`, `duplicates` and `routes` phases and of each
    /// run of `tenants` (1..=21):
    /// each runs the figure and its baseline back to back, in alternating
    /// order, and the figure is the round with the median ratio.
    #[arg(long, default_value_t = 1)]
    rounds: usize,
    /// Tenants of the `tenants` phase.
    #[arg(long, default_value_t = 10_000)]
    scale_tenants: usize,
    /// Runs of the `tenants` phase, one after another into the same hookd.
    #[arg(long, default_value_t = 3)]
    scale_runs: usize,
    /// Tenants forwarding in the `forward` and `features` phases.
    #[arg(long, default_value_t = 10)]
    forward_tenants: usize,
    /// Deliveries in the `forward` phase's backlog (default: `--count` if
    /// given, else 60,000).
    #[arg(long)]
    forward_backlog: Option<usize>,
    /// Their `max_in_flight` (1..=1024).
    #[arg(long, default_value_t = 64)]
    max_in_flight: usize,
    /// After a forwarding load, wait at most this long for every accepted event.
    #[arg(long, default_value_t = 60.0)]
    drain_timeout_secs: f64,
    /// PostgreSQL URL of the `postgres` phase (hookd makes its tables there);
    /// without one the phase is skipped.
    #[arg(long, env = "HOOKD_BENCH_POSTGRES_URL", hide_env_values = true)]
    postgres_url: Option<String>,
    /// The commit measured, for the report (default: `git rev-parse HEAD`).
    #[arg(long)]
    commit: Option<String>,
    #[command(flatten)]
    load: LoadArgs,
}

impl CompareArgs {
    /// The flags' own bounds, checked before anything starts.
    fn check(&self) -> anyhow::Result<()> {
        if !(2..=16).contains(&self.routes) {
            bail!("--routes must be between 2 and 16, got {}", self.routes);
        }
        if self.scale_tenants == 0 || self.scale_runs == 0 || self.forward_tenants == 0 {
            bail!("--scale-tenants, --scale-runs and --forward-tenants must be at least 1");
        }
        if !(1..=21).contains(&self.rounds) {
            bail!("--rounds must be between 1 and 21, got {}", self.rounds);
        }
        if self.forward_backlog == Some(0) {
            bail!("--forward-backlog must be at least 1");
        }
        positive_secs("--drain-timeout-secs", self.drain_timeout_secs)?;
        Ok(())
    }

    /// The phases asked for, each once, in their order.
    fn phases(&self) -> Vec<Phase> {
        let mut phases = self.phases.clone();
        phases.sort();
        phases.dedup();
        phases
    }
}

/// What every phase shares.
struct Run<'a> {
    args: &'a CompareArgs,
    spec: PlanSpec,
    opts: LoadOptions,
    report: Report,
    /// hookd on sled with one route, from `unique`.
    one_route: Option<Base>,
}

/// Runs the phases asked for and prints every figure.
pub async fn run(args: CompareArgs) -> anyhow::Result<()> {
    args.check()?;
    if cfg!(debug_assertions) && !args.load.json {
        eprintln!("note: this is a debug build of hookd-bench; build it with --release to measure");
    }
    let spec = args.load.plan_spec()?;
    let opts = args.load.options(SocketAddr::from(([127, 0, 0, 1], 0)))?;
    let report = Report {
        commit: args.commit.clone().or_else(git_head),
        connections: opts.connections,
        duration_secs: opts.duration.map(|d| d.as_secs_f64()),
        ..Report::default()
    };
    let mut run = Run {
        args: &args,
        spec,
        opts,
        report,
        one_route: None,
    };
    for phase in args.phases() {
        match phase {
            Phase::Unique => run.unique().await?,
            Phase::Duplicates => run.duplicates().await?,
            Phase::Tenants => run.tenants().await?,
            Phase::Routes => run.routes().await?,
            Phase::Forward => run.forward().await?,
            Phase::Postgres => run.postgres().await?,
            Phase::Features => run.features().await?,
        }
    }
    if args.load.json {
        println!("{}", serde_json::to_string_pretty(&run.report)?);
    } else {
        print!("{}", run.report.text());
    }
    Ok(())
}

impl Run<'_> {
    /// Prints a phase's own report unless the output is JSON.
    fn say(&self, text: &str) {
        if !self.args.load.json {
            print!("{text}");
        }
    }

    /// hookd declaring `tenants`, in pull mode with one route.
    fn hookd(&self, tenants: Vec<String>) -> HookdSpec {
        HookdSpec {
            binary: self
                .args
                .hookd
                .clone()
                .unwrap_or_else(servers::default_hookd),
            tenants,
            scheme: self.spec.scheme,
            secret: self.spec.secret.clone(),
            kid: self.spec.kid.clone(),
            tolerance_secs: 300 + 4 * self.opts.duration.map_or(0, |d| d.as_secs()),
            max_body_bytes: (1 << 20).max(2 * self.spec.body_size),
            workers: self.args.workers,
            log_filter: self.args.hookd_log_filter.clone(),
            ready_timeout: Duration::from_secs(self.args.ready_timeout_secs),
            destination: None,
            pulled_routes: 0,
            extra_config: String::new(),
        }
    }

    fn at(&self, addr: SocketAddr) -> LoadOptions {
        LoadOptions {
            addr,
            ..self.opts.clone()
        }
    }
}

/// `git rev-parse HEAD` of the current directory, if it is a git checkout.
fn git_head() -> Option<String> {
    let output = std::process::Command::new("git")
        .args(["rev-parse", "HEAD"])
        .output()
        .ok()?;
    let head = String::from_utf8(output.stdout).ok()?.trim().to_owned();
    (output.status.success() && !head.is_empty()).then_some(head)
}

#[cfg(test)]
mod tests {
    use clap::Parser;

    use super::{rounds::in_round_order, *};
    use crate::{Cli, Command};

    fn parse(args: &[&str]) -> Result<CompareArgs, clap::Error> {
        let all = ["hookd-bench", "compare"].iter().chain(args);
        match Cli::try_parse_from(all)?.command {
            Command::Compare(args) => Ok(args),
            other => panic!("not compare: {other:?}"),
        }
    }

    #[test]
    fn every_phase_runs_by_default_in_order() {
        let args = parse(&[]).unwrap();
        assert_eq!(
            args.phases(),
            vec![
                Phase::Unique,
                Phase::Duplicates,
                Phase::Tenants,
                Phase::Routes,
                Phase::Forward,
                Phase::Postgres,
                Phase::Features
            ]
        );
        assert_eq!(
            (args.routes, args.scale_tenants, args.scale_runs),
            (3, 10_000, 3)
        );
        args.check().unwrap();
    }

    #[test]
    fn phases_are_chosen_once_each_in_their_order() {
        let args = parse(&["--phases", "features,unique,features"]).unwrap();
        assert_eq!(args.phases(), vec![Phase::Unique, Phase::Features]);
        let err = parse(&["--phases", "unique,nope"]).unwrap_err().to_string();
        assert!(err.contains("nope"), "{err}");
    }

    #[test]
    fn the_postgres_url_and_commit_come_from_flags() {
        let args = parse(&[
            "--postgres-url",
            "postgres://u@127.0.0.1:5432/bench",
            "--commit",
            "abc123",
        ])
        .unwrap();
        assert_eq!(
            args.postgres_url.as_deref(),
            Some("postgres://u@127.0.0.1:5432/bench")
        );
        assert_eq!(args.commit.as_deref(), Some("abc123"));
        assert_eq!(parse(&[]).unwrap().commit, None);
    }

    #[test]
    fn out_of_bounds_flags_are_refused_before_anything_starts() {
        for (flags, expected) in [
            (&["--routes", "1"][..], "--routes"),
            (&["--routes", "17"][..], "--routes"),
            (&["--scale-runs", "0"][..], "--scale-runs"),
            (&["--drain-timeout-secs", "0"][..], "--drain-timeout-secs"),
        ] {
            let err = parse(flags).unwrap().check().unwrap_err().to_string();
            assert!(err.contains(expected), "{flags:?}: {err}");
        }
    }

    /// The baseline runs first in even rounds and second in odd ones; the
    /// answer is (baseline, figure) either way.
    #[test]
    fn rounds_alternate_which_side_runs_first() {
        let runtime = tokio::runtime::Builder::new_current_thread()
            .build()
            .unwrap();
        for (round, first) in [(0, "baseline"), (1, "figure"), (2, "baseline")] {
            let order = std::cell::RefCell::new(Vec::new());
            let side = |name: &'static str| {
                let order = &order;
                async move {
                    order.borrow_mut().push(name);
                    name
                }
            };
            let answer = runtime.block_on(in_round_order(round, side("baseline"), side("figure")));
            assert_eq!(answer, ("baseline", "figure"));
            assert_eq!(order.borrow()[0], first, "round {round}");
        }
    }
}
