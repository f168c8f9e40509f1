//! Conformance of the queue counts read for many tenants at once
//! (`Storage::counts_of`): in order, each the same as its own handle's.

use super::{accepted, kill, tenant, Engine};
use crate::{api::QueueCounts, ids::TenantId};

pub(super) async fn counts_of_many_tenants_are_each_their_own(engine: Engine) {
    let (acme, globex) = (tenant(&engine, "acme"), tenant(&engine, "globex"));
    let empty = tenant(&engine, "initech");
    accepted(&acme, "evt_dead", 1_000).await;
    kill(&acme, 1_500);
    accepted(&acme, "evt_1", 2_000).await;
    accepted(&acme, "evt_2", 3_000).await;
    accepted(&globex, "evt_1", 4_000).await;
    let scope = TenantId::try_from("acme").unwrap().alert_scope("webhook");
    let sink = engine.store.tenant(&scope).unwrap();

    let handles = [empty, acme, sink, globex];
    let read = engine.store.counts_of(&handles).unwrap();

    let each: Vec<QueueCounts> = handles.iter().map(|h| h.counts().unwrap()).collect();
    assert_eq!(read, each);
    assert_eq!((read[1].depth, read[1].dead), (2, 1), "{read:?}");
    assert_eq!(read[3].depth, 1, "{read:?}");
    assert!(read[1].oldest_due_ms.is_some() && read[0].oldest_due_ms.is_none());
    assert!(engine.store.counts_of(&[]).unwrap().is_empty());
}
