//! The queue counts of every tenant an evaluation reads come from one read
//! of the engine, split back to each tenant in order.

use std::sync::Arc;

use super::{read_counts, Counts};
use crate::{
    error::Error,
    ids::TenantId,
    store::{
        api::{QueueCounts, Storage, TenantStore},
        SledStore,
    },
};

fn depth(depth: u64) -> QueueCounts {
    QueueCounts {
        depth,
        ..QueueCounts::default()
    }
}

/// Three route handles of two tenants on a real sled store.
fn handles(dir: &std::path::Path) -> (TenantStore, TenantStore, TenantStore) {
    let (store, _committer) = SledStore::open(dir, 64, false).unwrap();
    let tenant = |id: &str| store.tenant(&TenantId::try_from(id).unwrap()).unwrap();
    (tenant("acme"), tenant("acme-2"), tenant("globex"))
}

#[test]
fn every_due_tenants_counts_come_from_one_read_in_order() {
    let dir = tempfile::tempdir().unwrap();
    let (a1, a2, g) = handles(dir.path());
    let due = vec![
        Some(vec![a1.clone(), a2.clone()]),
        None,
        Some(vec![g.clone()]),
    ];
    let counts = read_counts(due, |data| {
        assert_eq!(data.len(), 3, "every due route in the one read");
        for (read, want) in data.iter().zip([&a1, &a2, &g]) {
            assert!(Arc::ptr_eq(read, want), "in the tenants' order");
        }
        Ok(vec![depth(1), depth(2), depth(3)])
    });
    assert_eq!(
        counts,
        vec![
            Counts::Read(vec![depth(1), depth(2)]),
            Counts::NotDue,
            Counts::Read(vec![depth(3)]),
        ]
    );
}

#[test]
fn a_failed_or_short_read_leaves_the_last_readings_standing() {
    let dir = tempfile::tempdir().unwrap();
    let (a1, a2, g) = handles(dir.path());
    let due = || {
        vec![
            Some(vec![a1.clone(), a2.clone()]),
            None,
            Some(vec![g.clone()]),
        ]
    };
    let failed = read_counts(due(), |_| Err(Error::InvalidArgument("down".into())));
    assert_eq!(failed, vec![Counts::Failed, Counts::NotDue, Counts::Failed]);
    let short = read_counts(due(), |_| Ok(vec![depth(1), depth(2)]));
    assert_eq!(
        short,
        vec![
            Counts::Read(vec![depth(1), depth(2)]),
            Counts::NotDue,
            Counts::Failed,
        ]
    );
}

#[test]
fn nothing_due_reads_nothing() {
    let counts = read_counts(vec![None, None], |_| panic!("nothing was due"));
    assert_eq!(counts, vec![Counts::NotDue, Counts::NotDue]);
}
