//! hookd's shared vocabulary, written by hand: the words the SDK, the control
//! plane and the server all use (signature schemes, tenant ids, delivery
//! statuses and event kinds, rate limits, secret states and the tenant defaults), each defined once here. Parsing
//! from outside input is a `TryFrom` (or `FromStr`) with a small typed error.

mod alert;
mod delivery;
mod hmac;
mod scheme;
mod tenant;

pub use alert::{AlertType, UnknownAlertType};
pub use delivery::{DeliveryEventKind, DeliveryStatus, InvalidDeliveryStatus};
pub use hmac::HmacFields;
pub use scheme::{Scheme, UnknownScheme};
pub use tenant::{
    defaults, InvalidSecretState, InvalidTenantId, RateLimit, SecretState, TenantId, DEFAULT_ROUTE,
};
