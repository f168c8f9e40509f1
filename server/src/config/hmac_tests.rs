//! `[tenants.hmac]` at config load: a bad table is refused naming the tenant,
//! the field and the reason; the table is refused with any other scheme and
//! required by `scheme = "hmac"`.

use super::*;

fn load_tenant(body: &str) -> Result<Config> {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("hookd.toml");
    let toml = format!(
        "[[tenants]]\nid = \"mg\"\n{body}\n[[tenants.secrets]]\nkid = \"k1\"\nsecret = \"s\"\n"
    );
    std::fs::write(&path, toml).unwrap();
    let config = Config::load(Some(&path), &Overrides::default())?;
    crate::check_tenants(&config).map(|()| config)
}

fn refused(body: &str) -> String {
    match load_tenant(body) {
        Ok(_) => panic!("loaded: {body}"),
        Err(e) => e.to_string(),
    }
}

#[test]
fn a_good_table_loads_and_resolves_to_its_spec() {
    let config = load_tenant(
        "scheme = \"hmac\"\n[tenants.hmac]\nsignature = \"/signature/signature\"\n\
         signed = \"{/signature/timestamp}{/signature/token}\"\ntimestamp = \"/signature/timestamp\"\n",
    )
    .unwrap();
    let settings = crate::tenant::TenantSettings::resolve(&config.tenants[0]).unwrap();
    let spec = settings.hmac.expect("an hmac spec");
    assert!(spec.has_timestamp());
}

#[test]
fn bad_tables_are_refused_at_load_with_the_field_and_the_reason() {
    let hmac = |table: &str| format!("scheme = \"hmac\"\n[tenants.hmac]\n{table}");
    for (body, expected) in [
        (
            hmac("signature = \"header:X-Sig\"\nsigned = \"{bdy}\""),
            "tenants[0] (mg): hmac.signed: unknown placeholder {bdy}",
        ),
        (
            hmac("signature = \"header:X-Sig\"\nsigned = \"{timestamp}.{body\""),
            "hmac.signed: the placeholder at byte 12 is not closed",
        ),
        (
            hmac("signature = \"header:X-Sig\"\nsigned = \"{timestamp}.{body}\""),
            "hmac.signed: {timestamp} is used but hmac.timestamp says where it is",
        ),
        (
            hmac("signature = \"header:X-Sig\"\ntimestamp = \"header:X-Ts\""),
            "hmac.timestamp: the timestamp is not in hmac.signed",
        ),
        (
            hmac("signature = \"X-Sig\""),
            "hmac.signature: \"X-Sig\" is neither header:Name nor a JSON pointer",
        ),
        (
            hmac("signature = \"header:X-Sig\"\nalgorithm = \"md5\""),
            "hmac.algorithm: \"md5\" is not supported (expected sha1, sha256 or sha512)",
        ),
        (
            hmac("signature = \"header:X-Sig\"\nhash = \"sha256\""),
            "tenants.0.hmac.hash: unknown field: found `hash`",
        ),
        (
            "scheme = \"hmac\"".to_owned(),
            "hmac: scheme \"hmac\" needs its spec (the [hmac] table",
        ),
        (
            "scheme = \"github\"\n[tenants.hmac]\nsignature = \"header:X-Sig\"".to_owned(),
            "hmac: only scheme \"hmac\" reads an [hmac] table, not \"github\"",
        ),
    ] {
        let error = refused(&body);
        assert!(error.contains(expected), "{body}\n=> {error}");
    }
}
