//! The layered config's tests: defaults, files, env, flags and bounds.

use super::*;

fn load_str(toml: &str) -> Result<Config> {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("hookd.toml");
    std::fs::write(&path, toml).unwrap();
    let config = Config::load(Some(&path), &Overrides::default())?;
    crate::check_tenants(&config).map(|()| config)
}

#[test]
fn embedded_defaults_match_the_design() {
    let c = Config::load(None, &Overrides::default()).unwrap();
    assert_eq!(c.data_dir, PathBuf::from("./hookd-data"));
    assert_eq!(c.http.addr, "127.0.0.1:8080");
    assert_eq!(c.grpc.addr, "127.0.0.1:50051");
    assert!(c.storage.fsync);
}

#[test]
fn the_commented_tenant_example_loads_when_uncommented() {
    // The example names a CA bundle; put a real one where it points.
    let dir = tempfile::tempdir().unwrap();
    let ca = dir.path().join("partner-ca.pem");
    let cert = rcgen::generate_simple_self_signed(vec!["partner.example".into()]).unwrap();
    std::fs::write(&ca, cert.cert.pem()).unwrap();
    let example: String = DEFAULT_TOML
        .lines()
        .skip_while(|line| *line != "# [[tenants]]")
        .map(|line| format!("{}\n", line.trim_start_matches('#').trim_start()))
        .collect::<String>()
        .replace("/etc/hookd/partner-ca.pem", &ca.display().to_string());
    let c = load_str(&example).unwrap_or_else(|e| panic!("{e}\n{example}"));
    let t = crate::tenant::TenantSettings::resolve(&c.tenants[0]).unwrap();
    assert_eq!(t.id.as_str(), "acme");
    let forward = t.forward.as_ref().expect("the example forwards");
    assert_eq!(forward.max_in_flight, 8);
    assert!(forward.delivery_rate.is_some());
    let contracts = &t.contracts.contracts;
    assert_eq!(contracts.len(), 1, "the example declares a contract");
    assert_eq!(contracts[0].key(), ("order.paid", Some("2")));
    assert_eq!(contracts[0].required(), ["event_id", "type", "data"]);
    let broken = example.replace(r#""order_id": "o_1""#, r#""order_id": 7"#);
    let e = load_str(&broken).unwrap_err().to_string();
    assert!(
        e.contains("tenants[0] (acme): contracts[0] (order.paid): example: does not pass the schema at \"/data/order_id\""),
        "{e}"
    );
}

#[test]
fn flags_win_over_the_file() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("hookd.toml");
    std::fs::write(&path, "[http]\naddr = \"127.0.0.1:9999\"\n").unwrap();
    let o = Overrides {
        http_addr: Some("127.0.0.1:0".into()),
        ..Default::default()
    };
    let c = Config::load(Some(&path), &o).unwrap();
    assert_eq!(c.http.addr, "127.0.0.1:0");
}

#[test]
fn tenant_with_inline_and_file_secrets_resolves() {
    let dir = tempfile::tempdir().unwrap();
    let secret_path = dir.path().join("s");
    std::fs::write(&secret_path, "hk-previous\n").unwrap();
    let c = load_str(&format!(
        "[[tenants]]\nid = \"acme\"\nscheme = \"hookd\"\n[[tenants.secrets]]\nkid = \"k2\"\nsecret = \"hk-current\"\n[[tenants.secrets]]\nkid = \"k1\"\nsecret_file = {:?}\n",
        secret_path
    ))
    .unwrap();
    let t = crate::tenant::TenantSettings::resolve(&c.tenants[0]).unwrap();
    assert_eq!(t.current.kid(), "k2");
    assert_eq!(t.previous.as_ref().unwrap().0.kid(), "k1");
}

