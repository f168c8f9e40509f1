//! `hookctl send --scheme X`, the real binary, signs every scheme hookd
//! verifies, so an operator can try any tenant from the shell: one tenant
//! per scheme (key pairs as their provider prints them), each answers 202.

use hookd_sdk::signature::Scheme;

use crate::{
    cli::hookctl,
    harness::TestServer,
    keys::{DISCORD_PRIVATE, SENDGRID_PRIVATE, SENDGRID_PUBLIC, WHSEC},
};

const SHARED: &str = "plain-shared-secret";

/// Standard Webhooks v1a: an Ed25519 private key (`whsk_`, the seed 01..20)
/// and its public key (`whpk_`).
const STANDARD_PRIVATE: &str = "whsk_AQIDBAUGBwgJCgsMDQ4PEBESExQVFhcYGRobHB0eHyA=";
const STANDARD_PUBLIC: &str = "whpk_ebVWLo/mVPlAeLES6KmLp5AfhTrmlb7X4OORC60ElmQ=";

/// `[hmac]` of the `hmac` tenant: a Slack-like header signature.
const HMAC_TABLE: &str = "signature = \"header:X-Signature\"\nprefix = \"v0=\"\nsigned = \"v0:{header:X-Timestamp}:{body}\"\ntimestamp = \"header:X-Timestamp\"\n";
const HMAC_YAML: &str = "signature: \"header:X-Signature\"\nprefix: \"v0=\"\nsigned: \"v0:{header:X-Timestamp}:{body}\"\ntimestamp: \"header:X-Timestamp\"\n";

/// Every tenant: `(id, scheme, what the tenant holds, what the sender signs with)`.
fn tenants() -> Vec<(String, Scheme, &'static str, &'static str)> {
    let mut all: Vec<_> = Scheme::ALL
        .into_iter()
        .map(|scheme| {
            let (held, signing) = match scheme {
                Scheme::Standard | Scheme::Svix => (WHSEC, WHSEC),
                Scheme::Discord => (&DISCORD_PRIVATE[64..], DISCORD_PRIVATE),
                Scheme::Sendgrid => (SENDGRID_PUBLIC, SENDGRID_PRIVATE),
                _ => (SHARED, SHARED),
            };
            (scheme.as_str().to_owned(), scheme, held, signing)
        })
        .collect();
    all.push((
        "standard-v1a".into(),
        Scheme::Standard,
        STANDARD_PUBLIC,
        STANDARD_PRIVATE,
    ));
    all
}

/// The URL the providers call, in front of hookd (a load balancer's).
const PUBLIC: &str = "https://hooks.example.com";

fn config() -> String {
    let mut toml = String::new();
    for (id, scheme, held, _) in tenants() {
        toml.push_str(&format!(
            "[[tenants]]\nid = \"{id}\"\nscheme = \"{scheme}\"\n"
        ));
        if scheme.signs_url() {
            toml.push_str(&format!("public_url = \"{PUBLIC}/hooks/{id}\"\n"));
        }
        if scheme == Scheme::Hmac {
            toml.push_str("event_id_field = \"event_id\"\n[tenants.hmac]\n");
            toml.push_str(HMAC_TABLE);
        }
        toml.push_str(&format!(
            "[[tenants.secrets]]\nkid = \"k1\"\nsecret = \"{held}\"\n"
        ));
    }
    toml
}

#[tokio::test]
async fn hookctl_send_signs_every_scheme() {
    // hookctl signs at the system clock.
    let s = TestServer::start_live(&config());
    let dir = tempfile::tempdir().unwrap();
    let hmac_file = dir.path().join("hmac.yaml");
    std::fs::write(&hmac_file, HMAC_YAML).unwrap();
    let mut failures = Vec::new();
    for (id, scheme, _, signing) in tenants() {
        let url = format!("{}/hooks/{id}", s.base);
        let event_id = format!("evt_send_{}", id.replace('-', "_"));
        let public = format!("{PUBLIC}/hooks/{id}");
        let mut args = vec![
            "send",
            "--url",
            &url,
            "--scheme",
            scheme.as_str(),
            "--secret",
            signing,
            "--event-id",
            &event_id,
            "--public-url",
            &public,
        ];
        if scheme == Scheme::Hmac {
            args.extend(["--hmac-file", hmac_file.to_str().unwrap()]);
        }
        let (code, out) = hookctl(&s, &args).await;
        if code != 0 || !out.contains("202") {
            failures.push(format!("{id}: exit {code}: {out}"));
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

#[tokio::test]
async fn hookctl_creates_an_hmac_tenant_from_its_table_and_sends_to_it() {
    let s = TestServer::start_live("");
    let dir = tempfile::tempdir().unwrap();
    let hmac_file = dir.path().join("hmac.yaml");
    std::fs::write(&hmac_file, HMAC_YAML).unwrap();
    let hmac = hmac_file.to_str().unwrap();
    let (code, out) = hookctl(
        &s,
        &[
            "--json",
            "tenants",
            "create",
            "custom",
            "--scheme",
            "hmac",
            "--hmac-file",
            hmac,
            "--event-id-field",
            "event_id",
        ],
    )
    .await;
    assert_eq!(code, 0, "{out}");
    let created: serde_json::Value = serde_json::from_str(&out).unwrap();
    assert_eq!(created["tenant"]["scheme"], "hmac", "{out}");
    let secret = created["secret"].as_str().unwrap().to_owned();
    let url = format!("{}/hooks/custom", s.base);
    let send = |secret: &str| {
        [
            "send",
            "--url",
            &url,
            "--scheme",
            "hmac",
            "--secret",
            secret,
            "--hmac-file",
            hmac,
            "--event-id",
            "evt_custom_1",
        ]
        .map(str::to_owned)
    };
    let (code, out) = run(&s, &send(&secret)).await;
    assert!(code == 0 && out.contains("202"), "{out}");
    let (code, out) = run(&s, &send("not-the-secret")).await;
    assert_ne!(code, 0, "{out}");
    assert!(
        out.contains("401") && out.contains("BAD_SIGNATURE"),
        "{out}"
    );
}

async fn run(s: &TestServer, args: &[String]) -> (i32, String) {
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    hookctl(s, &args).await
}
