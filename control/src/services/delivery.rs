//! `hookd.v1.DeliveryService`: inspecting deliveries and dead letters,
//! redelivering and purging them, and the live WatchDeliveries stream.

use std::sync::Arc;

use futures_util::{stream::BoxStream, StreamExt};
use hookd_proto::v1::{self as pb, delivery_service_server::DeliveryService};
use tonic::{Request, Response, Status};

use super::Stopping;
use crate::{
    auth::{authorize_tenant, grant, require_tenant},
    backend::{ControlBackend, EventStream},
    convert,
    model::{Cancel, DeadLetterFilter, DeliveryQuery, Principal, RetryNow, Selection},
    watch::{WatchSlot, WatchSlots},
};

/// Serves DeliveryService from a backend.
pub(crate) struct DeliveryApi<B> {
    backend: Arc<B>,
    stopping: Stopping,
    slots: WatchSlots,
}

impl<B: ControlBackend> DeliveryApi<B> {
    /// A service sharing `backend` with the others; its watch streams end
    /// when `stopping` turns true, and each token holds at most the
    /// backend's `watches_per_token` of them.
    pub(crate) fn new(backend: Arc<B>, stopping: Stopping) -> Self {
        let slots = WatchSlots::new(backend.watches_per_token());
        DeliveryApi {
            backend,
            stopping,
            slots,
        }
    }
}

#[tonic::async_trait]
impl<B: ControlBackend> DeliveryService for DeliveryApi<B> {
    type WatchDeliveriesStream = BoxStream<'static, Result<pb::DeliveryEvent, Status>>;

    async fn list_deliveries(
        &self,
        request: Request<pb::ListDeliveriesRequest>,
    ) -> Result<Response<pb::ListDeliveriesResponse>, Status> {
        let tenant_id = authorize_tenant(&*self.backend, &request, &request.get_ref().tenant_id)?;
        let r = request.into_inner();
        let query = DeliveryQuery::try_from(&r)?;
        let page = convert::page(r.page_size, r.page_token);
        let page = self
            .backend
            .list_deliveries(&tenant_id, query, page)
            .await?;
        Ok(Response::new(pb::ListDeliveriesResponse {
            deliveries: page.items.into_iter().map(Into::into).collect(),
            next_page_token: page.next_token.unwrap_or_default(),
        }))
    }

    async fn search_deliveries(
        &self,
        request: Request<pb::SearchDeliveriesRequest>,
    ) -> Result<Response<pb::SearchDeliveriesResponse>, Status> {
        let grant = grant(&*self.backend, &request)?;
        let id = convert::required("id", request.get_ref().id.trim())?;
        let scope = match &grant.principal {
            Principal::Admin => None,
            Principal::Tenant(own) => Some(own.as_str()),
        };
        let found = self.backend.search_deliveries(scope, &id).await?;
        Ok(Response::new(pb::SearchDeliveriesResponse {
            deliveries: found.into_iter().map(Into::into).collect(),
        }))
    }

    async fn get_delivery(
        &self,
        request: Request<pb::GetDeliveryRequest>,
    ) -> Result<Response<pb::Delivery>, Status> {
        let tenant_id = authorize_tenant(&*self.backend, &request, &request.get_ref().tenant_id)?;
        let delivery_id = convert::required("delivery_id", &request.get_ref().delivery_id)?;
        let delivery = self.backend.get_delivery(&tenant_id, &delivery_id).await?;
        Ok(Response::new(delivery.into()))
    }

    async fn get_event(
        &self,
        request: Request<pb::GetEventRequest>,
    ) -> Result<Response<pb::Event>, Status> {
        let tenant_id = authorize_tenant(&*self.backend, &request, &request.get_ref().tenant_id)?;
        let delivery_id = convert::required("delivery_id", &request.get_ref().delivery_id)?;
        let delivery = self.backend.get_delivery(&tenant_id, &delivery_id).await?;
        let content = self
            .backend
            .get_delivery_content(&tenant_id, &delivery_id)
            .await?;
        let json = match serde_json::from_slice::<serde::de::IgnoredAny>(&content.body) {
            Ok(_) => String::from_utf8(content.body.clone()).unwrap_or_default(),
            Err(_) => String::new(),
        };
        Ok(Response::new(pb::Event {
            tenant_id,
            delivery_id,
            event_id: delivery.event_id,
            request_id: content.request_id,
            headers: content
                .headers
                .into_iter()
                .map(|(name, value)| pb::Header { name, value })
                .collect(),
            body: content.body,
            json,
            event_type: content.event_type.unwrap_or_default(),
        }))
    }

