//! The markdown table of each scenario's latest figure, and its place in
//! docs/benchmarks.md between [`BEGIN`] and [`END`].

use std::collections::{hash_map::Entry, HashMap};

use anyhow::{bail, Context};

use super::{Amount, Figure, Run, GROUPS};

/// The line after which the generated table starts.
pub const BEGIN: &str = "<!-- BEGIN hookd-bench results: generated from bench/results/*.json -->";
/// The line before which the generated table ends.
pub const END: &str = "<!-- END hookd-bench results -->";

const HEADER: &str =
    "| scenario | measures | value | baseline | ratio | build | recorded | command | note |\n\
                      | --- | --- | ---: | ---: | ---: | --- | --- | --- | --- |\n";

/// A scenario's newest figure and where it was recorded.
struct Latest<'a> {
    figure: &'a Figure,
    date: &'a str,
    recorded_in: &'a str,
    /// Rank of the scenario's first figure in the history: the row order.
    first_seen: usize,
}

/// The newest figure of every scenario, under a heading per group in
/// [`GROUPS`] order, its rows in the order the scenarios were first measured.
/// `runs` are in the order recorded; of two figures of the same day the
/// later run's wins.
pub fn latest_table(runs: &[Run]) -> String {
    let mut latest: HashMap<&str, Latest> = HashMap::new();
    for run in runs {
        for figure in &run.figures {
            let newer = Latest {
                figure,
                date: figure.date.as_deref().unwrap_or(&run.date),
                recorded_in: figure.recorded_in.as_deref().unwrap_or(&run.recorded_in),
                first_seen: latest.len(),
            };
            match latest.entry(&figure.scenario) {
                Entry::Vacant(slot) => {
                    slot.insert(newer);
                }
                Entry::Occupied(mut slot) if newer.date >= slot.get().date => {
                    let first_seen = slot.get().first_seen;
                    slot.insert(Latest {
                        first_seen,
                        ..newer
                    });
                }
                Entry::Occupied(_) => {}
            }
        }
    }
    let mut rows: Vec<Latest> = latest.into_values().collect();
    rows.sort_by_key(|row| (group_rank(&row.figure.group), row.first_seen));
    let mut out = String::new();
    for group in GROUPS {
        let in_group: Vec<&Latest> = rows.iter().filter(|r| r.figure.group == group).collect();
        if in_group.is_empty() {
            continue;
        }
        out.push_str(&format!("### {group}\n\n{HEADER}"));
        for row in in_group {
            out.push_str(&render(row));
        }
        out.push('\n');
    }
    out
}

fn group_rank(group: &str) -> usize {
    GROUPS
        .iter()
        .position(|g| *g == group)
        .unwrap_or(GROUPS.len())
}

fn render(row: &Latest) -> String {
    let f = row.figure;
    let mut value = f.value.as_ref().map(amount).unwrap_or_default();
    if let (Some(unit), false) = (&f.unit, value.is_empty()) {
        value = format!("{value} {unit}");
    }
    if let Some(p99) = f.p99_ms {
        let p99 = format!("p99 {} ms", number(p99));
        value = if value.is_empty() {
            p99
        } else {
            format!("{value} ({p99})")
        };
    }
    let cells = [
        format!("`{}`", f.scenario),
        f.metric.clone(),
        value,
        f.baseline.as_ref().map(amount).unwrap_or_default(),
        f.ratio
            .map(|r| format!("**{}**", ratio(r)))
            .unwrap_or_default(),
        f.commit
            .as_ref()
            .map(|c| format!("`{c}`"))
            .unwrap_or_default(),
        format!("{} (`{}`)", row.date, row.recorded_in),
        f.command
            .as_ref()
            .map(|c| format!("`{c}`"))
            .unwrap_or_default(),
        f.note.clone().unwrap_or_default(),
    ];
    let cells: Vec<String> = cells
        .iter()
        .map(|c| {
            if c.is_empty() {
                "—".to_string()
            } else {
                c.replace('|', "\\|")
            }
        })
        .collect();
    format!("| {} |\n", cells.join(" | "))
}

fn amount(a: &Amount) -> String {
    match a {
        Amount::Number(x) => number(*x),
        Amount::Text(text) => text.clone(),
    }
}

/// `x` as the docs write figures: its shortest form, thousands grouped.
fn number(x: f64) -> String {
    let shortest = x.to_string();
    let (int, frac) = match shortest.split_once('.') {
        Some((int, frac)) => (int, Some(frac)),
        None => (shortest.as_str(), None),
    };
    let (sign, digits) = match int.strip_prefix('-') {
        Some(digits) => ("-", digits),
        None => ("", int),
    };
    let mut grouped = String::new();
    for (i, digit) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i) % 3 == 0 && digits.len() > 3 {
            grouped.push(',');
        }
        grouped.push(digit);
    }
    match frac {
        Some(frac) => format!("{sign}{grouped}.{frac}"),
        None => format!("{sign}{grouped}"),
    }
}

