//! Where a tenant's event id lives (`event_id_field`: a top-level field, a
//! JSON pointer, a header, a form field or a template of several) and the
//! bodies that come with it: JSON arrays of events, and
//! `application/x-www-form-urlencoded` forms, over real HTTP.

use reqwest::StatusCode;
use serde_json::json;

use crate::harness::{signed, Answer, TestServer};

/// A standard tenant `id` with `top` added to its keys, signing with acme's
/// current secret.
fn tenant(id: &str, top: &str) -> String {
    format!(
        "[[tenants]]\nid = \"{id}\"\nscheme = \"standard\"\n{top}\n[[tenants.secrets]]\nkid = \"k2\"\nsecret = \"whsec_AQIDBAUGBwgJCgsMDQ4PEBESExQVFhcYGRobHB0eHyA=\"\n"
    )
}

/// Sends `body` to `tenant`, signed at the server's clock under the
/// `webhook-id` `msg_id`, with `extra` headers (a `content-type` among them
/// replaces the JSON one).
async fn send(
    s: &TestServer,
    tenant: &str,
    msg_id: &str,
    body: &[u8],
    extra: &[(&str, &str)],
) -> Answer {
    let mut headers = signed(msg_id, s.clock_secs(), body);
    if extra.iter().any(|(name, _)| *name == "content-type") {
        headers.retain(|(name, _)| name != "content-type");
    }
    headers.extend(
        extra
            .iter()
            .map(|(k, v)| ((*k).to_owned(), (*v).to_owned())),
    );
    s.post(tenant, &headers, body).await
}

const FORM: (&str, &str) = ("content-type", "application/x-www-form-urlencoded");

fn accepted(a: &Answer, event_id: &str) {
    assert_eq!(a.status, StatusCode::ACCEPTED, "{:?}", a.body);
    assert_eq!(a.body["event_id"], event_id, "{:?}", a.body);
}

fn refused(a: &Answer, code: &str) {
    assert_eq!(
        (a.status, a.code()),
        (StatusCode::BAD_REQUEST, code),
        "{:?}",
        a.body
    );
}

