//! `AlertService` calls: a tenant's alert sink and rules, its issues view
//! (open, acknowledged and resolved alerts) and acknowledging an alert.

use hookd_proto::v1::{
    AcknowledgeAlertRequest, Alert, AlertSettings, AlertState, GetAlertSettingsRequest,
    ListAlertsRequest, ListAlertsResponse, SetAlertSettingsRequest, SetAlertSettingsResponse,
};

use super::{paging::collect_pages, ClientError, HookdClient};

impl HookdClient {
    /// The tenant's alert sink (never its secret) and one rule per alert type, every
    /// default filled in.
    pub async fn get_alert_settings(
        &self,
        tenant_id: impl Into<String>,
    ) -> Result<AlertSettings, ClientError> {
        let request = GetAlertSettingsRequest {
            tenant_id: tenant_id.into(),
        };
        Ok(self
            .alerts
            .clone()
            .get_alert_settings(request)
            .await?
            .into_inner())
    }

    /// Replaces the tenant's alert sink and rules as a whole; a rule left out runs
    /// with the operator's default. A new sink given without a secret gets one, returned
    /// this once in `generated_secret`.
    ///
    /// ```no_run
    /// # async fn demo(client: hookd_sdk::client::HookdClient) -> Result<(), hookd_sdk::client::ClientError> {
    /// use hookd_sdk::client::proto::{AlertRule, AlertSettings, AlertSink};
    /// let settings = AlertSettings {
    ///     sink: Some(AlertSink {
    ///         url: "https://ops.example/hookd-alerts".into(),
    ///         ..Default::default()
    ///     }),
    ///     rules: vec![AlertRule {
    ///         r#type: "verification.failure_spike".into(),
    ///         enabled: true,
    ///         threshold: 20,
    ///         window_secs: 300.0,
    ///         ..Default::default()
    ///     }],
    /// };
    /// let answer = client.set_alert_settings("acme", settings).await?;
    /// if !answer.generated_secret.is_empty() {
    ///     println!("verify the sink's events with {}", answer.generated_secret);
    /// }
    /// # Ok(())
    /// # }
    /// ```
    pub async fn set_alert_settings(
        &self,
        tenant_id: impl Into<String>,
        settings: AlertSettings,
    ) -> Result<SetAlertSettingsResponse, ClientError> {
        let request = SetAlertSettingsRequest {
            tenant_id: tenant_id.into(),
            settings: Some(settings),
        };
        Ok(self
            .alerts
            .clone()
            .set_alert_settings(request)
            .await?
            .into_inner())
    }

    /// One page of the tenant's alerts, newest first.
    pub async fn list_alerts(
        &self,
        request: ListAlertsRequest,
    ) -> Result<ListAlertsResponse, ClientError> {
        Ok(self.alerts.clone().list_alerts(request).await?.into_inner())
    }

    /// Every alert of the tenant in one of `states` (empty: any), following pages
    /// until the last.
    pub async fn list_all_alerts(
        &self,
        tenant_id: impl Into<String>,
        states: &[AlertState],
    ) -> Result<Vec<Alert>, ClientError> {
        let tenant_id = tenant_id.into();
        let states: Vec<i32> = states.iter().map(|&s| s.into()).collect();
        collect_pages(|page_token| {
            let request = ListAlertsRequest {
                tenant_id: tenant_id.clone(),
                states: states.clone(),
                page_size: 0,
                page_token,
            };
            async move {
                let page = self.list_alerts(request).await?;
                Ok((page.alerts, page.next_page_token))
            }
        })
        .await
    }

    /// Marks an open alert acknowledged and returns it; acknowledging it again changes
    /// nothing, and a resolved alert is `FAILED_PRECONDITION`.
    pub async fn acknowledge_alert(
        &self,
        tenant_id: impl Into<String>,
        alert_id: impl Into<String>,
    ) -> Result<Alert, ClientError> {
        let request = AcknowledgeAlertRequest {
            tenant_id: tenant_id.into(),
            alert_id: alert_id.into(),
        };
        Ok(self
            .alerts
            .clone()
            .acknowledge_alert(request)
            .await?
            .into_inner())
    }
}
