//! The HTTP face of hookd's errors: the public codes a sender sees and the
//! answer's body (the ingest refusals' mapping onto it is `ingest/answer.rs`).

use actix_web::{http::StatusCode, HttpResponse};
use hookd_sdk::signature::VerifyError;
use serde::Serialize;
use serde_json::{json, Value};

use crate::ids::RequestId;

/// Every code an HTTP caller can see in an error body. The wire string is
/// [`ErrorCode::as_str`]; `docs/error-codes.md` documents each one and a test
/// keeps the two in step, so adding a variant means documenting it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum ErrorCode {
    /// The body is larger than the tenant's `max_body_bytes`.
    PayloadTooLarge,
    /// No tenant with that id.
    TenantNotFound,
    /// The tenant exists but is disabled.
    TenantDisabled,
    /// A signature header the tenant's scheme needs is absent.
    MissingSignature,
    /// A signature header is present but cannot be parsed.
    InvalidSignatureFormat,
    /// The signature matches none of the tenant's live secrets.
    BadSignature,
    /// The signed timestamp is older than the tolerance.
    StaleTimestamp,
    /// The signed timestamp is further ahead than the tolerance.
    FutureTimestamp,
    /// The signed timestamp is not an integer.
    InvalidTimestamp,
    /// The (authentic) body is not a JSON object.
    InvalidJson,
    /// The (authentic) body was sent as a form but is not a valid one.
    InvalidForm,
    /// A field the tenant requires is absent.
    MissingRequiredField,
    /// A field is present but has the wrong type or shape.
    InvalidField,
    /// The tenant is over its rate limit.
    RateLimited,
    /// Durable storage could not take the event; nothing was acknowledged.
    StorageUnavailable,
    /// No such route.
    RouteNotFound,
    /// The route exists but not for this method.
    MethodNotAllowed,
    /// The body ended before its declared length or could not be read.
    BodyIncomplete,
    /// The request was not read completely within `http.request_timeout_secs`.
    RequestTimeout,
    /// The request head is larger than `http.max_header_bytes`.
    HeadersTooLarge,
    /// Readiness probe: hookd cannot take deliveries right now.
    NotReady,
    /// An unexpected failure inside hookd; the event was not acknowledged.
    InternalError,
    /// The tenant is stored but could not start (a setting out of range).
    TenantUnavailable,
    /// The event id is not 1-255 bytes of visible ASCII.
    InvalidEventId,
    /// The body breaks the JSON Schema of its event type's contract.
    ContractViolation,
    /// The tenant refuses event types without a contract.
    UnknownEventType,
    /// Checking the body against its contract would take more than the
    /// check budget.
    ContractCheckTooCostly,
    /// Meta's subscription handshake presented a `hub.verify_token` that is
    /// not the tenant's.
    BadVerifyToken,
    /// A provider's handshake lacks a field its provider always sends.
    InvalidHandshake,
    /// A compressed body decodes to more than `limits.max_decompression_ratio`
    /// times its size: a decompression bomb.
    CompressionRatioTooHigh,
    /// A `Content-Encoding` hookd does not decode.
    UnsupportedContentEncoding,
    /// A compressed body is not a complete, valid stream of its coding.
    InvalidCompressedBody,
}

impl ErrorCode {
    /// Every code, in documentation order.
    pub const ALL: [ErrorCode; 32] = [
        ErrorCode::PayloadTooLarge,
        ErrorCode::TenantNotFound,
        ErrorCode::TenantDisabled,
        ErrorCode::MissingSignature,
        ErrorCode::InvalidSignatureFormat,
        ErrorCode::BadSignature,
        ErrorCode::StaleTimestamp,
        ErrorCode::FutureTimestamp,
        ErrorCode::InvalidTimestamp,
        ErrorCode::InvalidJson,
        ErrorCode::InvalidForm,
        ErrorCode::MissingRequiredField,
        ErrorCode::InvalidField,
        ErrorCode::RateLimited,
        ErrorCode::StorageUnavailable,
        ErrorCode::RouteNotFound,
        ErrorCode::MethodNotAllowed,
        ErrorCode::BodyIncomplete,
        ErrorCode::RequestTimeout,
        ErrorCode::HeadersTooLarge,
        ErrorCode::NotReady,
        ErrorCode::InternalError,
        ErrorCode::TenantUnavailable,
        ErrorCode::InvalidEventId,
        ErrorCode::ContractViolation,
        ErrorCode::UnknownEventType,
        ErrorCode::ContractCheckTooCostly,
        ErrorCode::BadVerifyToken,
        ErrorCode::InvalidHandshake,
        ErrorCode::CompressionRatioTooHigh,
        ErrorCode::UnsupportedContentEncoding,
        ErrorCode::InvalidCompressedBody,
    ];

