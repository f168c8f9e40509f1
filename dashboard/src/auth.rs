//! Sign-in with the admin token or a tenant token, and sign-out.

use actix_web::{web, HttpRequest, HttpResponse};
use hookd_control::model::Principal;
use maud::html;

use super::{
    csrf::CSRF_FIELD,
    error::DashError,
    layout,
    session::{PostedForm, Signed, SESSION_COOKIE, SIGN_IN_COOKIE},
    Dashboard,
};

/// `GET /`: the tenants when signed in, else the sign-in page.
pub(super) async fn home(signed: Option<Signed>) -> HttpResponse {
    let to = match signed {
        Some(Signed { session, .. }) => match session.principal() {
            Principal::Admin => "/tenants".to_owned(),
            Principal::Tenant(t) => format!("/t/{t}/deliveries"),
        },
        None => "/sign-in".to_owned(),
    };
    HttpResponse::SeeOther()
        .insert_header(("location", to))
        .finish()
}

/// `GET /sign-in`.
pub(super) async fn sign_in_page(dash: web::Data<Dashboard>) -> HttpResponse {
    sign_in_form(&dash, None, actix_web::http::StatusCode::OK)
}

fn sign_in_form(
    dash: &Dashboard,
    problem: Option<&str>,
    status: actix_web::http::StatusCode,
) -> HttpResponse {
    let token = dash.sessions.sign_in_token();
    let body = html! {
        p { "Sign in with the admin token or a tenant token. A tenant token shows only its tenant." }
        @if let Some(problem) = problem {
            p.problem role="alert" { (problem) }
        }
        form.stack method="post" action="/sign-in" {
            input type="hidden" name=(CSRF_FIELD) value=(token);
            label for="token" { "Token" }
            input #token type="password" name="token" autocomplete="current-password" required autofocus;
            button type="submit" { "Sign in" }
        }
    };
    let mut response = layout::html_with(status, layout::page(None, None, "Sign in", body));
    let _ = response.add_cookie(&dash.sessions.cookie(SIGN_IN_COOKIE, token));
    response
}

/// `POST /sign-in`: a session for a token the backend knows.
///
/// Sign-in with the admin token or a tenant token, and sign-out. The
/// sign-in form is protected against login CSRF by a token the server
/// issued ([`super::csrf`]) in both a cookie and the form, and by rejecting
/// posts a browser marks as coming from another site.
pub(super) async fn sign_in(
    dash: web::Data<Dashboard>,
    req: HttpRequest,
    body: web::Bytes,
) -> Result<HttpResponse, DashError> {
    let expected = req
        .cookie(SIGN_IN_COOKIE)
        .map(|c| c.value().to_owned())
        .unwrap_or_default();
    // Posted from another site, a sibling subdomain among them: only the
    // sign-in page itself posts this form.
    let elsewhere = req
        .headers()
        .get("sec-fetch-site")
        .is_some_and(|site| matches!(site.as_bytes(), b"cross-site" | b"same-site"));
    if elsewhere || !dash.sessions.sign_in_token_valid(&expected) {
        return Err(DashError::Csrf);
    }
    let form = PostedForm::checked(&body, &expected)?;
    let grant = form
        .get("token")
        .and_then(|token| dash.backend.authenticate(token));
    let Some(grant) = grant else {
        return Ok(sign_in_form(
            &dash,
            Some("That token is not valid (or was revoked)."),
            actix_web::http::StatusCode::UNAUTHORIZED,
        ));
    };
    let to = match &grant.principal {
        Principal::Admin => "/tenants".to_owned(),
        Principal::Tenant(t) => format!("/t/{t}/deliveries"),
    };
    let id = dash.sessions.open(grant);
    Ok(HttpResponse::SeeOther()
        .insert_header(("location", to))
        .cookie(dash.sessions.cookie(SESSION_COOKIE, id))
        .cookie(dash.sessions.removal(SIGN_IN_COOKIE))
        .finish())
}

/// `POST /sign-out`: ends the session at once.
pub(super) async fn sign_out(
    dash: web::Data<Dashboard>,
    signed: Signed,
    body: web::Bytes,
) -> Result<HttpResponse, DashError> {
    signed.form(&body)?;
    dash.sessions.close(&signed.id);
    Ok(HttpResponse::SeeOther()
        .insert_header(("location", "/sign-in"))
        .cookie(dash.sessions.removal(SESSION_COOKIE))
        .finish())
}
