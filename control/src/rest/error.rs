//! The one mapping from a gRPC status to a REST answer: the HTTP status of
//! each code and the JSON error body `{"code", "message", "details"}`.

use axum::{
    http::{header, HeaderValue, StatusCode},
    response::{IntoResponse, Response},
};
use serde::Serialize;
use tonic::{Code, Status};

/// The JSON body of every REST error: the gRPC code's name, the status
/// message as the gRPC caller sees it, and its details (hookd sends none
/// today; the list is there so clients need not change when it does).
#[derive(Debug, Serialize)]
pub(crate) struct ErrorBody<'a> {
    code: &'static str,
    message: &'a str,
    details: [(); 0],
}

impl<'a> ErrorBody<'a> {
    /// The body for `status`.
    pub(crate) fn of(status: &'a Status) -> Self {
        ErrorBody {
            code: name(status.code()),
            message: status.message(),
            details: [],
        }
    }
}

/// Every gRPC code in the order of their numbers, so the OpenAPI document
/// can list the names the `code` field takes.
pub(crate) const CODES: [Code; 17] = [
    Code::Ok,
    Code::Cancelled,
    Code::Unknown,
    Code::InvalidArgument,
    Code::DeadlineExceeded,
    Code::NotFound,
    Code::AlreadyExists,
    Code::PermissionDenied,
    Code::ResourceExhausted,
    Code::FailedPrecondition,
    Code::Aborted,
    Code::OutOfRange,
    Code::Unimplemented,
    Code::Internal,
    Code::Unavailable,
    Code::DataLoss,
    Code::Unauthenticated,
];

/// The HTTP status a REST caller gets for a gRPC `code`. FAILED_PRECONDITION
/// is 409 Conflict: hookd answers it when the state of the thing forbids the
/// change (a config-file tenant, the current secret), not for a failed
/// conditional header, which is what 412 means.
pub(crate) fn http_status(code: Code) -> StatusCode {
    match code {
        Code::Ok => StatusCode::OK,
        Code::InvalidArgument | Code::OutOfRange => StatusCode::BAD_REQUEST,
        Code::Unauthenticated => StatusCode::UNAUTHORIZED,
        Code::PermissionDenied => StatusCode::FORBIDDEN,
        Code::NotFound => StatusCode::NOT_FOUND,
        Code::AlreadyExists | Code::Aborted | Code::FailedPrecondition => StatusCode::CONFLICT,
        Code::ResourceExhausted => StatusCode::TOO_MANY_REQUESTS,
        Code::Cancelled => StatusCode::from_u16(499).unwrap_or(StatusCode::BAD_REQUEST),
        Code::Unknown | Code::Internal | Code::DataLoss => StatusCode::INTERNAL_SERVER_ERROR,
        Code::Unimplemented => StatusCode::NOT_IMPLEMENTED,
        Code::Unavailable => StatusCode::SERVICE_UNAVAILABLE,
        Code::DeadlineExceeded => StatusCode::GATEWAY_TIMEOUT,
    }
}

/// The wire name of a gRPC code, as the `code` field carries it.
pub(crate) fn name(code: Code) -> &'static str {
    match code {
        Code::Ok => "OK",
        Code::Cancelled => "CANCELLED",
        Code::Unknown => "UNKNOWN",
        Code::InvalidArgument => "INVALID_ARGUMENT",
        Code::DeadlineExceeded => "DEADLINE_EXCEEDED",
        Code::NotFound => "NOT_FOUND",
        Code::AlreadyExists => "ALREADY_EXISTS",
        Code::PermissionDenied => "PERMISSION_DENIED",
        Code::ResourceExhausted => "RESOURCE_EXHAUSTED",
        Code::FailedPrecondition => "FAILED_PRECONDITION",
        Code::Aborted => "ABORTED",
        Code::OutOfRange => "OUT_OF_RANGE",
        Code::Unimplemented => "UNIMPLEMENTED",
        Code::Internal => "INTERNAL",
        Code::Unavailable => "UNAVAILABLE",
        Code::DataLoss => "DATA_LOSS",
        Code::Unauthenticated => "UNAUTHENTICATED",
    }
}

/// The REST answer to a failed call.
pub(crate) fn response(status: &Status) -> Response {
    let body = serde_json::to_vec(&ErrorBody::of(status)).unwrap_or_default();
    let mut response = (http_status(status.code()), body).into_response();
    response.headers_mut().insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("application/json"),
    );
    if status.code() == Code::Unauthenticated {
        response
            .headers_mut()
            .insert(header::WWW_AUTHENTICATE, HeaderValue::from_static("Bearer"));
    }
    response
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn codes_map_to_their_http_status_and_name() {
        let cases = [
            (Code::InvalidArgument, 400, "INVALID_ARGUMENT"),
            (Code::Unauthenticated, 401, "UNAUTHENTICATED"),
            (Code::PermissionDenied, 403, "PERMISSION_DENIED"),
            (Code::NotFound, 404, "NOT_FOUND"),
            (Code::AlreadyExists, 409, "ALREADY_EXISTS"),
            (Code::FailedPrecondition, 409, "FAILED_PRECONDITION"),
            (Code::ResourceExhausted, 429, "RESOURCE_EXHAUSTED"),
            (Code::Unavailable, 503, "UNAVAILABLE"),
            (Code::Internal, 500, "INTERNAL"),
            (Code::OutOfRange, 400, "OUT_OF_RANGE"),
        ];
        for (code, http, wire) in cases {
            assert_eq!(http_status(code).as_u16(), http, "{code:?}");
            assert_eq!(name(code), wire);
        }
        for (number, code) in CODES.into_iter().enumerate() {
            assert_eq!(
                code as usize, number,
                "CODES is in the order of the numbers"
            );
        }
    }

    #[test]
    fn the_body_carries_code_message_and_details() {
        let status = Status::not_found("no tenant \"acme\"");
        let body = serde_json::to_value(ErrorBody::of(&status)).unwrap();
        assert_eq!(
            body,
            serde_json::json!({"code": "NOT_FOUND", "message": "no tenant \"acme\"", "details": []})
        );
    }
}
