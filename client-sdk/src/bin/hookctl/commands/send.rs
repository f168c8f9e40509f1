//! `hookctl send`: sign a test webhook with the tenant's scheme and secret and POST it
//! to hookd's HTTP ingest, exactly as a provider would.

use std::{
    path::Path,
    time::{SystemTime, UNIX_EPOCH},
};

use anyhow::Context;
use hookd_sdk::signature::{sign_hmac, sign_message, HmacSpec, Message, Scheme, Secret, Signing};
use serde_json::{json, Value};
use sha2::{Digest, Sha256};

use super::hmac_file::read_hmac_fields;
use crate::{cli::SendArgs, exit::CliError, output::Output};

/// Sends one signed webhook and prints hookd's answer; a non-2xx answer is an error
/// whose exit code follows the HTTP status.
/// With `tls_ca`, an https:// URL must present a certificate from that CA.
pub async fn run(out: Output, args: SendArgs, tls_ca: Option<&Path>) -> anyhow::Result<()> {
    let event_id = args
        .event_id
        .clone()
        .unwrap_or_else(|| format!("evt_{:016x}", rand::random::<u64>()));
    let body = match (&args.body, &args.body_file) {
        (Some(body), _) => body.clone().into_bytes(),
        (None, Some(path)) => std::fs::read(path)
            .with_context(|| format!("reading the body from {}", path.display()))?,
        (None, None) => default_body(args.scheme, &event_id),
    };
    let secret = Secret::from_provider(args.scheme, args.kid.clone(), &args.secret)
        .context("the --secret cannot be used with this scheme")?;
    let now = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .context("the system clock is before 1970")?;
    let timestamp = i64::try_from(now.as_secs()).context("the system clock is out of range")?;
    let form = args
        .content_type
        .starts_with("application/x-www-form-urlencoded");
    let (url, signed_url) = urls(&args, &body, form);
    let message = Message {
        event_id: &event_id,
        timestamp,
        body: &body,
        method: "POST",
        url: Some(&signed_url),
    };
    let Signing { headers, body } = match args.scheme {
        Scheme::Hmac => {
            let spec = hmac_spec(&args)?;
            sign_hmac(&spec, &secret, &message, &[]).context("the [hmac] spec cannot sign this")?
        }
        scheme => sign_message(scheme, &secret, &message),
    };

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
        .post(url.clone())
        .header(reqwest::header::CONTENT_TYPE, &args.content_type);
    for (name, value) in headers {
        request = request.header(name, value);
    }
    let response = request
        .body(body)
        .send()
        .await
        .with_context(|| format!("sending the webhook to {url}"))?;
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

/// The URL to send to and the URL to sign (`--public-url`, else the same):
/// Twilio signs a JSON body through its digest in the query, `bodySHA256`.
fn urls(args: &SendArgs, body: &[u8], form: bool) -> (String, String) {
    let mut url = args.url.to_string();
    let mut signed = args
        .public_url
        .as_ref()
        .map_or_else(|| url.clone(), |public| public.to_string());
    if args.scheme == Scheme::Twilio && !form {
        let digest = format!("bodySHA256={}", hex::encode(Sha256::digest(body)));
        for target in [&mut url, &mut signed] {
            let glue = if target.contains('?') { '&' } else { '?' };
            target.push(glue);
            target.push_str(&digest);
        }
    }
    (url, signed)
}

/// The tenant's `[hmac]` table, read from `--hmac-file` (JSON or YAML, the
/// config file's key names).
fn hmac_spec(args: &SendArgs) -> anyhow::Result<HmacSpec> {
    let path = args
        .hmac_file
        .as_deref()
        .context("scheme hmac signs as the tenant's [hmac] table says: give it with --hmac-file")?;
    HmacSpec::new(read_hmac_fields(path)?).map_err(|e| anyhow::anyhow!("{}: {e}", path.display()))
}

/// `{"type":"test.event","event_id":...}`, plus the id where the scheme reads its
/// event id when that is elsewhere: another top-level field (stripe: `id`) or a
/// JSON pointer (sendgrid's `/0/sg_event_id` makes the body an array of events).
fn default_body(scheme: Scheme, event_id: &str) -> Vec<u8> {
    let mut body = json!({ "type": "test.event", "event_id": event_id });
    match scheme.body_event_id_field() {
        Some(pointer) if pointer.starts_with('/') => place(&mut body, pointer, json!(event_id)),
        Some(field) => body[field] = json!(event_id),
        None => {}
    }
    body.to_string().into_bytes()
}

/// Sets `value` at JSON pointer `pointer` in `root`, making the objects (and,
/// for a numeric step, the arrays) on the way.
fn place(root: &mut Value, pointer: &str, value: Value) {
    let steps: Vec<String> = pointer
        .split('/')
        .skip(1)
        .map(|step| step.replace("~1", "/").replace("~0", "~"))
        .collect();
    if steps
        .first()
        .is_some_and(|step| step.parse::<usize>().is_ok())
    {
        *root = Value::Array(vec![root.take()]);
    }
    let mut at = root;
    for (i, step) in steps.iter().enumerate() {
        let last = i + 1 == steps.len();
        let next = match step.parse::<usize>() {
            Ok(index) if at.is_array() => {
                let items = at.as_array_mut().expect("checked");
                while items.len() <= index {
                    items.push(json!({}));
                }
                &mut items[index]
            }
            _ => {
                if !at.is_object() {
                    *at = json!({});
                }
                at.as_object_mut()
                    .expect("made an object")
                    .entry(step.clone())
                    .or_insert_with(|| json!({}))
            }
        };
        if last {
            *next = value;
            return;
        }
        at = next;
    }
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
        assert_eq!(parsed(Scheme::Mailgun)["event-data"]["id"], "evt_1");
        let batch = parsed(Scheme::Sendgrid);
        assert_eq!(batch[0]["sg_event_id"], "evt_1");
        assert_eq!(batch[0]["type"], "test.event");
        assert_eq!(parsed(Scheme::Hubspot)[0]["eventId"], "evt_1");
    }
}