#[test]
fn secrets_can_come_from_the_environment() {
    std::env::set_var("HOOKD_TEST_SECRET_FROM_ENV", "hk-from-env");
    let c = load_str(
        "[[tenants]]\nid = \"acme\"\nscheme = \"hookd\"\n[[tenants.secrets]]\nkid = \"k7\"\nsecret_env = \"HOOKD_TEST_SECRET_FROM_ENV\"\n",
    )
    .unwrap();
    assert_eq!(
        crate::tenant::TenantSettings::resolve(&c.tenants[0])
            .unwrap()
            .current
            .kid(),
        "k7"
    );
    let e = load_str(
        "[[tenants]]\nid = \"acme\"\n[[tenants.secrets]]\nkid = \"k1\"\nsecret_env = \"HOOKD_TEST_UNSET_VARIABLE\"\n",
    )
    .unwrap_err()
    .to_string();
    assert!(e.contains("HOOKD_TEST_UNSET_VARIABLE is not set"), "{e}");
}

#[test]
fn debug_output_holds_no_secret() {
    let mut c = load_str(
        "[[tenants]]\nid = \"acme\"\nscheme = \"hookd\"\n[[tenants.secrets]]\nkid = \"k1\"\nsecret = \"hk-inline-signing-secret\"\n[tenants.destination]\nurl = \"http://127.0.0.1:9/\"\nsecret = \"whsec_ZGVzdGluYXRpb24tc2VjcmV0LXZhbHVl\"\n",
    )
    .unwrap();
    c.keys = KeySources {
        master_key: Some("bWFzdGVyLWtleS1ieXRlcy1tYXN0ZXIta2V5LWJ5dGVzIQ==".into()),
        master_key_file: None,
        admin_token: Some("hka_admin-token-that-must-not-leak".into()),
    };
    let printed = format!("{c:?} {c:#?} {:?} {:?}", c.tenants[0], c.keys);
    for secret in [
        "hk-inline-signing-secret",
        "ZGVzdGluYXRpb24tc2VjcmV0LXZhbHVl",
        "bWFzdGVyLWtleS1ieXRlcy1tYXN0ZXIta2V5LWJ5dGVzIQ==",
        "admin-token-that-must-not-leak",
    ] {
        assert!(
            !printed.contains(secret),
            "{{:?}} of the config shows {secret}"
        );
    }
    assert!(
        printed.contains("acme") && printed.contains("k1"),
        "{printed}"
    );
}

#[test]
fn allow_networks_parse_and_a_bad_one_names_the_key() {
    let quickstart = Path::new(env!("CARGO_MANIFEST_DIR")).join("../examples/quickstart.toml");
    let c = Config::load(Some(&quickstart), &Overrides::default()).unwrap();
    assert_eq!(
        c.forward.allow_networks,
        vec!["127.0.0.1/32".parse::<ipnet::IpNet>().unwrap()]
    );
    assert!(Config::load(None, &Overrides::default())
        .unwrap()
        .forward
        .allow_networks
        .is_empty());
    let e = load_str("[forward]\nallow_networks = [\"10.0.0.0/33\"]\n")
        .unwrap_err()
        .to_string();
    assert!(e.contains("forward.allow_networks"), "{e}");
}

/// A hookd-scheme tenant with `extra` keys.
fn tenant(extra: &str) -> String {
    format!("[[tenants]]\nid = \"acme\"\nscheme = \"hookd\"\n{extra}\n[[tenants.secrets]]\nkid = \"k1\"\nsecret = \"s\"\n")
}

#[test]
fn a_public_url_is_an_absolute_http_url_without_query_or_fragment() {
    let c = load_str(&tenant(
        "public_url = \"https://hooks.example.com/hooks/acme\"",
    ))
    .unwrap();
    let t = crate::tenant::TenantSettings::resolve(&c.tenants[0]).unwrap();
    assert_eq!(
        t.delivery_url("a=1&b=2").as_deref(),
        Some("https://hooks.example.com/hooks/acme?a=1&b=2")
    );
    assert_eq!(
        t.delivery_url("").as_deref(),
        Some("https://hooks.example.com/hooks/acme")
    );
    for (bad, words) in [
        ("/hooks/acme", "not an absolute URL"),
        ("ftp://hooks.example.com/x", "not an http(s) URL"),
        (
            "https://hooks.example.com/x?a=1",
            "has a query or a fragment",
        ),
        (
            "https://hooks.example.com/x#top",
            "has a query or a fragment",
        ),
    ] {
        let e = load_str(&tenant(&format!("public_url = \"{bad}\"")))
            .unwrap_err()
            .to_string();
        assert!(e.contains("public_url") && e.contains(words), "{bad}: {e}");
    }
    let long = format!("https://h.example/{}", "a".repeat(2_048));
    let e = load_str(&tenant(&format!("public_url = \"{long}\"")))
        .unwrap_err()
        .to_string();
    assert!(e.contains("longer than 2048 bytes"), "{e}");
}

