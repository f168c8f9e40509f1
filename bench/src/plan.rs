//! The load plan: every delivery signed before the timed run starts, the
//! seed set that duplicates replay, and the order requests go out in.

use std::thread;

use anyhow::{bail, Context};
use hookd_sdk::signature::{sign_message, Message, Scheme, Secret};
use hyper::body::Bytes;
use hyper::header::{HeaderMap, HeaderName, HeaderValue, CONTENT_TYPE};
use rand::{rngs::StdRng, Rng, SeedableRng};

/// What to send: the knobs of `run` and `compare` that shape the requests.
#[derive(Debug, Clone)]
pub struct PlanSpec {
    /// Signature scheme of every tenant.
    pub scheme: Scheme,
    /// The tenants' secret, as the provider hands it out.
    pub secret: String,
    /// Key id the secret is declared under.
    pub kid: String,
    /// Tenant ids, requests spread round-robin over them.
    pub tenants: Vec<String>,
    /// Body size in bytes (at least the size of the JSON skeleton).
    pub body_size: usize,
    /// Share of timed requests that replay a seed delivery, 0.0 ..= 1.0.
    pub dup_ratio: f64,
    /// Deliveries sent before the timed run for duplicates to replay.
    pub dup_set: usize,
    /// Timed requests planned (the count, or the cap of a timed run).
    pub requests: usize,
    /// Random seed, so two runs with the same flags send the same shape.
    pub rng_seed: u64,
    /// Event ids in no order (as most senders make them: random ids,
    /// UUIDs) instead of counting up with the request number.
    pub unordered_ids: bool,
}

/// One pre-signed delivery.
#[derive(Debug, Clone)]
pub struct Delivery {
    /// The event id it carries (hookd forwards it as `webhook-id`).
    pub event_id: String,
    /// `/hooks/{tenant_id}`.
    pub path: String,
    /// Signature headers and content type.
    pub headers: HeaderMap,
    /// The JSON body.
    pub body: Bytes,
}

/// Every delivery of a run: `pool[..seed_len]` is the seed set, sent before
/// the timed run; `order` lists the pool index of each timed request.
#[derive(Debug)]
pub struct Plan {
    /// Signed deliveries.
    pub pool: Vec<Delivery>,
    /// How many of `pool` are seeds.
    pub seed_len: usize,
    /// Pool index of each timed request; indexes below `seed_len` are duplicates.
    pub order: Vec<u32>,
}

impl Plan {
    /// Signs every delivery `spec` calls for, on every core, with timestamps of now.
    pub fn build(spec: &PlanSpec) -> anyhow::Result<Plan> {
        if !(0.0..=1.0).contains(&spec.dup_ratio) {
            bail!(
                "--dup-ratio must be between 0 and 1, got {}",
                spec.dup_ratio
            );
        }
        if spec.tenants.is_empty() {
            bail!("at least one tenant is needed");
        }
        if spec.scheme.signs_url() {
            bail!(
                "--scheme {} signs the public URL, which hookd-bench does not know",
                spec.scheme
            );
        }
        if matches!(
            spec.scheme,
            Scheme::Discord | Scheme::Sendgrid | Scheme::Mailgun | Scheme::Hmac
        ) {
            bail!(
                "--scheme {} does not sign with a shared secret in headers, which is what hookd-bench sends",
                spec.scheme
            );
        }
        let secret = Secret::from_provider(spec.scheme, spec.kid.clone(), &spec.secret)
            .with_context(|| format!("--secret is not a valid {} secret", spec.scheme))?;
        let seed_len = if spec.dup_ratio > 0.0 {
            spec.dup_set.max(1)
        } else {
            0
        };
        let mut rng = StdRng::seed_from_u64(spec.rng_seed);
        let mut order = Vec::with_capacity(spec.requests);
        let mut next_unique = seed_len;
        for _ in 0..spec.requests {
            if seed_len > 0 && rng.random_bool(spec.dup_ratio) {
                order.push(index(rng.random_range(0..seed_len))?);
            } else {
                order.push(index(next_unique)?);
                next_unique += 1;
            }
        }
        let signer = Signer::new(spec, secret);
        let pool = signer.sign_all(next_unique);
        Ok(Plan {
            pool,
            seed_len,
            order,
        })
    }
}

fn index(i: usize) -> anyhow::Result<u32> {
    u32::try_from(i).context("too many deliveries for one plan")
}

/// Signs deliveries number `0..n` of one run.
struct Signer<'a> {
    spec: &'a PlanSpec,
    secret: Secret,
    /// Makes event ids unique to this run, so a second run against the same
    /// hookd data is not answered from its idempotency log.
    run_id: String,
    timestamp: i64,
}

