//! hookctl's exit codes, the one place a failure becomes a number scripts can trust.

use std::io;

use hookd_sdk::client::{ClientError, Code};

/// The exit-code table, shown under `hookctl --help`.
pub const HELP: &str = "\
Exit codes:
  0  success
  1  any other failure
  2  usage error (unknown command, bad or missing flags)
  3  not found (NOT_FOUND; send: HTTP 404)
  4  not allowed (UNAUTHENTICATED, PERMISSION_DENIED, no token given; send: HTTP 401, 403)
  5  request refused (INVALID_ARGUMENT, FAILED_PRECONDITION, ALREADY_EXISTS;
     send: HTTP 400, 409, 413, 415, 422)
  6  hookd unreachable (UNAVAILABLE, connection failure; send: HTTP 502, 503, 504)
  7  retry later: rate limited (send: HTTP 429; wait for its Retry-After)
diff: 0 when hookd matches the file, 2 when apply would change something.";

/// Any failure not listed below.
pub const FAILURE: u8 = 1;
/// `diff`: apply would change something (the plan was printed).
pub const CHANGES: u8 = 2;
/// The resource named does not exist.
pub const NOT_FOUND: u8 = 3;
/// The token is missing, wrong, revoked or not allowed to do this.
pub const NOT_ALLOWED: u8 = 4;
/// hookd understood the request and refused it; retrying the same request will not help.
pub const REFUSED: u8 = 5;
/// hookd could not be reached or could not act now; retrying later may help.
pub const UNREACHABLE: u8 = 6;
/// hookd is up but asks the sender to slow down; the same request will be
/// accepted later.
pub const RETRY_LATER: u8 = 7;

/// What `hookctl` failed on besides a gRPC call, so the exit code can say which.
#[derive(Debug, thiserror::Error)]
pub enum CliError {
    /// A control-plane command ran without any token to authenticate with.
    #[error("no token: pass --token or set HOOKCTL_TOKEN or HOOKD_ADMIN_TOKEN")]
    MissingToken,
    /// `send` got an answer other than 2xx; the answer was already printed.
    #[error("the webhook was not accepted (HTTP {0})")]
    Rejected(u16),
    /// `contracts validate`: ingest would refuse the payload with this code.
    #[error("the payload would be refused: {0}")]
    ContractBroken(String),
    /// `diff`: this many resources differ from the file; the plan was printed.
    #[error("{0} resources would change")]
    Changes(usize),
}

/// The exit code of a failed gRPC call or connection.
pub fn for_code(code: Code) -> u8 {
    match code {
        Code::NotFound => NOT_FOUND,
        Code::Unauthenticated | Code::PermissionDenied => NOT_ALLOWED,
        Code::InvalidArgument | Code::FailedPrecondition | Code::AlreadyExists => REFUSED,
        Code::Unavailable => UNREACHABLE,
        _ => FAILURE,
    }
}

/// The exit code of a non-2xx answer to `send`, in the same categories as gRPC codes.
pub fn for_http(status: u16) -> u8 {
    match status {
        404 => NOT_FOUND,
        401 | 403 => NOT_ALLOWED,
        400 | 409 | 413 | 415 | 422 => REFUSED,
        502..=504 => UNREACHABLE,
        429 => RETRY_LATER,
        _ => FAILURE,
    }
}

/// The exit code for a failure, judged by the most specific cause in its chain.
pub fn for_error(err: &anyhow::Error) -> u8 {
    err.chain()
        .find_map(|cause| {
            if let Some(client) = cause.downcast_ref::<ClientError>() {
                Some(for_code(client.code()))
            } else if let Some(cli) = cause.downcast_ref::<CliError>() {
                Some(match cli {
                    CliError::MissingToken => NOT_ALLOWED,
                    CliError::Rejected(status) => for_http(*status),
                    CliError::ContractBroken(_) => REFUSED,
                    CliError::Changes(_) => CHANGES,
                })
            } else {
                cause
                    .downcast_ref::<reqwest::Error>()
                    .filter(|http| http.is_connect() || http.is_timeout())
                    .map(|_| UNREACHABLE)
            }
        })
        .unwrap_or(FAILURE)
}

/// `diff` found changes: its exit code says so, and the plan is already printed.
pub fn is_changes(err: &anyhow::Error) -> bool {
    matches!(err.downcast_ref::<CliError>(), Some(CliError::Changes(_)))
}

/// A closed stdout (`hookctl tail | head`) is the reader's choice, not a failure.
pub fn is_broken_pipe(err: &anyhow::Error) -> bool {
    err.chain().any(|cause| {
        cause
            .downcast_ref::<io::Error>()
            .is_some_and(|io| io.kind() == io::ErrorKind::BrokenPipe)
    })
}

#[cfg(test)]
mod tests {
    use tonic::Status;

    use super::*;

    #[test]
    fn grpc_codes_map_to_the_documented_exit_codes() {
        assert_eq!(for_code(Code::NotFound), 3);
        assert_eq!(for_code(Code::Unauthenticated), 4);
        assert_eq!(for_code(Code::PermissionDenied), 4);
        assert_eq!(for_code(Code::InvalidArgument), 5);
        assert_eq!(for_code(Code::FailedPrecondition), 5);
        assert_eq!(for_code(Code::AlreadyExists), 5);
        assert_eq!(for_code(Code::Unavailable), 6);
        assert_eq!(for_code(Code::Internal), 1);
        assert_eq!(for_code(Code::ResourceExhausted), 1);
    }

    #[test]
    fn http_answers_to_send_use_the_same_categories() {
        assert_eq!(for_http(404), 3);
        assert_eq!(for_http(401), 4);
        assert_eq!(for_http(403), 4);
        assert_eq!(for_http(400), 5);
        assert_eq!(for_http(413), 5);
        assert_eq!(for_http(503), 6);
        assert_eq!(for_http(429), 7);
        assert_eq!(for_http(500), 1);
    }

    #[test]
    fn errors_are_judged_through_their_context() {
        let not_found = anyhow::Error::new(ClientError::from(Status::not_found("acme")))
            .context("getting tenant acme");
        assert_eq!(for_error(&not_found), 3);
        assert_eq!(for_error(&CliError::MissingToken.into()), 4);
        assert_eq!(for_error(&CliError::Rejected(401).into()), 4);
        assert_eq!(for_error(&anyhow::anyhow!("reading body file")), 1);
    }

    #[test]
    fn only_a_broken_pipe_is_quiet() {
        let pipe = anyhow::Error::new(io::Error::from(io::ErrorKind::BrokenPipe));
        assert!(is_broken_pipe(&pipe));
        assert_eq!(for_error(&pipe), 1);
        let denied = anyhow::Error::new(io::Error::from(io::ErrorKind::PermissionDenied));
        assert!(!is_broken_pipe(&denied));
    }
}
