//! Hostile numbers through the config loader: every one is a config error
//! naming its key, never a panic later (in a timer, a cache or a duration).

use super::{Config, Overrides};

/// A tenant with a valid secret and the given extra keys (`keys` inside the
/// tenant table, `tables` after its secret).
fn tenant(keys: &str, tables: &str) -> String {
    format!(
        "[[tenants]]\nid = \"acme\"\nscheme = \"hookd\"\n{keys}\n[[tenants.secrets]]\nkid = \"k1\"\nsecret = \"hk-secret\"\n{tables}\n"
    )
}

fn load(toml: &str) -> crate::error::Result<Config> {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("hookd.toml");
    std::fs::write(&path, toml).unwrap();
    let config = Config::load(Some(&path), &Overrides::default())?;
    crate::check_tenants(&config).map(|()| config)
}

#[test]
fn hostile_numbers_are_config_errors_naming_the_key() {
    const BIG: &str = "9223372036854775807";
    const DEST: &str = "[tenants.destination]\nurl = \"http://127.0.0.1:9/\"\nsecret = \"whsec_AQIDBAUGBwgJCgsMDQ4PEBESExQVFhcYGRobHB0eHyA=\"\n";
    let global = |section: &str, key: &str, value: &str| {
        (
            format!("{section}.{key}"),
            format!("[{section}]\n{key} = {value}\n"),
        )
    };
    let mut cases = vec![
        global("http", "shutdown_timeout_secs", BIG),
        global("http", "workers", BIG),
        global("http", "request_timeout_secs", BIG),
        global("http", "max_header_bytes", BIG),
        global("http", "max_connections", "0"),
        global("http", "keep_alive_secs", BIG),
        global("grpc", "shutdown_grace_secs", "1e300"),
        global("grpc", "shutdown_grace_secs", "nan"),
        global("grpc", "shutdown_grace_secs", "-1.0"),
        global("retention", "sweep_interval_secs", "1e300"),
        global("retention", "sweep_interval_secs", "inf"),
        global("retention", "idempotency_secs", BIG),
        global("retention", "delivered_secs", BIG),
        global("retention", "dead_secs", BIG),
        global("retention", "dead_secs", "0"),
        global("retention", "idempotency_secs", "0"),
        global("retention", "sweep_batch", BIG),
        global("storage", "commit_batch_max", BIG),
        global("metrics", "scan_limit", BIG),
        global("metrics", "max_tenant_labels", BIG),
        global("limits", "tenant_max_body_bytes", BIG),
        global("limits", "tenant_max_body_bytes", "0"),
    ];
    let tenant_cases = [
        (
            "tolerance_secs",
            tenant(&format!("tolerance_secs = {BIG}"), ""),
        ),
        ("tolerance_secs", tenant("tolerance_secs = 0", "")),
        (
            "max_body_bytes",
            tenant(&format!("max_body_bytes = {BIG}"), ""),
        ),
        (
            "limits.tenant_max_body_bytes",
            format!(
                "[limits]\ntenant_max_body_bytes = 4096\n{}",
                tenant("max_body_bytes = 4097", "")
            ),
        ),
        (
            "replay_cache_capacity",
            tenant(&format!("replay_cache_capacity = {BIG}"), ""),
        ),
        (
            "max_in_flight",
            tenant(&format!("max_in_flight = {BIG}"), ""),
        ),
        (
            "rate_limit.per_sec",
            tenant("rate_limit = { per_sec = 1e300, burst = 1 }", ""),
        ),
        (
            "rate_limit.burst",
            tenant("rate_limit = { per_sec = 1.0, burst = 4294967295 }", ""),
        ),
        (
            "delivery_rate.per_sec",
            tenant("delivery_rate = { per_sec = inf, burst = 1 }", ""),
        ),
        (
            "destination.timeout_secs",
            tenant("", &format!("{DEST}timeout_secs = 1e300\n")),
        ),
        (
            "destination.connect_timeout_secs",
            tenant("", &format!("{DEST}connect_timeout_secs = 1e20\n")),
        ),
        (
            "retry.schedule_secs[1]",
            tenant("", "[tenants.retry]\nschedule_secs = [1.0, 1e300]\n"),
        ),
        (
            "retry.schedule_secs",
            tenant(
                "",
                &format!(
                    "[tenants.retry]\nschedule_secs = [{}]\n",
                    ["1.0"; 1000].join(",")
                ),
            ),
        ),
        (
            "retry.window_secs",
            tenant("", "[tenants.retry]\nwindow_secs = 1e300\n"),
        ),
        (
            "retry.jitter",
            tenant("", "[tenants.retry]\njitter = nan\n"),
        ),
        (
            "breaker.failure_threshold",
            tenant("", "[tenants.breaker]\nfailure_threshold = 4294967295\n"),
        ),
        (
            "breaker.cooldown_secs",
            tenant("", "[tenants.breaker]\ncooldown_secs = 1e300\n"),
        ),
    ];
    cases.extend(
        tenant_cases
            .into_iter()
            .map(|(key, toml)| (key.to_owned(), toml)),
    );
    for (key, toml) in cases {
        let outcome = std::panic::catch_unwind(|| load(&toml));
        let result = outcome.unwrap_or_else(|_| panic!("{key}: the loader panicked"));
        let message = match result {
            Ok(_) => panic!("{key}: hostile value accepted:\n{toml}"),
            Err(error) => error.to_string(),
        };
        assert!(message.contains(&key), "{key}: {message}");
    }
}

#[test]
fn the_largest_allowed_values_load() {
    let toml = format!(
        "[grpc]\nshutdown_grace_secs = 3600.0\n[retention]\nsweep_interval_secs = 86400.0\nidempotency_secs = 315360000\n{}",
        tenant(
            "tolerance_secs = 86400\nmax_in_flight = 1024",
            "[tenants.retry]\nschedule_secs = [604800.0]\nwindow_secs = 2592000.0\n"
        )
    );
    let config = load(&toml).unwrap();
    let settings = crate::tenant::TenantSettings::resolve(&config.tenants[0]).unwrap();
    assert_eq!(settings.tolerance_secs, 86_400);
}
