//! Ingest counts of each tenant over the last day, in one-minute buckets on
//! hookd's clock, so the dashboard can show the last hour and day: accepted,
//! duplicates and rejections by code. Kept in memory (a restart starts them
//! at zero); a tenant's buckets older than a day are dropped as it records,
//! and only running tenants record, so a sender cannot make entries.

use std::{
    collections::{HashMap, VecDeque},
    sync::Mutex,
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

/// Every tenant's buckets, oldest first.
#[derive(Debug, Default)]
pub struct IngestWindows {
    tenants: Mutex<HashMap<TenantId, VecDeque<Bucket>>>,
}

impl IngestWindows {
    /// Counts one request of `tenant` at `now_ms`.
    pub fn record(&self, tenant: &TenantId, now_ms: i64, what: Counted) {
        let minute = now_ms.div_euclid(BUCKET_MS);
        let mut tenants = self.tenants.lock().expect("windows lock");
        let buckets = tenants.entry(tenant.clone()).or_default();
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
        let Some(buckets) = tenants.get(tenant) else {
            return out;
        };
        for bucket in buckets.iter().filter(|b| b.minute >= first) {
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
            w.tenants.lock().unwrap()[&acme()].len(),
            1,
            "old buckets dropped"
        );
        let other = TenantId::try_from("other").unwrap();
        assert_eq!(w.counts(&other, next_day, HOUR), WindowCounts::default());
        w.forget("acme");
        assert_eq!(w.counts(&acme(), next_day, HOUR), WindowCounts::default());
    }
}
