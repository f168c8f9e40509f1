//! A dispatcher's right to forward its tenant's deliveries, held by one
//! process at a time of several sharing one store.

use std::{
    sync::Arc,
    time::{Duration, Instant},
};

use crate::{
    ids::TenantId,
    store::api::{blocking, Fence, Store},
};

/// Longest a process that does not hold a lease waits before asking again.
const RETRY_CLAIM: Duration = Duration::from_secs(1);

/// Who forwards, and for how long a claim lasts.
#[derive(Clone)]
pub struct LeaseTerms {
    /// This process (one id per process).
    pub owner: Arc<str>,
    /// How long a claim lasts unrenewed.
    pub lease: Duration,
}

impl LeaseTerms {
    /// Terms for a new process: a fresh owner id.
    pub fn new(lease: Duration) -> LeaseTerms {
        LeaseTerms {
            owner: Arc::from(ulid::Ulid::new().to_string()),
            lease,
        }
    }
}

/// One tenant's lease as its dispatcher sees it.
///
/// A dispatcher's right to forward its tenant's deliveries
/// ([`crate::store::api::Storage::claim_forwarding`]): of several processes
/// sharing one store, one at a time holds a tenant's lease, so its
/// `max_in_flight`, delivery rate and breaker hold for the tenant as a
/// whole. The holder renews it every third of the lease; a process that
/// does not hold it asks again every second, so it takes the tenant over
/// soon after a dead holder's lease runs out (a process shutting down gives
/// its leases up: [`crate::tenant::Registry::release_leases`]). Leases run
/// on real time (the database's), never on a test's clock. A claim hands
/// back the lease's [`Fence`]: each pass reads its due deliveries and
/// records its rounds under it, so a holder that stalled past its lease
/// stays out once another took the tenant over.
pub(super) struct ForwardLease {
    store: Store,
    tenant: TenantId,
    terms: LeaseTerms,
    held: Option<Fence>,
    /// When to ask the store again.
    ask_at: Option<Instant>,
}

impl ForwardLease {
    pub(super) fn new(store: Store, tenant: TenantId, terms: LeaseTerms) -> ForwardLease {
        ForwardLease {
            store,
            tenant,
            terms,
            held: None,
            ask_at: None,
        }
    }

    /// Asks the store again on the next [`ForwardLease::holds`]: an attempt
    /// found the lease (or its entry) moved on.
    pub(super) fn recheck(&mut self) {
        self.ask_at = None;
    }

    /// The lease's fence while this process may forward: claims or renews
    /// the lease when it is time to; a failed claim counts as not held.
    pub(super) async fn holds(&mut self) -> Option<Fence> {
        let now = Instant::now();
        if self.ask_at.is_some_and(|at| now < at) {
            return self.held.clone();
        }
        let (store, tenant, owner) = (
            self.store.clone(),
            self.tenant.clone(),
            self.terms.owner.clone(),
        );
        let lease_ms = self.terms.lease.as_millis() as i64;
        let held = blocking(move || store.claim_forwarding(&tenant, &owner, lease_ms))
            .await
            .unwrap_or_else(|e| {
                tracing::error!(tenant = %self.tenant, error = %e, "claiming the forwarding lease failed; not forwarding until it succeeds");
                None
            });
        if held.is_some() != self.held.is_some() {
            match held.is_some() {
                true => {
                    tracing::info!(tenant = %self.tenant, "forwarding lease taken: this process forwards the tenant")
                }
                false => {
                    tracing::info!(tenant = %self.tenant, "forwarding lease held elsewhere: another process forwards the tenant")
                }
            }
        }
        let wait = match held {
            Some(_) => self.terms.lease / 3,
            None => RETRY_CLAIM.min(self.terms.lease / 3),
        };
        self.ask_at = Some(now + wait);
        self.held = held.clone();
        held
    }
}
