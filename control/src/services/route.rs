//! `hookd.v1.RouteService`: a tenant's routes, for the admin or the tenant's
//! own token.

use std::sync::Arc;

use hookd_proto::v1::{self as pb, route_service_server::RouteService};
use tonic::{Request, Response, Status};

use crate::{
    auth::authorize_tenant,
    backend::ControlBackend,
    convert,
    model::{NewRoute, ReplayAction, RoutePatch},
};

/// Serves RouteService from a backend.
///
/// `hookd.v1.RouteService`: a tenant's routes, for the admin or the
/// tenant's own token. Storing, compiling and testing them are the
/// backend's; this layer authorizes and converts.
pub(crate) struct RouteApi<B> {
    backend: Arc<B>,
}

impl<B> RouteApi<B> {
    /// A service sharing `backend` with the others.
    pub(crate) fn new(backend: Arc<B>) -> Self {
        RouteApi { backend }
    }
}

impl<B: ControlBackend> RouteApi<B> {
    /// Pauses, resumes or cancels the replay `request` names.
    async fn act_on_replay(
        &self,
        request: Request<pb::ReplayActionRequest>,
        action: ReplayAction,
    ) -> Result<Response<pb::Replay>, Status> {
        let tenant_id = authorize_tenant(&*self.backend, &request, &request.get_ref().tenant_id)?;
        let id = convert::replay_id(&request.get_ref().replay_id)?;
        let replay = self.backend.act_on_replay(&tenant_id, &id, action).await?;
        Ok(Response::new(replay.into()))
    }
}

#[tonic::async_trait]
impl<B: ControlBackend> RouteService for RouteApi<B> {
    async fn create_route(
        &self,
        request: Request<pb::CreateRouteRequest>,
    ) -> Result<Response<pb::Route>, Status> {
        let tenant_id = authorize_tenant(&*self.backend, &request, &request.get_ref().tenant_id)?;
        let route = NewRoute::try_from(request.into_inner())?;
        let view = self.backend.create_route(&tenant_id, route).await?;
        Ok(Response::new(view.into()))
    }

    async fn get_route(
        &self,
        request: Request<pb::GetRouteRequest>,
    ) -> Result<Response<pb::Route>, Status> {
        let tenant_id = authorize_tenant(&*self.backend, &request, &request.get_ref().tenant_id)?;
        let name = convert::route_name(&request.get_ref().name)?;
        let view = self.backend.get_route(&tenant_id, &name).await?;
        Ok(Response::new(view.into()))
    }

    async fn list_routes(
        &self,
        request: Request<pb::ListRoutesRequest>,
    ) -> Result<Response<pb::ListRoutesResponse>, Status> {
        let tenant_id = authorize_tenant(&*self.backend, &request, &request.get_ref().tenant_id)?;
        let routes = self.backend.list_routes(&tenant_id).await?;
        Ok(Response::new(pb::ListRoutesResponse {
            routes: routes.into_iter().map(Into::into).collect(),
        }))
    }

    async fn update_route(
        &self,
        request: Request<pb::UpdateRouteRequest>,
    ) -> Result<Response<pb::Route>, Status> {
        let tenant_id = authorize_tenant(&*self.backend, &request, &request.get_ref().tenant_id)?;
        let name = convert::route_name(&request.get_ref().name)?;
        let patch = RoutePatch::try_from(request.into_inner())?;
        let view = self.backend.update_route(&tenant_id, &name, patch).await?;
        Ok(Response::new(view.into()))
    }

    async fn delete_route(
        &self,
        request: Request<pb::DeleteRouteRequest>,
    ) -> Result<Response<pb::DeleteRouteResponse>, Status> {
        let tenant_id = authorize_tenant(&*self.backend, &request, &request.get_ref().tenant_id)?;
        let name = convert::route_name(&request.get_ref().name)?;
        let force = request.get_ref().force;
        self.backend.delete_route(&tenant_id, &name, force).await?;
        Ok(Response::new(pb::DeleteRouteResponse {}))
    }

    async fn pause_route(
        &self,
        request: Request<pb::PauseRouteRequest>,
    ) -> Result<Response<pb::Route>, Status> {
        let tenant_id = authorize_tenant(&*self.backend, &request, &request.get_ref().tenant_id)?;
        let name = convert::route_name(&request.get_ref().name)?;
        let route = self.backend.pause_route(&tenant_id, &name).await?;
        Ok(Response::new(route.into()))
    }

    async fn resume_route(
        &self,
        request: Request<pb::ResumeRouteRequest>,
    ) -> Result<Response<pb::Route>, Status> {
        let tenant_id = authorize_tenant(&*self.backend, &request, &request.get_ref().tenant_id)?;
        let name = convert::route_name(&request.get_ref().name)?;
        let ramp_secs = convert::ramp_secs(request.get_ref().ramp_secs)?;
        let route = self
            .backend
            .resume_route(&tenant_id, &name, ramp_secs)
            .await?;
        Ok(Response::new(route.into()))
    }

    async fn get_route_metrics(
        &self,
        request: Request<pb::GetRouteMetricsRequest>,
    ) -> Result<Response<pb::RouteMetrics>, Status> {
        let tenant_id = authorize_tenant(&*self.backend, &request, &request.get_ref().tenant_id)?;
        let r = request.get_ref();
        let name = convert::route_name(&r.name)?;
        let query = convert::metrics_query(r.step_secs, r.span_secs)?;
        let metrics = self.backend.route_metrics(&tenant_id, &name, query).await?;
        Ok(Response::new(metrics.into()))
    }

