//! `RouteService` calls: create, read, list, change, delete, pause and resume a tenant's routes,
//! read its metrics, replay stored events into it,
//! and test a route's filter and transform on an event without sending anything.

use hookd_proto::v1::{
    CreateRouteRequest, DeleteRouteRequest, GetReplayRequest, GetRouteMetricsRequest,
    GetRouteRequest, ListReplaysRequest, ListRoutesRequest, PauseRouteRequest, Replay,
    ReplayActionRequest, ReplayToRouteRequest, ReplayToRouteResponse, ResumeRouteRequest, Route,
    RouteMetrics, TestRouteRequest, TestRouteResponse, UpdateRouteRequest,
};

use super::{ClientError, HookdClient};

impl HookdClient {
    /// Adds a route to a tenant; deliveries accepted after this returns get a copy on it.
    pub async fn create_route(&self, request: CreateRouteRequest) -> Result<Route, ClientError> {
        Ok(self
            .routes
            .clone()
            .create_route(request)
            .await?
            .into_inner())
    }

    /// One route of a tenant; `default` is the tenant's own destination.
    pub async fn get_route(
        &self,
        tenant_id: impl Into<String>,
        name: impl Into<String>,
    ) -> Result<Route, ClientError> {
        let request = GetRouteRequest {
            tenant_id: tenant_id.into(),
            name: name.into(),
        };
        Ok(self.routes.clone().get_route(request).await?.into_inner())
    }

    /// Every route of a tenant, `default` first.
    pub async fn list_routes(
        &self,
        tenant_id: impl Into<String>,
    ) -> Result<Vec<Route>, ClientError> {
        let request = ListRoutesRequest {
            tenant_id: tenant_id.into(),
        };
        Ok(self
            .routes
            .clone()
            .list_routes(request)
            .await?
            .into_inner()
            .routes)
    }

    /// Changes the fields set in `request` and returns the route as stored.
    pub async fn update_route(&self, request: UpdateRouteRequest) -> Result<Route, ClientError> {
        Ok(self
            .routes
            .clone()
            .update_route(request)
            .await?
            .into_inner())
    }

    /// Deletes a route with its deliveries and dead letters; while deliveries are still
    /// queued on it, only with `force` (they are then dropped unsent).
    pub async fn delete_route(
        &self,
        tenant_id: impl Into<String>,
        name: impl Into<String>,
        force: bool,
    ) -> Result<(), ClientError> {
        let request = DeleteRouteRequest {
            tenant_id: tenant_id.into(),
            name: name.into(),
            force,
        };
        self.routes.clone().delete_route(request).await?;
        Ok(())
    }

    /// A route's numbers by minute (`step_secs` 60) or hour (3600) over `span_secs` (at
    /// most a day), and its queue now.
    pub async fn route_metrics(
        &self,
        tenant_id: impl Into<String>,
        name: impl Into<String>,
        (step_secs, span_secs): (u32, u32),
    ) -> Result<RouteMetrics, ClientError> {
        let request = GetRouteMetricsRequest {
            tenant_id: tenant_id.into(),
            name: name.into(),
            step_secs,
            span_secs,
        };
        Ok(self
            .routes
            .clone()
            .get_route_metrics(request)
            .await?
            .into_inner())
    }

    /// Holds a route: events are still accepted and stored on it, nothing is sent
    /// until [`HookdClient::resume_route`] (on every replica within a second).
    pub async fn pause_route(
        &self,
        tenant_id: impl Into<String>,
        name: impl Into<String>,
    ) -> Result<Route, ClientError> {
        let request = PauseRouteRequest {
            tenant_id: tenant_id.into(),
            name: name.into(),
        };
        Ok(self.routes.clone().pause_route(request).await?.into_inner())
    }

    /// Lets a paused route send again, its forwards in flight rising from one to its
    /// limit over `ramp_secs` (`None`: 60 s; `Some(0)`: at once).
    pub async fn resume_route(
        &self,
        tenant_id: impl Into<String>,
        name: impl Into<String>,
        ramp_secs: Option<u32>,
    ) -> Result<Route, ClientError> {
        let request = ResumeRouteRequest {
            tenant_id: tenant_id.into(),
            name: name.into(),
            ramp_secs,
        };
        Ok(self
            .routes
            .clone()
            .resume_route(request)
            .await?
            .into_inner())
    }

    /// Replays stored events into a route at a rate (docs/operations.md, "Replay"),
    /// or counts them with `dry_run` set (`count` in the answer).
    pub async fn replay_to_route(
        &self,
        request: ReplayToRouteRequest,
    ) -> Result<ReplayToRouteResponse, ClientError> {
        Ok(self
            .routes
            .clone()
            .replay_to_route(request)
            .await?
            .into_inner())
    }

    /// One replay and how far it got.
    pub async fn get_replay(
        &self,
        tenant_id: impl Into<String>,
        replay_id: impl Into<String>,
    ) -> Result<Replay, ClientError> {
        let request = GetReplayRequest {
            tenant_id: tenant_id.into(),
            replay_id: replay_id.into(),
        };
        Ok(self.routes.clone().get_replay(request).await?.into_inner())
    }

    /// A tenant's replays (into `route` only, if not empty), newest first.
    pub async fn list_replays(
        &self,
        tenant_id: impl Into<String>,
        route: impl Into<String>,
    ) -> Result<Vec<Replay>, ClientError> {
        let request = ListReplaysRequest {
            tenant_id: tenant_id.into(),
            route: route.into(),
        };
        Ok(self
            .routes
            .clone()
            .list_replays(request)
            .await?
            .into_inner()
            .replays)
    }

    /// Stops a running replay where it is.
    pub async fn pause_replay(
        &self,
        tenant_id: impl Into<String>,
        replay_id: impl Into<String>,
    ) -> Result<Replay, ClientError> {
        let request = replay_action(tenant_id, replay_id);
        Ok(self
            .routes
            .clone()
            .pause_replay(request)
            .await?
            .into_inner())
    }

    /// Runs a paused (or failed) replay on from where it stopped.
    pub async fn resume_replay(
        &self,
        tenant_id: impl Into<String>,
        replay_id: impl Into<String>,
    ) -> Result<Replay, ClientError> {
        let request = replay_action(tenant_id, replay_id);
        Ok(self
            .routes
            .clone()
            .resume_replay(request)
            .await?
            .into_inner())
    }

    /// Ends a replay for good; the deliveries it made stay.
    pub async fn cancel_replay(
        &self,
        tenant_id: impl Into<String>,
        replay_id: impl Into<String>,
    ) -> Result<Replay, ClientError> {
        let request = replay_action(tenant_id, replay_id);
        Ok(self
            .routes
            .clone()
            .cancel_replay(request)
            .await?
            .into_inner())
    }

    /// What a route (saved or given inline) would do with a stored or pasted event:
    /// whether its filter passes it and the request its transform makes. Nothing is
    /// sent or stored.
    pub async fn test_route(
        &self,
        request: TestRouteRequest,
    ) -> Result<TestRouteResponse, ClientError> {
        Ok(self.routes.clone().test_route(request).await?.into_inner())
    }
}

fn replay_action(
    tenant_id: impl Into<String>,
    replay_id: impl Into<String>,
) -> ReplayActionRequest {
    ReplayActionRequest {
        tenant_id: tenant_id.into(),
        replay_id: replay_id.into(),
    }
}
