//! Handshakes of one `tenant` label: `hookd_handshakes_total{handshake,
//! outcome}` and what the dashboard shows of them.

use std::sync::Mutex;

use hookd_sdk::signature::handshake::Handshake;
use prometheus_client::metrics::{counter::Counter, family::Family};

use super::Labels;

/// What a tenant's handshakes came to since the server started.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct HandshakeState {
    pub answered: u64,
    pub refused: u64,
    pub last_answered_ms: Option<i64>,
    pub last_refused_ms: Option<i64>,
    /// The error code of the last refusal.
    pub last_refusal: Option<String>,
}

/// One label's handshake counters and state.
///
/// Handshakes of one `tenant` label: `hookd_handshakes_total{handshake,
/// outcome}` and what the dashboard shows of them (how many answered and
/// refused since start, when last, why the last refusal). Series appear
/// with a tenant's first handshake, since most schemes have none.
pub struct HandshakeMetrics {
    label: String,
    family: Family<Labels, Counter>,
    state: Mutex<HandshakeState>,
}

impl HandshakeMetrics {
    pub(super) fn new(label: &str, family: Family<Labels, Counter>) -> Self {
        HandshakeMetrics {
            label: label.to_owned(),
            family,
            state: Mutex::default(),
        }
    }

    fn count(&self, kind: Handshake, outcome: &'static str) {
        let labels = vec![
            ("tenant", self.label.clone()),
            ("handshake", kind.as_str().to_owned()),
            ("outcome", outcome.to_owned()),
        ];
        self.family.get_or_create(&labels).inc();
    }

    /// Counts a handshake answered at `now_ms`.
    pub fn answered(&self, kind: Handshake, now_ms: i64) {
        self.count(kind, "answered");
        let mut state = self.state.lock().unwrap_or_else(|e| e.into_inner());
        state.answered += 1;
        state.last_answered_ms = Some(now_ms);
    }

    /// Counts a handshake refused at `now_ms` with error `code`.
    pub fn refused(&self, kind: Handshake, now_ms: i64, code: &str) {
        self.count(kind, "refused");
        let mut state = self.state.lock().unwrap_or_else(|e| e.into_inner());
        state.refused += 1;
        state.last_refused_ms = Some(now_ms);
        state.last_refusal = Some(code.to_owned());
    }

    /// The state now.
    pub fn state(&self) -> HandshakeState {
        self.state.lock().unwrap_or_else(|e| e.into_inner()).clone()
    }
}
