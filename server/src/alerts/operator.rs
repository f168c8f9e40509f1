//! The operator's sink's budget: how many notifications of every tenant
//! together go out in each window, and the digest of those held back.

use std::collections::HashMap;

use serde_json::{json, Value};

use crate::ids::TenantId;

/// Most (tenant, type) pairs a digest lists; the rest are counted in
/// `others`.
pub const DIGEST_LISTS: usize = 50;

/// The operator's sink's window and what it held back in it.
///
/// The operator's sink's budget: it hears of every tenant, so a flood of
/// openings across many tenants (unsigned requests to each) would reach it
/// one notification each. At most `alerts.operator_max_per_window` go out in
/// each `alerts.operator_window_secs`, of every tenant together; the rest
/// are held back and counted, and when the window ends one digest names
/// how many were held back and for which tenants and types. Free of
/// storage and time sources, like the debounce.
#[derive(Debug)]
pub struct OperatorBudget {
    max: u64,
    window_ms: i64,
    /// When the window began: the first notification after the last one
    /// ended.
    started_ms: Option<i64>,
    sent: u64,
    held: HashMap<(TenantId, &'static str), u64>,
}

/// What a window held back, for the digest.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Digest {
    /// Notifications held back.
    pub held_back: u64,
    /// The window: when it began and ended (Unix ms).
    pub from_ms: i64,
    /// See `from_ms`.
    pub to_ms: i64,
    /// The budget: at most this many per window.
    pub max: u64,
    /// The window's length, ms.
    pub window_ms: i64,
    /// Held back per tenant and event type, most first (then by tenant and
    /// type), at most [`DIGEST_LISTS`].
    pub by: Vec<(TenantId, &'static str, u64)>,
    /// Held back notifications of the pairs past [`DIGEST_LISTS`].
    pub others: u64,
}

impl OperatorBudget {
    /// At most `max` notifications in each `window_ms`.
    pub fn new(max: u64, window_ms: i64) -> OperatorBudget {
        OperatorBudget {
            max,
            window_ms: window_ms.max(1),
            started_ms: None,
            sent: 0,
            held: HashMap::new(),
        }
    }

    /// Whether a notification of `event_type` about `tenant` at `now_ms`
    /// goes to the operator's sink; if not, it is counted for the digest.
    /// [`OperatorBudget::roll`] is called first at each evaluation.
    pub fn admit(&mut self, now_ms: i64, tenant: &TenantId, event_type: &'static str) -> bool {
        self.started_ms.get_or_insert(now_ms);
        if self.sent < self.max {
            self.sent += 1;
            return true;
        }
        *self.held.entry((tenant.clone(), event_type)).or_default() += 1;
        false
    }

    /// At `now_ms`: once the window has ended, closes it (the next
    /// notification begins a new one) and hands back the digest of what it
    /// held back, if anything.
    pub fn roll(&mut self, now_ms: i64) -> Option<Digest> {
        let started = self.started_ms?;
        if now_ms - started < self.window_ms {
            return None;
        }
        self.started_ms = None;
        self.sent = 0;
        if self.held.is_empty() {
            return None;
        }
        let mut by: Vec<(TenantId, &'static str, u64)> = self
            .held
            .drain()
            .map(|((tenant, kind), n)| (tenant, kind, n))
            .collect();
        by.sort_by(|a, b| b.2.cmp(&a.2).then_with(|| (&a.0, a.1).cmp(&(&b.0, b.1))));
        let held_back = by.iter().map(|(_, _, n)| n).sum();
        let others = by.iter().skip(DIGEST_LISTS).map(|(_, _, n)| n).sum();
        by.truncate(DIGEST_LISTS);
        Some(Digest {
            held_back,
            from_ms: started,
            to_ms: now_ms,
            max: self.max,
            window_ms: self.window_ms,
            by,
            others,
        })
    }
}

impl Digest {
    /// The tenants it names, most held back first.
    pub fn tenants(&self) -> impl Iterator<Item = &TenantId> {
        self.by.iter().map(|(tenant, _, _)| tenant)
    }