impl<'a> Signer<'a> {
    fn new(spec: &'a PlanSpec, secret: Secret) -> Self {
        let timestamp = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.as_secs() as i64);
        Signer {
            spec,
            secret,
            run_id: ulid::Ulid::new().to_string().to_lowercase(),
            timestamp,
        }
    }

    fn sign_all(&self, n: usize) -> Vec<Delivery> {
        let workers = thread::available_parallelism().map_or(1, |p| p.get());
        let chunk = n.div_ceil(workers).max(1);
        let ranges: Vec<_> = (0..n)
            .step_by(chunk)
            .map(|start| start..(start + chunk).min(n))
            .collect();
        thread::scope(|scope| {
            let handles: Vec<_> = ranges
                .into_iter()
                .map(|range| {
                    scope.spawn(move || range.map(|k| self.sign_one(k)).collect::<Vec<_>>())
                })
                .collect();
            handles
                .into_iter()
                .flat_map(|h| h.join().expect("a signing thread panicked"))
                .collect()
        })
    }

    fn sign_one(&self, k: usize) -> Delivery {
        let tenant = &self.spec.tenants[k % self.spec.tenants.len()];
        let event_id = match self.spec.unordered_ids {
            // An odd multiplier is a bijection on u64: unique, in no order.
            true => format!(
                "evt_{}_{:016x}",
                self.run_id,
                (k as u64).wrapping_mul(0x9e37_79b9_7f4a_7c15)
            ),
            false => format!("evt_{}_{k}", self.run_id),
        };
        // Every delivery has its own body, as real events do: hookd keys
        // schemes that sign no timestamp (GitHub, Shopify) on the signed
        // content too, so a shared body would make them all one event.
        let event = body(Some(&event_id), self.spec.body_size);
        let message = Message {
            event_id: &event_id,
            timestamp: self.timestamp,
            body: &event,
            method: "POST",
            url: None,
        };
        let signing = sign_message(self.spec.scheme, &self.secret, &message);
        let mut headers = HeaderMap::new();
        for (name, value) in signing.headers {
            let name = HeaderName::from_bytes(name.as_bytes()).expect("the SDK emits valid names");
            let value = HeaderValue::from_str(&value).expect("the SDK emits valid values");
            headers.append(name, value);
        }
        headers.insert(CONTENT_TYPE, HeaderValue::from_static("application/json"));
        Delivery {
            event_id,
            path: format!("/hooks/{tenant}"),
            headers,
            body: Bytes::from(signing.body),
        }
    }
}

