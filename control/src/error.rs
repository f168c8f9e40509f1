//! The control plane's one error type and its one mapping to `tonic::Status`.

use tonic::Status;

/// Why a control-plane call failed. The backend returns these; the services
/// add their own for authentication and request validation. Each variant is
/// one gRPC code, and its message is shown to the caller as is, so it must
/// say what to fix and never carry a secret — except [`Error::Internal`],
/// whose detail is only logged.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// The tenant, delivery, secret or token named does not exist.
    #[error("not found: {0}")]
    NotFound(String),
    /// The request itself is wrong; the message names the field.
    #[error("invalid argument: {0}")]
    InvalidArgument(String),
    /// The thing to create already exists (a taken tenant id).
    #[error("already exists: {0}")]
    AlreadyExists(String),
    /// The request is well formed but the current state forbids it (a
    /// config-file tenant, the current secret, a pending delivery).
    #[error("failed precondition: {0}")]
    FailedPrecondition(String),
    /// Nothing was changed and a retry may succeed (storage could not make
    /// the change durable, a watcher fell behind, hookd is stopping).
    #[error("unavailable: {0}")]
    Unavailable(String),
    /// No valid bearer token came with the call.
    #[error("unauthenticated: {0}")]
    Unauthenticated(String),
    /// The caller already holds as many of something as it may (watch
    /// streams of one token); close one first.
    #[error("resource exhausted: {0}")]
    ResourceExhausted(String),
    /// The caller's token does not cover what it asked for.
    #[error("permission denied: {0}")]
    PermissionDenied(String),
    /// A bug or a broken invariant; the detail goes to the log, the caller
    /// sees only "internal error".
    #[error("internal: {0}")]
    Internal(String),
}

/// Results of the control plane and its backend.
pub type Result<T, E = Error> = std::result::Result<T, E>;

impl From<Error> for Status {
    fn from(error: Error) -> Status {
        match error {
            Error::NotFound(message) => Status::not_found(message),
            Error::InvalidArgument(message) => Status::invalid_argument(message),
            Error::AlreadyExists(message) => Status::already_exists(message),
            Error::FailedPrecondition(message) => Status::failed_precondition(message),
            Error::Unavailable(message) => Status::unavailable(message),
            Error::Unauthenticated(message) => Status::unauthenticated(message),
            Error::PermissionDenied(message) => Status::permission_denied(message),
            Error::ResourceExhausted(message) => Status::resource_exhausted(message),
            Error::Internal(detail) => {
                tracing::error!(%detail, "control-plane call failed");
                Status::internal("internal error")
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use tonic::Code;

    use super::*;

    #[test]
    fn each_variant_keeps_its_code_and_message() {
        let cases = [
            (Error::NotFound("no tenant \"a\"".into()), Code::NotFound),
            (Error::InvalidArgument("x".into()), Code::InvalidArgument),
            (Error::AlreadyExists("x".into()), Code::AlreadyExists),
            (
                Error::FailedPrecondition("x".into()),
                Code::FailedPrecondition,
            ),
            (Error::Unavailable("x".into()), Code::Unavailable),
            (Error::Unauthenticated("x".into()), Code::Unauthenticated),
            (Error::PermissionDenied("x".into()), Code::PermissionDenied),
            (
                Error::ResourceExhausted("x".into()),
                Code::ResourceExhausted,
            ),
        ];
        for (error, code) in cases {
            let message = match &error {
                Error::NotFound(m)
                | Error::InvalidArgument(m)
                | Error::AlreadyExists(m)
                | Error::FailedPrecondition(m)
                | Error::Unavailable(m)
                | Error::Unauthenticated(m)
                | Error::PermissionDenied(m)
                | Error::ResourceExhausted(m)
                | Error::Internal(m) => m.clone(),
            };
            let status = Status::from(error);
            assert_eq!(status.code(), code);
            assert_eq!(status.message(), message);
        }
    }

    #[test]
    fn internal_detail_is_not_shown_to_the_caller() {
        let status = Status::from(Error::Internal("sled tree t/acme/idem corrupt".into()));
        assert_eq!(status.code(), Code::Internal);
        assert_eq!(status.message(), "internal error");
    }
}
