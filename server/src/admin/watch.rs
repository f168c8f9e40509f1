//! WatchDeliveries and the dashboard's live tail over the delivery feed.

use futures_util::FutureExt;
use hookd_control::{
    model::{DeliveryEventView, Grant},
    watch::{self, Ends},
    Error as ApiError, EventStream, Result as ApiResult,
};
use tokio::sync::watch as signal;

use super::{api, Backend};
use crate::{feed::DeliveryEvent, ids::TenantId};

/// How often an open watch re-checks its token without a signal: 30 s on
/// the server's clock.
pub(super) const RECHECK_MS: i64 = 30_000;

/// The tenant a watch is bound to: its id and the incarnation it had when
/// the watch opened.
struct Bound {
    tenant_id: String,
    incarnation: String,
}

impl Backend {
    /// Tells every open watch to re-check its token now.
    pub(super) fn revoked(&self) {
        self.revocations.send_modify(|n| *n = n.wrapping_add(1));
    }

    /// The current incarnation of `tenant_id`; NOT_FOUND without one.
    async fn incarnation(&self, tenant_id: &str) -> ApiResult<String> {
        let id = tenant_id.to_owned();
        self.blocking(move |b| b.catalog.tenant_incarnation(&id).map_err(api))
            .await?
            .ok_or_else(|| ApiError::NotFound(format!("tenant {tenant_id}")))
    }

    /// Events of one tenant (bound to its incarnation) or of all, for the
    /// holder of `grant`.
    ///
    /// WatchDeliveries and the dashboard's live tail over the delivery feed: a
    /// watch of one tenant subscribes to that tenant's channel alone and is
    /// bound to the tenant's incarnation; every watch re-checks its token when
    /// a token is revoked or a tenant deleted, and every [`RECHECK_MS`] besides
    /// (a revocation on another replica sends no signal here).
    pub(super) async fn watch_events(
        &self,
        grant: &Grant,
        tenant_id: Option<&str>,
    ) -> ApiResult<EventStream> {
        let signal = self.revocations.subscribe();
        let Some(tenant_id) = tenant_id else {
            let ends = Ends {
                revoked: self.clone().ended(grant.clone(), None, signal).boxed(),
                ..Ends::never()
            };
            let receiver = self.services.feed.subscribe();
            return Ok(watch::from_broadcast(
                receiver,
                |e| Some(event_view(e)),
                ends,
            ));
        };
        let tenant = TenantId::try_from(tenant_id)
            .map_err(|e| ApiError::InvalidArgument(format!("tenant_id: {e}")))?;
        let incarnation = self.incarnation(tenant_id).await?;
        let receiver = self.services.feed.subscribe_tenant(&tenant);
        // Deleted (and its channel closed) between the two looks: refuse
        // rather than watch whatever comes next under the id.
        if self.incarnation(tenant_id).await? != incarnation {
            return Err(ApiError::NotFound(format!("tenant {tenant_id}")));
        }
        let bound = Bound {
            tenant_id: tenant_id.to_owned(),
            incarnation,
        };
        let ends = Ends {
            revoked: self
                .clone()
                .ended(grant.clone(), Some(bound), signal)
                .boxed(),
            closed: ApiError::NotFound(format!("tenant {tenant_id} was deleted")),
        };
        Ok(watch::from_broadcast(
            receiver,
            |e| Some(event_view(e)),
            ends,
        ))
    }

    /// Resolves once `grant` no longer holds (UNAUTHENTICATED) or the
    /// watched tenant is not the incarnation it was (NOT_FOUND).
    async fn ended(
        self,
        grant: Grant,
        bound: Option<Bound>,
        mut signal: signal::Receiver<u64>,
    ) -> ApiError {
        loop {
            let recheck = self.services.clock.sleep_until(self.now_ms() + RECHECK_MS);
            tokio::select! {
                _ = signal.changed() => {}
                () = recheck => {}
            }
            if !self.still(&grant).await {
                return ApiError::Unauthenticated(
                    "the token this watch was opened with was revoked".into(),
                );
            }
            if let Some(bound) = &bound {
                let now = self.incarnation(&bound.tenant_id).await.ok();
                if now.as_deref() != Some(bound.incarnation.as_str()) {
                    return ApiError::NotFound(format!("tenant {} was deleted", bound.tenant_id));
                }
            }
        }
    }

    /// Whether `grant` still holds; a lookup that fails counts as not.
    pub(super) async fn still(&self, grant: &Grant) -> bool {
        let Some(binding) = grant.binding.clone() else {
            return true;
        };
        self.blocking(move |b| {
            Ok(b.catalog
                .token_live(&binding.token_id, &binding.tenant_incarnation)
                .unwrap_or_else(|e| {
                    tracing::error!(error = %e, "token lookup failed");
                    false
                }))
        })
        .await
        .unwrap_or(false)
    }
}

fn event_view(e: DeliveryEvent) -> DeliveryEventView {
    DeliveryEventView {
        kind: e.kind,
        tenant_id: e.tenant.to_string(),
        delivery_id: e.delivery_id.to_string(),
        event_id: e.event_id.to_string(),
        at_ms: e.at_ms,
        attempt: (e.attempt > 0).then_some(e.attempt),
        status_code: e.status_code,
        reason: e.reason,
        redelivered_as: None,
        next_attempt_at_ms: None,
    }
}
