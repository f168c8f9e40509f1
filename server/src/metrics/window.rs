//! Ingest counts of each tenant over the last day, in one-minute buckets, for
//! the dashboard's last hour and day.

use std::{
    collections::{BTreeMap, HashMap, VecDeque},
    sync::{Mutex, OnceLock},
};

use crate::{error::ErrorCode, ids::TenantId};

/// One bucket's width.
const BUCKET_MS: i64 = 60_000;
/// How far back the buckets reach: a day.
pub const WINDOW_MS: i64 = 24 * 3_600_000;

/// What an ingest request ended as.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Counted {
    /// A new delivery.
    Accepted,
    /// A copy of an accepted event.
    Duplicate,
    /// Refused with this code.
    Rejected(ErrorCode),
}

/// Counts over a span of time.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct WindowCounts {
    /// New deliveries.
    pub accepted: u64,
    /// Copies of accepted events.
    pub duplicates: u64,
    /// Rejections by code, most frequent first (then by code).
    pub rejected: Vec<(ErrorCode, u64)>,
}

#[derive(Debug, Default)]
struct Bucket {
    minute: i64,
    accepted: u64,
    duplicates: u64,
    rejected: Vec<(ErrorCode, u64)>,
}

/// One tenant's buckets, oldest first, and whether they were seeded.
#[derive(Debug, Default)]
struct TenantWindow {
    buckets: VecDeque<Bucket>,
    seeded: bool,
}

/// Every tenant's buckets.
///
/// Ingest counts of each tenant over the last day, in one-minute buckets on
/// hookd's clock, so the dashboard can show the last hour and day: accepted,
/// duplicates and rejections by code. Kept in memory by each process; after
/// a restart the accepted counts of the time before it are seeded once from
/// the stored deliveries ([`IngestWindows::to_seed`]), while duplicates and
/// rejections start at zero. A tenant's buckets older than a day are
/// dropped as it records, and only running tenants record, so a sender
/// cannot make entries.
#[derive(Debug, Default)]
pub struct IngestWindows {
    tenants: Mutex<HashMap<TenantId, TenantWindow>>,
    /// When this process began counting: every delivery it accepted was
    /// received at or after this.
    started_ms: OnceLock<i64>,
}

impl IngestWindows {
    /// Begins counting at `now_ms`, before any request is taken (later calls
    /// change nothing).
    pub fn begin(&self, now_ms: i64) {
        let _ = self.started_ms.set(now_ms);
    }

    /// Counts one request of `tenant` at `now_ms`.
    pub fn record(&self, tenant: &TenantId, now_ms: i64, what: Counted) {
        let minute = now_ms.div_euclid(BUCKET_MS);
        let mut tenants = self.tenants.lock().expect("windows lock");
        let buckets = &mut tenants.entry(tenant.clone()).or_default().buckets;
        let oldest = minute - WINDOW_MS / BUCKET_MS;
        while buckets.front().is_some_and(|b| b.minute <= oldest) {
            buckets.pop_front();
        }
        if buckets.back().is_none_or(|b| b.minute < minute) {
            buckets.push_back(Bucket {
                minute,
                ..Bucket::default()
            });
        }
        // A clock set back counts into the newest bucket.
        let bucket = buckets.back_mut().expect("a bucket was pushed");
        match what {
            Counted::Accepted => bucket.accepted += 1,
            Counted::Duplicate => bucket.duplicates += 1,
            Counted::Rejected(code) => match bucket.rejected.iter_mut().find(|(c, _)| *c == code) {
                Some((_, n)) => *n += 1,
                None => bucket.rejected.push((code, 1)),
            },
        }
    }

