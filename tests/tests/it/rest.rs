//! The REST/JSON face over real HTTP on the control-plane address: create a
//! tenant, send it a signed event, list its deliveries and dead letters,
//! redeliver one, the error body's shape and its HTTP statuses, a tenant
//! token refused on another tenant's path, a watch as server-sent events,
//! and REST over the control plane's TLS.

use std::time::{Duration, Instant};

use reqwest::{Method, StatusCode};
use serde_json::{json, Value};

use crate::{
    harness::{TestServer, ADMIN_TOKEN},
    pki::Pki,
    receiver::{Receiver, Reply},
};

/// Lets destinations created over the API reach the receivers on 127.0.0.1.
const LOCAL_DESTINATIONS: &str = "[forward]\nallow_networks = [\"127.0.0.1/32\"]\n";

/// A REST client of one server's control plane.
struct Rest {
    base: String,
    http: reqwest::Client,
}

impl Rest {
    fn of(s: &TestServer) -> Rest {
        Rest {
            base: format!("http://{}", s.server().grpc_addr()),
            http: reqwest::Client::new(),
        }
    }

    fn request(&self, method: Method, path: &str, token: Option<&str>) -> reqwest::RequestBuilder {
        let request = self.http.request(method, format!("{}{path}", self.base));
        match token {
            Some(token) => request.bearer_auth(token),
            None => request,
        }
    }

    /// `method path` with `body` (none if null), answered status and JSON.
    async fn call(
        &self,
        method: Method,
        path: &str,
        token: Option<&str>,
        body: Value,
    ) -> (StatusCode, Value) {
        let mut request = self.request(method, path, token);
        if !body.is_null() {
            request = request.json(&body);
        }
        let response = request.send().await.unwrap();
        let status = response.status();
        (status, response.json().await.unwrap_or(Value::Null))
    }

    async fn admin(&self, method: Method, path: &str, body: Value) -> Value {
        let (status, body) = self.call(method, path, Some(ADMIN_TOKEN), body).await;
        assert_eq!(status, StatusCode::OK, "{body}");
        body
    }
}

