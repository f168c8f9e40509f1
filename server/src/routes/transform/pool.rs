//! Where transforms run: the shared pool of worker processes, one per core,
//! and each route's share of it.

use std::{
    io::{self, Read, Write},
    os::fd::AsFd,
    panic::{catch_unwind, AssertUnwindSafe},
    path::PathBuf,
    process::{Child, ChildStdin, ChildStdout, Command, Stdio},
    sync::{mpsc, Arc, Mutex, OnceLock},
    thread,
    time::{Duration, Instant},
};

use tokio::sync::{oneshot, Semaphore};

use super::{
    backoff::Backoff,
    wire::{answer_len, Answer, Job},
    TransformError, TransformLimits,
};

/// How often the host reads a running worker's CPU time.
pub const WATCH_INTERVAL: Duration = Duration::from_millis(10);
/// How far past its CPU budget (or its wall-clock limit) a run may go
/// before its worker is killed. Runs the engine can interrupt stop at the
/// budget itself; this bounds those it cannot (a native loop inside a
/// built-in), and covers reading the CPU time every [`WATCH_INTERVAL`].
pub const KILL_MARGIN: Duration = Duration::from_millis(100);

/// The argument that makes the hookd binary a transform worker.
pub const WORKER_ARG: &str = "transform-worker";

type Work = Box<dyn FnOnce(&mut Host) + Send>;

/// The shared transform workers.
///
/// One worker process per core (`worker.rs`), shared
/// by every route of every tenant, each driven by a host thread of its own
/// that sends it one job at a time and watches it. The engine stops a
/// script at its CPU budget when it can (its interrupt, between bytecodes);
/// the host enforces the budget from outside whatever the script does:
/// every [`WATCH_INTERVAL`] it reads the CPU time the worker has used on
/// the run, and kills the worker once that passes the budget by
/// [`KILL_MARGIN`], or once the run has been going for its wall-clock limit
/// plus the margin. A killed or dead worker is replaced for the next job.
/// So a loop inside a built-in that never checks the interrupt costs at
/// most its budget plus the margin, and no tenant's code keeps a thread.
///
/// Workers run in the idle scheduling class (`SCHED_IDLE` on Linux), so a
/// transform that spins takes only the CPU that ingest, forwarding and
/// storage leave idle. Each route may run at most
/// [`TransformPool::per_route`] transforms at once, so one route's backlog
/// never holds every worker while another route's transforms wait; its
/// [`RouteShare`] also holds the route's `Backoff` from a transform that
/// keeps overrunning its limits.
pub struct TransformPool {
    jobs: Mutex<mpsc::Sender<Work>>,
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

/// What one run came to, and the CPU time its worker spent on it (as the
/// host read it; zero where the host cannot read it).
#[derive(Debug)]
pub(super) struct Ran {
    pub(super) answer: Result<Answer, TransformError>,
    pub(super) cpu: Duration,
}

/// The program started as a worker, if set before the pool starts.
static PROGRAM: OnceLock<PathBuf> = OnceLock::new();

/// Makes `program` (a hookd binary) the one started, with
/// [`WORKER_ARG`], as each transform worker. Without it, the running
/// executable is: right for the `hookd` binary, not for a program that
/// embeds the server. Only the first call counts.
pub fn use_worker_program(program: PathBuf) {
    let _ = PROGRAM.set(program);
}

fn program() -> PathBuf {
    PROGRAM.get().cloned().unwrap_or_else(|| {
        // The running binary even when its file was replaced by an upgrade.
        let own = PathBuf::from("/proc/self/exe");
        if own.exists() {
            return own;
        }
        std::env::current_exe().unwrap_or_else(|_| PathBuf::from("hookd"))
    })
}

impl TransformPool {
    /// The process's pool, started on first use with one worker per core.
    pub fn shared() -> &'static TransformPool {
        static POOL: OnceLock<TransformPool> = OnceLock::new();
        POOL.get_or_init(|| {
            let cores = thread::available_parallelism().map_or(1, |n| n.get());
            TransformPool::start(cores)
        })
    }

