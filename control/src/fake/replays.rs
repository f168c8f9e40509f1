//! The fake's replays: made, listed and steered in memory; a replay makes
//! no deliveries here, a dry run counts the tenant's events in its window
//! (it knows neither types nor bodies nor filters).

use std::sync::Mutex;

use crate::{
    error::{Error, Result},
    model::{
        DeliveryView, NewReplay, ReplayAction, ReplayCounts, ReplayStarted, ReplayState,
        ReplayView, DEFAULT_ROUTE,
    },
};

/// When the fake says a replay was made (Unix ms), and the `until` of one
/// asked for without.
const MADE_AT_MS: i64 = 1_700_000_000_000;

/// Every tenant's replays, oldest first.
#[derive(Default)]
pub(super) struct FakeReplays {
    made: Mutex<Vec<ReplayView>>,
}

impl FakeReplays {
    /// A dry run's count (the events of `deliveries`, on `default`, in the
    /// window and of the type), or a new running replay.
    pub(super) fn start(
        &self,
        tenant_id: &str,
        asked: NewReplay,
        deliveries: &[DeliveryView],
    ) -> Result<ReplayStarted> {
        if asked.route == DEFAULT_ROUTE {
            return Err(Error::InvalidArgument(
                "route: every accepted event has its delivery on default already".into(),
            ));
        }
        let until_ms = asked.until_ms.unwrap_or(MADE_AT_MS);
        if asked.dry_run {
            let count = deliveries
                .iter()
                .filter(|d| d.tenant_id == tenant_id && d.route == DEFAULT_ROUTE)
                .filter(|d| (asked.since_ms..until_ms).contains(&d.received_at_ms))
                .count();
            return Ok(ReplayStarted {
                count: count as u64,
                replay: None,
            });
        }
        let mut made = self.made.lock().unwrap();
        let busy = made.iter().any(|r| {
            r.tenant_id == tenant_id
                && r.route == asked.route
                && matches!(r.state, ReplayState::Running | ReplayState::Paused)
        });
        if busy {
            return Err(Error::FailedPrecondition(format!(
                "route {} has a replay not finished: cancel it or wait for it",
                asked.route
            )));
        }
        let replay = ReplayView {
            id: format!("rpl_{:026}", made.len() + 1),
            tenant_id: tenant_id.into(),
            route: asked.route,
            since_ms: asked.since_ms,
            until_ms,
            event_type: asked.event_type,
            body: asked.body,
            rate_per_sec: asked.rate_per_sec,
            state: ReplayState::Running,
            created_at_ms: MADE_AT_MS,
            finished_at_ms: None,
            counts: ReplayCounts::default(),
            position_ms: None,
            last_error: None,
        };
        made.push(replay.clone());
        Ok(ReplayStarted {
            count: 0,
            replay: Some(replay),
        })
    }

    /// One of `tenant_id`'s replays.
    pub(super) fn get(&self, tenant_id: &str, id: &str) -> Result<ReplayView> {
        self.made
            .lock()
            .unwrap()
            .iter()
            .find(|r| r.tenant_id == tenant_id && r.id == id)
            .cloned()
            .ok_or_else(|| Error::NotFound(format!("tenant {tenant_id} has no replay {id}")))
    }

    /// `tenant_id`'s replays (of `route`), newest first.
    pub(super) fn list(&self, tenant_id: &str, route: Option<&str>) -> Vec<ReplayView> {
        let made = self.made.lock().unwrap();
        made.iter()
            .rev()
            .filter(|r| r.tenant_id == tenant_id && route.is_none_or(|name| r.route == name))
            .cloned()
            .collect()
    }

    /// Pauses, resumes or cancels one, as hookd does.
    pub(super) fn act(
        &self,
        tenant_id: &str,
        id: &str,
        action: ReplayAction,
    ) -> Result<ReplayView> {
        let mut made = self.made.lock().unwrap();
        let Some(replay) = made
            .iter_mut()
            .find(|r| r.tenant_id == tenant_id && r.id == id)
        else {
            return Err(Error::NotFound(format!(
                "tenant {tenant_id} has no replay {id}"
            )));
        };
        replay.state = match (replay.state, action) {
            (ReplayState::Done | ReplayState::Cancelled, _) => {
                return Err(Error::FailedPrecondition(format!(
                    "replay {id} is finished; start another"
                )))
            }
            (_, ReplayAction::Pause) => ReplayState::Paused,
            (_, ReplayAction::Resume) => ReplayState::Running,
            (_, ReplayAction::Cancel) => {
                replay.finished_at_ms = Some(MADE_AT_MS);
                ReplayState::Cancelled
            }
        };
        Ok(replay.clone())
    }
}
