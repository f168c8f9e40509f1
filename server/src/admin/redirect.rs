//! A delivery's stored content, and Redirect: one delivery sent once to a URL
//! the operator typed instead of the tenant's destination.

use std::sync::Arc;

use hookd_control::{
    model::{AttemptView, DeliveryContent, Principal},
    Error as ApiError, Result as ApiResult,
};

use super::{api, Backend};
use crate::{
    egress::address::GuardedResolver,
    forward::send_attempt,
    ids::DeliveryId,
    store::{
        records::StoredEvent,
        records::{shown_url, RedirectRecord, RedirectedBy},
    },
};

impl Backend {
    fn stored_event(&self, tenant_id: &str, delivery_id: &str) -> ApiResult<StoredEvent> {
        let handle = self.tenant(tenant_id)?;
        handle
            .data()
            .event(&DeliveryId::new(delivery_id))
            .map_err(api)?
            .ok_or_else(|| {
                ApiError::NotFound(format!("delivery {delivery_id} of tenant {tenant_id}"))
            })
    }

    pub(super) fn content(&self, tenant_id: &str, delivery_id: &str) -> ApiResult<DeliveryContent> {
        let event = self.stored_event(tenant_id, delivery_id)?;
        let event_type = self
            .registry
            .get(tenant_id)
            .and_then(|handle| handle.snapshot().contracts().event_type(&event.body));
        Ok(DeliveryContent {
            event_type,
            request_id: event.meta.request_id.to_string(),
            headers: event.meta.headers,
            body: event.body,
        })
    }

    /// Sends the delivery once to `url` and records it with the delivery
    /// (durably, before answering); whatever the answer, it is never stored
    /// as an attempt and the delivery's state is not touched.
    ///
    /// A delivery's stored content, and Redirect: one delivery sent once to a
    /// URL the operator typed instead of the tenant's destination, signed as a
    /// forward is, and recorded with the delivery (who, when, where, the
    /// outcome) without changing its status, its attempts or the tenant.
    pub(super) async fn redirect_once(
        &self,
        by: &Principal,
        tenant_id: &str,
        delivery_id: &str,
        url: &str,
    ) -> ApiResult<AttemptView> {
        let handle = self.tenant(tenant_id)?;
        let settings = handle.settings();
        let Some(forward) = settings.forward.as_ref() else {
            return Err(ApiError::FailedPrecondition(format!(
                "tenant {tenant_id} is in pull mode and has no destination secret to sign with"
            )));
        };
        let target = self.redirect_target(url)?;
        let (tenant, id) = (tenant_id.to_owned(), delivery_id.to_owned());
        let event = self.blocking(move |b| b.stored_event(&tenant, &id)).await?;
        let mut settings = forward.clone();
        settings.url = target.to_string();
        settings.address_policy = Some(self.resolver.address_policy().clone());
        let client = reqwest::Client::builder()
            .connect_timeout(settings.connect_timeout)
            .redirect(reqwest::redirect::Policy::none())
            .dns_resolver(Arc::new(GuardedResolver::new(
                self.resolver.address_policy().clone(),
            )))
            .no_proxy()
            .user_agent(concat!("hookd/", env!("CARGO_PKG_VERSION")))
            .build()
            .map_err(|e| ApiError::Internal(format!("redirect client: {e}")))?;
        let result = send_attempt(&client, &settings, &event, (1, self.now_ms()), &[], None)
            .await
            .expect("an attempt without a lease is always sent");
        let record = result.record;
        tracing::info!(
            tenant = %tenant_id,
            delivery_id = %delivery_id,
            host = target.host_str().unwrap_or_default(),
            status = record.status_code,
            request_id = %record.request_id,
            outcome = %if record.error.is_none() { "success" } else { result.error.as_str() },
            "delivery redirected once from the dashboard; the tenant's destination is unchanged"
        );
        let redirect = RedirectRecord {
            by: match by {
                Principal::Admin => RedirectedBy::Admin,
                Principal::Tenant(_) => RedirectedBy::Tenant,
            },
            started_at_ms: record.started_at_ms,
            url: shown_url(&target),
            status_code: record.status_code,
            error: record.error.clone(),
            duration_ms: record.duration_ms,
            request_id: record.request_id.clone(),
        };
        let id = DeliveryId::new(delivery_id);
        // Recorded before answering: the page shows it after a restart.
        self.durably(move |_| handle.data().record_redirect(&id, &redirect).map_err(api))
            .await?;
        Ok(AttemptView {
            attempt: record.attempt,
            started_at_ms: record.started_at_ms,
            duration_ms: record.duration_ms,
            status_code: record.status_code,
            error: record.error,
            response_body: record.response_body,
            next_retry_at_ms: None,
            request_id: record.request_id.to_string(),
        })
    }

    /// A typed URL a redirect may go to: absolute http(s), and allowed by
    /// the destination address policy.
    fn redirect_target(&self, url: &str) -> ApiResult<reqwest::Url> {
        let target = reqwest::Url::parse(url.trim())
            .map_err(|e| ApiError::InvalidArgument(format!("url: not an absolute URL ({e})")))?;
        if !matches!(target.scheme(), "http" | "https") {
            return Err(ApiError::InvalidArgument(
                "url: must start with http:// or https://".into(),
            ));
        }
        self.resolver
            .address_policy()
            .check_url(&target)
            .map_err(|e| ApiError::InvalidArgument(format!("url: {}", e.refusal())))?;
        Ok(target)
    }
}
