//! The records hookd keeps, on every engine, and their byte encodings (a
//! stored event's raw body byte for byte).

use serde::{Deserialize, Serialize};

use crate::{
    error::{Error, Result},
    ids::{DeliveryId, EventId, RequestId},
};

/// What the idempotency log remembers of an event id.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct IdempotencyRecord {
    /// The delivery that was created for the first copy.
    pub delivery_id: DeliveryId,
    /// When that copy was accepted (Unix ms).
    pub received_at_ms: i64,
    /// The first copy's event id, kept only under a content key (a replay
    /// of an unsigned-timestamp scheme may carry another id).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub event_id: Option<EventId>,
}

impl IdempotencyRecord {
    /// Encodes as JSON bytes.
    pub fn encode(&self) -> Vec<u8> {
        serde_json::to_vec(self).expect("record serializes")
    }

    /// Decodes what [`IdempotencyRecord::encode`] wrote.
    pub fn decode(bytes: &[u8]) -> Result<Self> {
        serde_json::from_slice(bytes)
            .map_err(|e| Error::Corrupt(format!("idempotency record: {e}")))
    }
}

/// Everything needed to forward an accepted event later, without the
/// signature headers (hookd signs anew on the way out).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct EventMeta {
    /// The sender's event id.
    pub event_id: EventId,
    /// This delivery.
    pub delivery_id: DeliveryId,
    /// The request that brought it.
    pub request_id: RequestId,
    /// Acceptance time (Unix ms).
    pub received_at_ms: i64,
    /// Headers worth passing on (content type, event type), lower-case names.
    pub headers: Vec<(String, String)>,
    /// W3C trace id (32 hex digits) shared by the ingest and every forward.
    #[serde(default)]
    pub trace_id: String,
    /// Span id (16 hex digits) of the `hookd.ingest` span: every
    /// `hookd.forward` span is its child. Empty in events stored before it
    /// was kept.
    #[serde(default)]
    pub span_id: String,
    /// Whether the ingest trace is sampled; forwards follow its decision.
    #[serde(default = "sampled_by_default")]
    pub sampled: bool,
}

fn sampled_by_default() -> bool {
    true
}

#[cfg(test)]
impl EventMeta {
    /// Event `event`'s metadata as a test stores it: a fresh delivery and
    /// request id, received at `received_at_ms`, no headers, no trace.
    pub(crate) fn bare(event: &str, received_at_ms: i64) -> EventMeta {
        EventMeta {
            event_id: EventId::new(event),
            delivery_id: DeliveryId::generate(),
            request_id: RequestId::generate(),
            received_at_ms,
            headers: Vec::new(),
            trace_id: String::new(),
            span_id: String::new(),
            sampled: true,
        }
    }
}

/// A stored event: metadata and the raw body exactly as received.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StoredEvent {
    /// Metadata.
    pub meta: EventMeta,
    /// The body, byte for byte.
    pub body: Vec<u8>,
}

impl StoredEvent {
    /// Bytes this event takes in a response: body, headers and ids.
    pub fn size(&self) -> usize {
        let meta = &self.meta;
        let headers: usize = meta.headers.iter().map(|(k, v)| k.len() + v.len()).sum();
        self.body.len() + headers + meta.event_id.as_str().len() + meta.delivery_id.as_str().len()
    }

    /// `u32 BE meta length | meta JSON | body`: the body is never re-encoded.
    pub fn encode(meta: &EventMeta, body: &[u8]) -> Vec<u8> {
        let meta = serde_json::to_vec(meta).expect("meta serializes");
        let mut out = Vec::with_capacity(4 + meta.len() + body.len());
        out.extend_from_slice(&(meta.len() as u32).to_be_bytes());
        out.extend_from_slice(&meta);
        out.extend_from_slice(body);
        out
    }

