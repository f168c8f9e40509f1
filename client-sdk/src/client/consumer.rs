//! `ConsumerService` calls: pull, ack and nack deliveries of a pull-mode tenant.

use hookd_proto::v1::{AckRequest, NackRequest, PullRequest, PulledDelivery};

use super::{ClientError, HookdClient};

impl HookdClient {
    /// Takes up to `max` (0: 10) pending deliveries and hides them from other pullers
    /// for `visibility_timeout_secs` (0: 30 s); ack each once processed or it comes back.
    ///
    /// ```no_run
    /// # async fn demo(client: hookd_sdk::client::HookdClient) -> Result<(), hookd_sdk::client::ClientError> {
    /// let batch = client.pull("acme", 10, 60).await?;
    /// let mut done = Vec::new();
    /// for delivery in &batch {
    ///     println!("event {} ({} bytes)", delivery.event_id, delivery.body.len());
    ///     done.push(delivery.delivery_id.clone());
    /// }
    /// client.ack("acme", done).await?;
    /// # Ok(())
    /// # }
    /// ```
    pub async fn pull(
        &self,
        tenant_id: impl Into<String>,
        max: u32,
        visibility_timeout_secs: u32,
    ) -> Result<Vec<PulledDelivery>, ClientError> {
        let request = PullRequest {
            tenant_id: tenant_id.into(),
            max,
            visibility_timeout_secs,
        };
        Ok(self
            .consumer
            .clone()
            .pull(request)
            .await?
            .into_inner()
            .messages)
    }

    /// Marks pulled deliveries as processed; returns how many this call acked (unknown
    /// or already acked ids are skipped, so retrying an ack is safe).
    pub async fn ack(
        &self,
        tenant_id: impl Into<String>,
        delivery_ids: impl IntoIterator<Item = impl Into<String>>,
    ) -> Result<u32, ClientError> {
        let request = AckRequest {
            tenant_id: tenant_id.into(),
            delivery_ids: delivery_ids.into_iter().map(Into::into).collect(),
        };
        Ok(self.consumer.clone().ack(request).await?.into_inner().acked)
    }

    /// Gives pulled deliveries back at once, without waiting out the visibility
    /// timeout, e.g. when a worker shuts down mid-batch.
    pub async fn nack(
        &self,
        tenant_id: impl Into<String>,
        delivery_ids: impl IntoIterator<Item = impl Into<String>>,
    ) -> Result<(), ClientError> {
        let request = NackRequest {
            tenant_id: tenant_id.into(),
            delivery_ids: delivery_ids.into_iter().map(Into::into).collect(),
        };
        self.consumer.clone().nack(request).await?;
        Ok(())
    }
}
