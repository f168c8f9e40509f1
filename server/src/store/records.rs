//! Byte encodings of what hookd keeps in sled: idempotency records, stored
//! events (metadata + raw body, byte for byte) and queue keys.

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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stored_event_keeps_the_body_byte_for_byte() {
        let meta = EventMeta {
            event_id: EventId::new("evt_1"),
            delivery_id: DeliveryId::new("dlv_1"),
            request_id: RequestId::new("req_1"),
            received_at_ms: 42,
            headers: vec![("content-type".into(), "application/json".into())],
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
}
