//! `hookd.v1.TokenService`: tenant-scoped API tokens. Admin only, so a
//! tenant token can never mint or revoke tokens, its own included.

use std::sync::Arc;

use hookd_proto::v1::{self as pb, token_service_server::TokenService};
use tonic::{Request, Response, Status};

use crate::{
    auth::{authenticate, require_admin},
    backend::ControlBackend,
    convert,
};

/// Serves TokenService from a backend.
pub(crate) struct TokenApi<B> {
    backend: Arc<B>,
}

impl<B> TokenApi<B> {
    /// A service sharing `backend` with the others.
    pub(crate) fn new(backend: Arc<B>) -> Self {
        TokenApi { backend }
    }
}

#[tonic::async_trait]
impl<B: ControlBackend> TokenService for TokenApi<B> {
    async fn create_token(
        &self,
        request: Request<pb::CreateTokenRequest>,
    ) -> Result<Response<pb::CreateTokenResponse>, Status> {
        require_admin(&authenticate(&*self.backend, &request)?)?;
        let r = request.into_inner();
        let tenant_id = convert::tenant_id(&r.tenant_id)?;
        let description = convert::token_description(r.description)?;
        let token = self.backend.create_token(&tenant_id, &description).await?;
        Ok(Response::new(token.into()))
    }

    async fn list_tokens(
        &self,
        request: Request<pb::ListTokensRequest>,
    ) -> Result<Response<pb::ListTokensResponse>, Status> {
        require_admin(&authenticate(&*self.backend, &request)?)?;
        let tenant_id = match request.get_ref().tenant_id.as_str() {
            "" => None,
            id => Some(convert::tenant_id(id)?),
        };
        let tokens = self.backend.list_tokens(tenant_id.as_deref()).await?;
        Ok(Response::new(pb::ListTokensResponse {
            tokens: tokens.into_iter().map(Into::into).collect(),
        }))
    }

    async fn revoke_token(
        &self,
        request: Request<pb::RevokeTokenRequest>,
    ) -> Result<Response<pb::RevokeTokenResponse>, Status> {
        require_admin(&authenticate(&*self.backend, &request)?)?;
        let token_id = convert::required("token_id", &request.get_ref().token_id)?;
        self.backend.revoke_token(&token_id).await?;
        Ok(Response::new(pb::RevokeTokenResponse {}))
    }
}
