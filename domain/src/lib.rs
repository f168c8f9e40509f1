//! hookd's vocabulary free of any wire format, written by hand: signature
//! schemes, tenant ids and the prefixed ids of events, deliveries and
//! requests ([`ids`]), rate limits, secret states, alert types, a tenant's
//! `hmac` spec and the tenant defaults, each defined once here. It depends
//! on nothing but `thiserror` and `ulid` (and `serde` behind its feature), so the
//! SDK's signature code needs no gRPC crate. Parsing from outside input is a
//! `TryFrom` (or `FromStr`) with a small typed error.
#![forbid(unsafe_code)]

mod alert;
mod delivery;
mod hmac;
pub mod ids;
mod scheme;
mod tenant;

pub use alert::{AlertType, UnknownAlertType};
pub use delivery::{DeliveryEventKind, DeliveryStatus};
pub use hmac::HmacFields;
pub use scheme::{Scheme, UnknownScheme};
pub use tenant::{
    defaults, InvalidSecretState, InvalidTenantId, RateLimit, SecretState, TenantId, DEFAULT_ROUTE,
};
