//! `Debug` for the requests that may carry a provider's secret, showing only
//! whether the secret was given.

use std::fmt;

use crate::v1::{AlertSink, CreateTenantRequest, RotateSecretRequest, SetAlertSettingsResponse};

/// What a secret field shows.
///
/// The `Debug` of a request that may carry a provider's secret shows every
/// field but the secret, which shows only whether it was given, so a request
/// printed in a log or a panic never holds it.
fn given(secret: &str) -> &'static str {
    match secret.is_empty() {
        true => "",
        false => "<redacted>",
    }
}

impl fmt::Debug for CreateTenantRequest {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("CreateTenantRequest")
            .field("tenant_id", &self.tenant_id)
            .field("scheme", &self.scheme)
            .field("tolerance_secs", &self.tolerance_secs)
            .field("destination_url", &self.destination_url)
            .field("max_body_bytes", &self.max_body_bytes)
            .field("required_fields", &self.required_fields)
            .field("event_id_field", &self.event_id_field)
            .field("max_in_flight", &self.max_in_flight)
            .field("rate_limit_per_sec", &self.rate_limit_per_sec)
            .field("rate_limit_burst", &self.rate_limit_burst)
            .field("public_url", &self.public_url)
            .field("secret", &given(&self.secret))
            .finish()
    }
}

impl fmt::Debug for RotateSecretRequest {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("RotateSecretRequest")
            .field("tenant_id", &self.tenant_id)
            .field("overlap_secs", &self.overlap_secs)
            .field("secret", &given(&self.secret))
            .finish()
    }
}

impl fmt::Debug for AlertSink {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("AlertSink")
            .field("url", &self.url)
            .field("format", &self.format)
            .field("secret", &given(&self.secret))
            .field("has_secret", &self.has_secret)
            .finish()
    }
}

impl fmt::Debug for SetAlertSettingsResponse {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("SetAlertSettingsResponse")
            .field("settings", &self.settings)
            .field("generated_secret", &given(&self.generated_secret))
            .finish()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_provided_secret_never_shows_in_debug_output() {
        let create = CreateTenantRequest {
            tenant_id: "acme".into(),
            secret: "pdl_ntfset_very_secret".into(),
            ..Default::default()
        };
        let rotate = RotateSecretRequest {
            tenant_id: "acme".into(),
            secret: "pdl_ntfset_very_secret".into(),
            ..Default::default()
        };
        for text in [format!("{create:?}"), format!("{rotate:?}")] {
            assert!(!text.contains("very_secret"), "{text}");
            assert!(
                text.contains("acme") && text.contains("<redacted>"),
                "{text}"
            );
        }
    }

    #[test]
    fn an_alert_sink_secret_never_shows_in_debug_output() {
        let sink = AlertSink {
            url: "https://ops.example/alerts".into(),
            secret: "whsec_very_secret".into(),
            ..Default::default()
        };
        let answer = SetAlertSettingsResponse {
            generated_secret: "whsec_very_secret".into(),
            ..Default::default()
        };
        for text in [format!("{sink:?}"), format!("{answer:?}")] {
            assert!(!text.contains("very_secret"), "{text}");
            assert!(text.contains("<redacted>"), "{text}");
        }
    }
}
