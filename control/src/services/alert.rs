//! `hookd.v1.AlertService`: a tenant's alert settings and its issues view, for
//! the admin or the tenant's own token.

use std::sync::Arc;

use hookd_proto::v1::{self as pb, alert_service_server::AlertService};
use tonic::{Request, Response, Status};

use crate::{
    auth::authorize_tenant,
    backend::ControlBackend,
    convert,
    model::{AlertFilter, NewAlertSettings},
};

/// Serves AlertService from a backend.
///
/// `hookd.v1.AlertService`: a tenant's alert settings and its issues view,
/// for the admin or the tenant's own token. Watching for conditions and
/// sending alerts are the backend's; this layer authorizes and converts.
pub(crate) struct AlertApi<B> {
    backend: Arc<B>,
}

impl<B> AlertApi<B> {
    /// A service sharing `backend` with the others.
    pub(crate) fn new(backend: Arc<B>) -> Self {
        AlertApi { backend }
    }
}

#[tonic::async_trait]
impl<B: ControlBackend> AlertService for AlertApi<B> {
    async fn get_alert_settings(
        &self,
        request: Request<pb::GetAlertSettingsRequest>,
    ) -> Result<Response<pb::AlertSettings>, Status> {
        let tenant_id = authorize_tenant(&*self.backend, &request, &request.get_ref().tenant_id)?;
        let settings = self.backend.get_alert_settings(&tenant_id).await?;
        Ok(Response::new(settings.into()))
    }

    async fn set_alert_settings(
        &self,
        request: Request<pb::SetAlertSettingsRequest>,
    ) -> Result<Response<pb::SetAlertSettingsResponse>, Status> {
        let tenant_id = authorize_tenant(&*self.backend, &request, &request.get_ref().tenant_id)?;
        let settings = NewAlertSettings::try_from(request.into_inner())?;
        let outcome = self
            .backend
            .set_alert_settings(&tenant_id, settings)
            .await?;
        Ok(Response::new(outcome.into()))
    }

    async fn list_alerts(
        &self,
        request: Request<pb::ListAlertsRequest>,
    ) -> Result<Response<pb::ListAlertsResponse>, Status> {
        let tenant_id = authorize_tenant(&*self.backend, &request, &request.get_ref().tenant_id)?;
        let filter = AlertFilter::try_from(request.get_ref())?;
        let r = request.into_inner();
        let page = convert::page(r.page_size, r.page_token);
        let page = self.backend.list_alerts(&tenant_id, filter, page).await?;
        Ok(Response::new(pb::ListAlertsResponse {
            alerts: page.items.into_iter().map(Into::into).collect(),
            next_page_token: page.next_token.unwrap_or_default(),
        }))
    }

    async fn acknowledge_alert(
        &self,
        request: Request<pb::AcknowledgeAlertRequest>,
    ) -> Result<Response<pb::Alert>, Status> {
        let tenant_id = authorize_tenant(&*self.backend, &request, &request.get_ref().tenant_id)?;
        let alert_id = convert::required("alert_id", &request.get_ref().alert_id)?;
        let alert = self
            .backend
            .acknowledge_alert(&tenant_id, &alert_id)
            .await?;
        Ok(Response::new(alert.into()))
    }
}