    /// `tenant`'s counts in the `span_ms` (at most a day) up to `now_ms`:
    /// the buckets of the minutes that started after `now_ms - span_ms`.
    pub fn counts(&self, tenant: &TenantId, now_ms: i64, span_ms: i64) -> WindowCounts {
        let first = (now_ms - span_ms.min(WINDOW_MS)).div_euclid(BUCKET_MS) + 1;
        let tenants = self.tenants.lock().expect("windows lock");
        let mut out = WindowCounts::default();
        let Some(window) = tenants.get(tenant) else {
            return out;
        };
        for bucket in window.buckets.iter().filter(|b| b.minute >= first) {
            out.accepted += bucket.accepted;
            out.duplicates += bucket.duplicates;
            for (code, n) in &bucket.rejected {
                match out.rejected.iter_mut().find(|(c, _)| c == code) {
                    Some((_, total)) => *total += n,
                    None => out.rejected.push((*code, *n)),
                }
            }
        }
        out.rejected
            .sort_by(|a, b| b.1.cmp(&a.1).then(a.0.as_str().cmp(b.0.as_str())));
        out
    }

    /// The first time it is asked for `tenant`: the span `[from, until)` of
    /// receive times (Unix ms) whose stored deliveries the caller should
    /// hand to [`IngestWindows::seed`], the day before this process began
    /// counting. `None` once asked.
    pub fn to_seed(&self, tenant: &TenantId, now_ms: i64) -> Option<(i64, i64)> {
        let started = *self.started_ms.get_or_init(|| now_ms);
        let mut tenants = self.tenants.lock().expect("windows lock");
        let window = tenants.entry(tenant.clone()).or_default();
        if window.seeded {
            return None;
        }
        window.seeded = true;
        Some((now_ms - WINDOW_MS, started))
    }

    /// Counts deliveries of `tenant` accepted before this process began
    /// counting, by their receive times.
    pub fn seed(&self, tenant: &TenantId, received_ms: &[i64]) {
        let mut tenants = self.tenants.lock().expect("windows lock");
        let window = tenants.entry(tenant.clone()).or_default();
        let mut by_minute: BTreeMap<i64, Bucket> = window
            .buckets
            .drain(..)
            .map(|bucket| (bucket.minute, bucket))
            .collect();
        for at in received_ms {
            let minute = at.div_euclid(BUCKET_MS);
            by_minute
                .entry(minute)
                .or_insert_with(|| Bucket {
                    minute,
                    ..Bucket::default()
                })
                .accepted += 1;
        }
        window.buckets = by_minute.into_values().collect();
    }

    /// `tenant`'s counts from `since_ms` to `now_ms` in spans of `step_ms`
    /// (a whole number of minutes), oldest first, as `(start, accepted,
    /// duplicates, rejected)`; each span starts at a multiple of `step_ms`.
    pub fn series(
        &self,
        tenant: &TenantId,
        (since_ms, now_ms): (i64, i64),
        step_ms: i64,
    ) -> Vec<(i64, u64, u64, u64)> {
        let step = step_ms.max(BUCKET_MS);
        let first = since_ms.max(now_ms - WINDOW_MS);
        let first = first - first.rem_euclid(step);
        let mut out: Vec<(i64, u64, u64, u64)> = (first..=now_ms)
            .step_by(step as usize)
            .map(|start| (start, 0, 0, 0))
            .collect();
        let tenants = self.tenants.lock().expect("windows lock");
        let Some(window) = tenants.get(tenant) else {
            return out;
        };
        for bucket in &window.buckets {
            let start = bucket.minute * BUCKET_MS;
            if start < first {
                continue;
            }
            if let Some(span) = out.get_mut(((start - first) / step) as usize) {
                span.1 += bucket.accepted;
                span.2 += bucket.duplicates;
                span.3 += bucket.rejected.iter().map(|(_, n)| n).sum::<u64>();
            }
        }
        out
    }