    /// `threads` host threads, each starting its worker on its first job.
    fn start(threads: usize) -> TransformPool {
        let (jobs, queue) = mpsc::channel::<Work>();
        let queue = Arc::new(Mutex::new(queue));
        for n in 0..threads {
            let queue = Arc::clone(&queue);
            thread::Builder::new()
                .name(format!("hookd-transform-{n}"))
                .spawn(move || {
                    let mut host = Host { worker: None };
                    loop {
                        let next = queue.lock().map(|q| q.recv());
                        match next {
                            Ok(Ok(work)) => work(&mut host),
                            _ => return,
                        }
                    }
                })
                .expect("the OS starts a transform host thread");
        }
        TransformPool {
            jobs: Mutex::new(jobs),
            threads,
        }
    }

    /// Transforms one route may run at once: half the workers, at least one.
    pub fn per_route(&self) -> usize {
        (self.threads / 2).max(1)
    }

    /// A route's share of the pool.
    pub fn route_share(&self) -> Arc<RouteShare> {
        Arc::new(RouteShare {
            permits: Semaphore::new(self.per_route()),
            backoff: Backoff::default(),
        })
    }

    /// Runs `job` in a worker once `share` (the route's) has a free permit.
    pub(super) async fn run(&self, share: &RouteShare, job: Job) -> Ran {
        let limits = match &job {
            Job::Check { limits, .. } | Job::Run { limits, .. } => *limits,
        };
        let stopped = |why: &str| Ran {
            answer: Err(TransformError::Stopped(why.to_owned())),
            cpu: Duration::ZERO,
        };
        let Ok(_permit) = share.permits.acquire().await else {
            return stopped("the transform pool is closed");
        };
        let (done, result) = oneshot::channel();
        let frame = job.encode();
        let work: Work = Box::new(move |host: &mut Host| {
            let ran = catch_unwind(AssertUnwindSafe(|| host.run(&frame, &limits)));
            let _ = done.send(ran.unwrap_or_else(|_| {
                host.stop();
                Ran {
                    answer: Err(TransformError::Stopped(
                        "the transform host thread failed".into(),
                    )),
                    cpu: Duration::ZERO,
                }
            }));
        });
        let sent = self.jobs.lock().is_ok_and(|jobs| jobs.send(work).is_ok());
        if !sent {
            return stopped("the transform pool is closed");
        }
        result
            .await
            .unwrap_or_else(|_| stopped("the transform host thread failed"))
    }
}

/// A host thread's worker, started on demand.
struct Host {
    worker: Option<Worker>,
}

struct Worker {
    child: Child,
    stdin: ChildStdin,
    stdout: ChildStdout,
}

/// How a run ended on the host's side.
enum Watched {
    Answered(Vec<u8>),
    OverCpu,
    OverWall,
    Broken(String),
}

impl Host {
    fn run(&mut self, frame: &[u8], limits: &TransformLimits) -> Ran {
        if self.worker.is_none() {
            match Worker::start() {
                Ok(worker) => self.worker = Some(worker),
                Err(e) => {
                    tracing::error!(error = %e, "cannot start a transform worker process");
                    return Ran {
                        answer: Err(TransformError::Stopped(
                            "hookd could not start a transform worker".into(),
                        )),
                        cpu: Duration::ZERO,
                    };
                }
            }
        }
        let worker = self.worker.as_mut().expect("started above");
        let cpu_before = worker.cpu();
        let watched = worker.exchange(frame, limits);
        let cpu = worker.cpu().saturating_sub(cpu_before);
        let answer = match watched {
            Watched::Answered(body) => Answer::decode(&body).map_err(|e| {
                self.stop();
                TransformError::Stopped(format!("the transform worker answered badly: {e}"))
            }),
            Watched::OverCpu => {
                self.stop();
                Err(TransformError::Timeout {
                    budget: limits.cpu(),
                })
            }
            Watched::OverWall => {
                self.stop();
                Err(TransformError::Starved {
                    limit: limits.wall(),
                })
            }
            Watched::Broken(why) => {
                let status = self.stop();
                Err(TransformError::Stopped(match status {
                    Some(status) => format!("{why} ({status})"),
                    None => why,
                }))
            }
        };
        Ran { answer, cpu }
    }

    /// Kills and reaps the worker, if any; how it ended.
    fn stop(&mut self) -> Option<String> {
        let mut worker = self.worker.take()?;
        let _ = worker.child.kill();
        worker.child.wait().ok().map(|status| status.to_string())
    }
}

