//! The threads transforms run on: one per core, shared by every route of
//! every tenant, each in the idle scheduling class (`SCHED_IDLE` on
//! Linux), so a transform that spins until its budget stops it takes only
//! the CPU that ingest, forwarding and storage leave idle, and yields its
//! core at once when one of their threads wakes. Each route may run at most
//! [`TransformPool::per_route`] transforms at once, so one route's backlog
//! never holds every thread while another route's transforms wait; its
//! [`RouteShare`] also holds the route's [`Backoff`] from a transform that
//! keeps overrunning its limits.

use std::{
    panic::{catch_unwind, AssertUnwindSafe},
    sync::{mpsc, Arc, Mutex, OnceLock},
    thread,
};

use tokio::sync::{oneshot, Semaphore};

use super::backoff::Backoff;

/// A thread's stack: the engine's own limit plus room for the host side.
const STACK_BYTES: usize = 4 << 20;

type Job = Box<dyn FnOnce() + Send>;

/// The shared transform threads.
pub struct TransformPool {
    jobs: Mutex<mpsc::Sender<Job>>,
    threads: usize,
}

/// One route's part of the pool: the runs it may make at once and its
/// back-off.
#[derive(Debug)]
pub struct RouteShare {
    permits: Semaphore,
    /// When the route's next run may start while it backs off.
    pub backoff: Backoff,
}

/// A run could not be made: its thread panicked.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[error("the transform's thread stopped")]
pub struct Stopped;

impl TransformPool {
    /// The process's pool, started on first use with one thread per core.
    pub fn shared() -> &'static TransformPool {
        static POOL: OnceLock<TransformPool> = OnceLock::new();
        POOL.get_or_init(|| {
            let cores = thread::available_parallelism().map_or(1, |n| n.get());
            TransformPool::start(cores)
        })
    }

    /// `threads` threads waiting for runs.
    fn start(threads: usize) -> TransformPool {
        let (jobs, queue) = mpsc::channel::<Job>();
        let queue = Arc::new(Mutex::new(queue));
        for n in 0..threads {
            let queue = Arc::clone(&queue);
            thread::Builder::new()
                .name(format!("hookd-transform-{n}"))
                .stack_size(STACK_BYTES)
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
                .expect("the OS starts a transform thread");
        }
        TransformPool {
            jobs: Mutex::new(jobs),
            threads,
        }
    }

    /// Transforms one route may run at once: half the threads, at least one.
    pub fn per_route(&self) -> usize {
        (self.threads / 2).max(1)
    }

    /// A route's share of the pool, for [`TransformPool::run`].
    pub fn route_share(&self) -> Arc<RouteShare> {
        Arc::new(RouteShare {
            permits: Semaphore::new(self.per_route()),
            backoff: Backoff::default(),
        })
    }

    /// Runs `f` on a pool thread once `share` (the route's) has a free
    /// permit, and gives back what it returned.
    pub async fn run<R: Send + 'static>(
        &self,
        share: &RouteShare,
        f: impl FnOnce() -> R + Send + 'static,
    ) -> Result<R, Stopped> {
        let _permit = share.permits.acquire().await.map_err(|_| Stopped)?;
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

/// Puts the calling thread in the idle scheduling class: it runs only on
/// a core no other thread wants, and any other thread that wakes takes the
/// core from it at once. Elsewhere than Linux the thread keeps its priority.
fn lower_priority() {
    #[cfg(target_os = "linux")]
    {
        use thread_priority::unix::{
            set_thread_priority_and_policy, thread_native_id, NormalThreadSchedulePolicy,
            ThreadSchedulePolicy,
        };
        let idle = ThreadSchedulePolicy::Normal(NormalThreadSchedulePolicy::Idle);
        let lowered = set_thread_priority_and_policy(
            thread_native_id(),
            thread_priority::ThreadPriority::Min,
            idle,
        );
        if let Err(e) = lowered {
            tracing::warn!(error = ?e, "cannot put a transform thread in the idle class");
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn a_run_comes_back_and_a_panic_leaves_the_thread_working() {
        let pool = TransformPool::start(1);
        let share = pool.route_share();
        assert_eq!(pool.run(&share, || 6 * 7).await, Ok(42));
        assert_eq!(
            pool.run(&share, || -> u32 { panic!("boom") }).await,
            Err(Stopped)
        );
        assert_eq!(pool.run(&share, || "still here").await, Ok("still here"));
    }

    #[cfg(target_os = "linux")]
    #[tokio::test]
    async fn pool_threads_run_in_the_idle_class() {
        use thread_priority::unix::{
            thread_schedule_policy, NormalThreadSchedulePolicy, ThreadSchedulePolicy,
        };
        let pool = TransformPool::start(1);
        let policy = pool
            .run(&pool.route_share(), thread_schedule_policy)
            .await
            .expect("ran")
            .expect("reads its policy");
        assert_eq!(
            policy,
            ThreadSchedulePolicy::Normal(NormalThreadSchedulePolicy::Idle)
        );
    }

    #[tokio::test]
    async fn one_route_runs_at_most_its_share_at_once() {
        use std::sync::atomic::{AtomicUsize, Ordering::SeqCst};
        let pool = TransformPool::start(4);
        assert_eq!(pool.per_route(), 2);
        let share = pool.route_share();
        let running = Arc::new(AtomicUsize::new(0));
        let most = Arc::new(AtomicUsize::new(0));
        let runs = (0..8).map(|_| {
            let (running, most) = (running.clone(), most.clone());
            pool.run(&share, move || {
                most.fetch_max(running.fetch_add(1, SeqCst) + 1, SeqCst);
                thread::sleep(std::time::Duration::from_millis(5));
                running.fetch_sub(1, SeqCst);
            })
        });
        for run in futures_util::future::join_all(runs).await {
            run.expect("ran");
        }
        let most = most.load(SeqCst);
        assert!((1..=2).contains(&most), "{most} ran at once");
    }

    #[tokio::test]
    async fn a_route_share_runs_side_by_side() {
        let pool = TransformPool::start(4);
        let share = pool.route_share();
        let (tx, rx) = mpsc::channel::<()>();
        let waits = pool.run(&share, move || {
            rx.recv_timeout(std::time::Duration::from_secs(10)).is_ok()
        });
        let sends = pool.run(&share, move || tx.send(()).is_ok());
        let (waited, sent) = tokio::join!(waits, sends);
        assert_eq!((waited, sent), (Ok(true), Ok(true)));
    }
}