    /// Forgets a tenant that stopped for good.
    pub fn forget(&self, tenant: &str) {
        self.tenants
            .lock()
            .expect("windows lock")
            .retain(|id, _| id.as_str() != tenant);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const HOUR: i64 = 3_600_000;

    fn acme() -> TenantId {
        TenantId::try_from("acme").unwrap()
    }

    #[test]
    fn a_series_sums_the_minutes_of_each_span() {
        let w = IngestWindows::default();
        let t0 = 1_700_000_000_000 - 1_700_000_000_000 % HOUR;
        w.record(&acme(), t0 + 5, Counted::Accepted);
        w.record(&acme(), t0 + 70_000, Counted::Accepted);
        w.record(&acme(), t0 + 70_001, Counted::Duplicate);
        w.record(
            &acme(),
            t0 + HOUR,
            Counted::Rejected(ErrorCode::BadSignature),
        );
        let minutes = w.series(&acme(), (t0, t0 + 120_000), 60_000);
        assert_eq!(
            minutes,
            [
                (t0, 1, 0, 0),
                (t0 + 60_000, 1, 1, 0),
                (t0 + 120_000, 0, 0, 0)
            ]
        );
        let hours = w.series(&acme(), (t0, t0 + HOUR), HOUR);
        assert_eq!(hours, [(t0, 2, 1, 0), (t0 + HOUR, 0, 0, 1)]);
    }

    #[test]
    fn counts_leave_the_hour_and_then_the_day() {
        let w = IngestWindows::default();
        let t0 = 1_700_000_000_000;
        w.record(&acme(), t0, Counted::Accepted);
        w.record(&acme(), t0 + 1, Counted::Duplicate);
        w.record(&acme(), t0 + 2, Counted::Rejected(ErrorCode::BadSignature));
        w.record(&acme(), t0 + 3, Counted::Rejected(ErrorCode::BadSignature));
        w.record(&acme(), t0 + 4, Counted::Rejected(ErrorCode::InvalidJson));
        let hour = w.counts(&acme(), t0 + 5, HOUR);
        assert_eq!((hour.accepted, hour.duplicates), (1, 1));
        assert_eq!(
            hour.rejected,
            [(ErrorCode::BadSignature, 2), (ErrorCode::InvalidJson, 1)]
        );
        let later = t0 + HOUR + BUCKET_MS;
        assert_eq!(w.counts(&acme(), later, HOUR), WindowCounts::default());
        assert_eq!(w.counts(&acme(), later, WINDOW_MS).accepted, 1);
        let next_day = t0 + WINDOW_MS + BUCKET_MS;
        assert_eq!(
            w.counts(&acme(), next_day, WINDOW_MS),
            WindowCounts::default()
        );
        w.record(&acme(), next_day, Counted::Accepted);
        assert_eq!(
            w.tenants.lock().unwrap()[&acme()].buckets.len(),
            1,
            "old buckets dropped"
        );
        let other = TenantId::try_from("other").unwrap();
        assert_eq!(w.counts(&other, next_day, HOUR), WindowCounts::default());
        w.forget("acme");
        assert_eq!(w.counts(&acme(), next_day, HOUR), WindowCounts::default());
    }

    #[test]
    fn accepted_counts_from_before_a_restart_are_seeded_once() {
        let w = IngestWindows::default();
        let t0 = 1_700_000_000_000;
        w.begin(t0);
        w.record(&acme(), t0 + 1, Counted::Accepted);
        assert_eq!(w.to_seed(&acme(), t0 + 5), Some((t0 + 5 - WINDOW_MS, t0)));
        assert_eq!(w.to_seed(&acme(), t0 + 6), None, "seeded once");
        w.seed(&acme(), &[t0 - 3 * HOUR, t0 - 1_000, t0 - 500]);
        assert_eq!(w.counts(&acme(), t0 + 5, HOUR).accepted, 3);
        assert_eq!(w.counts(&acme(), t0 + 5, WINDOW_MS).accepted, 4);
        w.record(&acme(), t0 + 7, Counted::Accepted);
        assert_eq!(
            w.counts(&acme(), t0 + 8, HOUR).accepted,
            4,
            "buckets stay in order"
        );
    }
}
