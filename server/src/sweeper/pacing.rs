//! How much of each data handle's idempotency log a pass scans.

use std::collections::HashMap;

use crate::{config::RetentionConfig, ids::TenantId};

/// Cycles in one idempotency retention.
const CYCLES_PER_RETENTION: i64 = 24;

/// The scans of every data handle, kept from pass to pass.
///
/// Idempotency records are keyed by event id, not by time, so the old ones
/// are found only by reading every record. Read whole at every pass, that
/// is the whole log (a week of events by default) every minute: work that
/// grows with the log, not with what expires. So each handle's scan is a
/// **cycle** over its log, begun at most once per cycle length (a 24th of
/// the idempotency retention, and at least one pass) and spread over the
/// passes of the cycle: each pass scans as many records as the handle's
/// last whole cycle counted, divided by the passes in a cycle, and a
/// quarter more for growth (at least one sweep batch). A handle's first
/// cycle begins one cycle length after a start (or after the handle first
/// appears), so a restart under load is not met by a scan of every log,
/// and scans its log whole in one pass. Every record is read about 24
/// times over its life, whatever the log's length, and one is forgotten at
/// most about two cycles (a twelfth of the retention) after it expired.
pub struct Pacing {
    /// How often a handle's scan begins, at most.
    cycle_ms: i64,
    /// Passes in one cycle, at least one.
    passes_per_cycle: u64,
    /// Fewest records a pass scans of a handle in a cycle under way.
    batch: usize,
    scans: HashMap<TenantId, Scan>,
}

/// One handle's scan.
#[derive(Debug, Default)]
struct Scan {
    /// Where the cycle under way goes on from (empty: the start).
    cursor: Vec<u8>,
    /// When the cycle under way, or the last one, began.
    began_ms: i64,
    /// Whether a cycle is under way.
    under_way: bool,
    /// Records the cycle under way scanned so far.
    scanned: u64,
    /// Records the last whole cycle scanned: none before one ended.
    last_cycle: Option<u64>,
}

/// What a pass gives one handle's scan: where it goes on from and how many
/// records it may scan (0: none in this pass; `usize::MAX`: to the end).
#[derive(Debug, PartialEq, Eq)]
pub struct Budget {
    pub cursor: Vec<u8>,
    pub records: usize,
}

impl Budget {
    /// The whole log, from the start.
    pub fn whole() -> Budget {
        Budget {
            cursor: Vec::new(),
            records: usize::MAX,
        }
    }
}

/// What a pass did with one handle's budget.
#[derive(Debug)]
pub struct Progress {
    /// Where the scan stopped (empty: it reached the end, or never began).
    pub cursor: Vec<u8>,
    /// Records scanned, at most.
    pub scanned: u64,
    /// Whether the scan reached the end of the log.
    pub ended: bool,
}

impl Pacing {
    pub fn new(retention: &RetentionConfig) -> Pacing {
        let interval_ms = ((retention.sweep_interval_secs * 1000.0) as i64).max(1);
        let retention_ms = (retention.idempotency_secs as i64).saturating_mul(1000);
        let cycle_ms = (retention_ms / CYCLES_PER_RETENTION).max(interval_ms);
        Pacing {
            cycle_ms,
            passes_per_cycle: (cycle_ms / interval_ms).max(1) as u64,
            batch: retention.sweep_batch.max(1),
            scans: HashMap::new(),
        }
    }

    /// The budget of `data`'s scan in a pass at `now_ms`, beginning a cycle
    /// when one is due (a handle not seen before waits a cycle first).
    pub fn budget(&mut self, data: &TenantId, now_ms: i64) -> Budget {
        let scan = self.scans.entry(data.clone()).or_insert_with(|| Scan {
            began_ms: now_ms,
            ..Scan::default()
        });
        if !scan.under_way {
            if now_ms < scan.began_ms.saturating_add(self.cycle_ms) {
                return Budget {
                    cursor: Vec::new(),
                    records: 0,
                };
            }
            *scan = Scan {
                began_ms: now_ms,
                under_way: true,
                last_cycle: scan.last_cycle,
                ..Scan::default()
            };
        }
        let records = match scan.last_cycle {
            Some(last) => {
                let share = (last.saturating_mul(5) / 4).div_ceil(self.passes_per_cycle);
                usize::try_from(share).unwrap_or(usize::MAX).max(self.batch)
            }
            None => usize::MAX,
        };
        Budget {
            cursor: scan.cursor.clone(),
            records,
        }
    }

