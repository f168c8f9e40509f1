//! `hookctl send`: sign a test webhook with the tenant's scheme and secret and POST it
//! to hookd's HTTP ingest, exactly as a provider would.

use std::{
    path::Path,
    time::{SystemTime, UNIX_EPOCH},
};

use anyhow::Context;
use hookd_sdk::signature::{sign, Scheme, Secret};
use serde_json::{json, Value};

use crate::{cli::SendArgs, exit::CliError, output::Output};

/// Sends one signed webhook and prints hookd's answer; a non-2xx answer is an error
/// whose exit code follows the HTTP status.
/// With `tls_ca`, an https:// URL must present a certificate from that CA.
pub async fn run(out: Output, args: SendArgs, tls_ca: Option<&Path>) -> anyhow::Result<()> {
    if args.scheme == Scheme::Hmac {
        anyhow::bail!("scheme hmac is signed by its tenant's [hmac] spec, which hookctl send does not read; sign with hookd_sdk::signature::sign_hmac");
    }
    let event_id = args
        .event_id
        .unwrap_or_else(|| format!("evt_{:016x}", rand::random::<u64>()));
    let body = match (args.body, args.body_file) {
        (Some(body), _) => body.into_bytes(),
        (None, Some(path)) => std::fs::read(&path)
            .with_context(|| format!("reading the body from {}", path.display()))?,
        (None, None) => default_body(args.scheme, &event_id),
    };
    let secret = Secret::from_provider(args.scheme, args.kid, &args.secret)
        .context("the --secret cannot be used with this scheme")?;
    let now = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .context("the system clock is before 1970")?;
    let timestamp = i64::try_from(now.as_secs()).context("the system clock is out of range")?;

    let mut client = reqwest::Client::builder();
    if let Some(path) = tls_ca {
        let pem = std::fs::read(path)
            .with_context(|| format!("reading the --tls-ca file {}", path.display()))?;
        let ca = reqwest::Certificate::from_pem(&pem)
            .with_context(|| format!("{} is not a PEM certificate", path.display()))?;
        client = client.add_root_certificate(ca);
    }
    let client = client.build().context("setting up the HTTP client")?;
    let mut request = client
        .post(args.url.clone())
        .header(reqwest::header::CONTENT_TYPE, "application/json");
    for (name, value) in sign(args.scheme, &secret, &event_id, timestamp, &body) {
        request = request.header(name, value);
    }
    let response = request
        .body(body)
        .send()
        .await
        .with_context(|| format!("sending the webhook to {}", args.url))?;
    let status = response.status();
    let answer = response.text().await.context("reading hookd's answer")?;

    let text = format!("HTTP {status}\n{answer}");
    let answer_json = serde_json::from_str(&answer).unwrap_or(Value::String(answer));
    let document = json!({
        "event_id": event_id,
        "status": status.as_u16(),
        "body": answer_json,
    });
    out.result(text.trim_end(), &document)?;
    if status.is_success() {
        Ok(())
    } else {
        Err(CliError::Rejected(status.as_u16()).into())
    }
}

/// `{"type":"test.event","event_id":...}`, plus the id under the field the scheme reads
/// its event id from when that is another one (stripe: `id`).
fn default_body(scheme: Scheme, event_id: &str) -> Vec<u8> {
    let mut body = json!({ "type": "test.event", "event_id": event_id });
    if let Some(field) = scheme.body_event_id_field() {
        body[field] = json!(event_id);
    }
    body.to_string().into_bytes()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parsed(scheme: Scheme) -> Value {
        serde_json::from_slice(&default_body(scheme, "evt_1")).expect("json body")
    }

    #[test]
    fn the_default_body_carries_the_event_id_where_the_scheme_reads_it() {
        assert_eq!(
            parsed(Scheme::Standard),
            json!({ "type": "test.event", "event_id": "evt_1" })
        );
        assert_eq!(parsed(Scheme::Stripe)["id"], "evt_1");
        assert_eq!(parsed(Scheme::Hookd)["event_id"], "evt_1");
    }
}
