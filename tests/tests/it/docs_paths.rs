//! Every path `docs/architecture.md` names exists, so the map stays true
//! as files move.

use std::path::Path;

/// The repository's paths in backticks in `doc`: those starting with one
/// of the workspace's top-level folders.
fn named_paths(doc: &str) -> Vec<&str> {
    const ROOTS: [&str; 9] = [
        "server/",
        "store/",
        "domain/",
        "proto/",
        "control/",
        "dashboard/",
        "client-sdk/",
        "tests/",
        "docs/",
    ];
    doc.split('`')
        .skip(1)
        .step_by(2)
        .filter(|text| ROOTS.iter().any(|root| text.starts_with(root)))
        .filter(|text| !text.contains(' '))
        .collect()
}

#[test]
fn every_path_the_architecture_names_exists() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
    let doc = std::fs::read_to_string(root.join("docs/architecture.md")).unwrap();
    let named = named_paths(&doc);
    assert!(named.len() > 40, "the map names its files: {named:?}");
    let missing: Vec<&str> = named
        .iter()
        .copied()
        .filter(|path| !root.join(path).exists())
        .collect();
    assert!(
        missing.is_empty(),
        "docs/architecture.md names paths that do not exist: {missing:?}"
    );
}

#[test]
fn a_missing_path_is_found() {
    let named =
        named_paths("see `server/src/nowhere.rs` and `server/src/tenant/` and `not/a/root`");
    assert_eq!(named, ["server/src/nowhere.rs", "server/src/tenant/"]);
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
    assert!(!root.join(named[0]).exists());
    assert!(root.join(named[1]).exists());
}