    /// The wire `code`.
    pub fn as_str(self) -> &'static str {
        match self {
            ErrorCode::PayloadTooLarge => "PAYLOAD_TOO_LARGE",
            ErrorCode::TenantNotFound => "TENANT_NOT_FOUND",
            ErrorCode::TenantDisabled => "TENANT_DISABLED",
            ErrorCode::MissingSignature => "MISSING_SIGNATURE",
            ErrorCode::InvalidSignatureFormat => "INVALID_SIGNATURE_FORMAT",
            ErrorCode::BadSignature => "BAD_SIGNATURE",
            ErrorCode::StaleTimestamp => "STALE_TIMESTAMP",
            ErrorCode::FutureTimestamp => "FUTURE_TIMESTAMP",
            ErrorCode::InvalidTimestamp => "INVALID_TIMESTAMP",
            ErrorCode::InvalidJson => "INVALID_JSON",
            ErrorCode::InvalidForm => "INVALID_FORM",
            ErrorCode::MissingRequiredField => "MISSING_REQUIRED_FIELD",
            ErrorCode::InvalidField => "INVALID_FIELD",
            ErrorCode::RateLimited => "RATE_LIMITED",
            ErrorCode::StorageUnavailable => "STORAGE_UNAVAILABLE",
            ErrorCode::RouteNotFound => "ROUTE_NOT_FOUND",
            ErrorCode::MethodNotAllowed => "METHOD_NOT_ALLOWED",
            ErrorCode::BodyIncomplete => "BODY_INCOMPLETE",
            ErrorCode::RequestTimeout => "REQUEST_TIMEOUT",
            ErrorCode::HeadersTooLarge => "HEADERS_TOO_LARGE",
            ErrorCode::NotReady => "NOT_READY",
            ErrorCode::InternalError => "INTERNAL_ERROR",
            ErrorCode::TenantUnavailable => "TENANT_UNAVAILABLE",
            ErrorCode::InvalidEventId => "INVALID_EVENT_ID",
            ErrorCode::ContractViolation => "CONTRACT_VIOLATION",
            ErrorCode::UnknownEventType => "UNKNOWN_EVENT_TYPE",
            ErrorCode::ContractCheckTooCostly => "CONTRACT_CHECK_TOO_COSTLY",
            ErrorCode::BadVerifyToken => "BAD_VERIFY_TOKEN",
            ErrorCode::InvalidHandshake => "INVALID_HANDSHAKE",
            ErrorCode::CompressionRatioTooHigh => "COMPRESSION_RATIO_TOO_HIGH",
            ErrorCode::UnsupportedContentEncoding => "UNSUPPORTED_CONTENT_ENCODING",
            ErrorCode::InvalidCompressedBody => "INVALID_COMPRESSED_BODY",
        }
    }

    /// The HTTP status that carries this code.
    pub fn status(self) -> StatusCode {
        match self {
            ErrorCode::PayloadTooLarge | ErrorCode::CompressionRatioTooHigh => {
                StatusCode::PAYLOAD_TOO_LARGE
            }
            ErrorCode::UnsupportedContentEncoding => StatusCode::UNSUPPORTED_MEDIA_TYPE,
            ErrorCode::TenantNotFound | ErrorCode::RouteNotFound => StatusCode::NOT_FOUND,
            ErrorCode::TenantDisabled | ErrorCode::BadVerifyToken => StatusCode::FORBIDDEN,
            ErrorCode::MissingSignature
            | ErrorCode::InvalidSignatureFormat
            | ErrorCode::BadSignature
            | ErrorCode::StaleTimestamp
            | ErrorCode::FutureTimestamp
            | ErrorCode::InvalidTimestamp => StatusCode::UNAUTHORIZED,
            ErrorCode::InvalidJson
            | ErrorCode::InvalidForm
            | ErrorCode::MissingRequiredField
            | ErrorCode::InvalidField
            | ErrorCode::InvalidEventId
            | ErrorCode::InvalidHandshake
            | ErrorCode::InvalidCompressedBody
            | ErrorCode::BodyIncomplete => StatusCode::BAD_REQUEST,
            ErrorCode::ContractViolation
            | ErrorCode::UnknownEventType
            | ErrorCode::ContractCheckTooCostly => StatusCode::UNPROCESSABLE_ENTITY,
            ErrorCode::RateLimited => StatusCode::TOO_MANY_REQUESTS,
            ErrorCode::StorageUnavailable | ErrorCode::NotReady | ErrorCode::TenantUnavailable => {
                StatusCode::SERVICE_UNAVAILABLE
            }
            ErrorCode::MethodNotAllowed => StatusCode::METHOD_NOT_ALLOWED,
            ErrorCode::RequestTimeout => StatusCode::REQUEST_TIMEOUT,
            ErrorCode::HeadersTooLarge => StatusCode::REQUEST_HEADER_FIELDS_TOO_LARGE,
            ErrorCode::InternalError => StatusCode::INTERNAL_SERVER_ERROR,
        }
    }
}

