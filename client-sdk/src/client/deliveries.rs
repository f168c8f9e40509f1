//! `DeliveryService` calls: inspect deliveries and dead letters, redeliver, purge, and
//! watch delivery events live.

use futures_util::{stream::BoxStream, StreamExt, TryStreamExt};
use hookd_proto::v1::{
    CancelDeliveriesRequest, CancelDeliveriesResponse, DeadLetter, Delivery, DeliveryEvent,
    DeliveryStatus, Event, GetDeliveryRequest, GetEventRequest, ListDeadLettersRequest,
    ListDeadLettersResponse, ListDeliveriesRequest, ListDeliveriesResponse,
    PurgeDeadLettersRequest, RedeliverRequest, RedeliverResponse, RetryNowRequest,
    RetryNowResponse, SearchDeliveriesRequest, WatchDeliveriesRequest,
};

use super::{paging::collect_pages, ClientError, HookdClient};

/// Live delivery events from [`HookdClient::watch_deliveries`]. It ends with an
/// UNAVAILABLE error when the watcher fell behind: reconnect and catch up with
/// [`HookdClient::list_deliveries`].
pub type DeliveryEventStream = BoxStream<'static, Result<DeliveryEvent, ClientError>>;

/// Which dead letters to list or redeliver; the default matches all of the default
/// route's.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct DeadLetterFilter {
    /// The route whose dead letters; empty: `default`.
    pub route: String,
    /// Only those dead at or after this Unix time in ms; 0: no lower bound.
    pub since_unix_ms: i64,
    /// Only those dead before this Unix time in ms; 0: no upper bound.
    pub until_unix_ms: i64,
    /// Only those whose reason contains this text, ignoring case; empty: any.
    pub reason_contains: String,
}

impl HookdClient {
    /// One page of a tenant's deliveries, newest first, without attempts.
    pub async fn list_deliveries(
        &self,
        request: ListDeliveriesRequest,
    ) -> Result<ListDeliveriesResponse, ClientError> {
        Ok(self
            .deliveries
            .clone()
            .list_deliveries(request)
            .await?
            .into_inner())
    }

    /// Every delivery of a tenant in `status` ([`DeliveryStatus::Unspecified`]: any),
    /// following pages until the last; mind the size of a busy tenant's history.
    pub async fn list_all_deliveries(
        &self,
        tenant_id: impl Into<String>,
        status: DeliveryStatus,
    ) -> Result<Vec<Delivery>, ClientError> {
        self.list_all_route_deliveries(tenant_id, "", status).await
    }

    /// [`list_all_deliveries`](Self::list_all_deliveries) of the tenant's route `route`
    /// (empty: `default`).
    pub async fn list_all_route_deliveries(
        &self,
        tenant_id: impl Into<String>,
        route: impl Into<String>,
        status: DeliveryStatus,
    ) -> Result<Vec<Delivery>, ClientError> {
        self.list_all_matching(ListDeliveriesRequest {
            tenant_id: tenant_id.into(),
            status: status.into(),
            route: route.into(),
            ..Default::default()
        })
        .await
    }

    /// Every delivery `filters` (a [`ListDeliveriesRequest`] whose paging fields are
    /// ignored) finds, following pages until the last.
    pub async fn list_all_matching(
        &self,
        filters: ListDeliveriesRequest,
    ) -> Result<Vec<Delivery>, ClientError> {
        collect_pages(|page_token| {
            let request = ListDeliveriesRequest {
                page_size: 0,
                page_token,
                ..filters.clone()
            };
            async move {
                let page = self.list_deliveries(request).await?;
                Ok((page.deliveries, page.next_page_token))
            }
        })
        .await
    }

    /// Cancels pending deliveries (new, held or waiting for a retry), by id or by filter
    /// (`all_pending`, `dry_run` first): each becomes a dead letter with reason `cancelled`
    /// and nothing is sent; redeliverable like any dead letter.
    pub async fn cancel_deliveries(
        &self,
        request: CancelDeliveriesRequest,
    ) -> Result<CancelDeliveriesResponse, ClientError> {
        Ok(self
            .deliveries
            .clone()
            .cancel_deliveries(request)
            .await?
            .into_inner())
    }

    /// Every delivery whose id is `id`, or of an event whose id is `id`, on every route of
    /// every tenant the token may read (the admin token: all; a tenant token: its own).
    pub async fn search_deliveries(
        &self,
        id: impl Into<String>,
    ) -> Result<Vec<Delivery>, ClientError> {
        let request = SearchDeliveriesRequest { id: id.into() };
        Ok(self
            .deliveries
            .clone()
            .search_deliveries(request)
            .await?
            .into_inner()
            .deliveries)
    }

