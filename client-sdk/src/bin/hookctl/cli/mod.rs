//! hookctl's command line: global flags and the command tree; the subcommands' flags
//! live beside it, grouped as the commands are.

mod admin;
mod alerts;
mod apply;
mod contracts;
mod deliveries;
mod rejections;
mod routes;

use std::path::PathBuf;

use clap::{Args, Parser, Subcommand};
use hookd_sdk::signature::Scheme;
use reqwest::Url;

pub use admin::{
    CreateTenantArgs, SecretsCommand, TenantsCommand, TokensCommand, UpdateTenantArgs,
};
pub use alerts::{AlertSettingsCommand, AlertsCommand, SetAlertSettingsArgs};
pub use apply::{ApplyArgs, ExportArgs, PlanArgs};
pub use contracts::{ContractsCommand, PutContractArgs};
pub use deliveries::{DeadLettersCommand, DeliveriesCommand, FilterArgs};
pub use rejections::RejectionsCommand;
pub use routes::{
    CreateRouteArgs, ReplayArgs, RouteCode, RoutesCommand, TestRouteArgs, UpdateRouteArgs,
};

use crate::{exit, output::OutputMode};

/// Administer a hookd webhook receiver over its gRPC control plane.
#[derive(Debug, Parser)]
#[command(name = "hookctl", version, after_help = exit::HELP)]
pub struct Cli {
    /// hookd's gRPC control-plane address; https://... when hookd serves it over TLS.
    #[arg(
        long,
        global = true,
        display_order = 900,
        env = "HOOKCTL_ENDPOINT",
        default_value = "http://127.0.0.1:50051"
    )]
    pub endpoint: String,
    /// Bearer token for the control plane: the admin token or a tenant-scoped one.
    /// Falls back to $HOOKD_ADMIN_TOKEN when $HOOKCTL_TOKEN is unset.
    #[arg(
        long,
        global = true,
        display_order = 901,
        env = "HOOKCTL_TOKEN",
        hide_env_values = true
    )]
    pub token: Option<String>,
    /// Print one JSON document (tail: one per line) instead of tables, for scripts;
    /// the same as --output json.
    #[arg(long, global = true, display_order = 902)]
    pub json: bool,
    /// How results are printed: table (the default), wide (a table of every field,
    /// as named in json), json or yaml (one document; tail: one per event).
    #[arg(
        short = 'o',
        long,
        global = true,
        display_order = 902,
        value_enum,
        default_value_t = OutputMode::Table,
        env = "HOOKCTL_OUTPUT"
    )]
    pub output: OutputMode,
    /// PEM CA certificate to trust for hookd's TLS certificate (an https:// endpoint,
    /// and `send` to an https:// URL); default: the public web PKI.
    #[arg(long, global = true, display_order = 903, env = "HOOKCTL_TLS_CA")]
    pub tls_ca: Option<PathBuf>,
    /// PEM client certificate to present, for a hookd that requires one
    /// (grpc.tls.client_ca_file); needs --tls-key.
    #[arg(
        long,
        global = true,
        display_order = 904,
        env = "HOOKCTL_TLS_CERT",
        requires = "tls_key"
    )]
    pub tls_cert: Option<PathBuf>,
    /// PEM private key of --tls-cert.
    #[arg(
        long,
        global = true,
        display_order = 905,
        env = "HOOKCTL_TLS_KEY",
        requires = "tls_cert"
    )]
    pub tls_key: Option<PathBuf>,
    /// What to do.
    #[command(subcommand)]
    pub command: Command,
}

