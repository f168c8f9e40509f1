//! A server's CPU time, context switches, page faults and bytes written per
//! request while it was loaded, from Linux's `/proc`: in all and by thread
//! name, so a figure says where a request's time went (the committer, the
//! HTTP workers, sled's IO pool), how often each thread slept and woke for
//! it, how often it touched memory the kernel had to hand it first, and how
//! much each wrote to files for it, not only how many requests a second the
//! shared machine allowed.

use std::collections::BTreeMap;

use serde::Serialize;

/// The unit of `/proc/PID/stat`'s CPU times: the kernel's `USER_HZ`,
/// 100 on every Linux architecture this runs on.
pub const USER_HZ: u64 = 100;

/// The command name and CPU ticks (user and system) of one `/proc/.../stat`
/// line. The name is in parentheses and may hold spaces or parentheses of
/// its own: utime and stime are the 12th and 13th fields after its last `)`.
pub fn stat_ticks(stat: &str) -> Option<(&str, u64)> {
    let (comm, fields) = stat_fields(stat)?;
    let user = fields.get(11)?.parse::<u64>().ok()?;
    let system = fields.get(12)?.parse::<u64>().ok()?;
    Some((comm, user + system))
}

/// The minor page faults (`minflt`, the 8th field after the name) of one
/// `/proc/.../stat` line: each a first touch of memory the kernel had to
/// map (and zero) before the thread could use it, with no disk read.
pub fn stat_minor_faults(stat: &str) -> Option<u64> {
    stat_fields(stat)?.1.get(7)?.parse().ok()
}

/// The command name of a `/proc/.../stat` line and the fields after it.
fn stat_fields(stat: &str) -> Option<(&str, Vec<&str>)> {
    let (head, rest) = stat.rsplit_once(')')?;
    let (_, comm) = head.split_once('(')?;
    Some((comm, rest.split_whitespace().collect()))
}

/// The context switches, voluntary and not, of one `/proc/.../status`.
pub fn status_switches(status: &str) -> Option<u64> {
    let field = |name: &str| -> Option<u64> {
        status
            .lines()
            .find_map(|line| line.strip_prefix(name)?.strip_prefix(':'))?
            .trim()
            .parse()
            .ok()
    };
    Some(field("voluntary_ctxt_switches")? + field("nonvoluntary_ctxt_switches")?)
}

/// The bytes passed to write calls (`wchar`) of one `/proc/.../io`: what a
/// thread or process wrote to files and pipes, whether or not it reached
/// the disk yet. A socket written with `send`, as the HTTP workers do, is
/// not counted.
pub fn io_written(io: &str) -> Option<u64> {
    io.lines()
        .find_map(|line| line.strip_prefix("wchar:"))?
        .trim()
        .parse()
        .ok()
}

/// The group a thread is counted in: its name without a trailing
/// `-<number>`, so a pool's threads (`sled-io-0`, `sled-io-1`) add up.
fn group(comm: &str) -> &str {
    match comm.rsplit_once('-') {
        Some((pool, n)) if !n.is_empty() && n.bytes().all(|b| b.is_ascii_digit()) => pool,
        _ => comm,
    }
}

/// CPU ticks a process has used, its minor page faults and bytes it has
/// written, in all (threads that ended included) and by thread group
/// (threads alive when read), and the context switches of each group
/// (Linux counts them per thread only, so a thread that ended takes its
/// own with it).
#[derive(Debug)]
pub struct Ticks {
    total: u64,
    faults: u64,
    /// `None` where `/proc/PID/io` cannot be read (a kernel without task
    /// IO accounting).
    written: Option<u64>,
    threads: BTreeMap<String, Group>,
}

/// What one thread group has used.
#[derive(Debug, Default, Clone, Copy)]
struct Group {
    ticks: u64,
    switches: u64,
    faults: u64,
    written: u64,
}

