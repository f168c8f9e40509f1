//! The transition gate and debounce of one condition (tenant, type, subject),
//! free of storage and time sources.

use std::collections::VecDeque;

/// What a step of the gate decided.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Transition {
    /// The condition started: open an alert, notify.
    Open,
    /// The condition cleared: resolve the alert, notify.
    Resolve,
}

/// One condition's gate.
///
/// The transition gate and debounce of one condition (tenant, type,
/// subject), free of storage and time sources so it is tested alone: a
/// notification only when the condition opens or resolves, and at most one
/// opening and one resolution per rule window, so a flapping condition
/// raises at most two notifications in any window and a condition that
/// clears sends exactly one resolution.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Gate {
    open: bool,
    last_open_ms: Option<i64>,
    last_resolve_ms: Option<i64>,
}

impl Gate {
    /// The gate of an alert already open since `opened_ms` (read back at a
    /// start).
    pub fn opened_at(opened_ms: i64) -> Gate {
        Gate {
            open: true,
            last_open_ms: Some(opened_ms),
            last_resolve_ms: None,
        }
    }

    /// True while the condition's alert is open.
    pub fn is_open(&self) -> bool {
        self.open
    }

    /// Feeds whether the condition `holds` at `now_ms`: a transition when
    /// it changed and the same kind of transition is at least `window_ms`
    /// old; otherwise nothing (a change within the window waits for the
    /// next step that still sees it).
    pub fn step(&mut self, now_ms: i64, holds: bool, window_ms: i64) -> Option<Transition> {
        let quiet = |last: Option<i64>| last.is_none_or(|at| now_ms - at >= window_ms);
        match (self.open, holds) {
            (false, true) if quiet(self.last_open_ms) => {
                self.open = true;
                self.last_open_ms = Some(now_ms);
                Some(Transition::Open)
            }
            (true, false) if quiet(self.last_resolve_ms) => {
                self.open = false;
                self.last_resolve_ms = Some(now_ms);
                Some(Transition::Resolve)
            }
            _ => None,
        }
    }
}

/// Occurrences within a sliding window, from a monotonic total sampled at
/// each evaluation. Only the samples where the total changed are kept (the
/// total between two of them is the earlier one's), so a quiet condition
/// holds one sample however long its window.
#[derive(Debug, Clone, Default)]
pub struct Window {
    samples: VecDeque<(i64, u64)>,
}

impl Window {
    /// From when, its total unchanged, the window would count nothing and
    /// keep as it is: holding at most one sample, of a total of 0 (at once)
    /// or once that sample is as old as the window. `None` while it holds
    /// more: only counting again settles it.
    pub fn settled_from(&self, window_ms: i64) -> Option<i64> {
        match self.samples.len() {
            0 => Some(i64::MIN),
            1 => Some(match self.samples[0] {
                (_, 0) => i64::MIN,
                (at, _) => at.saturating_add(window_ms),
            }),
            _ => None,
        }
    }