/// The top-level commands.
#[derive(Debug, Subcommand)]
pub enum Command {
    /// Create, list, show, change and delete tenants.
    #[command(subcommand)]
    Tenants(TenantsCommand),
    /// Rotate, list and revoke a tenant's signing secrets.
    #[command(subcommand)]
    Secrets(SecretsCommand),
    /// Issue, list and revoke tenant-scoped API tokens (admin only).
    #[command(subcommand)]
    Tokens(TokensCommand),
    /// List deliveries and show one with its attempts.
    #[command(subcommand)]
    Deliveries(DeliveriesCommand),
    /// List, redeliver and purge dead letters.
    #[command(subcommand)]
    DeadLetters(DeadLettersCommand),
    /// Save, list and delete a tenant's event contracts; check payloads; print the
    /// contract sheet.
    #[command(subcommand)]
    Contracts(ContractsCommand),
    /// List the requests a tenant refused (find a broken payload by its
    /// request id).
    #[command(subcommand)]
    Rejections(RejectionsCommand),
    /// Add, list, change and delete a tenant's routes; test a route's filter and
    /// transform on an event without sending it.
    #[command(subcommand)]
    Routes(RoutesCommand),
    /// Make hookd's tenants, routes, contracts and alert settings match a YAML file
    /// (docs/apply.md).
    Apply(ApplyArgs),
    /// Print what `apply` would change; exits 0 when nothing, 2 when something would.
    Diff(PlanArgs),
    /// Print hookd's tenants, routes, contracts and alert settings as a file `apply`
    /// takes, secrets as references to fill in.
    Export(ExportArgs),
    /// List and acknowledge a tenant's alerts (open, acknowledged, resolved
    /// conditions); show and set where they are sent and when they open.
    #[command(subcommand)]
    Alerts(AlertsCommand),
    /// Sign and POST a test webhook to hookd's HTTP ingest, as a sender would.
    Send(SendArgs),
    /// Print delivery events as they happen, until Ctrl-C.
    Tail {
        /// Only this tenant's events; default: every tenant the token may see.
        #[arg(long)]
        tenant: Option<String>,
    },
    /// Print a shell completion script, e.g. `hookctl completions bash >
    /// /etc/bash_completion.d/hookctl`.
    Completions {
        /// The shell to complete in.
        shell: CompletionShell,
    },
    /// Print hookctl's manual page (roff), e.g. `hookctl man | man -l -`.
    Man,
}

/// Shells `hookctl completions` writes scripts for.
#[derive(Debug, Clone, Copy, clap::ValueEnum)]
pub enum CompletionShell {
    /// GNU bash.
    Bash,
    /// Z shell.
    Zsh,
    /// fish.
    Fish,
}

/// `hookctl send ...`
#[derive(Debug, Args)]
pub struct SendArgs {
    /// The tenant's ingest URL, e.g. http://127.0.0.1:8080/hooks/acme.
    #[arg(long)]
    pub url: Url,
    /// The tenant's signature scheme.
    #[arg(long, default_value = "standard")]
    pub scheme: Scheme,
    /// The key the provider signs with, as it prints it: the shared secret
    /// (e.g. whsec_... for standard), or for key-pair schemes the private key
    /// (standard v1a: whsk_...; discord: libsodium's 128 hex digits; sendgrid:
    /// base64 PKCS#8).
    #[arg(long, env = "HOOKCTL_SECRET", hide_env_values = true)]
    pub secret: String,
    /// Key id to name in the signature (hookd scheme only).
    #[arg(long, default_value = "", hide_default_value = true)]
    pub kid: String,
    /// Event id; default: a random evt_... id.
    #[arg(long)]
    pub event_id: Option<String>,
    /// The JSON body; default: {"type":"test.event","event_id":...} (plus "id" for
    /// stripe).
    #[arg(long, conflicts_with = "body_file")]
    pub body: Option<String>,
    /// Read the body from this file, byte for byte.
    #[arg(long)]
    pub body_file: Option<PathBuf>,
    /// The body's Content-Type (application/x-www-form-urlencoded for a form:
    /// twilio, older mailgun).
    #[arg(long, default_value = "application/json")]
    pub content_type: String,
    /// The URL the provider signs, when it is not --url (the tenant's
    /// public_url behind a load balancer): square, hubspot, twilio.
    #[arg(long)]
    pub public_url: Option<Url>,
    /// Scheme hmac: the tenant's [hmac] table, as JSON or YAML with the config
    /// file's key names.
    #[arg(long)]
    pub hmac_file: Option<PathBuf>,
}

#[cfg(test)]
mod tests {
    use clap::CommandFactory;

    use super::*;

    #[test]
    fn the_command_tree_is_consistent() {
        Cli::command().debug_assert();
    }

