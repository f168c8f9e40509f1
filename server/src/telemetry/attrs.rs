//! The names of hookd's own span attributes, each under its `hookd.` name and
//! for one release under its old one.

use opentelemetry::{KeyValue, Value};

/// An attribute of hookd's own: its namespaced name and its old alias.
///
/// The names of hookd's own span attributes. Each is set under its
/// `hookd.` name and, for one release, under the name it had before the
/// namespace (`tenant`, `event_id`, ...), so queries and dashboards built on
/// the old names keep working; docs/observability.md lists both.
#[derive(Debug, Clone, Copy)]
pub struct HookdAttr {
    /// The `hookd.`-namespaced name.
    pub name: &'static str,
    /// The name it had before; set as well until the aliases are removed.
    pub alias: &'static str,
}

impl HookdAttr {
    /// The attribute under both names.
    pub fn kv(self, value: impl Into<Value>) -> [KeyValue; 2] {
        let value = value.into();
        [
            KeyValue::new(self.name, value.clone()),
            KeyValue::new(self.alias, value),
        ]
    }
}

macro_rules! hookd_attrs {
    ($($(#[$doc:meta])* $const:ident = $alias:literal;)*) => {
        $(
            $(#[$doc])*
            pub const $const: HookdAttr = HookdAttr {
                name: concat!("hookd.", $alias),
                alias: $alias,
            };
        )*
        /// Every attribute of hookd's own.
        #[cfg(test)]
        pub const ALL: &[HookdAttr] = &[$($const),*];
    };
}

hookd_attrs! {
    /// The tenant id (from the path, possibly unknown).
    TENANT = "tenant";
    /// The event id.
    EVENT_ID = "event_id";
    /// The delivery id.
    DELIVERY_ID = "delivery_id";
    /// The id of the request that delivered the event.
    REQUEST_ID = "request_id";
    /// The forward attempt's number, from 1.
    ATTEMPT = "attempt";
    /// The tenant's signature scheme.
    SCHEME = "scheme";
    /// `verified`, `failed` or `not_checked`.
    VERIFICATION = "verification";
    /// Whether the delivery was a copy of an accepted event.
    DUPLICATE = "duplicate";
    /// What followed a forward attempt: `delivered`, `retry`, `dead`,
    /// `dropped` or `transform_failed`.
    OUTCOME = "outcome";
    /// How long a forward attempt took, in milliseconds.
    DURATION_MS = "duration_ms";
}

/// The route of a forward attempt (`default` for the tenant's own
/// destination); new with routes, so it has no alias.
pub const ROUTE: &str = "hookd.route";

/// hookd's error code (docs/error-codes.md) of a refused request; its
/// alias is `error.code`.
pub const ERROR_CODE: HookdAttr = HookdAttr {
    name: "hookd.error_code",
    alias: "error.code",
};

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_attribute_is_namespaced_and_keeps_its_alias() {
        for attr in ALL.iter().chain([&ERROR_CODE]) {
            assert!(attr.name.starts_with("hookd."), "{}", attr.name);
            assert!(!attr.alias.starts_with("hookd."), "{}", attr.alias);
        }
        let [named, alias] = TENANT.kv("acme");
        assert_eq!(
            (named.key.as_str(), alias.key.as_str()),
            ("hookd.tenant", "tenant")
        );
        assert_eq!(named.value, alias.value);
    }
}
