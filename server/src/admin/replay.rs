//! ReplayToRoute and the replay calls: a replay ordered, counted, shown,
//! paused, resumed and cancelled. The order is a catalog row every
//! replica follows; the replica that forwards the route runs it
//! (`forward/replayer.rs`).

use hookd_control::{
    model::{
        BodyField, NewReplay, ReplayAction, ReplayCounts, ReplayStarted, ReplayState, ReplayView,
        DEFAULT_ROUTE, MAX_REPLAY_RATE,
    },
    Error as ApiError, Result as ApiResult,
};

use super::{api, Backend};
use crate::{
    forward::count_replay,
    ids::DeliveryId,
    routes::replay::{Control, ReplayOrder, ReplayProgress},
    store::api::{RowChange, Table},
};

impl Backend {
    /// Counts (a dry run) or orders a replay into a named route of
    /// `tenant_id`; a replay ordered starts here at once (and on every
    /// other replica at its next poll, where it waits for the lease).
    pub(super) async fn start_replay(
        &self,
        tenant_id: &str,
        asked: NewReplay,
    ) -> ApiResult<ReplayStarted> {
        if asked.route == DEFAULT_ROUTE {
            return Err(ApiError::InvalidArgument(
                "route: every accepted event has its delivery on default already; replay into another route, or redeliver default's dead letters".into(),
            ));
        }
        if !(1..=MAX_REPLAY_RATE).contains(&asked.rate_per_sec) {
            return Err(ApiError::InvalidArgument(format!(
                "rate_per_second: {} is not between 1 and {MAX_REPLAY_RATE}",
                asked.rate_per_sec
            )));
        }
        let handle = self.tenant(tenant_id)?;
        let find = handle.state().find_route();
        let Some(target) = find(&asked.route) else {
            return Err(ApiError::NotFound(format!(
                "route {} of tenant {tenant_id}",
                asked.route
            )));
        };
        let now = self.now_ms();
        let until_ms = asked.until_ms.unwrap_or(now).min(now);
        if asked.since_ms >= until_ms {
            return Err(ApiError::InvalidArgument(
                "since_unix_ms is not before until_unix_ms (or now): the window is empty".into(),
            ));
        }
        let (body_pointer, body_value) = match asked.body {
            Some(BodyField { pointer, value }) => (Some(pointer), Some(value)),
            None => (None, None),
        };
        let order = ReplayOrder {
            id: ReplayOrder::new_id(),
            route: asked.route,
            since_ms: asked.since_ms,
            until_ms,
            event_type: asked.event_type,
            body_pointer,
            body_value,
            rate_per_sec: asked.rate_per_sec,
            created_at_ms: now,
            made_after: DeliveryId::due_at(now),
            control: Control::Run,
            changed_at_ms: now,
        };
        if asked.dry_run {
            let count = count_replay(&order, &target, now).await.map_err(api)?;
            return Ok(ReplayStarted {
                count,
                replay: None,
            });
        }
        let tenant = tenant_id.to_owned();
        let stored = order.clone();
        self.durably(move |backend| {
            let rows = backend.services.store.catalog_rows().map_err(api)?;
            for (_, other) in ReplayOrder::all(&*rows, Some(&tenant)).map_err(api)? {
                let progress = ReplayProgress::load(&*rows, &tenant, &other.id).map_err(api)?;
                if other.route == stored.route && other.is_open(&progress) {
                    return Err(ApiError::FailedPrecondition(format!(
                        "route {} has replay {} not finished: cancel it or wait for it",
                        stored.route, other.id
                    )));
                }
            }
            let create = RowChange::Create(
                Table::Replays,
                format!("{tenant}/{}", stored.id),
                serde_json::to_vec(&stored).expect("a replay order serializes"),
            );
            rows.apply(&[create]).map_err(api)
        })
        .await?;
        handle
            .state()
            .replay(&self.services, &order.id)
            .map_err(api)?;
        tracing::info!(tenant = %tenant_id, route = %order.route, replay = %order.id, since_ms = order.since_ms, until_ms = order.until_ms, rate = order.rate_per_sec, "replay ordered");
        Ok(ReplayStarted {
            count: 0,
            replay: Some(view(tenant_id, order, ReplayProgress::default())),
        })
    }

    /// Replay `id` of `tenant_id` and how far it got.
    pub(super) async fn replay_view(&self, tenant_id: &str, id: &str) -> ApiResult<ReplayView> {
        self.tenant(tenant_id)?;
        let (tenant, id) = (tenant_id.to_owned(), id.to_owned());
        self.blocking(move |backend| {
            let rows = backend.services.store.catalog_rows().map_err(api)?;
            let Some(order) = ReplayOrder::load(&*rows, &tenant, &id).map_err(api)? else {
                return Err(ApiError::NotFound(format!(
                    "tenant {tenant} has no replay {id}"
                )));
            };
            let progress = ReplayProgress::load(&*rows, &tenant, &id).map_err(api)?;
            Ok(view(&tenant, order, progress))
        })
        .await
    }