/// A ratio with at least two decimals (`1.00`, `0.10`, `0.016`).
fn ratio(x: f64) -> String {
    let s = number(x);
    match s.split_once('.') {
        None => format!("{s}.00"),
        Some((_, frac)) if frac.len() == 1 => format!("{s}0"),
        Some(_) => s,
    }
}

/// `doc` with the lines between its [`BEGIN`] and [`END`] markers replaced by `table`.
pub fn splice(doc: &str, table: &str) -> anyhow::Result<String> {
    let (start, end) = region(doc)?;
    Ok(format!("{}{table}{}", &doc[..start], &doc[end..]))
}

/// The byte range between the end of the [`BEGIN`] line and the start of [`END`].
fn region(doc: &str) -> anyhow::Result<(usize, usize)> {
    if doc.matches(BEGIN).count() != 1 || doc.matches(END).count() != 1 {
        bail!("the document needs exactly one {BEGIN:?} and one {END:?} line");
    }
    let begin = doc.find(BEGIN).context("no begin marker")?;
    let start = begin + BEGIN.len();
    let start = start
        + doc[start..]
            .find('\n')
            .context("nothing after the begin marker")?
        + 1;
    let end = doc.find(END).context("no end marker")?;
    if end < start {
        bail!("the end marker comes before the begin marker");
    }
    Ok((start, end))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn run(date: &str, recorded_in: &str, figures: &str) -> Run {
        let json = format!(
            r#"{{"date": "{date}", "recorded_in": "{recorded_in}", "title": "t", "machine": "m",
                "note": "n", "figures": [{figures}]}}"#
        );
        serde_json::from_str(&json).unwrap()
    }

    #[test]
    fn the_newest_figure_of_each_scenario_is_kept() {
        let runs = [
            run(
                "2026-12-01",
                "aaaaaaa",
                r#"{"group": "Routes and isolation", "scenario": "old", "metric": "m", "ratio": 0.5},
                   {"group": "Every ratio of `compare`", "scenario": "unique", "metric": "m", "ratio": 0.1, "p99_ms": 9},
                   {"group": "Routes and isolation", "scenario": "patched", "metric": "m", "ratio": 2,
                    "date": "2026-12-09", "recorded_in": "ccccccc"}"#,
            ),
            run(
                "2026-12-03",
                "bbbbbbb",
                r#"{"group": "Every ratio of `compare`", "scenario": "unique", "metric": "m", "value": 6704,
                    "unit": "2xx/s", "baseline": "30,000–37,000", "ratio": 0.248, "commit": "f5efe0a"},
                   {"group": "Routes and isolation", "scenario": "patched", "metric": "m", "ratio": 3}"#,
            ),
        ];
        let table = latest_table(&runs);
        assert!(
            table.starts_with("### Every ratio of `compare`\n\n| scenario |"),
            "{table}"
        );
        assert!(table.contains(
            "| `unique` | m | 6,704 2xx/s | 30,000–37,000 | **0.248** | `f5efe0a` | 2026-12-03 (`bbbbbbb`) | — | — |"
        ), "{table}");
        assert!(!table.contains("0.10"), "an older figure was kept: {table}");
        assert!(
            table.contains("| `patched` | m | — | — | **2.00** | — | 2026-12-09 (`ccccccc`)"),
            "{table}"
        );
        let isolation = table.split("### Routes and isolation").nth(1).unwrap();
        assert!(
            isolation.find("`old`").unwrap() < isolation.find("`patched`").unwrap(),
            "{table}"
        );
    }

    #[test]
    fn numbers_are_written_as_the_docs_write_them() {
        assert_eq!(number(6704.0), "6,704");
        assert_eq!(number(1234567.5), "1,234,567.5");
        assert_eq!(number(182.5), "182.5");
        assert_eq!(number(-0.25), "-0.25");
        assert_eq!(ratio(1.0), "1.00");
        assert_eq!(ratio(0.1), "0.10");
        assert_eq!(ratio(0.016), "0.016");
    }

    #[test]
    fn only_the_region_between_the_markers_is_replaced() {
        let doc = format!("# Doc\n\n{BEGIN}\nold table\n{END}\n\nafter\n");
        let spliced = splice(&doc, "new table\n").unwrap();
        assert_eq!(
            spliced,
            format!("# Doc\n\n{BEGIN}\nnew table\n{END}\n\nafter\n")
        );
        assert_eq!(splice(&spliced, "new table\n").unwrap(), spliced);
        assert!(splice("# Doc without markers\n", "t").is_err());
        assert!(splice(&format!("{END}\n{BEGIN}\n"), "t").is_err());
        assert!(splice(&format!("{BEGIN}\n{BEGIN}\n{END}\n"), "t").is_err());
    }
}