impl Ticks {
    /// Reads process `pid`'s ticks, context switches, page faults and bytes
    /// written;
    /// `None` when its `/proc` entry is gone or unreadable (not Linux). A
    /// thread that ends while it is read is left out.
    pub fn of(pid: u32) -> Option<Ticks> {
        let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
        let (_, total) = stat_ticks(&stat)?;
        let faults = stat_minor_faults(&stat)?;
        let written = std::fs::read_to_string(format!("/proc/{pid}/io"))
            .ok()
            .and_then(|io| io_written(&io));
        let mut threads = BTreeMap::new();
        for task in std::fs::read_dir(format!("/proc/{pid}/task"))
            .ok()?
            .flatten()
        {
            let read = |file: &str| std::fs::read_to_string(task.path().join(file)).ok();
            let (Some(stat), Some(status)) = (read("stat"), read("status")) else {
                continue;
            };
            if let Some((comm, ticks)) = stat_ticks(&stat) {
                let used: &mut Group = threads.entry(group(comm).to_owned()).or_default();
                used.ticks += ticks;
                used.switches += status_switches(&status).unwrap_or(0);
                used.faults += stat_minor_faults(&stat).unwrap_or(0);
                used.written += read("io").and_then(|io| io_written(&io)).unwrap_or(0);
            }
        }
        Some(Ticks {
            total,
            faults,
            written,
            threads,
        })
    }
}

/// CPU time, context switches, page faults and bytes written per request
/// between two readings, in all and by thread group.
#[derive(Debug, Serialize)]
pub struct CpuUse {
    /// Every thread's, microseconds per request.
    pub us_per_request: f64,
    /// Context switches per request of the threads alive at both readings.
    pub switches_per_request: f64,
    /// Every thread's minor page faults per request ([`stat_minor_faults`]).
    pub faults_per_request: f64,
    /// Bytes every thread passed to write calls per request ([`io_written`]);
    /// `None` where they could not be read.
    pub written_bytes_per_request: Option<f64>,
    /// By thread group, the largest CPU time first; groups under 1 µs,
    /// 0.01 switches, 0.01 page faults and 1 byte written per request left
    /// out.
    pub threads: Vec<ThreadUse>,
}

/// One thread group's CPU time, context switches, page faults and bytes
/// written per request.
#[derive(Debug, Serialize)]
pub struct ThreadUse {
    /// Its name (a pool's without the number).
    pub name: String,
    /// Microseconds per request.
    pub us_per_request: f64,
    /// Context switches per request.
    pub switches_per_request: f64,
    /// Minor page faults per request.
    pub faults_per_request: f64,
    /// Bytes passed to write calls per request.
    pub written_bytes_per_request: f64,
}

impl CpuUse {
    /// What was used from `before` to `after` over `requests`; `None`
    /// without requests.
    pub fn between(before: &Ticks, after: &Ticks, requests: u64) -> Option<CpuUse> {
        if requests == 0 {
            return None;
        }
        let per_request = |n: u64| n as f64 / requests as f64;
        let us_per_request = |ticks: u64| per_request(ticks) * 1e6 / USER_HZ as f64;
        let mut threads: Vec<ThreadUse> = after
            .threads
            .iter()
            .map(|(name, now)| {
                let earlier = before.threads.get(name).copied().unwrap_or_default();
                ThreadUse {
                    name: name.clone(),
                    us_per_request: us_per_request(now.ticks.saturating_sub(earlier.ticks)),
                    switches_per_request: per_request(
                        now.switches.saturating_sub(earlier.switches),
                    ),
                    faults_per_request: per_request(now.faults.saturating_sub(earlier.faults)),
                    written_bytes_per_request: per_request(
                        now.written.saturating_sub(earlier.written),
                    ),
                }
            })
            .collect();
        let switches_per_request = threads.iter().map(|t| t.switches_per_request).sum();
        threads.retain(|t| {
            t.us_per_request >= 1.0
                || t.switches_per_request >= 0.01
                || t.faults_per_request >= 0.01
                || t.written_bytes_per_request >= 1.0
        });
        threads.sort_by(|a, b| b.us_per_request.total_cmp(&a.us_per_request));
        Some(CpuUse {
            us_per_request: us_per_request(after.total.saturating_sub(before.total)),
            switches_per_request,
            faults_per_request: per_request(after.faults.saturating_sub(before.faults)),
            written_bytes_per_request: before
                .written
                .zip(after.written)
                .map(|(before, after)| per_request(after.saturating_sub(before))),
            threads,
        })
    }

