//! `TenantService` calls: create, read, list, change and delete tenants.

use hookd_proto::v1::{
    CreateTenantRequest, CreateTenantResponse, DeleteTenantRequest, GetTenantRequest,
    ListTenantsRequest, ListTenantsResponse, Tenant, UpdateTenantRequest,
};

use super::{paging::collect_pages, ClientError, HookdClient};

impl HookdClient {
    /// Creates a tenant (admin only). The response carries the sender's signing secret
    /// and the destination secret: hookd returns them this once, so store them now.
    ///
    /// ```no_run
    /// # async fn demo(client: hookd_sdk::client::HookdClient) -> Result<(), hookd_sdk::client::ClientError> {
    /// use hookd_sdk::client::proto::CreateTenantRequest;
    ///
    /// let created = client
    ///     .create_tenant(CreateTenantRequest {
    ///         tenant_id: "acme".into(),
    ///         scheme: "stripe".into(),
    ///         destination_url: "https://acme.internal/webhooks".into(),
    ///         required_fields: vec!["type".into()],
    ///         ..Default::default()
    ///     })
    ///     .await?;
    /// let tenant = created.tenant.unwrap_or_default();
    /// println!("senders POST to {} and sign with {}", tenant.ingest_path, created.secret);
    /// # Ok(())
    /// # }
    /// ```
    pub async fn create_tenant(
        &self,
        request: CreateTenantRequest,
    ) -> Result<CreateTenantResponse, ClientError> {
        Ok(self
            .tenants
            .clone()
            .create_tenant(request)
            .await?
            .into_inner())
    }

    /// Reads one tenant; [`Code::NotFound`](super::Code::NotFound) if there is none.
    pub async fn get_tenant(&self, tenant_id: impl Into<String>) -> Result<Tenant, ClientError> {
        let request = GetTenantRequest {
            tenant_id: tenant_id.into(),
        };
        Ok(self.tenants.clone().get_tenant(request).await?.into_inner())
    }

    /// One page of tenants in id order; see [`list_all_tenants`](Self::list_all_tenants)
    /// to get them all.
    pub async fn list_tenants(
        &self,
        request: ListTenantsRequest,
    ) -> Result<ListTenantsResponse, ClientError> {
        Ok(self
            .tenants
            .clone()
            .list_tenants(request)
            .await?
            .into_inner())
    }

    /// Every tenant the token may see, following pages until the last.
    ///
    /// ```no_run
    /// # async fn demo(client: hookd_sdk::client::HookdClient) -> Result<(), hookd_sdk::client::ClientError> {
    /// let disabled = client
    ///     .list_all_tenants()
    ///     .await?
    ///     .into_iter()
    ///     .filter(|tenant| !tenant.enabled)
    ///     .count();
    /// println!("{disabled} disabled tenants");
    /// # Ok(())
    /// # }
    /// ```
    pub async fn list_all_tenants(&self) -> Result<Vec<Tenant>, ClientError> {
        collect_pages(|page_token| async move {
            let page = self
                .list_tenants(ListTenantsRequest {
                    page_size: 0,
                    page_token,
                })
                .await?;
            Ok((page.tenants, page.next_page_token))
        })
        .await
    }

    /// Changes the fields set (`Some`) in `request` and returns the tenant as stored;
    /// fields left `None` keep their value.
    ///
    /// ```no_run
    /// # async fn demo(client: hookd_sdk::client::HookdClient) -> Result<(), hookd_sdk::client::ClientError> {
    /// use hookd_sdk::client::proto::UpdateTenantRequest;
    ///
    /// let tenant = client
    ///     .update_tenant(UpdateTenantRequest {
    ///         tenant_id: "acme".into(),
    ///         tolerance_secs: Some(600),
    ///         ..Default::default()
    ///     })
    ///     .await?;
    /// assert_eq!(tenant.tolerance_secs, 600);
    /// # Ok(())
    /// # }
    /// ```
    pub async fn update_tenant(&self, request: UpdateTenantRequest) -> Result<Tenant, ClientError> {
        Ok(self
            .tenants
            .clone()
            .update_tenant(request)
            .await?
            .into_inner())
    }

    /// Enables or disables a tenant; a disabled tenant refuses new deliveries (403
    /// TENANT_DISABLED) but still forwards those already accepted.
    pub async fn set_tenant_enabled(
        &self,
        tenant_id: impl Into<String>,
        enabled: bool,
    ) -> Result<Tenant, ClientError> {
        self.update_tenant(UpdateTenantRequest {
            tenant_id: tenant_id.into(),
            enabled: Some(enabled),
            ..Default::default()
        })
        .await
    }

    /// Deletes a tenant and all its data (admin only). Cannot be undone.
    pub async fn delete_tenant(&self, tenant_id: impl Into<String>) -> Result<(), ClientError> {
        let request = DeleteTenantRequest {
            tenant_id: tenant_id.into(),
        };
        self.tenants.clone().delete_tenant(request).await?;
        Ok(())
    }
}
