//! Typed, prefixed identifiers so a tenant id is never mistaken for an event id.

use std::fmt;

use serde::{Deserialize, Serialize};

macro_rules! string_id {
    ($(#[$doc:meta])* $name:ident) => {
        $(#[$doc])*
        #[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
        #[serde(transparent)]
        pub struct $name(String);

        impl $name {
            /// Wraps an already validated string.
            pub fn new(value: impl Into<String>) -> Self {
                $name(value.into())
            }

            /// The id as text.
            pub fn as_str(&self) -> &str {
                &self.0
            }
        }

        impl std::borrow::Borrow<str> for $name {
            fn borrow(&self) -> &str {
                &self.0
            }
        }

        impl fmt::Display for $name {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str(&self.0)
            }
        }
    };
}

string_id!(
    /// A tenant: `[a-z0-9_-]{1,64}`, chosen by the operator.
    TenantId
);
string_id!(
    /// The sender's event id, from a signed header or the body; the idempotency key.
    EventId
);
string_id!(
    /// One accepted delivery of an event: `dlv_<ulid>`, time-sortable.
    DeliveryId
);
string_id!(
    /// One HTTP request: `req_<ulid>`, echoed in `X-Request-Id` and every error body.
    RequestId
);

impl DeliveryId {
    /// A fresh, time-ordered delivery id.
    pub fn generate() -> Self {
        DeliveryId(format!("dlv_{}", ulid::Ulid::new()))
    }
}

impl RequestId {
    /// A fresh request id.
    pub fn generate() -> Self {
        RequestId(format!("req_{}", ulid::Ulid::new()))
    }
}

impl TenantId {
    /// Whether `value` is an acceptable tenant id: it becomes part of URLs and
    /// storage tree names, so it is kept to a small, unambiguous alphabet.
    pub fn is_valid(value: &str) -> bool {
        !value.is_empty()
            && value.len() <= 64
            && value
                .bytes()
                .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-' || b == b'_')
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn generated_ids_carry_their_prefix_and_differ() {
        let a = DeliveryId::generate();
        let b = DeliveryId::generate();
        assert!(a.as_str().starts_with("dlv_"));
        assert_ne!(a, b);
        assert!(RequestId::generate().as_str().starts_with("req_"));
    }

    #[test]
    fn tenant_ids_are_restricted() {
        assert!(TenantId::is_valid("acme-eu_1"));
        assert!(!TenantId::is_valid(""));
        assert!(!TenantId::is_valid("Acme"));
        assert!(!TenantId::is_valid("a/b"));
        assert!(!TenantId::is_valid(&"a".repeat(65)));
    }
}
