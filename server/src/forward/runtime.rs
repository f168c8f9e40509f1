//! The runtime tenants' dispatchers run on: multi-threaded tokio, apart from
//! the arbiters that run the tenant actors.

use std::{future::Future, io, sync::Arc};

use futures_util::future::{AbortHandle, Abortable};

/// The forwarding runtime, shut down (without blocking) when its last
/// handle goes.
///
/// The runtime tenants' dispatchers run on: multi-threaded tokio, apart from
/// the arbiters that run the tenant actors, so a tenant's forwarding does
/// not wait behind its own ingest on one arbiter thread, and forwards of all
/// tenants spread over every core.
#[derive(Clone)]
pub struct ForwardRuntime(Arc<Owned>);

struct Owned(Option<tokio::runtime::Runtime>);

impl ForwardRuntime {
    /// A runtime with `threads` worker threads named `hookd-forward`.
    pub fn new(threads: usize) -> io::Result<ForwardRuntime> {
        let runtime = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(threads.max(1))
            .thread_name("hookd-forward")
            .enable_all()
            .build()?;
        Ok(ForwardRuntime(Arc::new(Owned(Some(runtime)))))
    }

    /// Runs `work` until it ends or the returned handle aborts it.
    pub fn spawn(&self, work: impl Future<Output = ()> + Send + 'static) -> AbortHandle {
        let (abort, registration) = AbortHandle::new_pair();
        if let Some(runtime) = &self.0 .0 {
            runtime.spawn(async move {
                let _ = Abortable::new(work, registration).await;
            });
        }
        abort
    }
}

impl Drop for Owned {
    /// Drops whatever still runs on it without waiting: the last handle may
    /// go inside another runtime, where blocking is not allowed.
    fn drop(&mut self) {
        if let Some(runtime) = self.0.take() {
            runtime.shutdown_background();
        }
    }
}