    async fn replay_to_route(
        &self,
        request: Request<pb::ReplayToRouteRequest>,
    ) -> Result<Response<pb::ReplayToRouteResponse>, Status> {
        let tenant_id = authorize_tenant(&*self.backend, &request, &request.get_ref().tenant_id)?;
        let asked = convert::new_replay(request.get_ref())?;
        let started = self.backend.replay_to_route(&tenant_id, asked).await?;
        Ok(Response::new(started.into()))
    }

    async fn get_replay(
        &self,
        request: Request<pb::GetReplayRequest>,
    ) -> Result<Response<pb::Replay>, Status> {
        let tenant_id = authorize_tenant(&*self.backend, &request, &request.get_ref().tenant_id)?;
        let id = convert::replay_id(&request.get_ref().replay_id)?;
        let replay = self.backend.replay(&tenant_id, &id).await?;
        Ok(Response::new(replay.into()))
    }

    async fn list_replays(
        &self,
        request: Request<pb::ListReplaysRequest>,
    ) -> Result<Response<pb::ListReplaysResponse>, Status> {
        let tenant_id = authorize_tenant(&*self.backend, &request, &request.get_ref().tenant_id)?;
        let route = match request.get_ref().route.as_str() {
            "" => None,
            name => Some(convert::route_name(name)?),
        };
        let replays = self.backend.replays(&tenant_id, route.as_deref()).await?;
        Ok(Response::new(pb::ListReplaysResponse {
            replays: replays.into_iter().map(Into::into).collect(),
        }))
    }

    async fn pause_replay(
        &self,
        request: Request<pb::ReplayActionRequest>,
    ) -> Result<Response<pb::Replay>, Status> {
        self.act_on_replay(request, ReplayAction::Pause).await
    }

    async fn resume_replay(
        &self,
        request: Request<pb::ReplayActionRequest>,
    ) -> Result<Response<pb::Replay>, Status> {
        self.act_on_replay(request, ReplayAction::Resume).await
    }

    async fn cancel_replay(
        &self,
        request: Request<pb::ReplayActionRequest>,
    ) -> Result<Response<pb::Replay>, Status> {
        self.act_on_replay(request, ReplayAction::Cancel).await
    }

    async fn test_route(
        &self,
        request: Request<pb::TestRouteRequest>,
    ) -> Result<Response<pb::TestRouteResponse>, Status> {
        let tenant_id = authorize_tenant(&*self.backend, &request, &request.get_ref().tenant_id)?;
        let test = convert::route_test(request.into_inner())?;
        let result = self.backend.test_route(&tenant_id, test).await?;
        Ok(Response::new(result.into()))
    }
}

#[cfg(test)]
mod tests {
    use tonic::Code;

    use super::*;
    use crate::{
        fake::{FakeBackend, ACME, ADMIN},
        services::tests::{refused, request},
    };

    fn api(backend: &Arc<FakeBackend>) -> RouteApi<FakeBackend> {
        RouteApi::new(Arc::clone(backend))
    }

    fn create(tenant: &str, name: &str) -> pb::CreateRouteRequest {
        pb::CreateRouteRequest {
            tenant_id: tenant.into(),
            name: name.into(),
            ..Default::default()
        }
    }

    #[tokio::test]
    async fn a_tenant_token_manages_its_own_routes_only() {
        let backend = Arc::new(FakeBackend::new());
        let api = api(&backend);
        let made = api
            .create_route(request(Some(ACME), create("acme", "audit")))
            .await
            .unwrap()
            .into_inner();
        assert_eq!(
            (made.tenant_id.as_str(), made.name.as_str()),
            ("acme", "audit")
        );
        let (code, message) = refused(
            api.create_route(request(Some(ACME), create("globex", "audit")))
                .await,
        );
        assert_eq!(code, Code::PermissionDenied, "{message}");
        let listed = api
            .list_routes(request(
                Some(ADMIN),
                pb::ListRoutesRequest {
                    tenant_id: "acme".into(),
                },
            ))
            .await
            .unwrap()
            .into_inner();
        let names: Vec<&str> = listed.routes.iter().map(|r| r.name.as_str()).collect();
        assert_eq!(names, ["default", "audit"]);
        assert_eq!(backend.calls(), ["create_route", "list_routes"]);
    }

    #[tokio::test]
    async fn malformed_requests_never_reach_the_backend() {
        let backend = Arc::new(FakeBackend::new());
        let api = api(&backend);
        let (code, message) = refused(
            api.create_route(request(Some(ADMIN), create("acme", "No Good")))
                .await,
        );
        assert_eq!(code, Code::InvalidArgument);
        assert!(message.contains("name"), "{message}");
        let (code, _) = refused(
            api.test_route(request(
                Some(ADMIN),
                pb::TestRouteRequest {
                    tenant_id: "acme".into(),
                    ..Default::default()
                },
            ))
            .await,
        );
        assert_eq!(code, Code::InvalidArgument);
        let (code, _) = refused(
            api.list_routes(request(None, pb::ListRoutesRequest::default()))
                .await,
        );
        assert_eq!(code, Code::Unauthenticated);
        assert!(backend.calls().is_empty(), "{:?}", backend.calls());
    }

    #[tokio::test]
    async fn the_default_route_cannot_be_created_or_deleted() {
        let backend = Arc::new(FakeBackend::new());
        let api = api(&backend);
        let (code, _) = refused(
            api.create_route(request(Some(ADMIN), create("acme", "default")))
                .await,
        );
        assert_eq!(code, Code::AlreadyExists);
        let (code, _) = refused(
            api.delete_route(request(
                Some(ADMIN),
                pb::DeleteRouteRequest {
                    tenant_id: "acme".into(),
                    name: "default".into(),
                    force: true,
                },
            ))
            .await,
        );
        assert_eq!(code, Code::FailedPrecondition);
    }
}
