//! The storage half of fault injection (see [`crate::faults`]): a switch
//! that makes the next batch of writes holding a tenant's delivery fail as
//! a storage error, and one that makes the next read of a tenant's delivery
//! state fail so. Compiled only into unit tests and builds with the
//! `fault-injection` feature.

use std::{collections::HashSet, sync::Mutex};

static FAIL_NEXT_WRITE: Mutex<Option<HashSet<String>>> = Mutex::new(None);

/// The next batch of writes holding a delivery of `tenant` fails as a
/// storage error would (keyed by tenant so tests in one process stay apart).
pub fn fail_next_write(tenant: &str) {
    FAIL_NEXT_WRITE
        .lock()
        .expect("write switch")
        .get_or_insert_with(HashSet::new)
        .insert(tenant.to_owned());
}

/// Whether [`fail_next_write`] was called for `tenant` (answered once).
pub(crate) fn take_write_failure(tenant: &str) -> bool {
    FAIL_NEXT_WRITE
        .lock()
        .expect("write switch")
        .as_mut()
        .is_some_and(|set| set.remove(tenant))
}

static FAIL_NEXT_READ: Mutex<Option<HashSet<String>>> = Mutex::new(None);

/// The next read of a delivery state of `tenant` (on the embedded engine)
/// fails as a storage error would, e.g. the one a forward attempt starts
/// with.
pub fn fail_next_read(tenant: &str) {
    FAIL_NEXT_READ
        .lock()
        .expect("read switch")
        .get_or_insert_with(HashSet::new)
        .insert(tenant.to_owned());
}

/// Whether [`fail_next_read`] was called for `tenant` (answered once).
pub(crate) fn take_read_failure(tenant: &str) -> bool {
    FAIL_NEXT_READ
        .lock()
        .expect("read switch")
        .as_mut()
        .is_some_and(|set| set.remove(tenant))
}