    /// One delivery with every forwarding attempt, to see why it failed.
    ///
    /// ```no_run
    /// # async fn demo(client: hookd_sdk::client::HookdClient) -> Result<(), hookd_sdk::client::ClientError> {
    /// let delivery = client.get_delivery("acme", "dlv_01J0000000000000000000000").await?;
    /// for attempt in &delivery.attempts {
    ///     println!("#{} -> {} {}", attempt.attempt, attempt.status_code, attempt.error);
    /// }
    /// # Ok(())
    /// # }
    /// ```
    pub async fn get_delivery(
        &self,
        tenant_id: impl Into<String>,
        delivery_id: impl Into<String>,
    ) -> Result<Delivery, ClientError> {
        let request = GetDeliveryRequest {
            tenant_id: tenant_id.into(),
            delivery_id: delivery_id.into(),
        };
        Ok(self
            .deliveries
            .clone()
            .get_delivery(request)
            .await?
            .into_inner())
    }

    /// The event a delivery carries: its stored headers and its body exactly
    /// as received (`json` holds the text when the body is JSON).
    pub async fn get_event(
        &self,
        tenant_id: impl Into<String>,
        delivery_id: impl Into<String>,
    ) -> Result<Event, ClientError> {
        let request = GetEventRequest {
            tenant_id: tenant_id.into(),
            delivery_id: delivery_id.into(),
        };
        Ok(self
            .deliveries
            .clone()
            .get_event(request)
            .await?
            .into_inner())
    }

    /// One page of a tenant's dead letters, most recently dead first.
    pub async fn list_dead_letters(
        &self,
        request: ListDeadLettersRequest,
    ) -> Result<ListDeadLettersResponse, ClientError> {
        Ok(self
            .deliveries
            .clone()
            .list_dead_letters(request)
            .await?
            .into_inner())
    }

    /// Every dead letter of a tenant matching `filter`, following pages until the last.
    ///
    /// ```no_run
    /// # async fn demo(client: hookd_sdk::client::HookdClient) -> Result<(), hookd_sdk::client::ClientError> {
    /// use hookd_sdk::client::DeadLetterFilter;
    ///
    /// let filter = DeadLetterFilter {
    ///     reason_contains: "503".into(),
    ///     ..Default::default()
    /// };
    /// for dead in client.list_all_dead_letters("acme", &filter).await? {
    ///     println!("{} {}: {}", dead.delivery_id, dead.event_id, dead.reason);
    /// }
    /// # Ok(())
    /// # }
    /// ```
    pub async fn list_all_dead_letters(
        &self,
        tenant_id: impl Into<String>,
        filter: &DeadLetterFilter,
    ) -> Result<Vec<DeadLetter>, ClientError> {
        let tenant_id = tenant_id.into();
        collect_pages(|page_token| {
            let request = ListDeadLettersRequest {
                tenant_id: tenant_id.clone(),
                page_size: 0,
                page_token,
                since_unix_ms: filter.since_unix_ms,
                until_unix_ms: filter.until_unix_ms,
                reason_contains: filter.reason_contains.clone(),
                route: filter.route.clone(),
            };
            async move {
                let page = self.list_dead_letters(request).await?;
                Ok((page.dead_letters, page.next_page_token))
            }
        })
        .await
    }

    /// Queues the selected deliveries again as new deliveries and returns the new ids.
    /// [`redeliver_ids`](Self::redeliver_ids) and
    /// [`redeliver_matching`](Self::redeliver_matching) build the two valid selections.
    pub async fn redeliver(&self, request: RedeliverRequest) -> Result<Vec<String>, ClientError> {
        Ok(self.redeliver_answer(request).await?.delivery_ids)
    }

    /// [`redeliver`](Self::redeliver) with the whole answer: besides the new ids, how
    /// many matched, the originals' ids and whether more matched than one call takes.
    /// With `dry_run` (and `all_matching`) nothing changes and the answer says what
    /// the same call would redeliver.
    ///
    /// ```no_run
    /// # async fn demo(client: hookd_sdk::client::HookdClient) -> Result<(), hookd_sdk::client::ClientError> {
    /// use hookd_sdk::client::proto::RedeliverRequest;
    ///
    /// let count = client
    ///     .redeliver_answer(RedeliverRequest {
    ///         tenant_id: "acme".into(),
    ///         all_matching: true,
    ///         route: "audit".into(),
    ///         event_type: "order.paid".into(),
    ///         dry_run: true,
    ///         ..Default::default()
    ///     })
    ///     .await?;
    /// println!("would redeliver {}", count.matched);
    /// # Ok(())
    /// # }
    /// ```
    pub async fn redeliver_answer(
        &self,
        request: RedeliverRequest,
    ) -> Result<RedeliverResponse, ClientError> {
        Ok(self
            .deliveries
            .clone()
            .redeliver(request)
            .await?
            .into_inner())
    }

