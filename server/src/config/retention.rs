//! `[retention]`: how long finished work is kept.

use serde::{Deserialize, Serialize};

/// How long finished work is kept.
#[derive(Debug, Clone, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct RetentionConfig {
    /// Idempotency records older than this are forgotten: a copy of an
    /// event arriving later is taken as new.
    pub idempotency_secs: u64,
    /// Delivered events (body, attempts) older than this are deleted.
    pub delivered_secs: u64,
    /// Dead letters (body, attempts) dead for longer than this are
    /// deleted, so they cannot fill the disk however many die.
    pub dead_secs: u64,
    /// Pause between sweeps.
    pub sweep_interval_secs: f64,
    /// Most records of each kind one sweep step deletes (or, for
    /// idempotency records, scans) for one tenant before the next tenant's
    /// turn.
    pub sweep_batch: usize,
}