    /// Records `total` at `now_ms`; answers how many occurred within the
    /// last `window_ms` (since the last sample at least that old, or since
    /// the total was 0).
    pub fn count(&mut self, now_ms: i64, total: u64, window_ms: i64) -> u64 {
        let start = now_ms - window_ms;
        while self.samples.len() > 1 && self.samples[1].0 <= start {
            self.samples.pop_front();
        }
        let base = match self.samples.front() {
            Some(&(at, seen)) if at <= start => seen,
            _ => 0,
        };
        if self.samples.back().is_none_or(|&(_, last)| last != total) {
            self.samples.push_back((now_ms, total));
        }
        // A burst over, its room goes back.
        if self.samples.capacity() > 64 && self.samples.len() < self.samples.capacity() / 4 {
            self.samples.shrink_to_fit();
        }
        total.saturating_sub(base)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const WINDOW: i64 = 60_000;

    /// A condition that flips every 5 s for ten windows: no window of the
    /// rule's length holds more than one opening and one resolution.
    #[test]
    fn a_flapping_condition_raises_at_most_two_notifications_per_window() {
        let mut gate = Gate::default();
        let mut sent = Vec::new();
        for step in 0..(10 * WINDOW / 1000) {
            let now = step * 1000;
            let holds = (now / 5000) % 2 == 0;
            if let Some(t) = gate.step(now, holds, WINDOW) {
                sent.push((now, t));
            }
        }
        assert!(sent.len() >= 10, "it still notifies each window: {sent:?}");
        for (i, (at, _)) in sent.iter().enumerate() {
            let within = sent[i..].iter().filter(|(t, _)| t - at < WINDOW).count();
            assert!(
                within <= 2,
                "{within} notifications within a window from {at}: {sent:?}"
            );
        }
    }

    #[test]
    fn a_condition_that_clears_resolves_exactly_once() {
        let mut gate = Gate::default();
        assert_eq!(gate.step(0, true, WINDOW), Some(Transition::Open));
        assert_eq!(gate.step(1000, true, WINDOW), None);
        assert_eq!(gate.step(2000, false, WINDOW), Some(Transition::Resolve));
        for now in (3000..10 * WINDOW).step_by(1000) {
            assert_eq!(gate.step(now, false, WINDOW), None);
        }
        assert_eq!(gate.step(10 * WINDOW, true, WINDOW), Some(Transition::Open));
    }

    #[test]
    fn a_reopening_within_the_window_waits_for_the_window_and_then_opens_once() {
        let mut gate = Gate::default();
        gate.step(0, true, WINDOW);
        gate.step(1000, false, WINDOW);
        assert_eq!(gate.step(2000, true, WINDOW), None);
        assert_eq!(gate.step(WINDOW - 1, true, WINDOW), None);
        assert_eq!(gate.step(WINDOW, true, WINDOW), Some(Transition::Open));
        let mut reopened = Gate::opened_at(0);
        assert_eq!(reopened.step(1000, true, WINDOW), None);
        assert_eq!(
            reopened.step(2000, false, WINDOW),
            Some(Transition::Resolve)
        );
    }

    #[test]
    fn the_window_counts_only_recent_occurrences() {
        let mut w = Window::default();
        assert_eq!(w.count(0, 0, WINDOW), 0);
        assert_eq!(w.count(1000, 5, WINDOW), 5);
        assert_eq!(w.count(30_000, 12, WINDOW), 12);
        // 60 s after the sample of 0 it still counts from that sample.
        assert_eq!(w.count(60_000, 12, WINDOW), 12);
        // Past 61 s the 5 of the first second fell out.
        assert_eq!(w.count(61_000, 12, WINDOW), 7);
        assert_eq!(w.count(200_000, 12, WINDOW), 0);
    }

    /// Whether `w` is settled at `now_ms`.
    fn settled(w: &Window, now_ms: i64, window_ms: i64) -> bool {
        w.settled_from(window_ms).is_some_and(|from| from <= now_ms)
    }

    /// A window is settled once its last change is as old as the window:
    /// counting again, the total unchanged, gives 0 and keeps it as it is.
    #[test]
    fn a_window_settles_a_window_after_its_last_change() {
        let mut w = Window::default();
        assert_eq!(w.settled_from(WINDOW), Some(i64::MIN));
        assert!(settled(&w, 0, WINDOW), "an empty window");
        assert_eq!(w.count(0, 0, WINDOW), 0);
        assert!(settled(&w, 1000, WINDOW), "nothing counted yet");
        w.count(1000, 3, WINDOW);
        assert_eq!(
            w.settled_from(WINDOW),
            None,
            "two samples: counting settles it"
        );
        assert!(!settled(&w, 1000, WINDOW));
        assert!(!settled(&w, WINDOW, WINDOW), "the 3 still counts");
        assert_eq!(w.count(WINDOW + 1000, 3, WINDOW), 0);
        assert_eq!(w.settled_from(WINDOW), Some(1000 + WINDOW));
        assert!(settled(&w, WINDOW + 1000, WINDOW));
        assert_eq!(w.count(WINDOW + 2000, 3, WINDOW), 0);
        assert!(settled(&w, WINDOW + 2000, WINDOW));
        w.count(WINDOW + 3000, 4, WINDOW);
        assert!(!settled(&w, WINDOW + 3000, WINDOW));
    }

    /// A quiet condition (its total unchanged, as for most tenants most of
    /// the time) holds one sample, not one per evaluation of its window.
    #[test]
    fn a_window_whose_total_does_not_change_keeps_one_sample() {
        let mut w = Window::default();
        for step in 0..3_600 {
            let now = step * 1000;
            let seen = if now < 300_000 { 7 } else { 0 };
            assert_eq!(w.count(now, 7, 300_000), seen, "at {now}");
        }
        assert_eq!(w.samples.len(), 1);
        let mut burst = Window::default();
        for step in 0..1_000 {
            burst.count(step * 1000, step as u64, 300_000);
        }
        for step in 1_000..1_400 {
            burst.count(step * 1000, 1_000, 300_000);
        }
        assert_eq!(burst.samples.len(), 1);
        assert!(
            burst.samples.capacity() <= 64,
            "{}",
            burst.samples.capacity()
        );
    }

    /// What the window counts does not depend on how it stores its
    /// samples: against a window that keeps every sample, over a total
    /// that grows in bursts and pauses, sampled at uneven steps.
    #[test]
    fn the_window_counts_as_one_that_keeps_every_sample() {
        let mut every: Vec<(i64, u64)> = Vec::new();
        let mut w = Window::default();
        let (mut now, mut total, mut seed) = (0i64, 0u64, 0x9e37_79b9_7f4a_7c15u64);
        for _ in 0..5_000 {
            seed = seed.wrapping_mul(6_364_136_223_846_793_005).wrapping_add(1);
            now += 500 + (seed >> 33) as i64 % 1_500;
            if (seed >> 20) % 3 == 0 {
                total += (seed >> 40) % 5;
            }
            let start = now - WINDOW;
            let base = every
                .iter()
                .rev()
                .find(|(at, _)| *at <= start)
                .map_or(0, |(_, seen)| *seen);
            every.push((now, total));
            assert_eq!(w.count(now, total, WINDOW), total - base, "at {now}");
        }
    }
}
