//! hookd's shared vocabulary, written by hand: the words the SDK, the control
//! plane and the server all use. Those free of the wire (signature schemes,
//! tenant ids, rate limits, secret states, alert types, the `hmac` spec and
//! the tenant defaults) are `hookd-domain`'s, re-exported here; delivery
//! statuses and event kinds, which mirror `hookd.v1` enums, and the wire
//! form of the `hmac` spec are defined here. Parsing from outside input is a
//! `TryFrom` (or `FromStr`) with a small typed error.

mod delivery;
mod hmac;

pub use delivery::{DeliveryEventKind, DeliveryStatus, InvalidDeliveryStatus};
pub use hookd_domain::{
    defaults, AlertType, HmacFields, InvalidSecretState, InvalidTenantId, RateLimit, Scheme,
    SecretState, TenantId, UnknownAlertType, UnknownScheme, DEFAULT_ROUTE,
};
