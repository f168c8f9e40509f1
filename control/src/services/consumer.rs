//! `hookd.v1.ConsumerService`: pull, ack and nack for pull-mode tenants,
//! for the admin or the tenant's own token.

use std::sync::Arc;

use hookd_proto::v1::{self as pb, consumer_service_server::ConsumerService};
use tonic::{Request, Response, Status};

use crate::{auth::authorize_tenant, backend::ControlBackend, convert};

/// Serves ConsumerService from a backend.
pub(crate) struct ConsumerApi<B> {
    backend: Arc<B>,
}

impl<B> ConsumerApi<B> {
    /// A service sharing `backend` with the others.
    pub(crate) fn new(backend: Arc<B>) -> Self {
        ConsumerApi { backend }
    }
}

#[tonic::async_trait]
impl<B: ControlBackend> ConsumerService for ConsumerApi<B> {
    async fn pull(
        &self,
        request: Request<pb::PullRequest>,
    ) -> Result<Response<pb::PullResponse>, Status> {
        let tenant_id = authorize_tenant(&*self.backend, &request, &request.get_ref().tenant_id)?;
        let r = request.get_ref();
        let (max, visibility_secs) = convert::pull_limits(r.max, r.visibility_timeout_secs)?;
        let pulled = self.backend.pull(&tenant_id, max, visibility_secs).await?;
        Ok(Response::new(pb::PullResponse {
            messages: pulled.into_iter().map(Into::into).collect(),
        }))
    }

    async fn ack(
        &self,
        request: Request<pb::AckRequest>,
    ) -> Result<Response<pb::AckResponse>, Status> {
        let tenant_id = authorize_tenant(&*self.backend, &request, &request.get_ref().tenant_id)?;
        let delivery_ids = convert::ids("delivery_ids", request.into_inner().delivery_ids)?;
        let acked = self.backend.ack(&tenant_id, delivery_ids).await?;
        Ok(Response::new(pb::AckResponse { acked }))
    }

    async fn nack(
        &self,
        request: Request<pb::NackRequest>,
    ) -> Result<Response<pb::NackResponse>, Status> {
        let tenant_id = authorize_tenant(&*self.backend, &request, &request.get_ref().tenant_id)?;
        let delivery_ids = convert::ids("delivery_ids", request.into_inner().delivery_ids)?;
        self.backend.nack(&tenant_id, delivery_ids).await?;
        Ok(Response::new(pb::NackResponse {}))
    }
}