    /// Decodes what [`StoredEvent::encode`] wrote.
    pub fn decode(bytes: &[u8]) -> Result<Self> {
        let corrupt = |why: &str| Error::Corrupt(format!("stored event: {why}"));
        let len_bytes: [u8; 4] = bytes
            .get(..4)
            .and_then(|b| b.try_into().ok())
            .ok_or_else(|| corrupt("short"))?;
        let meta_len = u32::from_be_bytes(len_bytes) as usize;
        let meta_bytes = bytes
            .get(4..4 + meta_len)
            .ok_or_else(|| corrupt("meta truncated"))?;
        let meta = serde_json::from_slice(meta_bytes).map_err(|e| corrupt(&e.to_string()))?;
        Ok(StoredEvent {
            meta,
            body: bytes[4 + meta_len..].to_vec(),
        })
    }
}

/// Where a delivery stands; stored by its snake_case name.
pub use hookd_domain::DeliveryStatus;

/// The mutable state of one delivery. Absent fields are not written (a
/// new delivery's record is its largest write after the event).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct DeliveryState {
    /// The sender's event id.
    pub event_id: EventId,
    /// Where it stands.
    pub status: DeliveryStatus,
    /// When it was accepted (Unix ms).
    pub received_at_ms: i64,
    /// Attempts made so far.
    pub attempts: u32,
    /// When the next attempt is due, if one is scheduled.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub next_attempt_at_ms: Option<i64>,
    /// Why the last attempt failed, in plain words.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub last_error: Option<String>,
    /// HTTP status of the last attempt, if it got one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub last_status: Option<u16>,
    /// When it was delivered or dead-lettered.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub finished_at_ms: Option<i64>,
    /// The dead letter this delivery re-sends.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub redelivery_of: Option<DeliveryId>,
    /// The delivery that re-sent this dead letter.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub redelivered_as: Option<DeliveryId>,
    /// Its entry in the queue (hex), while it has one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub queue_key: Option<String>,
    /// What each route made of the event, the default route first: kept on
    /// the default route's delivery of a tenant with other routes only.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub routes: Vec<RouteOutcome>,
    /// On sled, a route's copy of an event fanned out to several routes
    /// stores no event of its own: this names (as the events tree's key)
    /// the stored event of the default route's delivery, which it forwards
    /// until that one is removed and the event is written here whole.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub event_in: Option<String>,
    /// The event's type, as the tenant's type field named it when it was
    /// accepted (`ListDeliveries` filters by it); none for a body that
    /// names none, and in deliveries stored before it was kept.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub event_type: Option<String>,
}

/// What one route made of an accepted event, as kept on the default
/// route's delivery.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct RouteOutcome {
    /// The route's name.
    pub route: String,
    /// Its delivery of the event; none when its filter did not pass it
    /// (the default route always has its own).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub delivery_id: Option<DeliveryId>,
    /// Its filter did not pass the event.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub filtered: bool,
}

impl DeliveryState {
    /// A freshly accepted delivery.
    pub fn pending(event_id: EventId, received_at_ms: i64) -> Self {
        DeliveryState {
            event_id,
            status: DeliveryStatus::Pending,
            received_at_ms,
            attempts: 0,
            next_attempt_at_ms: Some(received_at_ms),
            last_error: None,
            last_status: None,
            finished_at_ms: None,
            redelivery_of: None,
            redelivered_as: None,
            queue_key: None,
            routes: Vec::new(),
            event_in: None,
            event_type: None,
        }
    }
}

/// One forward attempt, as an operator will want to see it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct AttemptRecord {
    /// 1-based attempt number.
    pub attempt: u32,
    /// When it started (Unix ms).
    pub started_at_ms: i64,
    /// How long it took.
    pub duration_ms: u64,
    /// HTTP status, if the destination answered.
    pub status_code: Option<u16>,
    /// Why it failed, in plain words; None on success.
    pub error: Option<String>,
    /// First 4 KiB of the response body.
    pub response_body: Vec<u8>,
    /// When the next attempt is due, if one was scheduled.
    pub next_retry_at_ms: Option<i64>,
    /// The `X-Request-Id` hookd sent with the attempt.
    pub request_id: RequestId,
    /// The version of the route's transform that ran, if it has one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub transform_version: Option<u32>,
}

