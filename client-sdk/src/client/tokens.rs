//! `TokenService` calls: issue, list and revoke tenant-scoped API tokens (admin only).

use hookd_proto::v1::{
    CreateTokenRequest, CreateTokenResponse, ListTokensRequest, RevokeTokenRequest, TokenInfo,
};

use super::{ClientError, HookdClient};

impl HookdClient {
    /// Issues a token that may act on `tenant_id` only, so a tenant's own systems can
    /// pull or redeliver without the admin token. The token is returned this once.
    ///
    /// ```no_run
    /// # async fn demo(client: hookd_sdk::client::HookdClient) -> Result<(), hookd_sdk::client::ClientError> {
    /// let issued = client.create_token("acme", "billing worker").await?;
    /// let scoped = hookd_sdk::client::HookdClient::connect("http://127.0.0.1:50051", issued.token).await?;
    /// let mine = scoped.list_all_tenants().await?;
    /// assert_eq!(mine.len(), 1);
    /// # Ok(())
    /// # }
    /// ```
    pub async fn create_token(
        &self,
        tenant_id: impl Into<String>,
        description: impl Into<String>,
    ) -> Result<CreateTokenResponse, ClientError> {
        let request = CreateTokenRequest {
            tenant_id: tenant_id.into(),
            description: description.into(),
        };
        Ok(self
            .tokens
            .clone()
            .create_token(request)
            .await?
            .into_inner())
    }

    /// Live tokens of one tenant, or of every tenant when `tenant_id` is empty, oldest
    /// first and without their values.
    pub async fn list_tokens(
        &self,
        tenant_id: impl Into<String>,
    ) -> Result<Vec<TokenInfo>, ClientError> {
        let request = ListTokensRequest {
            tenant_id: tenant_id.into(),
        };
        Ok(self
            .tokens
            .clone()
            .list_tokens(request)
            .await?
            .into_inner()
            .tokens)
    }

    /// Revokes a token: calls made with it are UNAUTHENTICATED from the moment this
    /// returns.
    pub async fn revoke_token(&self, token_id: impl Into<String>) -> Result<(), ClientError> {
        let request = RevokeTokenRequest {
            token_id: token_id.into(),
        };
        self.tokens.clone().revoke_token(request).await?;
        Ok(())
    }
}
