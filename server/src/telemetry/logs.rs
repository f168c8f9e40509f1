//! Log output: text or JSON lines on stderr, filtered by `RUST_LOG` or the
//! config, written by one log thread.

use std::{
    io::{BufWriter, IsTerminal, Write},
    time::Duration,
};

use tracing_appender::non_blocking::{NonBlocking, NonBlockingBuilder, WorkerGuard};
use tracing_subscriber::{fmt, EnvFilter};

use crate::config::{LogConfig, LogFormat};

/// Lines queued for the log thread at most. A thread that logs while the
/// queue is full waits for room: a line is never dropped.
const QUEUED_LINES_MAX: usize = 16_384;

/// The log thread's buffer: it writes the lines it finds queued in batches
/// of up to this many bytes, and flushes whenever the queue is empty.
const WRITE_BUFFER_BYTES: usize = 64 * 1024;

/// After each write the log thread pauses this long before it takes the
/// lines queued meanwhile: lines are written at most this late, in
/// batches, and a thread that logs rarely has to wake the log thread.
const PACE: Duration = Duration::from_millis(2);

/// Keeps the log thread of [`init_logging`] running. Dropping it writes out
/// every line still queued and stops the thread, so hold it until the
/// process ends (`let _logs = init_logging(..)`, never `let _ = ..`).
/// Empty when logging was already installed (a second call, or another
/// subscriber): its lines go where that installation sends them, and only
/// the first guard stops anything.
#[must_use = "dropping the guard stops the log thread: hold it until the process ends"]
pub struct LogGuard {
    /// Held only to be dropped: its drop flushes and stops the log thread.
    _worker: Option<WorkerGuard>,
}

/// Installs the global log subscriber writing to stderr through a log
/// thread. A second call is a no-op and returns an empty guard, so tests
/// that start several servers in one process are fine.
///
/// Log output: text or JSON lines on stderr, filtered by `RUST_LOG` or the
/// config, written by one log thread so that the threads that log (HTTP
/// workers above all, one `delivery accepted` line per delivery) never
/// take the stderr lock or make a write syscall themselves.
pub fn init_logging(config: &LogConfig) -> LogGuard {
    if tracing::dispatcher::has_been_set() {
        return LogGuard { _worker: None };
    }
    let filter =
        EnvFilter::try_from_default_env().unwrap_or_else(|_| EnvFilter::new(&config.filter));
    let (writer, guard) = drain(std::io::stderr(), QUEUED_LINES_MAX);
    let builder = fmt()
        .with_env_filter(filter)
        .with_ansi(std::io::stderr().is_terminal())
        .with_writer(writer);
    let installed = match config.format {
        LogFormat::Json => builder.json().flatten_event(true).try_init(),
        LogFormat::Text => builder.try_init(),
    };
    LogGuard {
        _worker: installed.is_ok().then_some(guard),
    }
}

/// A writer whose lines (one `write` each, as the log subscriber makes
/// them) go through a queue of at most `queued_lines` to one thread that
/// writes them to `out`, buffered, flushing whenever the queue is empty
/// and then pausing for [`PACE`].
fn drain<W: Write + Send + 'static>(out: W, queued_lines: usize) -> (NonBlocking, WorkerGuard) {
    NonBlockingBuilder::default()
        .lossy(false)
        .buffered_lines_limit(queued_lines)
        .thread_name("hookd-stderr")
        .finish(Paced(BufWriter::with_capacity(WRITE_BUFFER_BYTES, out)))
}

/// The log thread's writer: each flush, which the thread makes whenever it
/// emptied the queue, is followed by a pause of [`PACE`]. While it pauses
/// the thread is not waiting on the queue, so the threads that log queue
/// their lines without waking it (one wake-up per line cost the HTTP
/// workers more than the line's own write), and it then takes them all at
/// once.
struct Paced<W: Write>(W);

impl<W: Write> Write for Paced<W> {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.0.write(buf)
    }

    fn flush(&mut self) -> std::io::Result<()> {
        let flushed = self.0.flush();
        std::thread::sleep(PACE);
        flushed
    }
}

#[cfg(test)]
mod tests {
    use std::{
        sync::{Arc, Mutex},
        time::{Duration, Instant},
    };

