//! `HmacFields`: the `[tenants.hmac]` table of `scheme = "hmac"` as written,
//! in the config file, the API and the catalog alike.

/// The `[tenants.hmac]` table as written: every field but `signature` is
/// optional, and validation (`hookd_sdk::signature::HmacSpec::new`) names the
/// first one at fault.
///
/// The SDK validates it (`hookd_sdk::signature::HmacSpec`) and verifies
/// with it; the API's `HmacSpec` message converts to and from it.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
#[cfg_attr(feature = "serde", serde(deny_unknown_fields))]
pub struct HmacFields {
    /// Where the signature is: `header:Name`, or a JSON pointer into the body
    /// (`/signature/signature`).
    pub signature: String,
    /// `hmac` (the default): the signature is an HMAC of the signed string;
    /// `token`: the header carries the shared secret itself.
    #[cfg_attr(
        feature = "serde",
        serde(default, skip_serializing_if = "Option::is_none")
    )]
    pub mode: Option<String>,
    /// `sha1`, `sha256` (the default) or `sha512`.
    #[cfg_attr(
        feature = "serde",
        serde(default, skip_serializing_if = "Option::is_none")
    )]
    pub algorithm: Option<String>,
    /// `hex` (the default, either case) or `base64`.
    #[cfg_attr(
        feature = "serde",
        serde(default, skip_serializing_if = "Option::is_none")
    )]
    pub encoding: Option<String>,
    /// Text before the signature, stripped before decoding (`sha256=`, `v0=`).
    #[cfg_attr(
        feature = "serde",
        serde(default, skip_serializing_if = "Option::is_none")
    )]
    pub prefix: Option<String>,
    /// The signed string's template; `{body}` when absent.
    #[cfg_attr(
        feature = "serde",
        serde(default, skip_serializing_if = "Option::is_none")
    )]
    pub signed: Option<String>,
    /// Where the signed timestamp is (`header:Name` or a JSON pointer); none:
    /// no tolerance window, replays are caught by the replay cache and the
    /// idempotency log alone.
    #[cfg_attr(
        feature = "serde",
        serde(default, skip_serializing_if = "Option::is_none")
    )]
    pub timestamp: Option<String>,
    /// `seconds` (the default) or `milliseconds` since the Unix epoch.
    #[cfg_attr(
        feature = "serde",
        serde(default, skip_serializing_if = "Option::is_none")
    )]
    pub timestamp_unit: Option<String>,
}
