//! Build script: the commit hookd is built from, for `hookd_build_info`.

use std::process::Command;

/// Build script: the commit hookd is built from, for `hookd_build_info`:
/// `HOOKD_BUILD_COMMIT` if set (a build without `.git`, e.g. in a container),
/// else `git rev-parse HEAD`, else "unknown".
fn main() {
    println!("cargo:rerun-if-env-changed=HOOKD_BUILD_COMMIT");
    let from_env = std::env::var("HOOKD_BUILD_COMMIT")
        .ok()
        .filter(|c| !c.trim().is_empty());
    let commit = from_env
        .or_else(git_head)
        .unwrap_or_else(|| "unknown".into());
    println!("cargo:rustc-env=HOOKD_BUILD_COMMIT={}", commit.trim());
}

/// HEAD's commit, and the files that change when it moves.
fn git_head() -> Option<String> {
    let git = |args: &[&str]| {
        let out = Command::new("git").args(args).output().ok()?;
        out.status
            .success()
            .then(|| String::from_utf8_lossy(&out.stdout).trim().to_owned())
    };
    let commit = git(&["rev-parse", "HEAD"])?;
    for path in ["HEAD", "packed-refs"] {
        if let Some(file) = git(&["rev-parse", "--git-path", path]) {
            println!("cargo:rerun-if-changed={file}");
        }
    }
    if let Some(branch) = git(&["symbolic-ref", "-q", "HEAD"]) {
        if let Some(file) = git(&["rev-parse", "--git-path", &branch]) {
            println!("cargo:rerun-if-changed={file}");
        }
    }
    Some(commit)
}