    #[test]
    fn destructive_or_empty_requests_are_usage_errors() {
        assert!(Cli::try_parse_from(["hookctl", "tenants", "update", "acme"]).is_err());
        assert!(Cli::try_parse_from(["hookctl", "tenants", "update", "acme", "--disable"]).is_ok());
        assert!(Cli::try_parse_from(["hookctl", "tenants", "delete", "acme"]).is_err());
        assert!(
            Cli::try_parse_from(["hookctl", "dead-letters", "purge", "acme", "--yes"]).is_err()
        );
        let redeliver = |extra: &[&str]| {
            let argv = ["hookctl", "dead-letters", "redeliver", "acme"];
            Cli::try_parse_from(argv.iter().chain(extra))
        };
        assert!(redeliver(&[]).is_err());
        assert!(redeliver(&["dlv_1", "dlv_2"]).is_ok());
        assert!(redeliver(&["--all-matching", "--reason-contains", "503"]).is_ok());
        assert!(redeliver(&["dlv_1", "--all-matching"]).is_err());
    }

    #[test]
    fn a_replay_needs_its_start_and_takes_times_either_way() {
        let replay = |extra: &[&str]| {
            let argv = ["hookctl", "routes", "replay", "acme", "crm"];
            Cli::try_parse_from(argv.iter().chain(extra))
        };
        assert!(replay(&[]).is_err(), "--since is required");
        assert!(replay(&["--since", "yesterday"]).is_err());
        let parsed = replay(&[
            "--since",
            "2024-05-01T12:00:00Z",
            "--until",
            "1714568400000",
            "--type",
            "order.paid",
            "--body",
            "/data/amount=7",
            "--rate",
            "50",
            "--dry-run",
        ]);
        let Command::Routes(RoutesCommand::Replay(args)) = parsed.unwrap().command else {
            panic!("not routes replay");
        };
        assert_eq!((args.tenant.as_str(), args.route.as_str()), ("acme", "crm"));
        assert_eq!(
            (args.since, args.until),
            (1_714_564_800_000, Some(1_714_568_400_000))
        );
        assert_eq!(args.event_type.as_deref(), Some("order.paid"));
        assert_eq!(args.body, Some(("/data/amount".into(), "7".into())));
        assert_eq!((args.rate, args.dry_run), (Some(50), true));
        let plain = replay(&["--since", "1714564800000", "--event-type", "a.b"]);
        let Command::Routes(RoutesCommand::Replay(args)) = plain.unwrap().command else {
            panic!("not routes replay");
        };
        assert_eq!(
            args.event_type.as_deref(),
            Some("a.b"),
            "as deliveries list"
        );
        assert_eq!((args.until, args.rate, args.dry_run), (None, None, false));
        for bad in [
            &["--since", "0", "--rate", "0"][..],
            &["--since", "0", "--rate", "5001"],
            &["--since", "0", "--body", "amount=7"],
        ] {
            assert!(replay(bad).is_err(), "{bad:?}");
        }
    }

    #[test]
    fn replays_are_listed_and_steered_by_id() {
        let routes = |args: &[&str]| {
            Cli::try_parse_from(["hookctl", "routes"].iter().chain(args)).map(|cli| cli.command)
        };
        for command in [
            "replay-status",
            "replay-pause",
            "replay-resume",
            "replay-cancel",
        ] {
            assert!(routes(&[command, "acme", "rpl_1"]).is_ok(), "{command}");
            assert!(
                routes(&[command, "acme"]).is_err(),
                "{command} without an id"
            );
        }
        let Ok(Command::Routes(RoutesCommand::Replays { tenant, route })) =
            routes(&["replays", "acme", "--route", "crm"])
        else {
            panic!("not routes replays");
        };
        assert_eq!((tenant.as_str(), route.as_deref()), ("acme", Some("crm")));
        assert!(routes(&["replays"]).is_err(), "the tenant is required");
    }

    #[test]
    fn a_client_certificate_needs_its_key() {
        let with = |extra: &[&str]| {
            let argv = ["hookctl", "tenants", "list"];
            Cli::try_parse_from(argv.iter().chain(extra))
        };
        assert!(with(&["--tls-cert", "c.pem"]).is_err());
        assert!(with(&["--tls-key", "k.pem"]).is_err());
        let both = with(&[
            "--tls-ca",
            "ca.pem",
            "--tls-cert",
            "c.pem",
            "--tls-key",
            "k.pem",
        ]);
        assert_eq!(both.unwrap().tls_ca, Some(PathBuf::from("ca.pem")));
    }
}
