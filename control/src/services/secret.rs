//! `hookd.v1.SecretService`: rotating, listing and revoking a tenant's
//! signing secrets, for the admin or the tenant's own token.

use std::sync::Arc;

use hookd_proto::v1::{self as pb, secret_service_server::SecretService};
use tonic::{Request, Response, Status};

use crate::{auth::authorize_tenant, backend::ControlBackend, convert, model::ProvidedSecret};

/// Serves SecretService from a backend.
pub(crate) struct SecretApi<B> {
    backend: Arc<B>,
}

impl<B> SecretApi<B> {
    /// A service sharing `backend` with the others.
    pub(crate) fn new(backend: Arc<B>) -> Self {
        SecretApi { backend }
    }
}

#[tonic::async_trait]
impl<B: ControlBackend> SecretService for SecretApi<B> {
    async fn rotate_secret(
        &self,
        request: Request<pb::RotateSecretRequest>,
    ) -> Result<Response<pb::RotateSecretResponse>, Status> {
        let tenant_id = authorize_tenant(&*self.backend, &request, &request.get_ref().tenant_id)?;
        let overlap_secs = convert::overlap_secs(request.get_ref().overlap_secs)?;
        let secret = ProvidedSecret::of(request.into_inner().secret);
        let rotated = self
            .backend
            .rotate_secret(&tenant_id, overlap_secs, secret)
            .await?;
        Ok(Response::new(rotated.into()))
    }

    async fn list_secrets(
        &self,
        request: Request<pb::ListSecretsRequest>,
    ) -> Result<Response<pb::ListSecretsResponse>, Status> {
        let tenant_id = authorize_tenant(&*self.backend, &request, &request.get_ref().tenant_id)?;
        let secrets = self.backend.list_secrets(&tenant_id).await?;
        Ok(Response::new(pb::ListSecretsResponse {
            secrets: secrets.into_iter().map(Into::into).collect(),
        }))
    }

    async fn revoke_secret(
        &self,
        request: Request<pb::RevokeSecretRequest>,
    ) -> Result<Response<pb::RevokeSecretResponse>, Status> {
        let tenant_id = authorize_tenant(&*self.backend, &request, &request.get_ref().tenant_id)?;
        let kid = convert::required("kid", &request.get_ref().kid)?;
        self.backend.revoke_secret(&tenant_id, &kid).await?;
        Ok(Response::new(pb::RevokeSecretResponse {}))
    }
}
