//! The transform worker process (`hookd transform-worker`, started by hookd,
//! never by hand): runs jobs from stdin in a fresh sandbox each.

use std::io::{self, BufReader, BufWriter};

use super::{
    sandbox,
    wire::{Answer, Job},
    MAX_MEMORY_BYTES,
};

/// Data memory a worker may map beyond a run's largest memory limit: its
/// own code's heap, the request and the answer it copies.
const OWN_MEMORY_BYTES: usize = 96 << 20;

/// Serves jobs until stdin closes; the process's exit code: 0 then, 2 on
/// a broken frame.
///
/// The transform worker process (`hookd transform-worker`, started by
/// hookd, never by hand): reads jobs on stdin, runs each in a fresh
/// sandbox and writes its answer on stdout, one at a time, until stdin
/// closes. Before the first job it puts itself in the idle scheduling
/// class, caps its data memory and asks the kernel to kill it when hookd
/// exits. hookd kills it from outside when a run overstays its budget
/// (`pool.rs`); this side only runs code.
pub fn serve() -> i32 {
    confine();
    let mut input = BufReader::new(io::stdin().lock());
    let mut output = BufWriter::new(io::stdout().lock());
    loop {
        let job = match Job::read(&mut input) {
            Ok(Some(job)) => job,
            Ok(None) => return 0,
            Err(_) => return 2,
        };
        if answer(job).write(&mut output).is_err() {
            return 2;
        }
    }
}

/// Runs one job.
fn answer(job: Job) -> Answer {
    match job {
        Job::Check { code, limits } => match sandbox::check(&code, &limits) {
            Ok(()) => Answer::Checked,
            Err(e) => Answer::Failed(e),
        },
        Job::Run {
            code,
            input,
            context,
            limits,
        } => match sandbox::run(&code, &input, &context, &limits) {
            Ok(None) => Answer::Drop,
            Ok(Some(json)) => Answer::Send(json),
            Err(e) => Answer::Failed(e),
        },
    }
}

/// The limits a worker puts on itself before it reads any code. Each is a
/// second line behind the host's: a failure to set one is logged and the
/// worker still serves.
fn confine() {
    super::pool::lower_priority();
    #[cfg(target_os = "linux")]
    {
        use rustix::process::{
            set_parent_process_death_signal, setrlimit, Resource, Rlimit, Signal,
        };
        if let Err(e) = set_parent_process_death_signal(Some(Signal::KILL)) {
            eprintln!("hookd transform worker: cannot ask to die with hookd: {e}");
        }
        let cap = Some((MAX_MEMORY_BYTES + OWN_MEMORY_BYTES) as u64);
        let limit = Rlimit {
            current: cap,
            maximum: cap,
        };
        if let Err(e) = setrlimit(Resource::Data, limit) {
            eprintln!("hookd transform worker: cannot cap its memory: {e}");
        }
    }
}
