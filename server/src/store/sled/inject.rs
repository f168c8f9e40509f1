//! The storage half of fault injection (see [`crate::faults`]): a switch
//! that makes the next batch of writes holding a tenant's delivery fail as
//! a storage error, and one that makes the next read of a tenant's delivery
//! state fail so. Compiled only into unit tests and builds with the
//! `fault-injection` feature.

use std::{collections::HashSet, sync::Mutex};

/// A fault armed per tenant that fires once: keyed by tenant so tests in
/// one process stay apart.
pub(crate) struct TenantSwitch(Mutex<Option<HashSet<String>>>);

impl TenantSwitch {
    pub(crate) const fn new() -> TenantSwitch {
        TenantSwitch(Mutex::new(None))
    }

    /// Arms the switch for `tenant`.
    pub(crate) fn arm(&self, tenant: &str) {
        self.0
            .lock()
            .expect("fault switch")
            .get_or_insert_with(HashSet::new)
            .insert(tenant.to_owned());
    }

    /// Whether the switch was armed for `tenant`; disarms it.
    pub(crate) fn take(&self, tenant: &str) -> bool {
        self.0
            .lock()
            .expect("fault switch")
            .as_mut()
            .is_some_and(|set| set.remove(tenant))
    }
}

static FAIL_NEXT_WRITE: TenantSwitch = TenantSwitch::new();

/// The next batch of writes holding a delivery of `tenant` fails as a
/// storage error would.
pub fn fail_next_write(tenant: &str) {
    FAIL_NEXT_WRITE.arm(tenant);
}

/// Whether [`fail_next_write`] was called for `tenant` (answered once).
pub(crate) fn take_write_failure(tenant: &str) -> bool {
    FAIL_NEXT_WRITE.take(tenant)
}

static FAIL_NEXT_READ: TenantSwitch = TenantSwitch::new();

/// The next read of a delivery state of `tenant` (on the embedded engine)
/// fails as a storage error would, e.g. the one a forward attempt starts
/// with.
pub fn fail_next_read(tenant: &str) {
    FAIL_NEXT_READ.arm(tenant);
}

/// Whether [`fail_next_read`] was called for `tenant` (answered once).
pub(crate) fn take_read_failure(tenant: &str) -> bool {
    FAIL_NEXT_READ.take(tenant)
}
