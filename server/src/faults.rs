//! Fault injection for tests: a tenant actor's panic switch beside storage's
//! own; only in unit tests and `fault-injection` builds, never in production.

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
