//! Redelivery of a settled delivery that is no dead letter: by id however
//! often (`Resend::Any`), by filter (`Resend::Once`) only once.

use super::{accepted, attempt, only_entry, tenant, Engine};
use crate::{
    error::Error,
    ids::DeliveryId,
    lifecycle::{Next, Resend},
    records::DeliveryStatus,
};

/// Redelivery of a settled delivery that is no dead letter: by id it may
/// be sent again however often (`Resend::Any`); by filter
/// (`Resend::Once`) only one never redelivered is, so of concurrent calls
/// exactly one makes a new delivery.
pub(super) async fn a_delivered_delivery_is_resent_once_by_concurrent_calls_that_ask_so(
    engine: Engine,
) {
    let data = tenant(&engine, "acme");
    accepted(&data, "evt_1", 1_000).await;
    let (entry, id) = only_entry(&data);
    let state = data
        .record_attempt(&entry, &id, &attempt(1, 1_100), &Next::Delivered, 1_100)
        .unwrap()
        .unwrap();
    assert_eq!(state.status, DeliveryStatus::Delivered);
    let results: Vec<_> = std::thread::scope(|s| {
        let calls: Vec<_> = (0..8)
            .map(|_| s.spawn(|| data.redeliver(&id, 2_000, Resend::Once)))
            .collect();
        calls.into_iter().map(|c| c.join().unwrap()).collect()
    });
    let made: Vec<&DeliveryId> = results.iter().filter_map(|r| r.as_ref().ok()).collect();
    assert_eq!(made.len(), 1, "exactly one resend: {results:?}");
    for refused in results.iter().filter_map(|r| r.as_ref().err()) {
        assert!(matches!(refused, Error::Precondition(_)), "{refused}");
    }
    let original = data.state(&id).unwrap().unwrap();
    assert_eq!(original.status, DeliveryStatus::Delivered);
    assert_eq!(original.redelivered_as.as_ref(), Some(made[0]));
    let by_id = data.redeliver(&id, 3_000, Resend::Any).unwrap();
    assert_ne!(&by_id, made[0], "by id it may be sent again");
}