    /// Takes what a pass did with each handle's budget; handles the pass
    /// did not see (deleted tenants and routes) are forgotten.
    pub fn passed(&mut self, progress: impl IntoIterator<Item = (TenantId, Progress)>) {
        let mut seen = HashMap::with_capacity(self.scans.len());
        for (data, progress) in progress {
            let Some(mut scan) = self.scans.remove(&data) else {
                continue;
            };
            if scan.under_way {
                scan.cursor = progress.cursor;
                scan.scanned = scan.scanned.saturating_add(progress.scanned);
                if progress.ended {
                    scan.under_way = false;
                    scan.last_cycle = Some(scan.scanned);
                }
            }
            seen.insert(data, scan);
        }
        self.scans = seen;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A day's idempotency retention (cycles of an hour), a pass a minute.
    fn pacing() -> Pacing {
        Pacing::new(&super::super::retention(86_400, 1_000))
    }

    /// `acme` seen at 0, its first cycle's budget given at an hour.
    fn at_first_cycle() -> Pacing {
        let mut pacing = pacing();
        pacing.budget(&acme(), 0);
        pacing.passed([progress(b"", 0, false)]);
        pacing.budget(&acme(), HOUR_MS);
        pacing
    }

    fn acme() -> TenantId {
        TenantId::try_from("acme").unwrap()
    }

    fn progress(cursor: &[u8], scanned: u64, ended: bool) -> (TenantId, Progress) {
        let cursor = cursor.to_vec();
        (
            acme(),
            Progress {
                cursor,
                scanned,
                ended,
            },
        )
    }

    const HOUR_MS: i64 = 3_600_000;

    #[test]
    fn a_first_cycle_waits_a_cycle_and_scans_whole_then_cycles_spread_over_their_passes() {
        let mut pacing = pacing();
        assert_eq!(
            pacing.budget(&acme(), 0).records,
            0,
            "a cycle after first seen"
        );
        pacing.passed([progress(b"", 0, false)]);
        assert_eq!(pacing.budget(&acme(), HOUR_MS - 1).records, 0);
        pacing.passed([progress(b"", 0, false)]);
        assert_eq!(pacing.budget(&acme(), HOUR_MS), Budget::whole());
        pacing.passed([progress(b"", 120_000, true)]);

        // Until an hour after the first cycle began, no scan.
        assert_eq!(pacing.budget(&acme(), 2 * HOUR_MS - 1).records, 0);
        pacing.passed([progress(b"", 0, false)]);

        // Then 120 000 records and a quarter more over 60 passes.
        let next = pacing.budget(&acme(), 2 * HOUR_MS);
        assert_eq!(next.records, 2_500);
        assert!(next.cursor.is_empty());
        pacing.passed([progress(b"k2500", 2_500, false)]);
        let on = pacing.budget(&acme(), 2 * HOUR_MS + 60_000);
        assert_eq!(on.cursor, b"k2500", "the cycle goes on where it stopped");
        assert_eq!(on.records, 2_500);
        pacing.passed([progress(b"", 1_000, true)]);

        // That cycle counted 3 500: the next one scans the batch at least.
        assert_eq!(pacing.budget(&acme(), 3 * HOUR_MS - 1).records, 0);
        pacing.passed([progress(b"", 0, false)]);
        assert_eq!(pacing.budget(&acme(), 3 * HOUR_MS).records, 1_000);
    }

    #[test]
    fn a_handle_a_pass_did_not_see_is_forgotten_and_waits_a_cycle_again() {
        let mut pacing = at_first_cycle();
        pacing.passed([progress(b"", 10, true)]);
        pacing.passed([]);
        assert_eq!(pacing.budget(&acme(), 2 * HOUR_MS).records, 0);
        pacing.passed([progress(b"", 0, false)]);
        assert_eq!(pacing.budget(&acme(), 3 * HOUR_MS), Budget::whole());
    }

    #[test]
    fn a_scan_that_stopped_short_of_the_end_is_not_a_whole_cycle() {
        let mut pacing = at_first_cycle();
        // A failed step: stopped with no cursor, not at the end.
        pacing.passed([progress(b"", 0, false)]);
        assert_eq!(
            pacing.budget(&acme(), HOUR_MS + 60_000),
            Budget::whole(),
            "still the first cycle, from the start"
        );
    }

    #[test]
    fn a_short_retention_cycles_every_pass() {
        let mut pacing = Pacing::new(&super::super::retention(5, 10));
        pacing.budget(&acme(), 0);
        pacing.passed([progress(b"", 0, false)]);
        assert_eq!(pacing.budget(&acme(), 60_000), Budget::whole());
        pacing.passed([progress(b"", 40, true)]);
        let next = pacing.budget(&acme(), 120_000);
        assert_eq!(next.records, 50, "the whole log and a quarter in one pass");
    }
}
