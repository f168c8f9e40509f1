//! Conformance of redirects: recorded with their delivery, read back oldest
//! first and deleted with it.

use super::{accepted, attempt, kill, only_entry, tenant, Engine};
use crate::{
    api::SweepRequest,
    error::Error,
    ids::{DeliveryId, RequestId},
    lifecycle::Next,
    records::{RedirectRecord, RedirectedBy},
};

fn redirect(by: RedirectedBy, at_ms: i64, status_code: Option<u16>) -> RedirectRecord {
    RedirectRecord {
        by,
        started_at_ms: at_ms,
        url: "https://test.example.com/hook?token=redacted".into(),
        status_code,
        error: status_code.is_none().then(|| "connection refused".into()),
        duration_ms: 12,
        request_id: RequestId::generate(),
    }
}

/// Conformance of redirects: recorded with their delivery, read back oldest
/// first, never mixed with its attempts nor changing its state, refused for
/// a delivery that is not there, and deleted with the delivery (purge,
/// retention).
pub(super) async fn redirects_are_kept_with_their_delivery(engine: Engine) {
    let data = tenant(&engine, "acme");
    let id = accepted(&data, "evt_1", 1_000).await;
    let before = data.state(&id).unwrap().unwrap();
    let first = redirect(RedirectedBy::Admin, 2_000, Some(200));
    let second = redirect(RedirectedBy::Tenant, 3_000, None);
    data.record_redirect(&id, &first).unwrap();
    data.record_redirect(&id, &second).unwrap();
    assert_eq!(data.redirects(&id).unwrap(), [first, second]);
    assert_eq!(data.state(&id).unwrap().unwrap(), before, "state unchanged");
    assert!(data.attempts(&id).unwrap().is_empty(), "not an attempt");
    let (entry, _) = only_entry(&data);
    let retry = Next::Retry { due_ms: 9_000 };
    data.record_attempt(&entry, &id, &attempt(1, 4_000), &retry, 4_000)
        .unwrap()
        .unwrap();
    assert_eq!(data.attempts(&id).unwrap().len(), 1);
    assert_eq!(data.redirects(&id).unwrap().len(), 2);
    let other = tenant(&engine, "other");
    assert!(other.redirects(&id).unwrap().is_empty(), "per tenant");

    let missing = DeliveryId::generate();
    let refused = data.record_redirect(&missing, &redirect(RedirectedBy::Admin, 5_000, None));
    assert!(matches!(refused, Err(Error::NotFound(_))), "{refused:?}");
    assert!(data.redirects(&missing).unwrap().is_empty());

    let pull = tenant(&engine, "purged");
    accepted(&pull, "evt_2", 1_000).await;
    let dead = kill(&pull, 6_000);
    pull.record_redirect(&dead, &redirect(RedirectedBy::Admin, 7_000, Some(500)))
        .unwrap();
    let letters = pull.dead_letters(None, 10, &|_| true).unwrap();
    let (key, letter) = &letters[0];
    assert!(pull.purge_dead_letter(key, letter).unwrap());
    assert!(
        pull.redirects(&dead).unwrap().is_empty(),
        "purged with the delivery"
    );

    // Retention takes a delivered delivery's redirects with it.
    let (entry, _) = only_entry(&data);
    data.record_attempt(&entry, &id, &attempt(2, 9_000), &Next::Delivered, 9_000)
        .unwrap()
        .unwrap();
    let request = SweepRequest {
        delivered_before_ms: 10_000,
        idem_before_ms: 0,
        dead_before_ms: 0,
        batch: 100,
        idem_scan: 100,
    };
    assert_eq!(data.sweep(&request, &mut Vec::new()).unwrap().delivered, 1);
    assert!(data.redirects(&id).unwrap().is_empty(), "swept with it");
}
