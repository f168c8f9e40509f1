//! The standard `process_*` metrics of the running hookd, read from
//! `/proc/self` (Linux) at scrape time.

use std::fs;

/// Ticks per second of the times in `/proc/<pid>/stat`: `USER_HZ`, which
/// Linux fixes at 100 for what it reports to user space.
const USER_HZ: f64 = 100.0;

/// One reading of the process's resources.
#[derive(Debug, Clone, PartialEq)]
pub struct ProcessStats {
    /// User and system CPU time, in seconds.
    pub cpu_seconds: f64,
    /// Resident memory, in bytes.
    pub resident_bytes: u64,
    /// Virtual memory, in bytes.
    pub virtual_bytes: u64,
    /// Open file descriptors.
    pub open_fds: u64,
    /// The soft limit on open file descriptors, if there is one.
    pub max_fds: Option<u64>,
    /// When the process started, in Unix seconds.
    pub start_time_seconds: f64,
}

/// Reads `/proc/self`; `None` where there is no `/proc`.
///
/// The standard `process_*` metrics of the running hookd, read from
/// `/proc/self` (Linux) at scrape time: CPU seconds, resident and virtual
/// memory, open and maximum file descriptors, start time. Elsewhere, or if
/// `/proc` cannot be read, they are left out.
pub fn read() -> Option<ProcessStats> {
    let stat = fs::read_to_string("/proc/self/stat").ok()?;
    let boot_time = fs::read_to_string("/proc/stat")
        .ok()
        .and_then(|s| parse_boot_time(&s))?;
    let open_fds = fs::read_dir("/proc/self/fd").ok()?.count() as u64;
    let max_fds = fs::read_to_string("/proc/self/limits")
        .ok()
        .and_then(|s| parse_max_fds(&s));
    let resident_kib = fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|s| parse_status_kib(&s, "VmRSS:"))?;
    let fields = parse_stat(&stat)?;
    Some(ProcessStats {
        cpu_seconds: (fields.utime + fields.stime) as f64 / USER_HZ,
        resident_bytes: resident_kib * 1024,
        virtual_bytes: fields.vsize,
        open_fds,
        max_fds,
        start_time_seconds: boot_time as f64 + fields.start_ticks as f64 / USER_HZ,
    })
}

/// The fields of `/proc/self/stat` hookd reports.
#[derive(Debug, PartialEq)]
struct StatFields {
    utime: u64,
    stime: u64,
    start_ticks: u64,
    vsize: u64,
}

/// Parses `/proc/<pid>/stat`: fields are counted after the command name's
/// closing parenthesis, since the name may hold spaces.
fn parse_stat(stat: &str) -> Option<StatFields> {
    let rest = &stat[stat.rfind(')')? + 1..];
    // `rest` starts at field 3 (state); field n is at index n - 3.
    let fields: Vec<&str> = rest.split_whitespace().collect();
    let field = |n: usize| fields.get(n - 3)?.parse::<u64>().ok();
    Some(StatFields {
        utime: field(14)?,
        stime: field(15)?,
        start_ticks: field(22)?,
        vsize: field(23)?,
    })
}

fn parse_boot_time(proc_stat: &str) -> Option<u64> {
    proc_stat
        .lines()
        .find_map(|l| l.strip_prefix("btime "))?
        .trim()
        .parse()
        .ok()
}

fn parse_max_fds(limits: &str) -> Option<u64> {
    let line = limits.lines().find(|l| l.starts_with("Max open files"))?;
    line["Max open files".len()..]
        .split_whitespace()
        .next()?
        .parse()
        .ok()
}

fn parse_status_kib(status: &str, key: &str) -> Option<u64> {
    status
        .lines()
        .find_map(|l| l.strip_prefix(key))?
        .split_whitespace()
        .next()?
        .parse()
        .ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn proc_files_parse() {
        let stat = "4242 (hookd (x) y) S 1 4242 4242 0 -1 4194560 900 0 0 0 \
                    250 50 0 0 20 0 9 0 123400 987654321 3000 18446744073709551615";
        assert_eq!(
            parse_stat(stat),
            Some(StatFields {
                utime: 250,
                stime: 50,
                start_ticks: 123400,
                vsize: 987654321
            })
        );
        assert_eq!(
            parse_boot_time("cpu  1 2\nbtime 1700000000\n"),
            Some(1_700_000_000)
        );
        let limits = "Limit                     Soft Limit           Hard Limit           Units\n\
                      Max open files            1024                 524288               files\n";
        assert_eq!(parse_max_fds(limits), Some(1024));
        assert_eq!(
            parse_status_kib("Name:\thookd\nVmRSS:\t  5120 kB\n", "VmRSS:"),
            Some(5120)
        );
    }

    #[test]
    fn this_process_can_be_read_on_linux() {
        if cfg!(target_os = "linux") {
            let stats = read().expect("/proc/self");
            assert!(stats.resident_bytes > 0 && stats.open_fds > 0, "{stats:?}");
        }
    }
}
