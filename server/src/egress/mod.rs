//! What hookd may reach and trust on the way out: the destination address
//! policy (which addresses a destination set over the API may resolve to,
//! enforced again at connect time) and the certificate authorities that
//! destinations and collectors are trusted by.

pub(crate) mod address;
pub(crate) mod trust;

pub use address::AddressPolicy;
pub use trust::load_ca_file;