    /// Attempts deliveries waiting for their next retry now instead of on
    /// their schedule (after the destination came back), without counting an
    /// extra attempt: by id, or every waiting delivery of a route
    /// (`all_waiting`, with `dry_run` to count them first). One call takes at
    /// most 1,000; `more` says whether others wait.
    ///
    /// ```no_run
    /// # async fn demo(client: hookd_sdk::client::HookdClient) -> Result<(), hookd_sdk::client::ClientError> {
    /// use hookd_sdk::client::proto::RetryNowRequest;
    /// let done = client
    ///     .retry_now(RetryNowRequest {
    ///         tenant_id: "acme".into(),
    ///         all_waiting: true,
    ///         ..Default::default()
    ///     })
    ///     .await?;
    /// println!("{} deliveries are being attempted now", done.matched);
    /// # Ok(())
    /// # }
    /// ```
    pub async fn retry_now(
        &self,
        request: RetryNowRequest,
    ) -> Result<RetryNowResponse, ClientError> {
        Ok(self
            .deliveries
            .clone()
            .retry_now(request)
            .await?
            .into_inner())
    }

    /// Redelivers these dead or delivered deliveries; the new ids come back in the same
    /// order. All or nothing: one unknown or unfinished id fails the whole call.
    pub async fn redeliver_ids(
        &self,
        tenant_id: impl Into<String>,
        delivery_ids: impl IntoIterator<Item = impl Into<String>>,
    ) -> Result<Vec<String>, ClientError> {
        self.redeliver(RedeliverRequest {
            tenant_id: tenant_id.into(),
            delivery_ids: delivery_ids.into_iter().map(Into::into).collect(),
            ..Default::default()
        })
        .await
    }

    /// Redelivers every dead letter matching `filter`, e.g. after fixing the
    /// destination; the new ids come back oldest dead letter first. One call takes at
    /// most 1,000; [`redeliver_answer`](Self::redeliver_answer) says whether more are
    /// left (`more`).
    ///
    /// ```no_run
    /// # async fn demo(client: hookd_sdk::client::HookdClient) -> Result<(), hookd_sdk::client::ClientError> {
    /// let new_ids = client
    ///     .redeliver_matching("acme", &hookd_sdk::client::DeadLetterFilter::default())
    ///     .await?;
    /// println!("redelivered {} dead letters", new_ids.len());
    /// # Ok(())
    /// # }
    /// ```
    pub async fn redeliver_matching(
        &self,
        tenant_id: impl Into<String>,
        filter: &DeadLetterFilter,
    ) -> Result<Vec<String>, ClientError> {
        self.redeliver(RedeliverRequest {
            tenant_id: tenant_id.into(),
            delivery_ids: Vec::new(),
            all_matching: true,
            since_unix_ms: filter.since_unix_ms,
            until_unix_ms: filter.until_unix_ms,
            reason_contains: filter.reason_contains.clone(),
            route: filter.route.clone(),
            ..Default::default()
        })
        .await
    }

    /// Deletes dead letters and their stored bodies for good; returns how many went.
    pub async fn purge_dead_letters(
        &self,
        request: PurgeDeadLettersRequest,
    ) -> Result<u64, ClientError> {
        Ok(self
            .deliveries
            .clone()
            .purge_dead_letters(request)
            .await?
            .into_inner()
            .purged)
    }

    /// Streams delivery events of one tenant (or of every tenant the token may see, when
    /// `tenant_id` is empty) from now on, until the stream is dropped.
    ///
    /// ```no_run
    /// # async fn demo(client: hookd_sdk::client::HookdClient) -> Result<(), hookd_sdk::client::ClientError> {
    /// use futures_util::StreamExt;
    ///
    /// let mut events = client.watch_deliveries("acme").await?;
    /// while let Some(event) = events.next().await {
    ///     let event = event?;
    ///     println!("{:?} {}", event.kind(), event.delivery_id);
    /// }
    /// # Ok(())
    /// # }
    /// ```
    pub async fn watch_deliveries(
        &self,
        tenant_id: impl Into<String>,
    ) -> Result<DeliveryEventStream, ClientError> {
        let request = WatchDeliveriesRequest {
            tenant_id: tenant_id.into(),
        };
        let events = self
            .deliveries
            .clone()
            .watch_deliveries(request)
            .await?
            .into_inner();
        Ok(events.map_err(ClientError::from).boxed())
    }
}
