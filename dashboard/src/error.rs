//! What starting the dashboard can fail with, and what a dashboard request
//! can fail with and the page each failure shows.

use actix_web::{http::StatusCode, HttpResponse, ResponseError};
use hookd_control::Error as ApiError;
use maud::html;

use super::layout;

/// Why the dashboard could not start.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// Its listener could not be served on (with TLS or without).
    #[error("dashboard listener: {0}")]
    Listen(#[from] std::io::Error),
}

/// The dashboard's start-up result.
pub type Result<T, E = Error> = std::result::Result<T, E>;

/// Why a dashboard request was rejected.
#[derive(Debug, thiserror::Error)]
pub(super) enum DashError {
    /// No live session: go to the sign-in page.
    #[error("sign in first")]
    SignIn,
    /// A form without this session's CSRF token.
    #[error("this form has no valid CSRF token: it is stale or was not sent from this dashboard; reload the page and try again")]
    Csrf,
    /// The signed-in token may not see this.
    #[error("{0}")]
    Forbidden(String),
    /// Nothing by that name.
    #[error("{0}")]
    NotFound(String),
    /// A form or query field the dashboard cannot use.
    #[error("{0}")]
    BadInput(String),
    /// The current state forbids it (a config-file tenant, a pending delivery).
    #[error("{0}")]
    Conflict(String),
    /// The session (or the dashboard) holds as many of something as it may.
    #[error("{0}")]
    TooMany(String),
    /// Storage could not answer now; try again.
    #[error("{0}")]
    Unavailable(String),
    /// A bug; the detail is logged, not shown.
    #[error("internal error")]
    Internal(String),
}

impl From<ApiError> for DashError {
    fn from(e: ApiError) -> DashError {
        match e {
            ApiError::NotFound(m) => DashError::NotFound(format!("not found: {m}")),
            ApiError::InvalidArgument(m) => DashError::BadInput(m),
            ApiError::AlreadyExists(m) | ApiError::FailedPrecondition(m) => DashError::Conflict(m),
            ApiError::Unavailable(m) => DashError::Unavailable(m),
            ApiError::Unauthenticated(_) => DashError::SignIn,
            ApiError::PermissionDenied(m) => DashError::Forbidden(m),
            ApiError::ResourceExhausted(m) => DashError::TooMany(m),
            ApiError::Internal(m) => DashError::Internal(m),
        }
    }
}

impl ResponseError for DashError {
    fn status_code(&self) -> StatusCode {
        match self {
            DashError::SignIn => StatusCode::SEE_OTHER,
            DashError::Csrf | DashError::Forbidden(_) => StatusCode::FORBIDDEN,
            DashError::NotFound(_) => StatusCode::NOT_FOUND,
            DashError::BadInput(_) => StatusCode::BAD_REQUEST,
            DashError::Conflict(_) => StatusCode::CONFLICT,
            DashError::TooMany(_) => StatusCode::TOO_MANY_REQUESTS,
            DashError::Unavailable(_) => StatusCode::SERVICE_UNAVAILABLE,
            DashError::Internal(_) => StatusCode::INTERNAL_SERVER_ERROR,
        }
    }

    fn error_response(&self) -> HttpResponse {
        if let DashError::SignIn = self {
            return HttpResponse::SeeOther()
                .insert_header(("location", "/sign-in"))
                .finish();
        }
        if let DashError::Internal(detail) = self {
            tracing::error!(error = %detail, "dashboard request failed");
        }
        let status = self.status_code();
        let title = status.canonical_reason().unwrap_or("Error");
        let body = html! {
            p role="alert" { (self.to_string()) }
            p { a href="/tenants" { "Back to the tenants" } }
        };
        layout::html_with(status, layout::page(None, None, title, body))
    }
}
