//! Retention: every few seconds, each tenant forgets idempotency records and
//! deletes delivered events and recorded rejections past their retention,
//! in bounded batches so a sweep never stalls the ingest path.

use std::{collections::HashMap, time::Duration};

use crate::{
    config::RetentionConfig,
    ids::TenantId,
    store::api::{blocking, SweepRequest},
    tenant::Registry,
};

/// Sweeps forever; dropped with the server.
pub async fn run(registry: Registry, retention: RetentionConfig) {
    let mut cursors: HashMap<TenantId, Vec<u8>> = HashMap::new();
    let interval = Duration::from_secs_f64(retention.sweep_interval_secs);
    loop {
        tokio::time::sleep(interval).await;
        let now = registry.clock().now_ms();
        for handle in registry.handles() {
            let cursor = cursors.entry(handle.settings.id.clone()).or_default();
            let request = SweepRequest {
                delivered_before_ms: now - (retention.delivered_secs as i64).saturating_mul(1000),
                idem_before_ms: now - (retention.idempotency_secs as i64).saturating_mul(1000),
                batch: retention.sweep_batch,
            };
            let (data, mut moved) = (handle.data.clone(), std::mem::take(cursor));
            let result = blocking(move || {
                let swept = data.sweep(&request, &mut moved);
                swept.map(|swept| (swept, moved))
            })
            .await
            .map(|(swept, moved)| {
                *cursor = moved;
                swept
            });
            match result {
                Ok(swept) if swept.delivered + swept.idempotency > 0 => tracing::info!(
                    tenant = %handle.settings.id,
                    delivered = swept.delivered,
                    idempotency = swept.idempotency,
                    "retention sweep removed expired records"
                ),
                Ok(_) => {}
                Err(e) => {
                    tracing::error!(tenant = %handle.settings.id, error = %e, "retention sweep failed")
                }
            }
            let rejections = registry.store().rejections().and_then(|r| {
                r.sweep(
                    handle.settings.id.as_str(),
                    now - (retention.delivered_secs as i64).saturating_mul(1000),
                    retention.sweep_batch,
                )
            });
            if let Err(e) = rejections {
                tracing::error!(tenant = %handle.settings.id, error = %e, "retention sweep of rejections failed");
            }
        }
    }
}
