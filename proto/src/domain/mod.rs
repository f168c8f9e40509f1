//! hookd's shared vocabulary, written by hand: `hookd-domain`'s re-exported, and
//! the delivery statuses, event kinds and `hmac` wire form that mirror `hookd.v1`.

mod delivery;
mod hmac;

pub use delivery::{DeliveryEventKind, DeliveryStatus, InvalidDeliveryStatus};
pub use hookd_domain::{
    defaults, AlertType, HmacFields, InvalidSecretState, InvalidTenantId, RateLimit, Scheme,
    SecretState, TenantId, UnknownAlertType, UnknownScheme, DEFAULT_ROUTE,
};
