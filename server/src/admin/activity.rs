//! What a tenant is doing now, for the dashboard's overview.

use hookd_control::{
    model::{HandshakeActivity, IngestCounts, TenantActivity},
    Result as ApiResult,
};

use hookd_sdk::signature::handshake::Handshake;

use super::{api, Backend};
use crate::{ids::DeliveryId, metrics::window::IngestWindows, tenant::TenantHandle};

/// Most recorded refusals counted per window.
const REFUSED_CAP: usize = 100_000;
const HOUR_MS: i64 = 3_600_000;
/// Most stored deliveries read to seed a tenant's accepted counts of the
/// day before a restart.
const SEED_SCAN: usize = 100_000;
/// Stored deliveries read per step of that.
const SEED_PAGE: usize = 1_000;

/// Receive times in `[from, until)` of the tenant's stored deliveries that
/// were accepted (not made by Redeliver), reading newest first at most
/// [`SEED_SCAN`]; deliveries retention already removed are not counted.
/// Seeds `windows` with the tenant's deliveries accepted before this
/// process began counting, the first time they are asked for it.
pub(super) fn seed(windows: &IngestWindows, handle: &TenantHandle, now_ms: i64) -> ApiResult<()> {
    if let Some((from, until)) = windows.to_seed(handle.data().tenant(), now_ms) {
        let received = accepted_between(handle, from, until)?;
        windows.seed(handle.data().tenant(), &received);
    }
    Ok(())
}

fn accepted_between(handle: &TenantHandle, from: i64, until: i64) -> ApiResult<Vec<i64>> {
    let mut received = Vec::new();
    let mut before: Option<DeliveryId> = None;
    let mut read = 0;
    while read < SEED_SCAN {
        let page = handle
            .data()
            .deliveries(None, before.as_ref(), SEED_PAGE)
            .map_err(api)?;
        let more = page.len() == SEED_PAGE;
        read += page.len();
        for (id, state) in page {
            if state.received_at_ms < from {
                return Ok(received);
            }
            if state.received_at_ms < until && state.redelivery_of.is_none() {
                received.push(state.received_at_ms);
            }
            before = Some(id);
        }
        if !more {
            break;
        }
    }
    Ok(received)
}

impl Backend {
    /// What a tenant is doing now, for the dashboard's overview: live queue and
    /// dead-letter counts, the oldest waiting delivery, the breaker, the ingest
    /// counts and the refusals recorded in the last hour and day (the accepted
    /// counts of the day before a restart seeded from the stored deliveries).
    pub(super) fn activity(&self, tenant_id: &str) -> ApiResult<TenantActivity> {
        let handle = self.tenant(tenant_id)?;
        let oldest_pending_ms = handle.data().counts().map_err(api)?.oldest_pending_ms;
        let own_label = handle.state().metrics.label() == tenant_id;
        let breaker_open = (own_label && handle.settings().forward.is_some())
            .then(|| handle.state().metrics.breaker_open());
        let rejections = self.services.store.rejections().map_err(api)?;
        let now = self.now_ms();
        let telemetry = &self.services.telemetry;
        let windows = telemetry.metrics().windows();
        seed(windows, &handle, now)?;
        let ingested = |span_ms: i64| {
            let counts = windows.counts(handle.data().tenant(), now, span_ms);
            IngestCounts {
                accepted: counts.accepted,
                duplicates: counts.duplicates,
                rejected: counts
                    .rejected
                    .into_iter()
                    .map(|(code, n)| (code.as_str().to_owned(), n))
                    .collect(),
            }
        };
        let refused = |window_ms: i64| {
            rejections
                .count_by_code(tenant_id, now - window_ms, REFUSED_CAP)
                .map_err(api)
        };
        let counts = handle.data().counts().map_err(api)?;
        let median_clock_skew_secs = own_label
            .then(|| {
                let metrics = self.services.telemetry.metrics();
                metrics
                    .senders()
                    .label(handle.state().metrics.label())
                    .median_skew_secs()
            })
            .flatten();
        let handshake = Handshake::of(handle.settings().scheme)
            .filter(|_| own_label)
            .map(|kind| {
                let state = handle.state().metrics.handshakes().state();
                HandshakeActivity {
                    handshake: kind.as_str().to_owned(),
                    answered: state.answered,
                    refused: state.refused,
                    last_answered_ms: state.last_answered_ms,
                    last_refused_ms: state.last_refused_ms,
                    last_refusal: state.last_refusal,
                }
            });
        Ok(TenantActivity {
            queue_depth: counts.depth,
            dead_letters: counts.dead,
            oldest_pending_ms,
            breaker_open,
            last_hour: ingested(HOUR_MS),
            last_day: ingested(24 * HOUR_MS),
            refused_last_hour: refused(HOUR_MS)?,
            refused_last_day: refused(24 * HOUR_MS)?,
            median_clock_skew_secs,
            handshake,
        })
    }
}
