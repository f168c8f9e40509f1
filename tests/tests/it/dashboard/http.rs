//! The dashboard over plain HTTP, without a browser: sign-in with the
//! form's CSRF cookie, the session cookie carried by hand, forms posted
//! with the token their page holds. These tests run everywhere.

use reqwest::{redirect::Policy, Response, StatusCode};

use crate::harness::TestServer;

/// A client of one hookd's dashboard that never follows redirects, so a
/// test sees the `303` to `/sign-in` itself.
pub struct Http {
    client: reqwest::Client,
    base: String,
}

/// The `Cookie` header of a signed-in browser.
pub struct Session(pub String);

/// The value of cookie `name` set by `response`, if any.
pub fn set_cookie(response: &Response, name: &str) -> Option<String> {
    response
        .headers()
        .get_all("set-cookie")
        .iter()
        .filter_map(|v| v.to_str().ok())
        .filter_map(|v| v.split(';').next()?.split_once('='))
        .find(|(n, _)| *n == name)
        .map(|(_, v)| v.to_owned())
}

/// The first hidden CSRF field's value in an HTML page.
pub fn csrf_of(page: &str) -> String {
    let at = page
        .find("name=\"csrf\" value=\"")
        .expect("the page has a form")
        + 19;
    page[at..].split('"').next().unwrap().to_owned()
}

impl Http {
    /// A client of `s`'s dashboard.
    pub fn new(s: &TestServer) -> Http {
        Http {
            client: reqwest::Client::builder()
                .redirect(Policy::none())
                .build()
                .unwrap(),
            base: format!("http://{}", s.server().dashboard_addr().unwrap()),
        }
    }

    /// The absolute URL of `path`.
    pub fn url(&self, path: &str) -> String {
        format!("{}{path}", self.base)
    }

    /// Signs in with `token` as a browser would: the sign-in page first, then
    /// its form with the cookie it set. Panics unless a session starts.
    pub async fn sign_in(&self, token: &str) -> Session {
        let page = self.client.get(self.url("/sign-in")).send().await.unwrap();
        let cookie = set_cookie(&page, "hookd_sign_in").expect("a sign-in cookie");
        let csrf = csrf_of(&page.text().await.unwrap());
        let answer = self
            .post_raw(
                &format!("hookd_sign_in={cookie}"),
                "/sign-in",
                &[("csrf", &csrf), ("token", token)],
            )
            .await;
        assert_eq!(answer.status(), StatusCode::SEE_OTHER, "signed in");
        let id = set_cookie(&answer, "hookd_session").expect("a session cookie");
        Session(format!("hookd_session={id}"))
    }

    /// `GET path` in `session`.
    pub async fn get(&self, session: &Session, path: &str) -> Response {
        self.client
            .get(self.url(path))
            .header("cookie", &session.0)
            .send()
            .await
            .unwrap()
    }

    /// Posts `form` to `path` with the `cookie` header given as is.
    pub async fn post_raw(&self, cookie: &str, path: &str, form: &[(&str, &str)]) -> Response {
        self.client
            .post(self.url(path))
            .header("cookie", cookie)
            .form(form)
            .send()
            .await
            .unwrap()
    }

    /// Posts `form` to `path` in `session`, with the CSRF token the page at
    /// `page` carries (fetched first, as a browser would have it).
    pub async fn submit(
        &self,
        session: &Session,
        page: &str,
        path: &str,
        form: &[(&str, &str)],
    ) -> Response {
        let shown = self.get(session, page).await;
        assert_eq!(shown.status(), StatusCode::OK, "{page}");
        let csrf = csrf_of(&shown.text().await.unwrap());
        let mut fields = vec![("csrf", csrf.as_str())];
        fields.extend_from_slice(form);
        self.post_raw(&session.0, path, &fields).await
    }
}

/// Whether `response` sends the browser to the sign-in page.
pub fn to_sign_in(response: &Response) -> bool {
    response.status() == StatusCode::SEE_OTHER
        && response
            .headers()
            .get("location")
            .and_then(|v| v.to_str().ok())
            == Some("/sign-in")
}
