//! docs/benchmarks.md's current figures are what `hookd-bench results`
//! makes of bench/results/*.json, every results file parses, and every link
//! into docs/benchmarks.md names a heading it has.

use std::{
    collections::HashSet,
    fs,
    path::{Path, PathBuf},
    process::{Command, Output},
};

const BEGIN: &str = "<!-- BEGIN hookd-bench results: generated from bench/results/*.json -->";
const END: &str = "<!-- END hookd-bench results -->";

fn repo() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .unwrap()
        .to_path_buf()
}

fn results(dir: &Path) -> Output {
    Command::new(env!("CARGO_BIN_EXE_hookd-bench"))
        .args(["results", "--dir"])
        .arg(dir)
        .env("RUST_BACKTRACE", "0")
        .output()
        .unwrap()
}

/// The files in `dir` whose names end in `.ext`, by name.
fn files_with(dir: &Path, ext: &str) -> Vec<PathBuf> {
    let mut files: Vec<PathBuf> = fs::read_dir(dir)
        .unwrap()
        .map(|entry| entry.unwrap().path())
        .filter(|path| path.extension().is_some_and(|e| e == ext))
        .collect();
    files.sort();
    files
}

#[test]
fn the_current_figures_in_the_docs_are_generated_from_the_results() {
    let out = results(&repo().join("bench/results"));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        out.status.success(),
        "bench/results does not load:\n{stderr}"
    );
    let table = String::from_utf8(out.stdout).unwrap();
    let doc = fs::read_to_string(repo().join("docs/benchmarks.md")).unwrap();
    let start = doc
        .find(BEGIN)
        .expect("docs/benchmarks.md has no begin marker")
        + BEGIN.len()
        + 1;
    let end = doc.find(END).expect("docs/benchmarks.md has no end marker");
    let shown = &doc[start..end];
    if shown != table {
        let first = shown
            .lines()
            .zip(table.lines())
            .find(|(a, b)| a != b)
            .map_or_else(
                || "(one has more lines)".to_string(),
                |(a, b)| format!("shown:     {a}\ngenerated: {b}"),
            );
        panic!(
            "docs/benchmarks.md's current figures differ from bench/results \
             (run `hookd-bench results --write docs/benchmarks.md`); first difference:\n{first}"
        );
    }
}

#[test]
fn every_results_file_parses_and_a_broken_one_is_named() {
    let dir = repo().join("bench/results");
    let files = files_with(&dir, "json");
    assert!(
        files.len() > 10,
        "bench/results holds {} files",
        files.len()
    );
    for path in &files {
        let text = fs::read_to_string(path).unwrap();
        let value: serde_json::Value = serde_json::from_str(&text)
            .unwrap_or_else(|e| panic!("{} does not parse: {e}", path.display()));
        assert!(
            value["record"].is_array(),
            "{} has no record",
            path.display()
        );
    }

    let scratch = tempfile::tempdir().unwrap();
    fs::copy(
        &files[0],
        scratch.path().join(files[0].file_name().unwrap()),
    )
    .unwrap();
    fs::write(
        scratch.path().join("2026-12-31-2359-broken.json"),
        r#"{"date": "2026-12-31""#,
    )
    .unwrap();
    let out = results(scratch.path());
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success(), "a broken file was accepted");
    assert!(stderr.contains("2026-12-31-2359-broken.json"), "{stderr}");
}

/// The anchor GitHub gives a heading: lower case, spaces to dashes, other
/// punctuation dropped.
fn anchor(heading: &str) -> String {
    heading
        .to_lowercase()
        .chars()
        .filter_map(|c| match c {
            ' ' => Some('-'),
            c if c.is_alphanumeric() || c == '-' || c == '_' => Some(c),
            _ => None,
        })
        .collect()
}

fn headings(doc: &str) -> HashSet<String> {
    let mut fenced = false;
    let mut anchors = HashSet::new();
    for line in doc.lines() {
        if line.starts_with("```") {
            fenced = !fenced;
        } else if !fenced && line.starts_with('#') {
            anchors.insert(anchor(line.trim_start_matches('#').trim()));
        }
    }
    anchors
}

/// Every `target#anchor` link target in `text` whose file part is `target`.
fn links<'a>(text: &'a str, target: &str) -> Vec<&'a str> {
    let needle = format!("]({target}#");
    text.match_indices(&needle)
        .map(|(at, _)| {
            let rest = &text[at + needle.len()..];
            &rest[..rest.find(')').unwrap_or(rest.len())]
        })
        .collect()
}

#[test]
fn links_into_the_benchmarks_doc_name_its_headings() {
    let doc = fs::read_to_string(repo().join("docs/benchmarks.md")).unwrap();
    let anchors = headings(&doc);
    assert!(anchors.contains("retention-retention"), "{anchors:?}");
    let mut checked = 0;
    let mut files = files_with(&repo().join("docs"), "md");
    files.push(repo().join("README.md"));
    for path in files {
        let text = fs::read_to_string(&path).unwrap();
        let own = path.ends_with("docs/benchmarks.md");
        let mut found = links(&text, "benchmarks.md");
        found.extend(links(&text, "docs/benchmarks.md"));
        if own {
            found.extend(links(&text, ""));
        }
        for link in found {
            assert!(
                anchors.contains(link),
                "{} links to benchmarks.md#{link}, which has no such heading",
                path.display()
            );
            checked += 1;
        }
    }
    assert!(
        checked >= 4,
        "only {checked} links into docs/benchmarks.md found"
    );
}