    /// Its event (`type` `alerts.digest`, `version` 1), notification `id`.
    pub fn event(&self, id: &str) -> Value {
        let listed: Vec<String> = self
            .by
            .iter()
            .map(|(tenant, kind, n)| format!("{tenant} {kind} x{n}"))
            .collect();
        let others = match self.others {
            0 => String::new(),
            n => format!(" and {n} more"),
        };
        let window_secs = self.window_ms / 1000;
        json!({
            "type": "alerts.digest",
            "version": 1,
            "id": id,
            "tenant": "",
            "summary": format!(
                "{} notifications held back (at most {} per {window_secs} s): {}{others}",
                self.held_back, self.max, listed.join(", ")
            ),
            "held_back": self.held_back,
            "max_per_window": self.max,
            "window_secs": window_secs,
            "from_unix_ms": self.from_ms,
            "to_unix_ms": self.to_ms,
            "held": self.by.iter().map(|(tenant, kind, n)| json!({
                "tenant": tenant.as_str(),
                "type": kind,
                "count": n,
            })).collect::<Vec<_>>(),
            "others": self.others,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn id(s: &str) -> TenantId {
        TenantId::try_from(s).unwrap()
    }

    const SPIKE: &str = "verification.failure_spike";
    const HANDSHAKE: &str = "handshake.failed";

    /// Of a flood across tenants, `max` notifications go out in a window;
    /// the rest come back as one digest when it ends, counted per tenant
    /// and type, and the next window starts afresh.
    #[test]
    fn beyond_the_budget_notifications_are_held_for_one_digest() {
        let mut budget = OperatorBudget::new(2, 60_000);
        assert_eq!(budget.roll(0), None, "nothing began");
        let mut sent = 0;
        for (n, tenant) in ["a", "b", "c", "d", "e"].into_iter().enumerate() {
            sent += u32::from(budget.admit(1_000 + n as i64, &id(tenant), SPIKE));
        }
        sent += u32::from(budget.admit(2_000, &id("e"), HANDSHAKE));
        sent += u32::from(budget.admit(2_000, &id("e"), SPIKE));
        assert_eq!(sent, 2);
        assert_eq!(budget.roll(60_999), None, "the window has not ended");

        let digest = budget.roll(61_000).unwrap();
        assert_eq!(digest.held_back, 5);
        assert_eq!(
            (digest.from_ms, digest.to_ms, digest.max, digest.window_ms),
            (1_000, 61_000, 2, 60_000)
        );
        assert_eq!(
            digest.by,
            vec![
                (id("e"), SPIKE, 2),
                (id("c"), SPIKE, 1),
                (id("d"), SPIKE, 1),
                (id("e"), HANDSHAKE, 1),
            ]
        );
        let event = digest.event("ntf_1");
        assert_eq!(event["type"], "alerts.digest");
        assert_eq!(event["held_back"], 5);
        assert_eq!(
            event["held"][0],
            json!({"tenant": "e", "type": SPIKE, "count": 2})
        );
        let summary = event["summary"].as_str().unwrap();
        assert!(
            summary.starts_with("5 notifications held back (at most 2 per 60 s): e verification.failure_spike x2, c "),
            "{summary}"
        );

        assert_eq!(budget.roll(200_000), None, "a digest once");
        assert!(budget.admit(300_000, &id("a"), SPIKE), "a new window");
        assert!(budget.admit(300_001, &id("a"), SPIKE));
        assert!(!budget.admit(300_002, &id("a"), SPIKE));
        assert_eq!(budget.roll(360_000).unwrap().held_back, 1);
    }

    /// A window that held nothing back ends without a digest.
    #[test]
    fn a_window_within_the_budget_sends_no_digest() {
        let mut budget = OperatorBudget::new(3, 10_000);
        assert!(budget.admit(0, &id("a"), SPIKE));
        assert!(budget.admit(5, &id("b"), SPIKE));
        assert_eq!(budget.roll(10_000), None);
        for n in 0..3 {
            assert!(budget.admit(20_000 + n, &id("c"), SPIKE), "a fresh window");
        }
    }

    /// A digest lists the pairs held back most, and counts the rest.
    #[test]
    fn a_digest_lists_at_most_its_share_of_pairs() {
        let mut budget = OperatorBudget::new(1, 1_000);
        assert!(budget.admit(0, &id("first"), SPIKE));
        for n in 0..(DIGEST_LISTS + 10) {
            let tenant = id(&format!("t{n:03}"));
            budget.admit(1, &tenant, SPIKE);
            if n < 3 {
                budget.admit(1, &tenant, SPIKE);
            }
        }
        let digest = budget.roll(1_000).unwrap();
        assert_eq!(digest.held_back, DIGEST_LISTS as u64 + 13);
        assert_eq!(digest.by.len(), DIGEST_LISTS);
        assert_eq!(digest.by[0], (id("t000"), SPIKE, 2));
        assert_eq!(digest.others, 10);
    }
}
