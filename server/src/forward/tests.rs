//! The dispatcher against a real sled store whose durability barrier a test
//! holds closed, and a small HTTP/1 destination that counts what arrives:
//! attempts keep starting while a round of outcomes is made durable, and
//! nothing is reported before it is.

use std::{
    sync::{
        atomic::{AtomicUsize, Ordering},
        Arc,
    },
    time::Duration,
};

use futures_util::{future::BoxFuture, FutureExt};
use hookd_sdk::signature::{Scheme, Secret};
use tokio::{
    io::{AsyncReadExt, AsyncWriteExt},
    net::{TcpListener, TcpStream},
    sync::{watch, Notify},
};

use super::{Dispatcher, DispatcherParts, LeaseTerms};
use crate::{
    clock::{Clock, SystemClock},
    config::{ConcurrencySettings, ForwardSettings},
    error::Result,
    feed::{DeliveryEventKind, DeliveryFeed},
    ids::{DeliveryId, EventId, RequestId, TenantId},
    metrics::Metrics,
    store::{
        api::{
            CatalogRows, CommitFigures, CommitOutcome, Fence, Receipt, RejectionLog, Storage,
            Store, TenantStore,
        },
        records::EventMeta,
        NewDelivery, SledStore,
    },
    telemetry::Spans,
};

/// A store whose durability barriers wait, after the real one, until the
/// test opens the gate.
struct GatedBarrier {
    inner: SledStore,
    open: watch::Sender<bool>,
    /// Barriers asked for so far.
    asked: AtomicUsize,
}

impl Storage for GatedBarrier {
    fn tenant(&self, id: &TenantId) -> Result<TenantStore> {
        self.inner.tenant(id)
    }
    fn is_healthy(&self) -> bool {
        Storage::is_healthy(&self.inner)
    }
    fn durable_barrier(&self) -> BoxFuture<'static, Result<()>> {
        self.asked.fetch_add(1, Ordering::SeqCst);
        let (barrier, mut open) = (Storage::durable_barrier(&self.inner), self.open.subscribe());
        async move {
            barrier.await?;
            let _ = open.wait_for(|open| *open).await;
            Ok(())
        }
        .boxed()
    }
    fn drop_tenant_trees(&self, id: &TenantId) -> BoxFuture<'static, Result<()>> {
        Storage::drop_tenant_trees(&self.inner, id)
    }
    fn clear_tenant(&self, id: &TenantId) -> Result<()> {
        Storage::clear_tenant(&self.inner, id)
    }
    fn catalog_rows(&self) -> Result<Arc<dyn CatalogRows>> {
        self.inner.catalog_rows()
    }
    fn rejections(&self) -> Result<Arc<dyn RejectionLog>> {
        self.inner.rejections()
    }
    fn commit_figures(&self) -> CommitFigures {
        self.inner.commit_figures()
    }
    fn flush(&self) -> Result<()> {
        Storage::flush(&self.inner)
    }
    fn claim_forwarding(&self, tenant: &TenantId, owner: &str, ms: i64) -> Result<Option<Fence>> {
        self.inner.claim_forwarding(tenant, owner, ms)
    }
    fn release_forwarding(&self, tenant: &TenantId, owner: &str) -> Result<()> {
        self.inner.release_forwarding(tenant, owner)
    }
    fn catalog_version(&self) -> Result<u64> {
        self.inner.catalog_version()
    }
}

/// A destination answering every request 204 over kept-alive HTTP/1
/// connections; counts the requests and wakes `arrived` on each.
async fn sink(count: Arc<AtomicUsize>, arrived: Arc<Notify>) -> String {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}/hooks", listener.local_addr().unwrap());
    tokio::spawn(async move {
        while let Ok((stream, _)) = listener.accept().await {
            tokio::spawn(serve(stream, count.clone(), arrived.clone()));
        }
    });
    url
}

async fn serve(mut stream: TcpStream, count: Arc<AtomicUsize>, arrived: Arc<Notify>) {
    let mut buf = Vec::new();
    let mut chunk = [0u8; 4096];
    loop {
        while let Some(len) = request_len(&buf) {
            buf.drain(..len);
            count.fetch_add(1, Ordering::SeqCst);
            arrived.notify_waiters();
            let answer = b"HTTP/1.1 204 No Content\r\ncontent-length: 0\r\n\r\n";
            if stream.write_all(answer).await.is_err() {
                return;
            }
        }
        match stream.read(&mut chunk).await {
            Ok(0) | Err(_) => return,
            Ok(n) => buf.extend_from_slice(&chunk[..n]),
        }
    }
}

/// The length of the first complete request in `buf` (head and body).
fn request_len(buf: &[u8]) -> Option<usize> {
    let head = buf.windows(4).position(|w| w == b"\r\n\r\n")? + 4;
    let text = String::from_utf8_lossy(&buf[..head]).to_ascii_lowercase();
    let body: usize = text
        .lines()
        .find_map(|line| line.strip_prefix("content-length:"))
        .map_or(0, |v| v.trim().parse().unwrap_or(0));
    (buf.len() >= head + body).then_some(head + body)
}

