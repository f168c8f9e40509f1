//! An alert sink's queue, apart from its tenant's deliveries, the same on
//! both engines.

use super::{new_delivery, tenant, Engine};
use crate::{ids::TenantId, CommitOutcome};

pub(super) async fn a_sink_queue_is_apart_from_the_tenants_deliveries(engine: Engine) {
    let acme = TenantId::try_from("acme").unwrap();
    let sink = engine.store.tenant(&acme.alert_scope("alerts")).unwrap();
    let queued = sink
        .commit(new_delivery("ntf_1", 1_000, None))
        .await
        .unwrap();
    assert_eq!(queued, CommitOutcome::Accepted);
    assert_eq!(sink.queue(None, 10).unwrap().len(), 1);
    let own = tenant(&engine, "acme");
    assert!(own.deliveries(None, None, 10).unwrap().is_empty());
    assert!(own.queue(None, 10).unwrap().is_empty());
}