/// Polls `check` until it gives a value, bounded.
async fn eventually<T, F, Fut>(what: &str, mut check: F) -> T
where
    F: FnMut() -> Fut,
    Fut: std::future::Future<Output = Option<T>>,
{
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        if let Some(value) = check().await {
            return value;
        }
        assert!(Instant::now() < deadline, "timed out waiting for {what}");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

/// Creates tenant `id` forwarding to `url`; its signing kid and secret.
async fn create(rest: &Rest, id: &str, url: &str) -> (String, String) {
    let body = json!({"tenantId": id, "destinationUrl": url});
    let created = rest.admin(Method::POST, "/v1/tenants", body).await;
    assert_eq!(created["tenant"]["ingestPath"], format!("/hooks/{id}"));
    let secret = created["secret"].as_str().unwrap().to_owned();
    (created["kid"].as_str().unwrap().to_owned(), secret)
}

#[tokio::test]
async fn a_dead_letter_is_listed_and_redelivered_over_rest() {
    let dest = Receiver::start(Reply::Status(400)).await;
    let s = TestServer::start(LOCAL_DESTINATIONS);
    let rest = Rest::of(&s);
    let (kid, secret) = create(&rest, "shop", &dest.url).await;
    let sent = s.post_signed("shop", &kid, &secret, "evt_rest").await;
    assert_eq!(sent.status, StatusCode::ACCEPTED, "{:?}", sent.body);
    let delivery_id = sent.body["delivery_id"].as_str().unwrap().to_owned();

    let listed = rest
        .admin(Method::GET, "/v1/tenants/shop/deliveries", Value::Null)
        .await;
    assert_eq!(listed["deliveries"][0]["deliveryId"], delivery_id);
    assert_eq!(listed["deliveries"][0]["eventId"], "evt_rest");
    let dead = eventually("the dead letter", || async {
        let page = rest
            .admin(Method::GET, "/v1/tenants/shop/dead-letters", Value::Null)
            .await;
        page["deadLetters"]
            .as_array()
            .filter(|d| !d.is_empty())
            .cloned()
    })
    .await;
    assert_eq!(dead[0]["deliveryId"], delivery_id);
    assert_eq!(dead[0]["lastStatusCode"], 400);
    let by_status = rest
        .admin(
            Method::GET,
            "/v1/tenants/shop/deliveries?status=dead",
            Value::Null,
        )
        .await;
    assert_eq!(by_status["deliveries"][0]["status"], "DELIVERY_STATUS_DEAD");

    dest.set_default(Reply::Status(200));
    let path = format!("/v1/tenants/shop/deliveries/{delivery_id}:redeliver");
    let redelivered = rest.admin(Method::POST, &path, Value::Null).await;
    let new_id = redelivered["deliveryIds"][0].as_str().unwrap().to_owned();
    assert_ne!(new_id, delivery_id);
    let got = dest.wait_for(2, Duration::from_secs(10)).await;
    assert_eq!(got.len(), 2, "the first attempt and the redelivery");
    let old = rest
        .admin(
            Method::GET,
            &format!("/v1/tenants/shop/deliveries/{delivery_id}"),
            Value::Null,
        )
        .await;
    assert_eq!(old["redeliveredAs"], new_id);
}

#[tokio::test]
async fn errors_are_the_grpc_status_as_json_and_tokens_keep_to_their_tenant() {
    let s = TestServer::start(LOCAL_DESTINATIONS);
    let rest = Rest::of(&s);
    create(&rest, "shop", "http://127.0.0.1:9/").await;
    create(&rest, "other", "http://127.0.0.1:9/").await;

    let (status, body) = rest
        .call(
            Method::GET,
            "/v1/tenants/nobody",
            Some(ADMIN_TOKEN),
            Value::Null,
        )
        .await;
    assert_eq!(status, StatusCode::NOT_FOUND);
    assert_eq!(body["code"], "NOT_FOUND");
    assert_eq!(body["details"], json!([]));
    assert!(
        body["message"].as_str().unwrap().contains("nobody"),
        "{body}"
    );

    let (status, body) = rest
        .call(Method::GET, "/v1/tenants/shop", None, Value::Null)
        .await;
    assert_eq!(status, StatusCode::UNAUTHORIZED);
    assert_eq!(body["code"], "UNAUTHENTICATED");

    let bad = rest
        .request(Method::POST, "/v1/tenants", Some(ADMIN_TOKEN))
        .body("{\"tenantId\": ")
        .send()
        .await
        .unwrap();
    assert_eq!(bad.status(), StatusCode::BAD_REQUEST);
    let body: Value = bad.json().await.unwrap();
    assert_eq!(body["code"], "INVALID_ARGUMENT");
    assert!(body["message"].as_str().unwrap().contains("not valid JSON"));

    let token = rest
        .admin(
            Method::POST,
            "/v1/tenants/shop/tokens",
            json!({"description": "ci"}),
        )
        .await;
    let token = token["token"].as_str().unwrap().to_owned();
    let (status, _) = rest
        .call(
            Method::GET,
            "/v1/tenants/shop/routes",
            Some(&token),
            Value::Null,
        )
        .await;
    assert_eq!(status, StatusCode::OK);
    let (status, body) = rest
        .call(
            Method::GET,
            "/v1/tenants/other/routes",
            Some(&token),
            Value::Null,
        )
        .await;
    assert_eq!(status, StatusCode::FORBIDDEN);
    assert_eq!(body["code"], "PERMISSION_DENIED");

    let (status, document) = rest
        .call(Method::GET, "/v1/openapi.json", None, Value::Null)
        .await;
    assert_eq!(status, StatusCode::OK);
    assert_eq!(document["openapi"], "3.1.0");
}

#[tokio::test]
async fn a_watch_streams_server_sent_events() {
    let dest = Receiver::start(Reply::Status(200)).await;
    let s = TestServer::start(LOCAL_DESTINATIONS);
    let rest = Rest::of(&s);
    let (kid, secret) = create(&rest, "shop", &dest.url).await;
    let mut watch = rest
        .request(
            Method::GET,
            "/v1/tenants/shop/deliveries:watch",
            Some(ADMIN_TOKEN),
        )
        .send()
        .await
        .unwrap();
    assert_eq!(watch.status(), StatusCode::OK);
    let kind = watch.headers()["content-type"].to_str().unwrap().to_owned();
    assert!(kind.starts_with("text/event-stream"), "{kind}");
    let sent = s.post_signed("shop", &kid, &secret, "evt_watched").await;
    assert_eq!(sent.status, StatusCode::ACCEPTED);
    let mut text = String::new();
    let event = tokio::time::timeout(Duration::from_secs(10), async {
        loop {
            let chunk = watch.chunk().await.unwrap().expect("the stream stays open");
            text.push_str(std::str::from_utf8(&chunk).unwrap());
            let data = text
                .lines()
                .filter_map(|line| line.strip_prefix("data: "))
                .map(|data| serde_json::from_str::<Value>(data).unwrap())
                .find(|event| event["eventId"] == "evt_watched");
            if let Some(event) = data {
                return event;
            }
        }
    })
    .await
    .expect("an event within 10 s");
    assert_eq!(event["tenantId"], "shop");
    assert_eq!(event["deliveryId"], sent.body["delivery_id"]);
}

#[tokio::test]
async fn rest_shares_the_control_planes_tls_over_http_1_1() {
    let pki = Pki::new();
    let s = TestServer::start(&pki.grpc_toml(false));
    let trusting = reqwest::Client::builder()
        .add_root_certificate(reqwest::Certificate::from_pem(&pki.ca_pem()).unwrap())
        .http1_only()
        .build()
        .unwrap();
    let url = format!("https://{}/v1/tenants", s.server().grpc_addr());
    let answer = trusting
        .get(&url)
        .bearer_auth(ADMIN_TOKEN)
        .send()
        .await
        .unwrap();
    assert_eq!(answer.status(), StatusCode::OK);
    assert_eq!(answer.version(), reqwest::Version::HTTP_11);
    let plain = format!("http://{}/v1/tenants", s.server().grpc_addr());
    assert!(
        reqwest::Client::new().get(plain).send().await.is_err(),
        "plain HTTP is not served on the TLS port"
    );
}