    /// Four lines: the CPU time in all, then by group; the context
    /// switches in all, then by group; the page faults in all, then by the
    /// groups that had any; the bytes written in all, then by the groups
    /// that wrote (the same groups, in the same order). The last is left
    /// out where the bytes written could not be read.
    pub fn text(&self) -> String {
        let groups = |figure: fn(&ThreadUse) -> Option<String>| -> String {
            let groups: Vec<String> = self
                .threads
                .iter()
                .filter_map(|t| Some(format!("{} {}", t.name, figure(t)?)))
                .collect();
            groups.join(", ")
        };
        let mut text = format!(
            "CPU per request {:.1} µs ({})\n  context switches per request {:.2} ({})",
            self.us_per_request,
            groups(|t| Some(format!("{:.0}", t.us_per_request))),
            self.switches_per_request,
            groups(|t| Some(format!("{:.2}", t.switches_per_request))),
        );
        // A figure in all, then by the groups that had any of it.
        let line = |label: &str, all: String, figure: fn(&ThreadUse) -> Option<String>| match groups(
            figure,
        ) {
            by if by.is_empty() => format!("\n  {label} {all}"),
            by => format!("\n  {label} {all} ({by})"),
        };
        text += &line(
            "page faults per request",
            format!("{:.2}", self.faults_per_request),
            |t| (t.faults_per_request >= 0.01).then(|| format!("{:.2}", t.faults_per_request)),
        );
        if let Some(written) = self.written_bytes_per_request {
            text += &line("bytes written per request", format!("{written:.0}"), |t| {
                (t.written_bytes_per_request >= 1.0)
                    .then(|| format!("{:.0}", t.written_bytes_per_request))
            });
        }
        text
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_stat_line_gives_its_name_ticks_and_faults_even_with_spaces_and_parentheses_in_the_name() {
        let line = "4242 (actix-rt|system:0 (x)) S 1 4242 4242 0 -1 4194560 \
                    100 0 0 0 1234 567 0 0 20 0 9 0 100 0 0";
        assert_eq!(
            stat_ticks(line),
            Some(("actix-rt|system:0 (x)", 1234 + 567))
        );
        assert_eq!(stat_minor_faults(line), Some(100));
        assert_eq!(stat_ticks("4242 (cut"), None);
        assert_eq!(stat_ticks("4242 (short) S 1 2"), None);
        assert_eq!(stat_minor_faults("4242 (short) S 1 2"), None);
    }

    #[test]
    fn a_status_gives_both_kinds_of_context_switch() {
        let status = "Name:\thookd-committer\nState:\tS (sleeping)\n\
                      voluntary_ctxt_switches:\t1200\n\
                      nonvoluntary_ctxt_switches:\t34\n";
        assert_eq!(status_switches(status), Some(1234));
        assert_eq!(status_switches("voluntary_ctxt_switches:\t5\n"), None);
        assert_eq!(
            status_switches("voluntary_ctxt_switches: x\nnonvoluntary_ctxt_switches: 1\n"),
            None
        );
    }

    #[test]
    fn an_io_file_gives_the_bytes_passed_to_write_calls() {
        let io = "rchar: 10\nwchar: 8002\nsyscr: 1\nsyscw: 2\n\
                  read_bytes: 0\nwrite_bytes: 4096\ncancelled_write_bytes: 0\n";
        assert_eq!(io_written(io), Some(8002));
        assert_eq!(io_written("rchar: 10\n"), None);
        assert_eq!(io_written("wchar: lots\n"), None);
    }

    #[test]
    fn a_pool_is_counted_as_one_group() {
        assert_eq!(group("sled-io-12"), "sled-io");
        assert_eq!(group("hookd-committer"), "hookd-committer");
        assert_eq!(group("tokio-rt-worker"), "tokio-rt-worker");
        assert_eq!(group("odd-"), "odd-");
    }

    #[test]
    fn use_per_request_is_the_difference_over_the_requests() {
        let group = |ticks, switches, faults, written| Group {
            ticks,
            switches,
            faults,
            written,
        };
        let before = Ticks {
            total: 100,
            faults: 50_000,
            written: Some(1_000_000),
            threads: BTreeMap::from([
                ("committer".into(), group(40, 1_000, 30_000, 0)),
                ("http".into(), group(50, 3_000, 10_000, 0)),
                ("log".into(), group(1, 500, 100, 500_000)),
                ("checkpoint".into(), group(0, 0, 0, 100_000)),
            ]),
        };
        let after = Ticks {
            total: 400,
            faults: 65_000,
            written: Some(21_000_000),
            threads: BTreeMap::from([
                ("committer".into(), group(140, 6_000, 39_000, 0)),
                ("http".into(), group(250, 13_000, 12_000, 0)),
                ("log".into(), group(1, 3_000, 150, 18_500_000)),
                ("checkpoint".into(), group(0, 0, 0, 1_100_000)),
                ("late".into(), group(0, 60, 0, 0)),
            ]),
        };
        let used = CpuUse::between(&before, &after, 10_000).unwrap();
        // 300 ticks of 10 ms over 10,000 requests: 300 µs each.
        assert_eq!(used.us_per_request, 300.0);
        // 17,560 switches over 10,000 requests; `late`'s 60 count in all,
        // but the group is left out of the list (under 0.01, 1 µs and 1
        // byte). `checkpoint` used no CPU and never switched, but wrote.
        assert!((used.switches_per_request - 1.756).abs() < 1e-9);
        // 20 MB over 10,000 requests in all, threads that ended included;
        // 15,000 page faults in all, `log`'s 50 under 0.01 per request.
        assert_eq!(used.written_bytes_per_request, Some(2_000.0));
        assert_eq!(used.faults_per_request, 1.5);
        let groups: Vec<(&str, f64, f64, f64, f64)> = used
            .threads
            .iter()
            .map(|t| {
                let name = t.name.as_str();
                (
                    name,
                    t.us_per_request,
                    t.switches_per_request,
                    t.faults_per_request,
                    t.written_bytes_per_request,
                )
            })
            .collect();
        assert_eq!(
            groups,
            [
                ("http", 200.0, 1.0, 0.2, 0.0),
                ("committer", 100.0, 0.5, 0.9, 0.0),
                ("checkpoint", 0.0, 0.0, 0.0, 100.0),
                ("log", 0.0, 0.25, 0.005, 1_800.0),
            ]
        );
        assert_eq!(
            used.text(),
            "CPU per request 300.0 µs (http 200, committer 100, checkpoint 0, log 0)\n  \
             context switches per request 1.76 (http 1.00, committer 0.50, checkpoint 0.00, \
             log 0.25)\n  \
             page faults per request 1.50 (http 0.20, committer 0.90)\n  \
             bytes written per request 2000 (checkpoint 100, log 1800)"
        );
        let unread = Ticks {
            written: None,
            ..after
        };
        let used = CpuUse::between(&before, &unread, 10_000).unwrap();
        assert_eq!(used.written_bytes_per_request, None);
        assert!(!used.text().contains("bytes written"), "{}", used.text());
        let silent = Ticks {
            written: Some(21_000_000),
            threads: BTreeMap::from([("http".into(), group(250, 13_000, 10_000, 0))]),
            ..unread
        };
        let used = CpuUse::between(&before, &silent, 10_000).unwrap();
        assert!(
            used.text()
                .ends_with("page faults per request 1.50\n  bytes written per request 2000"),
            "{}",
            used.text()
        );
        assert!(CpuUse::between(&before, &unread, 0).is_none());
    }

    #[test]
    fn this_process_can_be_read() {
        let ticks = Ticks::of(std::process::id()).expect("own /proc entry");
        assert!(!ticks.threads.is_empty());
        // A thread that slept has switched at least once.
        std::thread::sleep(std::time::Duration::from_millis(1));
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("written"), [0u8; 4096]).unwrap();
        // Memory this process never touched: the kernel maps it on the
        // first write to each page.
        let fresh = std::hint::black_box(vec![1u8; 4 << 20]);
        let after = Ticks::of(std::process::id()).expect("own /proc entry");
        drop(fresh);
        assert!(after.threads.values().map(|g| g.switches).sum::<u64>() > 0);
        assert!(after.faults > ticks.faults, "{ticks:?} -> {after:?}");
        // This thread wrote 4 KiB to a file in between.
        let (Some(before), Some(after)) = (ticks.written, after.written) else {
            panic!("/proc/self/io unreadable");
        };
        assert!(after - before >= 4096, "{before} -> {after}");
    }
}
