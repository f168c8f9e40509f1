//! Flags of the commands that manage tenants and their credentials: `tenants`,
//! `secrets` and `tokens`.

use clap::{ArgGroup, Args, Subcommand};
use hookd_sdk::signature::Scheme;

/// `hookctl tenants ...`
#[derive(Debug, Subcommand)]
pub enum TenantsCommand {
    /// Create a tenant; prints its signing and destination secrets, once.
    Create(CreateTenantArgs),
    /// List every tenant.
    List,
    /// Show one tenant.
    Get {
        /// The tenant id.
        tenant: String,
    },
    /// Change some settings of a tenant; unset flags keep their value.
    Update(UpdateTenantArgs),
    /// Delete a tenant and all its data. Cannot be undone.
    Delete {
        /// The tenant id.
        tenant: String,
        /// Confirm the deletion.
        #[arg(long, required = true)]
        yes: bool,
    },
}

/// Settings of a new tenant; unset flags take hookd's defaults.
#[derive(Debug, Args)]
pub struct CreateTenantArgs {
    /// The tenant id, `[a-z0-9_-]{1,64}`; part of the ingest URL.
    pub tenant: String,
    /// Signature scheme, a name from docs/providers.md (standard, hookd, stripe, github, ...).
    #[arg(long)]
    pub scheme: Option<Scheme>,
    /// Seconds a signed timestamp may be from now (default 300).
    #[arg(long)]
    pub tolerance_secs: Option<u64>,
    /// Where accepted events are POSTed; omit for pull mode.
    #[arg(long)]
    pub destination_url: Option<String>,
    /// Largest body accepted, in bytes (default 1 MiB).
    #[arg(long)]
    pub max_body_bytes: Option<u64>,
    /// A top-level body field that must be present; repeat for several.
    #[arg(long = "required-field", value_name = "FIELD")]
    pub required_fields: Vec<String>,
    /// Where the event id is, instead of the scheme's default: a body field (`id`), a JSON
    /// pointer (`/data/id`), `header:Name`, `form:Name`, or a template (`{/a}:{/b}`). Fixed
    /// for good.
    #[arg(long)]
    pub event_id_field: Option<String>,
    /// The public URL the provider calls (no query); required by schemes that sign the URL.
    #[arg(long)]
    pub public_url: Option<String>,
    /// Scheme meta: read the verify token Meta's subscription handshake presents
    /// (hub.verify_token, as set in the Meta app) from this file, or `-` for stdin.
    #[arg(long, value_name = "PATH")]
    pub verify_token_file: Option<std::path::PathBuf>,
    /// Scheme hmac: the tenant's [hmac] table (where the signature is, its hash,
    /// encoding and signed string), as JSON or YAML with the config file's key names.
    #[arg(long, value_name = "PATH")]
    pub hmac_file: Option<std::path::PathBuf>,
    /// Read the first signing secret (one the provider issued, or its public key) from
    /// this file, or `-` for stdin, instead of having hookd generate one. Never an argument,
    /// so it stays out of shell history and process lists.
    #[arg(long, value_name = "PATH")]
    pub secret_file: Option<std::path::PathBuf>,
    /// Most forwards to the destination at once (default 16).
    #[arg(long)]
    pub max_in_flight: Option<u32>,
    /// Sustained accepted deliveries per second (default: no limit).
    #[arg(long)]
    pub rate_limit_per_sec: Option<f64>,
    /// Burst above the sustained rate.
    #[arg(long, requires = "rate_limit_per_sec")]
    pub rate_limit_burst: Option<u32>,
}