/// Each verifier verdict has its own public code: a new verdict does not
/// compile until it is given one here.
impl From<&VerifyError> for ErrorCode {
    fn from(e: &VerifyError) -> ErrorCode {
        match e {
            VerifyError::MissingSignature { .. } => ErrorCode::MissingSignature,
            VerifyError::InvalidSignatureFormat { .. } => ErrorCode::InvalidSignatureFormat,
            VerifyError::InvalidTimestamp => ErrorCode::InvalidTimestamp,
            VerifyError::BadSignature => ErrorCode::BadSignature,
            VerifyError::StaleTimestamp { .. } => ErrorCode::StaleTimestamp,
            VerifyError::FutureTimestamp { .. } => ErrorCode::FutureTimestamp,
        }
    }
}

/// A rejection as the sender will see it: code, a message a person can act
/// on, and machine-readable details. Never carries secrets or body bytes.
#[derive(Debug, Clone)]
pub struct ApiError {
    /// The public code.
    pub code: ErrorCode,
    /// Plain words: why, and what to do.
    pub message: String,
    /// Structured details, always a JSON object.
    pub details: Value,
    /// Seconds the sender should wait, sent as `Retry-After`.
    pub retry_after_secs: Option<u64>,
}

impl ApiError {
    /// An error with empty details.
    pub fn new(code: ErrorCode, message: impl Into<String>) -> Self {
        ApiError {
            code,
            message: message.into(),
            details: json!({}),
            retry_after_secs: None,
        }
    }

    /// Adds one detail field.
    pub fn detail(mut self, key: &str, value: impl Into<Value>) -> Self {
        if let Value::Object(map) = &mut self.details {
            map.insert(key.to_owned(), value.into());
        }
        self
    }

    /// Asks the sender to wait before retrying.
    pub fn retry_after(mut self, secs: u64) -> Self {
        self.retry_after_secs = Some(secs);
        self
    }

    /// The HTTP answer: `{"code","message","details","request_id"}`.
    pub fn to_response(&self, request_id: &RequestId) -> HttpResponse {
        #[derive(Serialize)]
        struct Body<'a> {
            code: &'static str,
            message: &'a str,
            details: &'a Value,
            request_id: &'a str,
        }
        let mut builder = HttpResponse::build(self.code.status());
        if let Some(secs) = self.retry_after_secs {
            builder.insert_header(("Retry-After", secs.to_string()));
        }
        builder.json(Body {
            code: self.code.as_str(),
            message: &self.message,
            details: &self.details,
            request_id: request_id.as_str(),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const DOC: &str = include_str!("../../../docs/error-codes.md");

    /// `docs/error-codes.md` lists exactly the codes of [`ErrorCode`], each
    /// with its real status.
    #[test]
    fn error_code_doc_matches_the_enum() {
        let documented: Vec<(&str, &str)> = DOC
            .split("\n## `")
            .skip(1)
            .map(|section| {
                let code = section.split('`').next().unwrap();
                let status = section
                    .split("Status: ")
                    .nth(1)
                    .unwrap_or_else(|| panic!("{code}: no Status line"))
                    .get(..3)
                    .unwrap();
                (code, status)
            })
            .collect();
        let expected: Vec<(&str, String)> = ErrorCode::ALL
            .iter()
            .map(|c| (c.as_str(), c.status().as_u16().to_string()))
            .collect();
        assert_eq!(documented.len(), expected.len(), "{documented:?}");
        for ((doc_code, doc_status), (code, status)) in documented.iter().zip(&expected) {
            assert_eq!((doc_code, doc_status), (code, &status.as_str()));
        }
    }

    #[test]
    fn verifier_codes_map_onto_public_codes() {
        let verdicts = [
            VerifyError::MissingSignature {
                header: "webhook-signature",
            },
            VerifyError::InvalidSignatureFormat { reason: "no v1" },
            VerifyError::BadSignature,
            VerifyError::StaleTimestamp { age_secs: 400 },
            VerifyError::FutureTimestamp { ahead_secs: 400 },
            VerifyError::InvalidTimestamp,
        ];
        for verdict in verdicts {
            assert_eq!(ErrorCode::from(&verdict).as_str(), verdict.code());
        }
    }
}