fn settings(url: String) -> ForwardSettings {
    ForwardSettings {
        url,
        secret: Secret::from_provider(Scheme::Standard, "d", "whsec_AAAA").unwrap(),
        timeout: Duration::from_secs(5),
        connect_timeout: Duration::from_secs(5),
        schedule_ms: vec![1_000],
        window_ms: 60_000,
        jitter: 0.0,
        max_in_flight: 1,
        delivery_rate: None,
        breaker_threshold: 5,
        breaker_cooldown_ms: 30_000,
        concurrency: ConcurrencySettings::FIXED,
        address_policy: None,
        transform: None,
        ca_certs: Vec::new(),
    }
}

/// Queues `n` events due at `now_ms`; their delivery ids.
async fn queue(data: &TenantStore, n: usize, now_ms: i64) -> Vec<DeliveryId> {
    let mut ids = Vec::new();
    for i in 0..n {
        let id = DeliveryId::generate();
        let event_id = EventId::new(format!("evt_{i}"));
        let item = NewDelivery {
            event_id: event_id.clone(),
            meta: EventMeta {
                event_id,
                delivery_id: id.clone(),
                request_id: RequestId::generate(),
                received_at_ms: now_ms,
                headers: Vec::new(),
                trace_id: String::new(),
                span_id: String::new(),
                sampled: true,
            },
            body: r#"{"n":1}"#.into(),
            due_ms: now_ms,
            content_key: None,
            copies: Vec::new(),
            receipt: Receipt::Queued,
            routes: Vec::new(),
        };
        assert_eq!(data.commit(item).await.unwrap(), CommitOutcome::Accepted);
        ids.push(id);
    }
    ids
}

/// Waits (at most 5 s) until `count` reaches `n`; the count then.
async fn arrivals(count: &AtomicUsize, arrived: &Notify, n: usize) -> usize {
    let _ = tokio::time::timeout(Duration::from_secs(5), async {
        while count.load(Ordering::SeqCst) < n {
            let _ = tokio::time::timeout(Duration::from_millis(20), arrived.notified()).await;
        }
    })
    .await;
    count.load(Ordering::SeqCst)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn attempts_keep_starting_while_a_round_is_made_durable_and_are_reported_only_after() {
    let dir = tempfile::tempdir().unwrap();
    let (sled, _committer) = SledStore::open(dir.path(), 16, false).unwrap();
    let gated = Arc::new(GatedBarrier {
        inner: sled,
        open: watch::channel(false).0,
        asked: AtomicUsize::new(0),
    });
    let store: Store = gated.clone();
    let tenant = TenantId::try_from("t").unwrap();
    let data = store.tenant(&tenant).unwrap();
    let now_ms = SystemClock.now_ms();
    let ids = queue(&data, 6, now_ms).await;

    let (count, arrived) = (Arc::new(AtomicUsize::new(0)), Arc::new(Notify::new()));
    let url = sink(count.clone(), arrived.clone()).await;
    let metrics = Metrics::new(&crate::metrics::tests::config(16));
    let feed = DeliveryFeed::new(64);
    let mut outcomes = feed.subscribe_tenant(&tenant);
    let spans = Spans::new(&opentelemetry_sdk::trace::SdkTracerProvider::builder().build());
    let dispatcher = Dispatcher::new(DispatcherParts {
        tenant: tenant.clone(),
        route: "default".into(),
        data: data.clone(),
        store,
        settings: settings(url),
        clock: Arc::new(SystemClock),
        wake: Arc::new(Notify::new()),
        feed,
        spans,
        metrics: metrics.route(&metrics.tenant(&tenant), "default"),
        shared_cas: Arc::new(Vec::new()),
        lease: LeaseTerms::new(Duration::from_secs(30)),
        signals: None,
    })
    .unwrap();
    let running = tokio::spawn(dispatcher.run());

    // One slot (max_in_flight 1): the first outcome's barrier is held, and
    // still the next deliveries are sent, one at a time; their outcomes
    // wait for the next round, at most four per slot.
    let sent = arrivals(&count, &arrived, 5).await;
    assert_eq!(
        sent, 5,
        "with the first round's durability barrier held, only {sent} of 6 attempts reached the destination"
    );
    let _ = tokio::time::timeout(Duration::from_millis(200), arrived.notified()).await;
    assert_eq!(
        count.load(Ordering::SeqCst),
        5,
        "at most four outcomes per slot wait behind the round being written"
    );
    assert_eq!(
        gated.asked.load(Ordering::SeqCst),
        1,
        "one round is being written"
    );
    assert!(
        outcomes.try_recv().is_err(),
        "no outcome is reported before it is durable"
    );

    gated.open.send_replace(true);
    for _ in &ids {
        let event = tokio::time::timeout(Duration::from_secs(5), outcomes.recv())
            .await
            .expect("every outcome is reported once durable")
            .unwrap();
        assert_eq!(event.kind, DeliveryEventKind::Delivered);
    }
    running.abort();
    assert_eq!(count.load(Ordering::SeqCst), 6, "each sent exactly once");
}
