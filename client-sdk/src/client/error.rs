//! `ClientError`: why a control-plane call failed, reduced to one gRPC code that
//! scripts can branch on.

use tonic::{Code, Status};

/// A failed connection or call. Transport failures report [`Code::Unavailable`] so that
/// "hookd is down" and "hookd said UNAVAILABLE" are handled alike.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ClientError {
    /// The endpoint is not a URI tonic can connect to.
    #[error("invalid endpoint {endpoint:?}")]
    InvalidEndpoint {
        /// The endpoint as given.
        endpoint: String,
        /// Why tonic refused it.
        #[source]
        source: tonic::transport::Error,
    },
    /// Nothing answered at the endpoint (refused, unresolvable, timed out).
    #[error("cannot connect to {endpoint}")]
    Connect {
        /// The endpoint as given.
        endpoint: String,
        /// The transport failure; its sources say refused, timeout, DNS, ...
        #[source]
        source: tonic::transport::Error,
    },
    /// The TLS settings cannot be used: an unreadable file, a certificate without
    /// its key, PEM that does not parse, or TLS asked for on an `http://` endpoint.
    #[error("TLS: {0}")]
    Tls(String),
    /// The token holds characters an HTTP header cannot carry (e.g. a newline).
    #[error("the token cannot be sent in a header: it must be visible ASCII")]
    InvalidToken,
    /// hookd (or the channel, once connected) answered the call with a status.
    #[error("{}", describe(.0))]
    Status(Box<Status>),
}

impl ClientError {
    /// The gRPC code this failure amounts to; what a script should branch on.
    pub fn code(&self) -> Code {
        match self {
            ClientError::InvalidEndpoint { .. }
            | ClientError::InvalidToken
            | ClientError::Tls(_) => Code::InvalidArgument,
            ClientError::Connect { .. } => Code::Unavailable,
            ClientError::Status(status) if is_transport(status) => Code::Unavailable,
            ClientError::Status(status) => status.code(),
        }
    }

    /// The status hookd answered with, for its metadata or details; `None` when the
    /// call never reached hookd.
    pub fn status(&self) -> Option<&Status> {
        match self {
            ClientError::Status(status) => Some(status),
            _ => None,
        }
    }
}

impl From<Status> for ClientError {
    fn from(status: Status) -> ClientError {
        ClientError::Status(Box::new(status))
    }
}

/// A status the channel made up because the connection failed (e.g. hookd closed it
/// after refusing the client's TLS certificate) rather than one hookd answered.
fn is_transport(status: &Status) -> bool {
    std::error::Error::source(status).is_some_and(|source| source.is::<tonic::transport::Error>())
}

/// `NOT_FOUND: tenant "acme" not found`: the code as the proto comments spell it, then
/// hookd's message, which names the offending field or id.
fn describe(status: &Status) -> String {
    let name = code_name(status.code());
    match status.message() {
        "" => name.to_owned(),
        message => format!("{name}: {message}"),
    }
}

fn code_name(code: Code) -> &'static str {
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_status_keeps_its_code_and_reads_like_the_proto_docs() {
        let err = ClientError::from(Status::not_found("tenant \"acme\" not found"));
        assert_eq!(err.code(), Code::NotFound);
        assert_eq!(err.to_string(), "NOT_FOUND: tenant \"acme\" not found");
        assert!(err.status().is_some());

        let bare = ClientError::from(Status::new(Code::PermissionDenied, ""));
        assert_eq!(bare.to_string(), "PERMISSION_DENIED");
    }

    #[test]
    fn failures_before_any_call_map_to_codes_too() {
        assert_eq!(ClientError::InvalidToken.code(), Code::InvalidArgument);
        assert!(ClientError::InvalidToken.status().is_none());
    }
}