#[test]
fn a_scheme_that_signs_the_url_needs_a_public_url() {
    use hookd_proto::domain::Scheme;
    for scheme in Scheme::ALL {
        let none = tenant::check_public_url(scheme, None);
        assert_eq!(none.is_err(), scheme.signs_url(), "{scheme}");
        if let Err(e) = none {
            assert_eq!(e.key, "public_url");
            assert!(e.reason.contains("signs the URL"), "{}", e.reason);
        }
        assert!(tenant::check_public_url(scheme, Some("https://h.example/hooks/a")).is_ok());
    }
}

#[test]
fn an_event_id_rule_that_does_not_parse_names_the_key() {
    let e = load_str(&tenant("event_id_field = \"{/eventCode\""))
        .unwrap_err()
        .to_string();
    assert!(
        e.contains("tenants[0]") && e.contains("event_id_field") && e.contains("not closed"),
        "{e}"
    );
    let c = load_str(&tenant("event_id_field = \"{/a}:{header:X-B}\"")).unwrap();
    assert!(crate::tenant::TenantSettings::resolve(&c.tenants[0]).is_ok());
}

#[test]
fn errors_name_the_key() {
    let e = load_str("[[tenants]]\nid = \"acme\"\nscheme = \"paypal\"\n")
        .unwrap_err()
        .to_string();
    assert!(e.contains("tenants[0]") && e.contains("scheme"), "{e}");
    let e = load_str("[[tenants]]\nid = \"acme\"\n")
        .unwrap_err()
        .to_string();
    assert!(e.contains("current secret"), "{e}");
    let e = load_str("[http]\naddr = \"nope\"\n")
        .unwrap_err()
        .to_string();
    assert!(e.contains("http.addr"), "{e}");
    let e = load_str("[http]\nmax_header_bytes = 200000\n")
        .unwrap_err()
        .to_string();
    assert!(e.contains("http.max_header_bytes"), "{e}");
    let e = load_str("[metrics]\naddr = \"public\"\n")
        .unwrap_err()
        .to_string();
    assert!(e.contains("metrics.addr"), "{e}");
    let e = load_str("[http]\nrequest_timeout_secs = 0\n")
        .unwrap_err()
        .to_string();
    assert!(e.contains("http.request_timeout_secs"), "{e}");
    let e = load_str("[htttp]\naddr = \"127.0.0.1:1\"\n")
        .unwrap_err()
        .to_string();
    assert!(e.contains("htttp"), "{e}");
}

#[test]
fn the_unused_scan_limit_still_loads_and_a_set_one_is_warned_about() {
    let c = load_str("[metrics]\nscan_limit = 500\n").unwrap();
    let warning = c.metrics.scan_limit_warning().unwrap();
    assert!(warning.contains("metrics.scan_limit = 500"), "{warning}");
    let defaults = Config::load(None, &Overrides::default()).unwrap();
    assert_eq!(defaults.metrics.scan_limit_warning(), None);
}

#[test]
fn a_tenant_replay_cache_capacity_still_loads_and_a_set_one_is_warned_about() {
    let c = load_str(&tenant("replay_cache_capacity = 5000\n")).unwrap();
    let warning = c.tenants[0].replay_cache_capacity_warning().unwrap();
    assert!(
        warning.contains("replay_cache_capacity = 5000") && warning.contains("replay_cache_keys"),
        "{warning}"
    );
    let unset = load_str(&tenant("")).unwrap();
    assert_eq!(unset.tenants[0].replay_cache_capacity_warning(), None);
    assert_eq!(
        unset.limits.replay_cache_keys,
        LimitsConfig::DEFAULT_REPLAY_CACHE_KEYS,
        "config.default.toml and the constant agree"
    );
}

