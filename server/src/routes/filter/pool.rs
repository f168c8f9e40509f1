//! The filter threads: where a filter that runs out of its inline steps on the
//! HTTP worker finishes its evaluation.

use std::{
    panic::{catch_unwind, AssertUnwindSafe},
    sync::{mpsc, Arc, Mutex, OnceLock},
    thread,
};

use tokio::sync::{oneshot, Semaphore};

type Job = Box<dyn FnOnce() + Send>;

/// The shared filter threads.
///
/// The filter threads: where a filter that needs more than
/// [`super::INLINE_STEPS`] on the HTTP worker finishes its evaluation,
/// within [`super::MAX_FILTER_STEPS`], so the worker and every other
/// request it holds never wait on it. One thread per core, at a lower
/// priority (nice 10 on Linux) than the HTTP workers, the committer and the
/// dispatchers; a tenant runs at most one evaluation here at a time (the
/// permit its gate holds), so a tenant of costly filters holds at most one
/// thread while the others take everyone else's.
pub struct FilterPool {
    jobs: Mutex<mpsc::Sender<Job>>,
}

/// An evaluation could not be made here: a thread panicked or the pool
/// is closed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Stopped;

impl FilterPool {
    /// The process's pool, started on first use with one thread per core.
    pub fn shared() -> &'static FilterPool {
        static POOL: OnceLock<FilterPool> = OnceLock::new();
        POOL.get_or_init(|| {
            let cores = thread::available_parallelism().map_or(1, |n| n.get());
            FilterPool::start(cores)
        })
    }

    /// The replay lane, started on first use: one thread where every
    /// replay reads the events it walks and runs the route's filter on
    /// them, at the filter threads' priority, so neither the HTTP workers
    /// nor a tenant's live filters ever wait behind a replay.
    pub fn replay_lane() -> &'static FilterPool {
        static LANE: OnceLock<FilterPool> = OnceLock::new();
        LANE.get_or_init(|| FilterPool::named("hookd-replay", 1))
    }

    fn start(threads: usize) -> FilterPool {
        FilterPool::named("hookd-filter", threads)
    }

    fn named(name: &str, threads: usize) -> FilterPool {
        let (jobs, queue) = mpsc::channel::<Job>();
        let queue = Arc::new(Mutex::new(queue));
        for n in 0..threads {
            let queue = Arc::clone(&queue);
            thread::Builder::new()
                .name(format!("{name}-{n}"))
                .spawn(move || {
                    lower_priority();
                    loop {
                        let next = queue.lock().map(|q| q.recv());
                        match next {
                            Ok(Ok(job)) => job(),
                            _ => return,
                        }
                    }
                })
                .expect("the OS starts a filter thread");
        }
        FilterPool {
            jobs: Mutex::new(jobs),
        }
    }

    /// A tenant's permit: one evaluation at a time.
    pub fn tenant_share() -> Arc<Semaphore> {
        Arc::new(Semaphore::new(1))
    }

    /// Runs `f` on a filter thread once `share` (the tenant's) is free.
    pub async fn run<R: Send + 'static>(
        &self,
        share: &Semaphore,
        f: impl FnOnce() -> R + Send + 'static,
    ) -> Result<R, Stopped> {
        let _permit = share.acquire().await.map_err(|_| Stopped)?;
        let (done, result) = oneshot::channel();
        let job: Job = Box::new(move || {
            let _ = done.send(catch_unwind(AssertUnwindSafe(f)));
        });
        self.jobs
            .lock()
            .map_err(|_| Stopped)?
            .send(job)
            .map_err(|_| Stopped)?;
        match result.await {
            Ok(Ok(value)) => Ok(value),
            _ => Err(Stopped),
        }
    }
}

/// Nice 10 for the calling thread (on Linux a priority set for a thread id
/// is that thread's alone); elsewhere it keeps its priority.
fn lower_priority() {
    #[cfg(target_os = "linux")]
    {
        let me = rustix::thread::gettid();
        if let Err(e) = rustix::process::setpriority_process(Some(me), 10) {
            tracing::warn!(error = %e, "cannot lower a filter thread's priority");
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn a_run_comes_back_and_a_panic_leaves_the_thread_working() {
        let pool = FilterPool::start(1);
        let share = FilterPool::tenant_share();
        assert_eq!(pool.run(&share, || 6 * 7).await, Ok(42));
        assert_eq!(
            pool.run(&share, || -> u32 { panic!("boom") }).await,
            Err(Stopped)
        );
        assert_eq!(pool.run(&share, || "still here").await, Ok("still here"));
    }

    #[cfg(target_os = "linux")]
    #[tokio::test]
    async fn pool_threads_run_at_nice_10() {
        let pool = FilterPool::start(1);
        let nice = pool
            .run(&FilterPool::tenant_share(), || {
                rustix::process::getpriority_process(Some(rustix::thread::gettid()))
            })
            .await
            .expect("ran")
            .expect("reads its priority");
        assert_eq!(nice, 10);
    }

    #[tokio::test]
    async fn a_tenant_runs_one_evaluation_at_a_time() {
        use std::sync::atomic::{AtomicUsize, Ordering::SeqCst};
        let pool = FilterPool::start(4);
        let share = FilterPool::tenant_share();
        let running = Arc::new(AtomicUsize::new(0));
        let most = Arc::new(AtomicUsize::new(0));
        let runs = (0..6).map(|_| {
            let (running, most) = (running.clone(), most.clone());
            pool.run(&share, move || {
                most.fetch_max(running.fetch_add(1, SeqCst) + 1, SeqCst);
                thread::sleep(std::time::Duration::from_millis(2));
                running.fetch_sub(1, SeqCst);
            })
        });
        for run in futures_util::future::join_all(runs).await {
            run.expect("ran");
        }
        assert_eq!(most.load(SeqCst), 1);
    }
}
