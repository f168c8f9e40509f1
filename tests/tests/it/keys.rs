//! Provider keys the black-box tests sign with, in the forms the providers
//! print them: one place, so every test that needs a key pair uses the same.

/// A Standard Webhooks secret (`whsec_` and base64).
pub const WHSEC: &str = "whsec_AQIDBAUGBwgJCgsMDQ4PEBESExQVFhcYGRobHB0eHyA=";

/// Discord: libsodium's secret key for the seed 01..20 (seed, then public
/// key); the tenant holds the last 64 hex digits, the public key.
pub const DISCORD_PRIVATE: &str = concat!(
    "0102030405060708090a0b0c0d0e0f101112131415161718191a1b1c1d1e1f20",
    "79b5562e8fe654f94078b112e8a98ba7901f853ae695bed7e0e3910bad049664"
);

/// SendGrid: a P-256 private key (PKCS#8) and its verification key (SPKI).
pub const SENDGRID_PRIVATE: &str = concat!(
    "MIGHAgEAMBMGByqGSM49AgEGCCqGSM49AwEHBG0wawIBAQQgAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA",
    "AAAAEAKhRANCAARg0CYP3rZNKmrDgx6x/W/gwlnCrlPlRx3Wto+pail3wZn5yyjimWrGKLzUdddqifFu90BP",
    "rIMHNuhP4V6vidPg"
);
pub const SENDGRID_PUBLIC: &str = concat!(
    "MFkwEwYHKoZIzj0CAQYIKoZIzj0DAQcDQgAEYNAmD962TSpqw4Mesf1v4MJZwq5T5Ucd1raPqWopd8GZ+cso4pl",
    "qxii81HXXaonxbvdAT6yDBzboT+Fer4nT4A=="
);
