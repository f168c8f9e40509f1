//! The one exhaustive mapping of the ingest path's refusals onto the
//! sender's answer.

use hookd_sdk::signature::VerifyError;
use serde_json::json;

use super::{BodyError, IngestError};
use crate::error::{ApiError, ErrorCode};

/// The one mapping of the ingest path's refusals onto the sender's answer.
/// The match is exhaustive: a new [`IngestError`] does not compile until it
/// has a code here. Messages say what to check without revealing which part
/// of a signature differed.
impl From<&IngestError> for ApiError {
    fn from(e: &IngestError) -> ApiError {
        let message = e.to_string();
        match e {
            IngestError::Verify {
                error,
                tolerance_secs,
            } => verify_refusal(error, *tolerance_secs, message),
            IngestError::Body(body) => body_refusal(body, message),
            IngestError::RateLimited { retry_after_secs } => {
                ApiError::new(ErrorCode::RateLimited, message)
                    .detail("retry_after_secs", *retry_after_secs)
                    .retry_after(*retry_after_secs)
            }
            IngestError::StorageUnavailable => {
                ApiError::new(ErrorCode::StorageUnavailable, message).retry_after(5)
            }
            IngestError::TenantDeleted(tenant) => ApiError::new(ErrorCode::TenantNotFound, message)
                .detail("tenant_id", tenant.as_str()),
            IngestError::ChecksPanicked => {
                ApiError::new(ErrorCode::InternalError, message).retry_after(1)
            }
        }
    }
}

/// A signature that did not verify, with what the sender can check.
fn verify_refusal(error: &VerifyError, tolerance_secs: u64, message: String) -> ApiError {
    let err = ApiError::new(ErrorCode::from(error), message);
    match error {
        VerifyError::MissingSignature { header } => err.detail("header", *header),
        VerifyError::StaleTimestamp { age_secs } => err
            .detail("age_secs", *age_secs)
            .detail("tolerance_secs", tolerance_secs),
        VerifyError::FutureTimestamp { ahead_secs } => err
            .detail("ahead_secs", *ahead_secs)
            .detail("tolerance_secs", tolerance_secs),
        VerifyError::InvalidSignatureFormat { .. }
        | VerifyError::InvalidTimestamp
        | VerifyError::BadSignature => err,
    }
}

/// A signed body whose content was refused, naming what was wrong.
fn body_refusal(body: &BodyError, message: String) -> ApiError {
    match body {
        BodyError::NotAnObject | BodyError::NotJson(_) => {
            ApiError::new(ErrorCode::InvalidJson, message)
        }
        BodyError::InvalidForm(_) => ApiError::new(ErrorCode::InvalidForm, message),
        BodyError::MissingField(field) => ApiError::new(ErrorCode::MissingRequiredField, message)
            .detail("field", field.as_str()),
        BodyError::InvalidField { field, expected } => {
            ApiError::new(ErrorCode::InvalidField, message)
                .detail("field", field.as_str())
                .detail("expected", *expected)
        }
        BodyError::ContractViolation {
            event_type,
            version,
            violations,
            total,
        } => ApiError::new(ErrorCode::ContractViolation, message)
            .detail("event_type", event_type.as_str())
            .detail("version", version.as_deref())
            .detail(
                "violations",
                violations
                    .iter()
                    .map(|v| json!({"pointer": v.pointer, "keyword": v.keyword, "expected": v.expected}))
                    .collect::<Vec<_>>(),
            )
            .detail("violations_total", *total),
        BodyError::UnknownEventType {
            field,
            event_type,
            version,
        } => ApiError::new(ErrorCode::UnknownEventType, message)
            .detail("field", field.as_str())
            .detail("event_type", event_type.as_deref())
            .detail("version", version.as_deref()),
        BodyError::ContractCheckTooCostly {
            event_type,
            version,
            max_steps,
        } => ApiError::new(ErrorCode::ContractCheckTooCostly, message)
            .detail("event_type", event_type.as_str())
            .detail("version", version.as_deref())
            .detail("max_steps", *max_steps),
        BodyError::InvalidEventId { field, max_bytes } => {
            ApiError::new(ErrorCode::InvalidEventId, message)
                .detail("field", field.as_str())
                .detail("max_bytes", *max_bytes)
        }
    }
}

impl From<IngestError> for ApiError {
    fn from(e: IngestError) -> ApiError {
        ApiError::from(&e)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The sender's answer to each refusal, as hookd has always sent it.
    #[test]
    fn ingest_errors_keep_their_answers() {
        let answer = |e: IngestError| {
            let api = ApiError::from(e);
            (api.code, api.message, api.details, api.retry_after_secs)
        };
        let stale = IngestError::Verify {
            error: VerifyError::StaleTimestamp { age_secs: 400 },
            tolerance_secs: 300,
        };
        assert_eq!(
            answer(stale),
            (
                ErrorCode::StaleTimestamp,
                "timestamp too old (400 s old)".to_owned(),
                json!({"age_secs": 400, "tolerance_secs": 300}),
                None
            )
        );
        let missing = IngestError::Verify {
            error: VerifyError::MissingSignature {
                header: "webhook-signature",
            },
            tolerance_secs: 300,
        };
        assert_eq!(answer(missing).2, json!({"header": "webhook-signature"}));
        assert_eq!(
            answer(BodyError::NotAnObject.into()),
            (
                ErrorCode::InvalidJson,
                "body must be a JSON object".to_owned(),
                json!({}),
                None
            )
        );
        let invalid = BodyError::InvalidField {
            field: "type".into(),
            expected: "a non-empty string",
        };
        assert_eq!(
            answer(invalid.into()),
            (
                ErrorCode::InvalidField,
                "field \"type\" must be a non-empty string".to_owned(),
                json!({"field": "type", "expected": "a non-empty string"}),
                None
            )
        );
        assert_eq!(
            answer(IngestError::RateLimited {
                retry_after_secs: 2
            }),
            (
                ErrorCode::RateLimited,
                "tenant is over its rate limit; retry in 2 s".to_owned(),
                json!({"retry_after_secs": 2}),
                Some(2)
            )
        );
        assert_eq!(
            answer(IngestError::StorageUnavailable).3,
            Some(5),
            "storage refusals ask for a retry"
        );
        assert_eq!(
            answer(IngestError::ChecksPanicked),
            (
                ErrorCode::InternalError,
                "hookd failed while handling this delivery; it was not accepted, retry later"
                    .to_owned(),
                json!({}),
                Some(1)
            )
        );
    }
}
