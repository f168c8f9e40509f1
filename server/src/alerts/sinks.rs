//! A tenant's alert sinks: the tenant's and the operator's, each a queue of its
//! own in the delivery store with a dispatcher of its own.

use std::{sync::Arc, time::Duration};

use futures_util::future::{AbortHandle, BoxFuture};
use hookd_proto::domain::defaults;
use hookd_sdk::signature::Secret;

use crate::routes::handle::Wake;
use crate::routes::settings::ForwardSettings;
use crate::{
    config::{ConcurrencySettings, SinkFormat},
    egress::AddressPolicy,
    error::Result,
    ids::{DeliveryId, EventId, RequestId, TenantId},
    store::{
        api::{CommitOutcome, Receipt},
        records::EventMeta,
        NewDelivery, TenantStore,
    },
    tenant::Services,
};

/// The tenant's own sink's name (its scope is `tenant~~alerts`).
pub const TENANT_SINK: &str = "alerts";
/// The operator's sink's name (its scope is `tenant~~operator`).
pub const OPERATOR_SINK: &str = "operator";
/// Every sink's name: the scopes a tenant's sinks may have queued to.
pub const SINK_NAMES: [&str; 2] = [TENANT_SINK, OPERATOR_SINK];

/// How every sink is delivered to (`[alerts]`).
#[derive(Debug, Clone)]
pub struct SinkDelivery {
    /// Attempts in flight per sink.
    pub max_in_flight: usize,
    /// Delays between attempts, ms.
    pub schedule_ms: Vec<i64>,
    /// How long a notification is retried, ms.
    pub window_ms: i64,
    /// One attempt's timeout.
    pub timeout: Duration,
}

/// A sink to start: where, how and with which secret.
///
/// A tenant's alert sinks: each is a queue of its own in the delivery
/// store (scope `tenant~~alerts` for the tenant's sink, `tenant~~operator`
/// for the operator's), forwarded by a dispatcher of its own with its own
/// slots, breaker and retries, so notifications are durable, retried and
/// go out while the tenant's routes are saturated or their breaker is
/// open. No route is named so: they never show among the tenant's
/// deliveries, dead letters or routes.
#[derive(Clone)]
pub struct Sink {
    /// `alerts` (the tenant's) or `operator`.
    pub name: &'static str,
    /// Absolute http(s) URL.
    pub url: String,
    /// How events are written.
    pub format: SinkFormat,
    /// What its events are signed with.
    pub secret: Secret,
    /// The addresses it may reach; `None` for a sink in the config file.
    pub policy: Option<Arc<AddressPolicy>>,
}

/// A running sink; dropping it stops its dispatcher (its queue stays).
pub struct SinkHandle {
    /// `alerts` (the tenant's) or `operator`.
    name: &'static str,
    format: SinkFormat,
    data: TenantStore,
    wake: Arc<Wake>,
    abort: AbortHandle,
}

impl Drop for SinkHandle {
    fn drop(&mut self) {
        self.abort.abort();
    }
}

impl SinkHandle {
    /// Starts `sink`'s dispatcher for `tenant`.
    pub fn start(
        services: &Services,
        tenant: &TenantId,
        sink: &Sink,
        delivery: &SinkDelivery,
    ) -> Result<SinkHandle> {
        let data = services.store.tenant(&tenant.alert_scope(sink.name))?;
        let wake = Arc::new(Wake::default());
        let settings = ForwardSettings {
            url: sink.url.clone(),
            secret: sink.secret.clone(),
            timeout: delivery.timeout,
            connect_timeout: delivery.timeout,
            schedule_ms: delivery.schedule_ms.clone(),
            window_ms: delivery.window_ms,
            jitter: defaults::RETRY_JITTER,
            max_in_flight: delivery.max_in_flight,
            concurrency: ConcurrencySettings::FIXED,
            delivery_rate: None,
            breaker_threshold: defaults::BREAKER_FAILURE_THRESHOLD,
            breaker_cooldown_ms: (defaults::BREAKER_COOLDOWN_SECS * 1000.0) as i64,
            address_policy: sink.policy.clone(),
            ca_certs: Vec::new(),
            transform: None,
        };
        let name = format!("~{}", sink.name);
        let metrics = services.telemetry.metrics();
        let abort = services.start_dispatcher(
            (tenant, &name),
            (data.clone(), wake.clone(), None),
            (&settings, metrics.route(&metrics.tenant(tenant), &name)),
            None,
        )?;
        Ok(SinkHandle {
            name: sink.name,
            format: sink.format,
            data,
            wake,
            abort,
        })
    }

    /// Whether this is the operator's sink (its notifications are held to
    /// the operator's budget).
    pub fn is_operator(&self) -> bool {
        self.name == OPERATOR_SINK
    }

    /// How this sink's events are written.
    pub fn format(&self) -> SinkFormat {
        self.format
    }

    /// Queues one notification (`id` is its `webhook-id`) durably; the
    /// future resolves once it is on disk (true) or failed (false), and
    /// wakes the dispatcher.
    pub fn queue(&self, id: &str, body: Vec<u8>, now_ms: i64) -> BoxFuture<'static, bool> {
        let item = NewDelivery {
            event_id: EventId::new(id),
            meta: EventMeta {
                event_id: EventId::new(id),
                delivery_id: DeliveryId::generate(),
                request_id: RequestId::generate(),
                received_at_ms: now_ms,
                headers: vec![("content-type".to_owned(), "application/json".to_owned())],
                trace_id: String::new(),
                span_id: String::new(),
                sampled: false,
            },
            body: body.into(),
            due_ms: now_ms,
            content_key: None,
            copies: Vec::new(),
            receipt: Receipt::Queued,
            routes: Vec::new(),
            event_type: None,
        };
        let (committed, wake) = (self.data.commit(item), self.wake.clone());
        Box::pin(async move {
            match committed.await {
                Ok(CommitOutcome::Accepted) => {
                    wake.queued();
                    true
                }
                Ok(_) => true,
                Err(e) => {
                    tracing::error!(error = %e, "queuing an alert notification failed");
                    false
                }
            }
        })
    }
}