#[tokio::test]
async fn a_json_array_of_events_is_accepted_with_its_id_from_a_pointer() {
    let s = TestServer::start(&tenant("batch", r#"event_id_field = "/0/eventId""#));
    let body = json!([{"eventId": 41, "type": "contact.creation"}, {"eventId": 42}]);
    let body = serde_json::to_vec(&body).unwrap();
    accepted(&send(&s, "batch", "msg_1", &body, &[]).await, "41");
    let again = send(&s, "batch", "msg_2", &body, &[]).await;
    assert_eq!(
        again.status,
        StatusCode::OK,
        "the same id again: {:?}",
        again.body
    );
    assert_eq!(again.body["duplicate"], true);
    let a = send(&s, "batch", "msg_3", b"[]", &[]).await;
    refused(&a, "MISSING_REQUIRED_FIELD");
    assert_eq!(a.body["details"]["field"], "/0/eventId");
}

#[tokio::test]
async fn a_template_joins_body_pointers_and_headers_into_one_event_id() {
    let toml = tenant(
        "adyen",
        r#"event_id_field = "{/eventCode}:{/pspReference}""#,
    ) + &tenant("hdr", r#"event_id_field = "{header:X-Shop}/{/id}""#);
    let s = TestServer::start(&toml);
    let body = br#"{"eventCode":"AUTHORISATION","pspReference":"8835","live":"false"}"#;
    accepted(
        &send(&s, "adyen", "msg_1", body, &[]).await,
        "AUTHORISATION:8835",
    );
    let a = send(&s, "adyen", "msg_2", br#"{"eventCode":"REFUND"}"#, &[]).await;
    refused(&a, "MISSING_REQUIRED_FIELD");
    assert_eq!(a.body["details"]["field"], "/pspReference");
    let a = send(&s, "hdr", "msg_3", br#"{"id":7}"#, &[("x-shop", "eu-1")]).await;
    accepted(&a, "eu-1/7");
    let a = send(&s, "hdr", "msg_4", br#"{"id":7}"#, &[]).await;
    refused(&a, "MISSING_REQUIRED_FIELD");
    assert_eq!(a.body["details"]["field"], "header:X-Shop");
}

#[tokio::test]
async fn an_event_id_from_a_header_names_the_header_when_absent() {
    let s = TestServer::start(&tenant("h", r#"event_id_field = "header:X-Event-Id""#));
    let body = br#"{"type":"t"}"#;
    accepted(
        &send(&s, "h", "msg_1", body, &[("x-event-id", "evt_9")]).await,
        "evt_9",
    );
    let a = send(&s, "h", "msg_2", body, &[]).await;
    refused(&a, "MISSING_REQUIRED_FIELD");
    assert_eq!(a.body["details"]["field"], "header:X-Event-Id");
}

#[tokio::test]
async fn a_form_body_is_stored_raw_and_read_as_a_form() {
    let toml = tenant(
        "sms",
        "event_id_field = \"form:MessageSid\"\nrequired_fields = [\"From\"]",
    );
    let s = TestServer::start(&toml);
    let body = b"MessageSid=SM123&From=%2B14155550100&Body=Hello+there";
    accepted(&send(&s, "sms", "msg_1", body, &[FORM]).await, "SM123");
    let a = send(&s, "sms", "msg_2", b"MessageSid=SM124&Body=hi", &[FORM]).await;
    refused(&a, "MISSING_REQUIRED_FIELD");
    assert_eq!(a.body["details"]["field"], "From");
    for broken in [
        b"MessageSid=SM1&From=%zz".as_slice(),
        b"MessageSid=SM1&From=%C3%28",
        b"=x&MessageSid=SM1&From=x",
    ] {
        let a = send(&s, "sms", "msg_3", broken, &[FORM]).await;
        refused(&a, "INVALID_FORM");
    }
    // A repeated name is a list of values, which is no event id.
    let listed = b"MessageSid=SM1&MessageSid=SM2&From=x";
    let a = send(&s, "sms", "msg_5", listed, &[FORM]).await;
    refused(&a, "INVALID_FIELD");
    assert_eq!(a.body["details"]["field"], "form:MessageSid");
    let a = send(&s, "sms", "msg_4", body, &[]).await;
    refused(&a, "INVALID_JSON");
}

#[tokio::test]
async fn route_filters_see_a_form_as_an_object_of_strings() {
    let top = "event_id_field = \"form:MessageSid\"\nfilter = { body = { MessageStatus = \"delivered\" } }";
    let s = TestServer::start(&tenant("status", top));
    let delivered = b"MessageSid=SM1&MessageStatus=delivered";
    let a = send(&s, "status", "msg_1", delivered, &[FORM]).await;
    accepted(&a, "SM1");
    assert!(a.body.get("status").is_none(), "{:?}", a.body);
    let queued = b"MessageSid=SM2&MessageStatus=queued";
    let a = send(&s, "status", "msg_2", queued, &[FORM]).await;
    accepted(&a, "SM2");
    assert_eq!(a.body["status"], "unrouted", "{:?}", a.body);
}

#[tokio::test]
async fn contracts_check_a_form_as_an_object_of_strings() {
    let top = r#"event_id_field = "form:MessageSid"
type_field = "SmsStatus"
unknown_event_types = "reject"
[[tenants.contracts]]
type = "received"
schema = '''{"type": "object", "required": ["From"], "properties": {"From": {"type": "string", "pattern": "^\\+[0-9]+$"}}}'''
example = '''{"MessageSid": "SM0", "SmsStatus": "received", "From": "+14155550100"}'''"#;
    let s = TestServer::start(&tenant("twilio", top));
    let good = b"MessageSid=SM1&SmsStatus=received&From=%2B14155550100";
    accepted(&send(&s, "twilio", "msg_1", good, &[FORM]).await, "SM1");
    let bad = b"MessageSid=SM2&SmsStatus=received&From=alice";
    let a = send(&s, "twilio", "msg_2", bad, &[FORM]).await;
    assert_eq!(
        (a.status, a.code()),
        (StatusCode::UNPROCESSABLE_ENTITY, "CONTRACT_VIOLATION"),
        "{:?}",
        a.body
    );
    assert_eq!(a.body["details"]["violations"][0]["pointer"], "/From");
    let unknown = b"MessageSid=SM3&SmsStatus=sent";
    let a = send(&s, "twilio", "msg_3", unknown, &[FORM]).await;
    assert_eq!(a.code(), "UNKNOWN_EVENT_TYPE", "{:?}", a.body);
}
