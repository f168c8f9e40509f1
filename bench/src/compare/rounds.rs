//! Rounds: a figure and its baseline run back to back, in alternating
//! order, `--rounds` times, the figure the round with the median ratio.

use std::{sync::Arc, time::Duration};

use super::Run;
use crate::{
    measure_process,
    plan::{Plan, PlanSpec},
    ratios::{Base, Figure},
    report::Comparison,
    servers,
};

impl Run<'_> {
    /// The bare server and hookd under the same deliveries of `spec`, the
    /// bare server measured first in even rounds and second in odd ones.
    async fn head_to_head(&self, spec: &PlanSpec, round: usize) -> anyhow::Result<Comparison> {
        let hookd = servers::start_hookd(&self.hookd(spec.tenants.clone())).await?;
        let bare = servers::start_bare(self.args.workers)?;
        // Signed once both servers are up, so hookd's start does not age the timestamps.
        let plan = Arc::new(Plan::build(spec)?);
        let bare_run = async {
            let summary = measure_process("bare", &plan, &self.at(bare.addr), Some(&bare)).await;
            bare.stop(Duration::from_secs(5));
            summary
        };
        let hookd_opts = self.at(hookd.addr);
        let hookd_run = measure_process("hookd", &plan, &hookd_opts, Some(&hookd));
        let (bare_summary, hookd_summary) = in_round_order(round, bare_run, hookd_run).await;
        hookd.stop(Duration::from_secs(30));
        Ok(Comparison::new(bare_summary, hookd_summary))
    }

    /// `--rounds` head-to-heads of `spec`, each printed; returns the median
    /// round's comparison and its figure `name`, with every round's ratio.
    pub(super) async fn rounds_of(
        &self,
        name: &str,
        spec: &PlanSpec,
    ) -> anyhow::Result<(Comparison, Figure)> {
        let mut comparisons = Vec::new();
        let mut figures = Vec::new();
        for round in 0..self.args.rounds {
            self.say(&self.round_title(name, round));
            let comparison = self.head_to_head(spec, round).await?;
            self.say(&comparison.text());
            let bare = Base::of(&comparison.bare);
            figures.push(Figure::ingest(name, &comparison.hookd, "bare", Some(bare)));
            comparisons.push(comparison);
        }
        let (median, figure) = Figure::median_round(figures).expect("at least one round");
        Ok((comparisons.swap_remove(median), figure))
    }

    /// The heading of a round of figure `name`, when there are several.
    fn round_title(&self, name: &str, round: usize) -> String {
        match self.args.rounds {
            1 => String::new(),
            n => format!("{name}: round {} of {n}\n", round + 1),
        }
    }

    /// `--rounds` rounds of figure `name`, each headed (when there are
    /// several) and made by `round`; returns the round with the median
    /// ratio, with every round's ratio.
    pub(super) async fn median_of<F, Fut>(&self, name: &str, mut round: F) -> anyhow::Result<Figure>
    where
        F: FnMut(usize) -> Fut,
        Fut: std::future::Future<Output = anyhow::Result<Figure>>,
    {
        let mut figures = Vec::new();
        for n in 0..self.args.rounds {
            self.say(&self.round_title(name, n));
            figures.push(round(n).await?);
        }
        let (_, figure) = Figure::median_round(figures).expect("at least one round");
        Ok(figure)
    }
}

/// Runs `baseline` and `figure` one after the other: the baseline first
/// in even rounds, second in odd ones. Returns (baseline, figure).
pub(super) async fn in_round_order<T>(
    round: usize,
    baseline: impl std::future::Future<Output = T>,
    figure: impl std::future::Future<Output = T>,
) -> (T, T) {
    if round % 2 == 1 {
        let figure = figure.await;
        (baseline.await, figure)
    } else {
        let baseline = baseline.await;
        (baseline, figure.await)
    }
}
