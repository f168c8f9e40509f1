//! `SecretService` calls: rotate, list and revoke a tenant's signing secrets.

use hookd_proto::v1::{
    ListSecretsRequest, RevokeSecretRequest, RotateSecretRequest, RotateSecretResponse, SecretInfo,
};

use super::{ClientError, HookdClient};

impl HookdClient {
    /// Makes a new current secret; the old one stays accepted for `overlap_secs` (0: 24
    /// h) so senders can switch without failed deliveries. The new secret is returned
    /// this once.
    ///
    /// ```no_run
    /// # async fn demo(client: hookd_sdk::client::HookdClient) -> Result<(), hookd_sdk::client::ClientError> {
    /// let rotated = client.rotate_secret("acme", 3600).await?;
    /// println!("new kid {}; {} stays valid for an hour", rotated.kid, rotated.previous_kid);
    /// # Ok(())
    /// # }
    /// ```
    pub async fn rotate_secret(
        &self,
        tenant_id: impl Into<String>,
        overlap_secs: u64,
    ) -> Result<RotateSecretResponse, ClientError> {
        self.rotate_secret_request(RotateSecretRequest {
            tenant_id: tenant_id.into(),
            overlap_secs,
            secret: String::new(),
        })
        .await
    }

    /// Makes `secret` the new current secret: one the provider issued, or
    /// the provider's new public key for key-pair schemes, in the form the
    /// provider prints it. hookd checks it for the tenant's scheme and does
    /// not send it back (the answer's `secret` is empty); the old one stays
    /// accepted for `overlap_secs` (0: 24 h).
    pub async fn rotate_secret_to(
        &self,
        tenant_id: impl Into<String>,
        overlap_secs: u64,
        secret: impl Into<String>,
    ) -> Result<RotateSecretResponse, ClientError> {
        self.rotate_secret_request(RotateSecretRequest {
            tenant_id: tenant_id.into(),
            overlap_secs,
            secret: secret.into(),
        })
        .await
    }

    async fn rotate_secret_request(
        &self,
        request: RotateSecretRequest,
    ) -> Result<RotateSecretResponse, ClientError> {
        Ok(self
            .secrets
            .clone()
            .rotate_secret(request)
            .await?
            .into_inner())
    }

    /// The tenant's live secrets (current first), without their values.
    pub async fn list_secrets(
        &self,
        tenant_id: impl Into<String>,
    ) -> Result<Vec<SecretInfo>, ClientError> {
        let request = ListSecretsRequest {
            tenant_id: tenant_id.into(),
        };
        Ok(self
            .secrets
            .clone()
            .list_secrets(request)
            .await?
            .into_inner()
            .secrets)
    }

    /// Stops accepting the previous secret at once, for an immediate cut-over after a
    /// rotation; revoking the current one is FAILED_PRECONDITION.
    pub async fn revoke_secret(
        &self,
        tenant_id: impl Into<String>,
        kid: impl Into<String>,
    ) -> Result<(), ClientError> {
        let request = RevokeSecretRequest {
            tenant_id: tenant_id.into(),
            kid: kid.into(),
        };
        self.secrets.clone().revoke_secret(request).await?;
        Ok(())
    }
}
