//! What hookd may reach and trust on the way out: the destination address
//! policy and the certificate authorities destinations and collectors trust.

pub(crate) mod address;
pub(crate) mod trust;

pub use address::AddressPolicy;
pub use trust::load_ca_file;
