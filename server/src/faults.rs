//! Fault injection for tests: a switch that makes a tenant actor panic on
//! its next delivery, beside storage's own (`hookd_store::inject`): a
//! [`FaultSync`] that records every sync and can be made to fail, a switch
//! that makes the next batch of writes holding a tenant's delivery fail as
//! a storage error (and one for the next read of a delivery's state).
//! Compiled only into unit tests and builds with the `fault-injection`
//! feature (the integration tests); a production build of hookd cannot
//! reach any of it.

use crate::store::inject::TenantSwitch;
pub use crate::store::inject::{fail_next_read, fail_next_write, FaultSync, Synced};

static PANIC_NEXT: TenantSwitch = TenantSwitch::new();

/// The actor of `tenant` panics while handling its next delivery.
pub fn panic_next_ingest(tenant: &str) {
    PANIC_NEXT.arm(tenant);
}

/// Panics if [`panic_next_ingest`] was called for `tenant` (once).
pub(crate) fn maybe_panic(tenant: &str) {
    if PANIC_NEXT.take(tenant) {
        panic!("injected panic in the actor of tenant {tenant}");
    }
}
