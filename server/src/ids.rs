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

/// A tenant: `[a-z0-9_-]{1,64}`, chosen by the operator; built only through
/// its validating `TryFrom`.
pub use hookd_proto::domain::TenantId;

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

    /// Stored records written before `TenantId` validated still load: the
    /// id is the same plain JSON string it always was.
    #[test]
    fn tenant_ids_keep_their_stored_form() {
        let id: TenantId = serde_json::from_str("\"acme-eu_1\"").unwrap();
        assert_eq!(serde_json::to_string(&id).unwrap(), "\"acme-eu_1\"");
        assert!(serde_json::from_str::<TenantId>("\"Acme\"").is_err());
    }
}