impl AttemptRecord {
    /// A first attempt, started at `at_ms`, that the destination answered
    /// with `status` (tests).
    #[doc(hidden)]
    pub fn answered(status: u16, at_ms: i64) -> AttemptRecord {
        AttemptRecord {
            attempt: 1,
            started_at_ms: at_ms,
            duration_ms: 1,
            status_code: Some(status),
            error: None,
            response_body: vec![],
            next_retry_at_ms: None,
            request_id: RequestId::generate(),
            transform_version: None,
        }
    }
}

/// A dead letter in the index.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct DeadLetter {
    /// The delivery given up on.
    pub delivery_id: DeliveryId,
    /// Its event.
    pub event_id: EventId,
    /// Why, in plain words.
    pub reason: String,
    /// When (Unix ms).
    pub dead_at_ms: i64,
    /// Attempts made.
    pub attempts: u32,
    /// HTTP status of the last attempt, if any.
    pub last_status: Option<u16>,
}

/// JSON encoding for the small records above.
pub fn encode<T: Serialize>(value: &T) -> Vec<u8> {
    serde_json::to_vec(value).expect("record serializes")
}

/// Decodes what [`encode`] wrote.
pub fn decode<T: for<'de> Deserialize<'de>>(bytes: &[u8]) -> Result<T> {
    serde_json::from_slice(bytes).map_err(|e| Error::Corrupt(e.to_string()))
}

/// Key of a time-ordered index entry: time then delivery id.
pub fn time_key(at_ms: i64, delivery_id: &DeliveryId) -> Vec<u8> {
    let mut key = (at_ms.max(0) as u64).to_be_bytes().to_vec();
    key.extend_from_slice(delivery_id.as_str().as_bytes());
    key
}

/// Key of an attempt: delivery id, `/`, attempt number.
pub fn attempt_key(delivery_id: &DeliveryId, attempt: u32) -> Vec<u8> {
    let mut key = delivery_id.as_str().as_bytes().to_vec();
    key.push(b'/');
    key.extend_from_slice(&attempt.to_be_bytes());
    key
}

/// Queue key: due time then a sequence number, both big-endian, so sled's
/// ordered iteration yields deliveries in due order.
pub fn queue_key(due_ms: i64, seq: u64) -> [u8; 16] {
    let mut key = [0u8; 16];
    key[..8].copy_from_slice(&(due_ms.max(0) as u64).to_be_bytes());
    key[8..].copy_from_slice(&seq.to_be_bytes());
    key
}

/// The due time a queue key was written with.
pub fn queue_key_due_ms(key: &[u8]) -> Option<i64> {
    let due: [u8; 8] = key.get(..8)?.try_into().ok()?;
    Some(u64::from_be_bytes(due) as i64)
}

/// Who asked for a redirect.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum RedirectedBy {
    /// The admin token.
    Admin,
    /// The tenant's own token.
    Tenant,
}

impl RedirectedBy {
    /// `admin` or `tenant`.
    pub fn as_str(self) -> &'static str {
        match self {
            RedirectedBy::Admin => "admin",
            RedirectedBy::Tenant => "tenant",
        }
    }
}

/// One redirect of a delivery and its outcome.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct RedirectRecord {
    /// Who asked for it.
    pub by: RedirectedBy,
    /// When it was sent (Unix ms).
    pub started_at_ms: i64,
    /// Where it was sent, without credentials (see [`shown_url`]).
    pub url: String,
    /// The HTTP status that came back, if any.
    pub status_code: Option<u16>,
    /// Why it failed, in plain words; `None` on a 2xx answer.
    pub error: Option<String>,
    /// How long it took.
    pub duration_ms: u64,
    /// The `X-Request-Id` hookd sent with it.
    pub request_id: RequestId,
}