    /// The replays of `tenant_id` (into `route` only, if given), newest
    /// first.
    pub(super) async fn replay_views(
        &self,
        tenant_id: &str,
        route: Option<&str>,
    ) -> ApiResult<Vec<ReplayView>> {
        self.tenant(tenant_id)?;
        let (tenant, route) = (tenant_id.to_owned(), route.map(str::to_owned));
        self.blocking(move |backend| {
            let rows = backend.services.store.catalog_rows().map_err(api)?;
            let mut views = Vec::new();
            for (_, order) in ReplayOrder::all(&*rows, Some(&tenant)).map_err(api)? {
                if route.as_ref().is_some_and(|r| *r != order.route) {
                    continue;
                }
                let progress = ReplayProgress::load(&*rows, &tenant, &order.id).map_err(api)?;
                views.push(view(&tenant, order, progress));
            }
            views.reverse();
            Ok(views)
        })
        .await
    }

    /// Pauses, resumes or cancels replay `id` of `tenant_id`, durably;
    /// the replica running it sees the change at its next step (another
    /// replica's at its next poll).
    pub(super) async fn steer_replay(
        &self,
        tenant_id: &str,
        id: &str,
        action: ReplayAction,
    ) -> ApiResult<ReplayView> {
        let handle = self.tenant(tenant_id)?;
        let now = self.now_ms();
        let (tenant, replay_id) = (tenant_id.to_owned(), id.to_owned());
        let shown = self
            .durably(move |backend| {
                let rows = backend.services.store.catalog_rows().map_err(api)?;
                let Some(mut order) =
                    ReplayOrder::load(&*rows, &tenant, &replay_id).map_err(api)?
                else {
                    return Err(ApiError::NotFound(format!(
                        "tenant {tenant} has no replay {replay_id}"
                    )));
                };
                let mut progress =
                    ReplayProgress::load(&*rows, &tenant, &replay_id).map_err(api)?;
                if !order.is_open(&progress) {
                    return Err(ApiError::FailedPrecondition(format!(
                        "replay {replay_id} is finished: start another"
                    )));
                }
                order.control = match action {
                    ReplayAction::Pause => Control::Pause,
                    ReplayAction::Resume => Control::Run,
                    ReplayAction::Cancel => Control::Cancel,
                };
                order.changed_at_ms = now;
                let mut changes = vec![order.put(&tenant)];
                if action == ReplayAction::Resume && progress.failed {
                    progress.failed = false;
                    progress.last_error = None;
                    changes.push(progress.put(&tenant, &replay_id));
                }
                rows.apply(&changes).map_err(api)?;
                Ok(view(&tenant, order, progress))
            })
            .await?;
        handle.state().replay(&self.services, id).map_err(api)?;
        tracing::info!(tenant = %tenant_id, replay = %id, action = ?action, "replay steered by an operator");
        Ok(shown)
    }
}

/// A replay as the control plane shows it.
fn view(tenant_id: &str, order: ReplayOrder, progress: ReplayProgress) -> ReplayView {
    let state = match (order.control, &progress) {
        (Control::Cancel, _) => ReplayState::Cancelled,
        (_, p) if p.finished_at_ms.is_some() => ReplayState::Done,
        (Control::Pause, _) => ReplayState::Paused,
        (_, p) if p.failed => ReplayState::Failed,
        _ => ReplayState::Running,
    };
    let finished_at_ms = match state {
        ReplayState::Cancelled => Some(order.changed_at_ms),
        _ => progress.finished_at_ms,
    };
    let c = progress.counts;
    ReplayView {
        id: order.id,
        tenant_id: tenant_id.to_owned(),
        route: order.route,
        since_ms: order.since_ms,
        until_ms: order.until_ms,
        event_type: order.event_type,
        body: order
            .body_pointer
            .zip(order.body_value)
            .map(|(pointer, value)| BodyField { pointer, value }),
        rate_per_sec: order.rate_per_sec,
        state,
        created_at_ms: order.created_at_ms,
        finished_at_ms,
        counts: ReplayCounts {
            scanned: c.scanned,
            replayed: c.replayed,
            not_matched: c.not_matched,
            filtered: c.filtered,
            already_on_route: c.already_on_route,
            gone: c.gone,
        },
        position_ms: progress.position_ms,
        last_error: progress.last_error,
    }
}