    async fn list_dead_letters(
        &self,
        request: Request<pb::ListDeadLettersRequest>,
    ) -> Result<Response<pb::ListDeadLettersResponse>, Status> {
        let tenant_id = authorize_tenant(&*self.backend, &request, &request.get_ref().tenant_id)?;
        let filter = DeadLetterFilter::try_from(request.get_ref())?;
        let r = request.into_inner();
        let route = convert::listed_route(&r.route)?;
        let page = convert::page(r.page_size, r.page_token);
        let page = self
            .backend
            .list_dead_letters(&tenant_id, &route, filter, page)
            .await?;
        Ok(Response::new(pb::ListDeadLettersResponse {
            dead_letters: page.items.into_iter().map(Into::into).collect(),
            next_page_token: page.next_token.unwrap_or_default(),
        }))
    }

    async fn redeliver(
        &self,
        request: Request<pb::RedeliverRequest>,
    ) -> Result<Response<pb::RedeliverResponse>, Status> {
        let tenant_id = authorize_tenant(&*self.backend, &request, &request.get_ref().tenant_id)?;
        let selection = Selection::try_from(request.into_inner())?;
        let done = self.backend.redeliver(&tenant_id, selection).await?;
        Ok(Response::new(pb::RedeliverResponse {
            delivery_ids: done.delivery_ids,
            matched: done.matched,
            matched_ids: done.matched_ids,
            more: done.more,
        }))
    }

    async fn retry_now(
        &self,
        request: Request<pb::RetryNowRequest>,
    ) -> Result<Response<pb::RetryNowResponse>, Status> {
        let tenant_id = authorize_tenant(&*self.backend, &request, &request.get_ref().tenant_id)?;
        let chosen = RetryNow::try_from(request.into_inner())?;
        let done = self.backend.retry_now(&tenant_id, chosen).await?;
        Ok(Response::new(pb::RetryNowResponse {
            matched: done.matched,
            delivery_ids: done.delivery_ids,
            more: done.more,
        }))
    }

    async fn cancel_deliveries(
        &self,
        request: Request<pb::CancelDeliveriesRequest>,
    ) -> Result<Response<pb::CancelDeliveriesResponse>, Status> {
        let tenant_id = authorize_tenant(&*self.backend, &request, &request.get_ref().tenant_id)?;
        let chosen = Cancel::try_from(request.into_inner())?;
        let done = self.backend.cancel_deliveries(&tenant_id, chosen).await?;
        Ok(Response::new(pb::CancelDeliveriesResponse {
            matched: done.matched,
            delivery_ids: done.delivery_ids,
            more: done.more,
        }))
    }

    async fn purge_dead_letters(
        &self,
        request: Request<pb::PurgeDeadLettersRequest>,
    ) -> Result<Response<pb::PurgeDeadLettersResponse>, Status> {
        let tenant_id = authorize_tenant(&*self.backend, &request, &request.get_ref().tenant_id)?;
        let selection = Selection::try_from(request.into_inner())?;
        let purged = self
            .backend
            .purge_dead_letters(&tenant_id, selection)
            .await?;
        Ok(Response::new(pb::PurgeDeadLettersResponse { purged }))
    }

    async fn watch_deliveries(
        &self,
        request: Request<pb::WatchDeliveriesRequest>,
    ) -> Result<Response<Self::WatchDeliveriesStream>, Status> {
        let grant = grant(&*self.backend, &request)?;
        let tenant_id = match (request.get_ref().tenant_id.as_str(), &grant.principal) {
            ("", Principal::Admin) => None,
            ("", Principal::Tenant(own)) => Some(own.clone()),
            (id, principal) => {
                let id = convert::tenant_id(id)?;
                require_tenant(principal, &id)?;
                Some(id)
            }
        };
        let slot = self.slots.take(grant.key())?;
        let events = self.backend.watch(&grant, tenant_id.as_deref()).await?;
        Ok(Response::new(watch_stream(
            events,
            tenant_id,
            self.stopping.clone(),
            slot,
        )))
    }
}

/// The wire stream of one watcher. It ends after the backend's first error
/// or when hookd starts stopping (UNAVAILABLE, so the client reconnects),
/// and drops events of other tenants even if the backend sent them, so a
/// tenant token can never see another tenant's traffic. It holds its
/// token's `slot` until it ends.
fn watch_stream(
    events: EventStream,
    only: Option<String>,
    stopping: Stopping,
    slot: WatchSlot,
) -> BoxStream<'static, Result<pb::DeliveryEvent, Status>> {
    futures_util::stream::unfold(Some((events, stopping, slot)), move |state| {
        let only = only.clone();
        async move {
            let (mut events, mut stopping, slot) = state?;
            loop {
                let next = tokio::select! {
                    next = events.next() => next?,
                    _ = stopping.wait_for(|stopping| *stopping) => {
                        let status = Status::unavailable("hookd is stopping; reconnect");
                        return Some((Err(status), None));
                    }
                };
                match next {
                    Ok(event) if only.as_ref().is_some_and(|t| *t != event.tenant_id) => continue,
                    Ok(event) => return Some((Ok(event.into()), Some((events, stopping, slot)))),
                    Err(error) => return Some((Err(error.into()), None)),
                }
            }
        }
    })
    .boxed()
}
