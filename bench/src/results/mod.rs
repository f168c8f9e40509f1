//! `hookd-bench results`: the dated measurements kept in `bench/results/*.json`
//! (one file per measured run or series, its figures and its record as
//! tables and text) and the table of each scenario's latest figure that
//! docs/benchmarks.md shows between its markers.

mod table;

use std::{
    fs,
    path::{Path, PathBuf},
};

use anyhow::{bail, ensure, Context};
use clap::Args;
use serde::Deserialize;

pub use table::{latest_table, splice};

/// The groups the current figures are shown under, in the order shown. A
/// group is a heading of docs/benchmarks.md, so its anchor is what other
/// documents link to.
pub const GROUPS: [&str; 8] = [
    "Every ratio of `compare`",
    "Forwarding",
    "Routes and isolation",
    "Many tenants",
    "Retention (`retention`)",
    "Adaptive concurrency (`hookd-bench adaptive`)",
    "Contracts",
    "Micro-benchmarks",
];

/// The flags of `hookd-bench results`.
#[derive(Debug, Args)]
pub struct ResultsArgs {
    /// The folder of results files (`*.json`).
    #[arg(long, default_value = "bench/results")]
    dir: PathBuf,
    /// Rewrite the generated region of this document (between its markers)
    /// instead of printing the table.
    #[arg(long, value_name = "DOC")]
    write: Option<PathBuf>,
}

/// One results file: a measured run or series, as it was recorded.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Run {
    /// The day it was recorded (`YYYY-MM-DD`).
    pub date: String,
    /// The commit that recorded it in the docs.
    pub recorded_in: String,
    title: String,
    machine: String,
    #[serde(default)]
    conditions: Option<String>,
    /// The builds it names.
    #[serde(default)]
    commits: Vec<String>,
    #[serde(default)]
    commands: Vec<String>,
    /// Later commits that changed its record, oldest first.
    #[serde(default)]
    updated: Vec<Recorded>,
    note: String,
    /// The figures a scenario's latest value is taken from.
    #[serde(default)]
    pub figures: Vec<Figure>,
    #[serde(default)]
    record: Vec<Block>,
}

/// When, and in which commit, a change of a record was written.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct Recorded {
    date: String,
    recorded_in: String,
}

/// One part of a run's record, in the order written.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "lowercase")]
enum Block {
    Text(String),
    Code(String),
    Table(Table),
}

/// A table of the record, every cell as written.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct Table {
    columns: Vec<String>,
    rows: Vec<Vec<String>>,
}

/// One measured figure of a scenario.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Figure {
    /// One of [`GROUPS`].
    pub group: String,
    /// What was measured; the table keeps the latest figure of each.
    pub scenario: String,
    /// What the value counts, and against what the ratio is taken.
    pub metric: String,
    /// The figure itself, in `unit`.
    pub value: Option<Amount>,
    pub unit: Option<String>,
    /// What the figure is set against, in the same run.
    pub baseline: Option<Amount>,
    /// The value over its baseline, measured in the same run.
    pub ratio: Option<f64>,
    /// The 99th percentile latency of the figure's own load, when recorded.
    pub p99_ms: Option<f64>,
    /// The build measured, when the record names it.
    pub commit: Option<String>,
    pub command: Option<String>,
    /// The day, when later than its run's (a figure added to an older record).
    pub date: Option<String>,
    pub recorded_in: Option<String>,
    pub note: Option<String>,
}

/// A number, or a range or pair as recorded (`"323–329"`).
#[derive(Debug, Deserialize)]
#[serde(untagged)]
pub enum Amount {
    Number(f64),
    Text(String),
}

/// Prints the table of the latest figures, or writes it into a document.
pub fn run(args: ResultsArgs) -> anyhow::Result<()> {
    let runs = load(&args.dir)?;
    let table = latest_table(&runs);
    match args.write {
        None => print!("{table}"),
        Some(doc) => {
            let text =
                fs::read_to_string(&doc).with_context(|| format!("reading {}", doc.display()))?;
            fs::write(&doc, splice(&text, &table)?)
                .with_context(|| format!("writing {}", doc.display()))?;
        }
    }
    Ok(())
}

/// Every `*.json` in `dir`, by file name (the names begin with the date and
/// time, so this is the order recorded), each parsed and checked.
pub fn load(dir: &Path) -> anyhow::Result<Vec<Run>> {
    let mut paths = fs::read_dir(dir)
        .with_context(|| format!("reading {}", dir.display()))?
        .map(|entry| entry.map(|e| e.path()))
        .collect::<Result<Vec<_>, _>>()?;
    paths.retain(|p| p.extension().is_some_and(|e| e == "json"));
    paths.sort();
    ensure!(!paths.is_empty(), "no results files in {}", dir.display());
    paths
        .iter()
        .map(|path| read_run(path).with_context(|| format!("results file {}", path.display())))
        .collect()
}

fn read_run(path: &Path) -> anyhow::Result<Run> {
    let run: Run = serde_json::from_str(&fs::read_to_string(path)?)?;
    run.check()?;
    Ok(run)
}