/// Changes to a tenant; at least one is required.
#[derive(Debug, Args)]
#[command(
    group(ArgGroup::new("change").required(true).multiple(true)),
    override_usage = "hookctl tenants update <TENANT> --<SETTING> <VALUE>... [OPTIONS]"
)]
pub struct UpdateTenantArgs {
    /// The tenant id.
    pub tenant: String,
    /// New signature scheme; the secrets stay the same.
    #[arg(long, group = "change")]
    pub scheme: Option<Scheme>,
    /// New timestamp tolerance in seconds; 0: the default.
    #[arg(long, group = "change")]
    pub tolerance_secs: Option<u64>,
    /// New destination URL (switches a pull-mode tenant to forwarding).
    #[arg(long, group = "change", conflicts_with = "pull_mode")]
    pub destination_url: Option<String>,
    /// Stop forwarding; deliveries are then pulled with the consumer API.
    #[arg(long, group = "change")]
    pub pull_mode: bool,
    /// Accept new deliveries again.
    #[arg(long, group = "change", conflicts_with = "disable")]
    pub enable: bool,
    /// Refuse new deliveries (403 TENANT_DISABLED); accepted ones are still forwarded.
    #[arg(long, group = "change")]
    pub disable: bool,
    /// New body limit in bytes; 0: the default.
    #[arg(long, group = "change")]
    pub max_body_bytes: Option<u64>,
    /// New required body field, replacing the list; repeat for several.
    #[arg(long = "required-field", value_name = "FIELD", group = "change")]
    pub required_fields: Vec<String>,
    /// Require no body fields besides the event id.
    #[arg(long, group = "change", conflicts_with = "required_fields")]
    pub clear_required_fields: bool,
    /// New sustained rate; 0 removes the limit.
    #[arg(long, group = "change")]
    pub rate_limit_per_sec: Option<f64>,
    /// New burst; 0: the sustained rate rounded up.
    #[arg(long, group = "change")]
    pub rate_limit_burst: Option<u32>,
    /// New forwarding concurrency; 0: the default.
    #[arg(long, group = "change")]
    pub max_in_flight: Option<u32>,
    /// New public URL the provider calls; "" removes it.
    #[arg(long, group = "change")]
    pub public_url: Option<String>,
    /// Scheme meta: read a new verify token Meta's subscription handshake presents
    /// (hub.verify_token, as set in the Meta app) from this file, or `-` for stdin; an empty file removes it.
    #[arg(long, value_name = "PATH", group = "change")]
    pub verify_token_file: Option<std::path::PathBuf>,
    /// Scheme hmac: a new [hmac] table, replacing the old one (where the signature is, its hash,
    /// encoding and signed string), as JSON or YAML with the config file's key names.
    #[arg(long, value_name = "PATH", group = "change")]
    pub hmac_file: Option<std::path::PathBuf>,
}

/// `hookctl secrets ...`
#[derive(Debug, Subcommand)]
pub enum SecretsCommand {
    /// Make a new current secret and print it, once; the old one stays valid a while.
    Rotate {
        /// The tenant id.
        tenant: String,
        /// Seconds the old secret stays accepted (default 86400, at most 2592000).
        #[arg(long, default_value_t = 0, hide_default_value = true)]
        overlap_secs: u64,
        /// Read the new secret (one the provider issued, or its new public key) from this
        /// file, or `-` for stdin, instead of having hookd generate one.
        #[arg(long, value_name = "PATH")]
        secret_file: Option<std::path::PathBuf>,
    },
    /// List a tenant's live secrets (key ids and dates, never the values).
    List {
        /// The tenant id.
        tenant: String,
    },
    /// Stop accepting the previous secret now.
    Revoke {
        /// The tenant id.
        tenant: String,
        /// Key id of the previous secret.
        kid: String,
    },
}

/// `hookctl tokens ...`
#[derive(Debug, Subcommand)]
pub enum TokensCommand {
    /// Issue a token scoped to one tenant and print it, once.
    Create {
        /// The tenant the token may act on.
        tenant: String,
        /// Who or what uses the token, e.g. "billing worker".
        #[arg(long, default_value = "")]
        description: String,
    },
    /// List live tokens (ids, never the values).
    List {
        /// Only this tenant's tokens; default: every tenant's.
        #[arg(long)]
        tenant: Option<String>,
    },
    /// Revoke a token at once.
    Revoke {
        /// The token id (`tok_...`).
        token_id: String,
    },
}
