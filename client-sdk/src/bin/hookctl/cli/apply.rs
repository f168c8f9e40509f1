//! Flags of `hookctl apply`, `diff` and `export`: hookd's tenants, routes,
//! contracts and alert settings kept in a YAML file (docs/apply.md).

use std::path::PathBuf;

use clap::Args;

/// What `apply` and `diff` compare hookd with.
#[derive(Debug, Args)]
pub struct PlanArgs {
    /// The file (docs/apply.md); `-` reads it from stdin.
    #[arg(short = 'f', long = "file")]
    pub file: PathBuf,
    /// Also delete the API-created tenants, routes and contracts the file does not
    /// name (config-file ones are read-only and skipped).
    #[arg(long)]
    pub prune: bool,
    /// Set the tenants' signing secrets, verify tokens and alert sink secrets again
    /// from the file's references (a rotation: the old signing secret stays accepted
    /// for 24 h); without it they are set only when a tenant (or its alert sink) is
    /// created, since hookd never returns them.
    #[arg(long)]
    pub rotate_secrets: bool,
    /// Accept `{value: ...}` secrets written in the file itself.
    #[arg(long)]
    pub allow_inline_secrets: bool,
}

/// `hookctl apply -f FILE`
#[derive(Debug, Args)]
pub struct ApplyArgs {
    /// The file and how it is compared.
    #[command(flatten)]
    pub plan: PlanArgs,
    /// Print what would change, as `diff` does, and change nothing.
    #[arg(long)]
    pub dry_run: bool,
}

/// `hookctl export`
#[derive(Debug, Args)]
pub struct ExportArgs {
    /// Only these tenants (repeat the flag); default: every tenant created over the
    /// API.
    #[arg(long = "tenant")]
    pub tenants: Vec<String>,
}