/// A JSON object of about `size` bytes; with `event_id` it carries the id in
/// both `id` and `event_id`, the body fields the schemes read it from.
pub fn body(event_id: Option<&str>, size: usize) -> Vec<u8> {
    let head = match event_id {
        Some(id) => format!(r#"{{"id":"{id}","event_id":"{id}","type":"bench.event","pad":""#),
        None => r#"{"type":"bench.event","pad":""#.to_owned(),
    };
    let tail = "\"}";
    let pad = size.saturating_sub(head.len() + tail.len());
    let mut out = Vec::with_capacity(head.len() + pad + tail.len());
    out.extend_from_slice(head.as_bytes());
    out.resize(out.len() + pad, b'x');
    out.extend_from_slice(tail.as_bytes());
    out
}

/// Tenant ids from `pattern`: `{}` is replaced with the tenant's number
/// (0-based); with one tenant a pattern without `{}` is the id itself.
pub fn tenant_ids(pattern: &str, n: usize) -> anyhow::Result<Vec<String>> {
    if n == 0 {
        bail!("--tenants must be at least 1");
    }
    if !pattern.contains("{}") {
        if n == 1 {
            return Ok(vec![pattern.to_owned()]);
        }
        bail!("--tenant-pattern {pattern:?} needs a {{}} for the tenant number when --tenants > 1");
    }
    Ok((0..n)
        .map(|i| pattern.replace("{}", &i.to_string()))
        .collect())
}

#[cfg(test)]
mod tests {
    use hookd_sdk::signature::verify;

    use super::*;

    fn duplicates(plan: &Plan) -> usize {
        let seed = plan.seed_len;
        plan.order.iter().filter(|&&i| (i as usize) < seed).count()
    }

    fn spec(scheme: Scheme, dup_ratio: f64) -> PlanSpec {
        PlanSpec {
            scheme,
            secret: "whsec_AQIDBAUGBwgJCgsMDQ4PEBESExQVFhcYGRobHB0eHyA=".into(),
            kid: "k1".into(),
            tenants: tenant_ids("t-{}", 3).unwrap(),
            body_size: 1024,
            dup_ratio,
            dup_set: 10,
            requests: 1000,
            rng_seed: 7,
            unordered_ids: false,
        }
    }

    #[test]
    fn every_delivery_verifies_with_the_tenant_secret_in_every_scheme() {
        // The schemes hookd-bench drives: header signatures under a shared secret
        // over a POST body (not the key-pair schemes, Mailgun, nor the schemes
        // that sign the public URL).
        let driven = Scheme::ALL.into_iter().filter(|scheme| {
            !scheme.signs_url()
                && !matches!(
                    scheme,
                    Scheme::Discord | Scheme::Sendgrid | Scheme::Mailgun | Scheme::Hmac
                )
        });
        for scheme in driven {
            let spec = spec(scheme, 0.0);
            let plan = Plan::build(&spec).unwrap();
            let secret = Secret::from_provider(scheme, "k1", &spec.secret).unwrap();
            let now = std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .unwrap()
                .as_secs() as i64;
            for delivery in &plan.pool {
                let headers: Vec<(String, String)> = delivery
                    .headers
                    .iter()
                    .map(|(k, v)| (k.to_string(), v.to_str().unwrap().to_owned()))
                    .collect();
                verify(
                    scheme,
                    &headers,
                    &delivery.body,
                    std::slice::from_ref(&secret),
                    now,
                    300,
                )
                .unwrap_or_else(|e| panic!("{scheme}: {e}"));
                // Linear's sender adds its timestamp to the body.
                let len = delivery.body.len();
                assert!((1024..1024 + 40).contains(&len), "{scheme}: {len} bytes");
                serde_json::from_slice::<serde_json::Value>(&delivery.body).unwrap();
            }
        }
    }

    #[test]
    fn schemes_that_sign_the_url_are_refused() {
        for scheme in Scheme::ALL.into_iter().filter(|s| s.signs_url()) {
            let err = Plan::build(&spec(scheme, 0.0)).unwrap_err().to_string();
            assert!(err.contains("signs the public URL"), "{scheme}: {err}");
        }
    }

    #[test]
    fn unique_plan_sends_each_delivery_once_round_robin_over_tenants() {
        let plan = Plan::build(&spec(Scheme::Standard, 0.0)).unwrap();
        assert_eq!(plan.seed_len, 0);
        assert_eq!(plan.pool.len(), 1000);
        assert_eq!(duplicates(&plan), 0);
        assert_eq!(plan.order, (0..1000).collect::<Vec<u32>>());
        assert_eq!(plan.pool[0].path, "/hooks/t-0");
        assert_eq!(plan.pool[4].path, "/hooks/t-1");
    }

    #[test]
    fn unordered_event_ids_are_unique_and_out_of_order() {
        let spec = PlanSpec {
            unordered_ids: true,
            ..spec(Scheme::Standard, 0.0)
        };
        let ids: Vec<String> = Plan::build(&spec)
            .unwrap()
            .pool
            .into_iter()
            .map(|d| d.event_id)
            .collect();
        let unique: std::collections::HashSet<&String> = ids.iter().collect();
        assert_eq!(unique.len(), ids.len());
        let rising = ids.windows(2).filter(|w| w[0] < w[1]).count();
        assert!(
            (300..700).contains(&rising),
            "{rising} of 999 neighbours in order"
        );
    }

    #[test]
    fn duplicates_replay_seeds_in_the_asked_ratio() {
        let plan = Plan::build(&spec(Scheme::Stripe, 0.3)).unwrap();
        assert_eq!(plan.seed_len, 10);
        let dups = duplicates(&plan);
        assert!((250..350).contains(&dups), "{dups} duplicates of 1000");
        assert_eq!(plan.pool.len(), 10 + 1000 - dups);
        let all = Plan::build(&spec(Scheme::Standard, 1.0)).unwrap();
        assert_eq!(duplicates(&all), 1000);
        assert_eq!(all.pool.len(), 10);
    }

    #[test]
    fn bad_ratio_and_patterns_are_refused() {
        let err = Plan::build(&spec(Scheme::Standard, 1.5)).unwrap_err();
        assert!(err.to_string().contains("--dup-ratio"), "{err}");
        assert_eq!(tenant_ids("acme", 1).unwrap(), ["acme"]);
        assert!(tenant_ids("acme", 2)
            .unwrap_err()
            .to_string()
            .contains("{}"));
        assert!(tenant_ids("t-{}", 0).is_err());
    }
}