impl Run {
    /// Refuses a record that would render wrong or be misread: a malformed
    /// date or commit, an empty title or note, a table row of the wrong width,
    /// a figure outside [`GROUPS`] or without a value and a ratio.
    fn check(&self) -> anyhow::Result<()> {
        check_date(&self.date)?;
        check_commit(&self.recorded_in)?;
        for text in [&self.title, &self.machine, &self.note] {
            ensure!(
                !text.trim().is_empty(),
                "title, machine and note must not be empty"
            );
        }
        ensure!(
            self.conditions
                .as_ref()
                .is_none_or(|c| !c.trim().is_empty()),
            "conditions, when given, must not be empty"
        );
        self.commits.iter().try_for_each(|c| check_commit(c))?;
        ensure!(
            self.commands.iter().all(|c| !c.trim().is_empty()),
            "a command must not be empty"
        );
        for change in &self.updated {
            check_date(&change.date)?;
            check_commit(&change.recorded_in)?;
        }
        self.record.iter().try_for_each(Block::check)?;
        self.figures.iter().try_for_each(|f| f.check(&self.date))
    }
}

impl Block {
    fn check(&self) -> anyhow::Result<()> {
        match self {
            Block::Text(text) | Block::Code(text) => {
                ensure!(!text.trim().is_empty(), "an empty text or code block");
            }
            Block::Table(table) => {
                for row in &table.rows {
                    ensure!(
                        row.len() == table.columns.len(),
                        "a row of {} cells in a table of {} columns: {row:?}",
                        row.len(),
                        table.columns.len()
                    );
                }
            }
        }
        Ok(())
    }
}

impl Figure {
    fn check(&self, run_date: &str) -> anyhow::Result<()> {
        let what = &self.scenario;
        ensure!(
            GROUPS.contains(&self.group.as_str()),
            "{what}: group {:?} is not one of {GROUPS:?}",
            self.group
        );
        ensure!(
            !what.trim().is_empty() && !self.metric.trim().is_empty(),
            "a figure needs a scenario and a metric"
        );
        ensure!(
            self.value.is_some() || self.ratio.is_some(),
            "{what}: a figure needs a value or a ratio"
        );
        if let Some(commit) = &self.commit {
            check_commit(commit)?;
        }
        if let Some(date) = &self.date {
            check_date(date)?;
            ensure!(date.as_str() >= run_date, "{what}: dated before its run");
            ensure!(
                self.recorded_in.is_some(),
                "{what}: a later date needs the commit that recorded it"
            );
        }
        if let Some(commit) = &self.recorded_in {
            check_commit(commit)?;
        }
        Ok(())
    }
}

fn check_date(date: &str) -> anyhow::Result<()> {
    let b = date.as_bytes();
    let digits = |r: std::ops::Range<usize>| b[r].iter().all(u8::is_ascii_digit);
    if b.len() != 10
        || b[4] != b'-'
        || b[7] != b'-'
        || !digits(0..4)
        || !digits(5..7)
        || !digits(8..10)
    {
        bail!("{date:?} is not a date (YYYY-MM-DD)");
    }
    Ok(())
}

fn check_commit(commit: &str) -> anyhow::Result<()> {
    let hex = commit
        .bytes()
        .all(|c| c.is_ascii_digit() || (b'a'..=b'f').contains(&c));
    ensure!(
        hex && (7..=40).contains(&commit.len()),
        "{commit:?} is not a commit id"
    );
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn run(json: &str) -> anyhow::Result<()> {
        serde_json::from_str::<Run>(json)?.check()
    }

    const HEAD: &str = r#""date": "2026-12-03", "recorded_in": "c1627de", "title": "t", "machine": "m", "note": "n""#;

    #[test]
    fn a_well_formed_run_passes() {
        let json = format!(
            r#"{{{HEAD}, "figures": [{{"group": "Routes and isolation", "scenario": "s", "metric": "x", "ratio": 0.99}}],
            "record": [{{"text": "a"}}, {{"table": {{"columns": ["a", "b"], "rows": [["1", "2"]]}}}}]}}"#
        );
        run(&json).unwrap();
    }

    #[test]
    fn malformed_runs_are_refused() {
        let bad = [
            r#"{"date": "3 Dec", "recorded_in": "c1627de", "title": "t", "machine": "m", "note": "n"}"#.to_string(),
            format!(r#"{{{HEAD}, "commits": ["not-a-commit"]}}"#),
            format!(r#"{{{HEAD}, "surprise": 1}}"#),
            format!(r#"{{{HEAD}, "record": [{{"table": {{"columns": ["a", "b"], "rows": [["1"]]}}}}]}}"#),
            format!(r#"{{{HEAD}, "figures": [{{"group": "Elsewhere", "scenario": "s", "metric": "x", "ratio": 1}}]}}"#),
            format!(r#"{{{HEAD}, "figures": [{{"group": "Routes and isolation", "scenario": "s", "metric": "x"}}]}}"#),
            format!(
                r#"{{{HEAD}, "figures": [{{"group": "Routes and isolation", "scenario": "s", "metric": "x", "ratio": 1, "date": "2026-12-01", "recorded_in": "de5c088"}}]}}"#
            ),
        ];
        for json in bad {
            assert!(run(&json).is_err(), "accepted: {json}");
        }
    }
}
