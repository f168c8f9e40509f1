//! The SDK's signature code, built without the client and CLI features,
//! pulls no gRPC crate: a service that only signs or verifies webhooks
//! depends on hashes and `hookd-domain`, not on tonic or prost.

use std::process::Command;

#[test]
fn the_signature_code_alone_depends_on_no_grpc_crate() {
    let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".into());
    let tree = Command::new(cargo)
        .args(["tree", "-p", "hookd-sdk", "--no-default-features"])
        .args(["-e", "normal", "--prefix", "none"])
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .output()
        .expect("cargo tree runs");
    assert!(
        tree.status.success(),
        "{}",
        String::from_utf8_lossy(&tree.stderr)
    );
    let tree = String::from_utf8(tree.stdout).expect("UTF-8");
    let crates: Vec<&str> = tree.lines().filter_map(|l| l.split(' ').next()).collect();
    assert!(crates.contains(&"hookd-domain"), "{tree}");
    for grpc in ["tonic", "prost", "hookd-proto"] {
        assert!(!crates.contains(&grpc), "{grpc} in:\n{tree}");
    }
}