impl Worker {
    fn start() -> io::Result<Worker> {
        let mut child = Command::new(program())
            .arg(WORKER_ARG)
            .env_clear()
            // hookd's allocator reserves address space a gigabyte at a time,
            // past the data cap the worker sets itself: reserve as needed.
            .env("MIMALLOC_ARENA_RESERVE", "0")
            .current_dir("/")
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .spawn()?;
        let (Some(stdin), Some(stdout)) = (child.stdin.take(), child.stdout.take()) else {
            let _ = child.kill();
            let _ = child.wait();
            return Err(io::Error::other("the worker's pipes are missing"));
        };
        Ok(Worker {
            child,
            stdin,
            stdout,
        })
    }

    /// Sends a job and waits for its answer, killing nothing itself: says
    /// when the run went past its CPU budget or wall-clock limit plus the
    /// margin.
    fn exchange(&mut self, frame: &[u8], limits: &TransformLimits) -> Watched {
        let started = Instant::now();
        let cpu_before = self.cpu();
        if let Err(e) = self
            .stdin
            .write_all(frame)
            .and_then(|()| self.stdin.flush())
        {
            return Watched::Broken(format!("the transform worker stopped: {e}"));
        }
        let cpu_cap = limits.cpu() + KILL_MARGIN;
        let wall_cap = limits.wall() + KILL_MARGIN;
        let mut prefix = [0u8; 4];
        let mut got = 0;
        let mut body: Option<Vec<u8>> = None;
        loop {
            match readable(&self.stdout, WATCH_INTERVAL) {
                Err(e) => {
                    return Watched::Broken(format!("cannot watch the transform worker: {e}"))
                }
                Ok(true) => {
                    let read = match &mut body {
                        None => self.stdout.read(&mut prefix[got..]),
                        Some(body) => self.stdout.read(&mut body[got..]),
                    };
                    match read {
                        Ok(0) => {
                            return Watched::Broken("the transform worker stopped".into());
                        }
                        Ok(n) => got += n,
                        Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                        Err(e) => {
                            return Watched::Broken(format!("the transform worker stopped: {e}"))
                        }
                    }
                    match &body {
                        None if got == prefix.len() => match answer_len(prefix) {
                            Ok(len) => {
                                body = Some(vec![0; len]);
                                got = 0;
                            }
                            Err(e) => return Watched::Broken(e.to_string()),
                        },
                        Some(whole) if got == whole.len() => {
                            return Watched::Answered(body.take().expect("read"))
                        }
                        _ => {}
                    }
                }
                Ok(false) => {}
            }
            if self.cpu().saturating_sub(cpu_before) > cpu_cap {
                return Watched::OverCpu;
            }
            if started.elapsed() > wall_cap {
                return Watched::OverWall;
            }
        }
    }

    /// The CPU time the worker has used so far (zero where it cannot be
    /// read: only the wall-clock limit then holds).
    fn cpu(&self) -> Duration {
        let path = format!("/proc/{}/schedstat", self.child.id());
        std::fs::read_to_string(path)
            .ok()
            .and_then(|stat| stat.split_whitespace().next()?.parse().ok())
            .map(Duration::from_nanos)
            .unwrap_or_default()
    }
}

/// Whether `pipe` has something to read (or is closed) within `timeout`.
fn readable(pipe: &impl AsFd, timeout: Duration) -> io::Result<bool> {
    use rustix::event::{poll, PollFd, PollFlags, Timespec};
    let timeout = Timespec {
        tv_sec: timeout.as_secs() as _,
        tv_nsec: timeout.subsec_nanos() as _,
    };
    let mut fds = [PollFd::new(pipe, PollFlags::IN)];
    match poll(&mut fds, Some(&timeout)) {
        Ok(n) => Ok(n > 0),
        Err(rustix::io::Errno::INTR) => Ok(false),
        Err(e) => Err(e.into()),
    }
}

/// Puts the calling thread in the idle scheduling class: it runs only on
/// a core no other thread wants, and any other thread that wakes takes the
/// core from it at once. Elsewhere than Linux the thread keeps its priority.
pub(super) fn lower_priority() {
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
            eprintln!("hookd transform worker: cannot enter the idle class: {e:?}");
        }
    }
}