    use tracing::Dispatch;

    use super::*;

    /// An underlying writer the test reads back, counting its writes.
    #[derive(Clone, Default)]
    struct Captured(Arc<Mutex<(Vec<u8>, usize)>>);

    impl Captured {
        fn text(&self) -> String {
            String::from_utf8(self.0.lock().unwrap().0.clone()).unwrap()
        }

        fn writes(&self) -> usize {
            self.0.lock().unwrap().1
        }
    }

    impl Write for Captured {
        fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
            let mut inner = self.0.lock().unwrap();
            inner.0.extend_from_slice(buf);
            inner.1 += 1;
            Ok(buf.len())
        }

        fn flush(&mut self) -> std::io::Result<()> {
            Ok(())
        }
    }

    fn json_logger(writer: NonBlocking) -> Dispatch {
        Dispatch::new(
            fmt()
                .with_writer(writer)
                .with_ansi(false)
                .json()
                .flatten_event(true)
                .finish(),
        )
    }

    #[test]
    fn lines_from_many_threads_arrive_whole_in_order_and_none_is_lost() {
        const THREADS: usize = 8;
        const LINES: usize = 300;
        let out = Captured::default();
        // A tiny queue: the threads outrun the log thread and must wait.
        let (writer, guard) = drain(out.clone(), 4);
        let logger = json_logger(writer);
        let threads: Vec<_> = (0..THREADS)
            .map(|thread| {
                let logger = logger.clone();
                std::thread::spawn(move || {
                    tracing::dispatcher::with_default(&logger, || {
                        for seq in 0..LINES {
                            tracing::info!(thread, seq, pad = "x".repeat(seq % 97), "line");
                        }
                    })
                })
            })
            .collect();
        for t in threads {
            t.join().unwrap();
        }
        drop(logger);
        drop(guard);
        let text = out.text();
        let mut next = [0u64; THREADS];
        let mut lines = 0;
        for line in text.lines() {
            let v: serde_json::Value = serde_json::from_str(line).expect("a whole JSON line");
            let thread = v["thread"].as_u64().unwrap() as usize;
            assert_eq!(v["seq"].as_u64(), Some(next[thread]), "thread {thread}");
            next[thread] += 1;
            lines += 1;
        }
        assert_eq!(lines, THREADS * LINES);
        assert!(
            out.writes() < lines,
            "{} writes for {lines} lines",
            out.writes()
        );
    }

    /// A steady stream of lines is written at most once per [`PACE`]: the
    /// log thread takes what queued while it paused, it is not woken line
    /// by line.
    #[test]
    fn a_steady_stream_of_lines_is_written_at_most_once_per_pace() {
        let out = Captured::default();
        let (writer, guard) = drain(out.clone(), QUEUED_LINES_MAX);
        let logger = json_logger(writer);
        let started = Instant::now();
        let mut lines = 0;
        tracing::dispatcher::with_default(&logger, || {
            while started.elapsed() < PACE * 20 {
                tracing::info!(lines, "line");
                lines += 1;
                std::thread::sleep(Duration::from_micros(20));
            }
        });
        let elapsed = started.elapsed();
        drop(logger);
        drop(guard);
        assert_eq!(out.text().lines().count(), lines);
        let most = elapsed.as_micros() / PACE.as_micros() + 2;
        assert!(
            out.writes() as u128 <= most,
            "{} writes for {lines} lines in {elapsed:?}: more than one per {PACE:?}",
            out.writes()
        );
    }

    #[test]
    fn a_line_reaches_the_writer_once_the_queue_is_empty_while_the_guard_lives() {
        let out = Captured::default();
        let (writer, _guard) = drain(out.clone(), QUEUED_LINES_MAX);
        tracing::dispatcher::with_default(&json_logger(writer), || {
            tracing::info!(addr = "127.0.0.1:1", "http listening on");
        });
        let deadline = Instant::now() + Duration::from_secs(5);
        while !out.text().contains("http listening on") {
            assert!(Instant::now() < deadline, "the line was never flushed");
            std::thread::yield_now();
        }
        assert!(out.text().ends_with('\n'));
    }
}
