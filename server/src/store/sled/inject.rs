//! The storage half of fault injection (see [`crate::faults`]): a switch
//! that makes the next batch of writes holding a tenant's delivery fail as
//! a storage error, and one that makes the next read of a tenant's delivery
//! state fail so. Compiled only into unit tests and builds with the
//! `fault-injection` feature.

use crate::faults::TenantSwitch;

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