#[test]
fn tls_files_are_checked_at_load_naming_the_key() {
    let e = load_str("[grpc.tls]\ncert_file = \"/nonexistent/grpc.pem\"\n")
        .unwrap_err()
        .to_string();
    assert!(e.contains("key_file"), "{e}");
    let e = load_str(
        "[grpc.tls]\ncert_file = \"/nonexistent/grpc.pem\"\nkey_file = \"/nonexistent/grpc.key\"\n",
    )
    .unwrap_err()
    .to_string();
    assert!(
        e.contains("grpc.tls.cert_file") && e.contains("/nonexistent/grpc.pem"),
        "{e}"
    );
    let e = load_str("[http.tls]\ncert_file = \"a\"\nkey_file = \"b\"\nclient_ca_file = \"c\"\n")
        .unwrap_err()
        .to_string();
    assert!(e.contains("client_ca_file"), "{e}");
    let c = Config::load(None, &Overrides::default()).unwrap();
    assert!(
        c.http.tls.is_none() && c.grpc.tls.is_none(),
        "plaintext by default"
    );
}

#[test]
fn a_verify_token_is_for_meta_tenants_only() {
    let resolved = |text: &str| {
        load_str(text).map_err(|e| e.to_string()).and_then(|c| {
            crate::tenant::TenantSettings::resolve(&c.tenants[0]).map_err(|e| e.to_string())
        })
    };
    let meta = |extra: &str| {
        resolved(&format!("[[tenants]]\nid = \"fb\"\nscheme = \"meta\"\n{extra}\n[[tenants.secrets]]\nkid = \"k1\"\nsecret = \"s\"\n"))
    };
    let t = meta("verify_token = \"meatyhamhock\"").unwrap();
    assert_eq!(
        t.verify_token
            .as_ref()
            .map(|token| secrecy::ExposeSecret::expose_secret(token).to_owned()),
        Some("meatyhamhock".to_owned())
    );
    assert!(meta("").unwrap().verify_token.is_none());
    let empty = meta("verify_token = \"\"").unwrap_err();
    assert!(
        empty.contains("verify_token") && empty.contains("empty"),
        "{empty}"
    );
    let both = meta("verify_token = \"a\"\nverify_token_env = \"X\"").unwrap_err();
    assert!(both.contains("only one"), "{both}");
    let other = resolved(&tenant("verify_token = \"meatyhamhock\"")).unwrap_err();
    assert!(other.contains("only the meta scheme"), "{other}");
    assert!(
        !other.contains("meatyhamhock"),
        "the token is never shown: {other}"
    );
}

#[test]
fn a_tenant_setting_no_retry_or_breaker_runs_with_the_shared_defaults() {
    use hookd_proto::domain::defaults;
    let c = load_str(
        "[[tenants]]\nid = \"acme\"\nscheme = \"hookd\"\n[[tenants.secrets]]\nkid = \"k1\"\nsecret = \"s\"\n[tenants.destination]\nurl = \"http://127.0.0.1:9/\"\nsecret = \"whsec_ZGVzdGluYXRpb24tc2VjcmV0LXZhbHVl\"\n",
    )
    .unwrap();
    let forward = crate::tenant::TenantSettings::resolve(&c.tenants[0])
        .unwrap()
        .forward
        .unwrap();
    let ms = |secs: f64| (secs * 1000.0) as i64;
    let schedule: Vec<i64> = defaults::RETRY_SCHEDULE_SECS.map(ms).to_vec();
    assert_eq!(forward.schedule_ms, schedule);
    assert_eq!(forward.window_ms, ms(defaults::RETRY_WINDOW_SECS));
    assert_eq!(forward.jitter, defaults::RETRY_JITTER);
    assert_eq!(
        forward.breaker_threshold,
        defaults::BREAKER_FAILURE_THRESHOLD
    );
    assert_eq!(
        forward.breaker_cooldown_ms,
        ms(defaults::BREAKER_COOLDOWN_SECS)
    );
    let limits = crate::routes::transform::TransformLimits::default();
    assert_eq!(
        limits.cpu().as_millis(),
        u128::from(defaults::TRANSFORM_CPU_MS)
    );
    assert_eq!(
        limits.memory_bytes() >> 20,
        defaults::TRANSFORM_MEMORY_MIB as usize
    );
}
