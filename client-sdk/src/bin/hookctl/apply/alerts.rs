//! A tenant's alert settings as apply compares them (AlertService): its own
//! sink and its rule overrides.

use std::collections::{BTreeMap, BTreeSet};

use hookd_proto::domain::AlertType;
use serde_json::{json, Map, Value};

use super::{field::Field, secret::SecretRef};

/// The sink's formats, as the file names them.
pub const FORMATS: [&str; 2] = ["standard", "slack"];

/// A tenant's own alert sink (never its secret).
#[derive(Debug, Clone, PartialEq)]
pub struct Sink {
    /// Absolute http(s) URL.
    pub url: String,
    /// One of [`FORMATS`].
    pub format: String,
}

/// One alert type's rule; a key left `None` runs with the operator's
/// default (and is not compared).
#[derive(Debug, Clone, PartialEq)]
pub struct Rule {
    /// `false`: the type never opens for the tenant.
    pub enabled: bool,
    /// Occurrences (or a depth, or seconds) that open it.
    pub threshold: Option<u64>,
    /// The counting window and debounce.
    pub window_secs: Option<f64>,
    /// `route.failing` only: `consecutive`, `first_failure` or `last_attempt`.
    pub mode: Option<String>,
}

impl Rule {
    /// This rule's values for the keys `keys` sets (`enabled` always), as
    /// diff shows them.
    pub fn json_for(&self, keys: &Rule) -> Value {
        let mut map = Map::new();
        map.insert("enabled".into(), json!(self.enabled));
        if keys.threshold.is_some() {
            map.insert("threshold".into(), json!(self.threshold));
        }
        if keys.window_secs.is_some() {
            map.insert("window_secs".into(), json!(self.window_secs));
        }
        if keys.mode.is_some() {
            map.insert("mode".into(), json!(self.mode));
        }
        Value::Object(map)
    }
}

/// The alert settings the file wants for a tenant.
///
/// A tenant's alert settings as apply compares them (AlertService): its own
/// sink and its rule overrides. GetAlertSettings answers every alert type
/// with the operator's defaults filled in and says which types the tenant
/// overrides; a rule the file names compares the keys the file sets, an
/// override the file does not name shows as going back to the default, and
/// the file's rules are sent whole, as the tenant's complete override list.
#[derive(Debug, Clone, Default)]
pub struct DesiredAlerts {
    /// `None`: no sink of the tenant's own (the operator's only).
    pub sink: Option<Sink>,
    /// The sink's secret, sent when the sink is created (or
    /// `--rotate-secrets`); `None`: hookd keeps the sink's or generates one.
    pub sink_secret: Option<SecretRef>,
    /// The tenant's overrides, by type; every other type runs with the
    /// operator's default.
    pub rules: BTreeMap<AlertType, Rule>,
}

/// A tenant's alert settings as GetAlertSettings answers them.
#[derive(Debug, Clone, Default)]
pub struct CurrentAlerts {
    /// Its own sink.
    pub sink: Option<Sink>,
    /// Whether the sink holds a secret (hookd never shows it).
    pub sink_has_secret: bool,
    /// Every type's rule in force, every key set.
    pub rules: BTreeMap<AlertType, Rule>,
    /// The types the tenant overrides (the others run with the operator's
    /// defaults).
    pub overridden: BTreeSet<AlertType>,
}

/// The sink's fields, in the order diff prints them (`null`: no sink).
pub fn sink_fields(sink: Option<&Sink>) -> Vec<Field> {
    vec![
        ("sink.url", json!(sink.map(|s| &s.url))),
        ("sink.format", json!(sink.map(|s| &s.format))),
    ]
}

/// Each rule the file names as a field named after its type: what `have`
/// runs with for the keys the file sets, and what the file sets; then each
/// type `have` overrides and the file does not name, going back to the
/// operator's default (`null`).
pub fn rule_fields(want: &DesiredAlerts, have: Option<&CurrentAlerts>) -> Vec<(Field, Field)> {
    let named = want.rules.iter().map(|(kind, rule)| {
        let old = have
            .and_then(|h| h.rules.get(kind))
            .map_or(Value::Null, |r| r.json_for(rule));
        ((kind.as_str(), old), (kind.as_str(), rule.json_for(rule)))
    });
    let dropped = have.into_iter().flat_map(|h| {
        h.overridden
            .iter()
            .filter(|kind| !want.rules.contains_key(kind))
            .filter_map(|kind| {
                let rule = h.rules.get(kind)?;
                let old = rule.json_for(rule);
                Some(((kind.as_str(), old), (kind.as_str(), Value::Null)))
            })
    });
    named.chain(dropped).collect()
}
