//! `RejectionService` calls: the requests a tenant refused.

use hookd_proto::v1::{ListRejectionsRequest, ListRejectionsResponse};

use super::{ClientError, HookdClient};

impl HookdClient {
    /// One page of the tenant's refused requests, newest first: content
    /// refused after a valid signature (with the first 4 KiB of the body)
    /// and bad or missing signatures (without body). Set `request_id` to
    /// find the one a sender's answer named.
    ///
    /// ```no_run
    /// # async fn demo(client: hookd_sdk::client::HookdClient) -> Result<(), hookd_sdk::client::ClientError> {
    /// use hookd_sdk::client::proto::ListRejectionsRequest;
    /// let page = client
    ///     .list_rejections(ListRejectionsRequest {
    ///         tenant_id: "acme".into(),
    ///         request_id: "req_01JD0000000000000000000000".into(),
    ///         ..Default::default()
    ///     })
    ///     .await?;
    /// for r in page.rejections {
    ///     println!("{} {} {}", r.request_id, r.code, r.reason);
    /// }
    /// # Ok(())
    /// # }
    /// ```
    pub async fn list_rejections(
        &self,
        request: ListRejectionsRequest,
    ) -> Result<ListRejectionsResponse, ClientError> {
        Ok(self
            .rejections
            .clone()
            .list_rejections(request)
            .await?
            .into_inner())
    }
}