/// `url` as it may be kept and shown: without a user name or password, and
/// with every query value replaced by `redacted` (query strings often carry
/// tokens); the scheme, host, port, path and parameter names stay.
pub fn shown_url(url: &url::Url) -> String {
    let mut shown = url.clone();
    // Both only fail for URLs that cannot have credentials.
    let _ = shown.set_username("");
    let _ = shown.set_password(None);
    shown.set_fragment(None);
    let names: Vec<String> = url
        .query_pairs()
        .map(|(name, _)| name.into_owned())
        .collect();
    if names.is_empty() {
        shown.set_query(None);
    } else {
        shown
            .query_pairs_mut()
            .clear()
            .extend_pairs(names.iter().map(|name| (name.as_str(), "redacted")));
    }
    shown.to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A new delivery's state is written without its absent fields, and a
    /// state written with them (`null`, as before) still reads the same.
    #[test]
    fn delivery_state_omits_absent_fields_and_reads_older_records() {
        let mut state = DeliveryState::pending(EventId::new("evt_1"), 1_700_000_000_000);
        state.queue_key = Some("00".repeat(16));
        let written = String::from_utf8(encode(&state)).unwrap();
        assert!(!written.contains("null"), "{written}");
        assert_eq!(decode::<DeliveryState>(written.as_bytes()).unwrap(), state);
        let older = r#"{"event_id":"evt_1","status":"pending","received_at_ms":1700000000000,
            "attempts":0,"next_attempt_at_ms":1700000000000,"last_error":null,
            "last_status":null,"finished_at_ms":null,"redelivery_of":null,
            "redelivered_as":null,"queue_key":"00000000000000000000000000000000"}"#;
        assert_eq!(decode::<DeliveryState>(older.as_bytes()).unwrap(), state);
    }

    #[test]
    fn stored_event_keeps_the_body_byte_for_byte() {
        let meta = EventMeta {
            event_id: EventId::new("evt_1"),
            delivery_id: DeliveryId::new("dlv_1"),
            request_id: RequestId::new("req_1"),
            received_at_ms: 42,
            headers: vec![("content-type".into(), "application/json".into())],
            trace_id: "0af7651916cd43dd8448eb211c80319c".into(),
            span_id: "b7ad6b7169203331".into(),
            sampled: true,
        };
        let body = b"{\"a\": 1}\n\xff";
        let decoded = StoredEvent::decode(&StoredEvent::encode(&meta, body)).unwrap();
        assert_eq!(decoded.meta, meta);
        assert_eq!(decoded.body, body);
        assert!(StoredEvent::decode(b"\0\0\0\x09{}").is_err());
    }

    #[test]
    fn queue_keys_sort_by_due_time_then_sequence() {
        assert!(queue_key(1000, 9) < queue_key(1001, 0));
        assert!(queue_key(1000, 1) < queue_key(1000, 2));
        assert_eq!(queue_key_due_ms(&queue_key(123_456, 7)), Some(123_456));
    }

    #[test]
    fn a_kept_url_has_no_credentials() {
        let url =
            url::Url::parse("https://bob:hunter2@test.example.com:8443/hook?token=s3cret&x=1#frag")
                .unwrap();
        assert_eq!(
            shown_url(&url),
            "https://test.example.com:8443/hook?token=redacted&x=redacted"
        );
        let plain = url::Url::parse("http://10.0.0.1/in").unwrap();
        assert_eq!(shown_url(&plain), "http://10.0.0.1/in");
    }

    /// Stored records written before `crate::ids::TenantId` validated still load: the
    /// id is the same plain JSON string it always was.
    #[test]
    fn tenant_ids_keep_their_stored_form() {
        let id: crate::ids::TenantId = serde_json::from_str("\"acme-eu_1\"").unwrap();
        assert_eq!(serde_json::to_string(&id).unwrap(), "\"acme-eu_1\"");
        assert!(serde_json::from_str::<crate::ids::TenantId>("\"Acme\"").is_err());
    }
}
