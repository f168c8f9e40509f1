//! TestRoute: a route's filter and transform run on a stored or pasted event
//! as ingest and the dispatcher run them; nothing is sent or stored.

use std::{borrow::Cow, sync::Arc};

use tokio::sync::Semaphore;

use hookd_control::{
    model::{RouteTest, RouteTestResult, RouteUnderTest, TestEvent, TestedRequest},
    Error as ApiError, Result as ApiResult,
};
use hookd_proto::domain::DEFAULT_ROUTE;

use super::{api, Backend};
use crate::routes::settings::version_of;
use crate::{
    forward::{apply_transform, Transformed},
    ids::{DeliveryId, EventId, RequestId},
    routes::transform::apply::RouteTransform,
    routes::{
        filter::{pool::FilterPool, FilterInput, RouteFilter, Steps, MAX_FILTER_STEPS},
        transform::{Transform, TransformLimits},
    },
    store::records::{EventMeta, StoredEvent},
    tenant::pasted_event_id,
};

/// The route's parts a test runs.
struct UnderTest {
    filter: Option<RouteFilter>,
    transform: Option<Arc<RouteTransform>>,
    url: Option<String>,
}

/// The event a test runs on, and the ingest path and query its filter sees.
struct Sample {
    event: StoredEvent,
    path: String,
    query: String,
}

/// The event id a pasted event runs with in the transform's context when
/// it has none where the tenant's rule looks (nor a body `event_id`).
const PASTED_EVENT_ID: &str = "evt_test";

impl Backend {
    /// Runs `test` on tenant `tenant_id`'s route: storage is read on the
    /// blocking pool; the transform runs in a worker on the route's share
    /// (an unsaved route's on the tenant's own), never on the control
    /// plane's threads.
    ///
    /// TestRoute: a route's filter and transform run on a stored or pasted
    /// event exactly as ingest and the dispatcher run them (the same filter
    /// input, the same transform call and its error text), and the request
    /// that would be sent is shown. Nothing is sent and nothing is stored.
    pub(super) async fn try_route(
        &self,
        tenant_id: &str,
        test: RouteTest,
    ) -> ApiResult<RouteTestResult> {
        let id = tenant_id.to_owned();
        let route = test.route;
        let (under, sample) = self
            .blocking(move |b| Ok((b.route_under_test(&id, route)?, b.sample(&id, test.event)?)))
            .await?;
        let (matched, filter_result) = match under.filter.clone() {
            None => (true, "the route has no filter".to_owned()),
            Some(filter) => {
                let share = self.tenant_filter_share(tenant_id)?;
                let event = (
                    sample.event.body.clone(),
                    sample.event.meta.headers.clone(),
                    sample.path.clone(),
                    sample.query.clone(),
                );
                FilterPool::shared()
                    .run(&share, move || filter_verdict(&filter, event))
                    .await
                    .map_err(|_| ApiError::Internal("the filter's evaluation failed".into()))?
            }
        };
        let mut result = RouteTestResult {
            matched,
            filter_result,
            transform_version: under.transform.as_ref().map(|t| t.transform.version()),
            ..RouteTestResult::default()
        };
        if matched {
            transformed(&under, &sample.event, &mut result).await;
        }
        Ok(result)
    }

    /// The tenant's turn on the filter threads, or `NotFound`.
    fn tenant_filter_share(&self, tenant_id: &str) -> ApiResult<Arc<Semaphore>> {
        self.registry
            .get(tenant_id)
            .map(|handle| handle.state().filter_share.clone())
            .ok_or_else(|| ApiError::NotFound(format!("tenant {tenant_id}")))
    }

    fn route_under_test(&self, tenant_id: &str, route: RouteUnderTest) -> ApiResult<UnderTest> {
        let settings = self.running_settings(tenant_id)?;
        match route {
            RouteUnderTest::Saved(name) if name == DEFAULT_ROUTE => Ok(UnderTest {
                filter: None,
                transform: None,
                url: settings.forward.as_ref().map(|f| f.url.clone()),
            }),
            RouteUnderTest::Saved(name) => {
                let route = settings
                    .routes
                    .iter()
                    .find(|r| r.name == name)
                    .ok_or_else(|| {
                        ApiError::NotFound(format!("route {name} of tenant {tenant_id}"))
                    })?;
                Ok(UnderTest {
                    filter: route.filter.clone(),
                    transform: route.forward.as_ref().and_then(|f| f.transform.clone()),
                    url: route.forward.as_ref().map(|f| f.url.clone()),
                })
            }
            RouteUnderTest::Inline {
                filter_json,
                transform,
                destination_url,
            } => {
                let filter = filter_json
                    .map(|json| {
                        let spec: serde_json::Value = serde_json::from_str(&json).map_err(|e| {
                            ApiError::InvalidArgument(format!("filter_json: not JSON: {e}"))
                        })?;
                        RouteFilter::compile(&spec).map_err(|e| {
                            ApiError::InvalidArgument(format!("filter{}: {}", e.pointer, e.reason))
                        })
                    })
                    .transpose()?;
                let transform = transform
                    .map(|code| {
                        let compiled = Transform::new(&code, version_of(&code))
                            .map_err(|e| ApiError::InvalidArgument(format!("transform: {e}")))?;
                        Ok::<_, ApiError>(Arc::new(RouteTransform {
                            transform: compiled,
                            limits: TransformLimits::default(),
                            tenant: settings.id.clone(),
                            route: "test".into(),
                            share: self.tenant_transform_share(tenant_id)?,
                        }))
                    })
                    .transpose()?;
                Ok(UnderTest {
                    filter,
                    transform,
                    url: destination_url,
                })
            }
        }
    }

    fn sample(&self, tenant_id: &str, event: TestEvent) -> ApiResult<Sample> {
        let handle = self
            .registry
            .get(tenant_id)
            .ok_or_else(|| ApiError::NotFound(format!("tenant {tenant_id}")))?;
        let ingest_path = format!("/hooks/{tenant_id}");
        match event {
            TestEvent::Delivery(id) => {
                let missing = || ApiError::NotFound(format!("delivery {id} of tenant {tenant_id}"));
                let delivery = DeliveryId::new(id.clone());
                let route = handle.route_of(&delivery).map_err(api)?;
                let event = route
                    .data
                    .event(&delivery)
                    .map_err(api)?
                    .ok_or_else(missing)?;
                Ok(Sample {
                    event,
                    path: ingest_path,
                    query: String::new(),
                })
            }
            TestEvent::Pasted(pasted) => {
                let settings = handle.settings();
                let body: serde_json::Value =
                    serde_json::from_slice(&pasted.body).unwrap_or_default();
                let event_id = pasted_event_id(&settings.event_id, &pasted.body, &pasted.headers)
                    .or_else(|| body["event_id"].as_str().map(EventId::new))
                    .unwrap_or_else(|| EventId::new(PASTED_EVENT_ID));
                let meta = EventMeta {
                    event_id,
                    delivery_id: DeliveryId::generate(),
                    request_id: RequestId::generate(),
                    received_at_ms: self.now_ms(),
                    headers: pasted
                        .headers
                        .into_iter()
                        .map(|(name, value)| (name.to_ascii_lowercase(), value))
                        .collect(),
                    trace_id: String::new(),
                    span_id: String::new(),
                    sampled: false,
                };
                Ok(Sample {
                    event: StoredEvent {
                        meta,
                        body: pasted.body,
                    },
                    path: pasted.path.unwrap_or(ingest_path),
                    query: pasted.query,
                })
            }
        }
    }
}

/// What the route's transform (or none) makes of `event`, into `result`.
async fn transformed(under: &UnderTest, event: &StoredEvent, result: &mut RouteTestResult) {
    let url = under
        .url
        .as_deref()
        .unwrap_or("http://destination.invalid/");
    let Some(transform) = &under.transform else {
        let parsed = reqwest::Url::parse(url).ok();
        result.request = Some(TestedRequest {
            method: "POST".into(),
            path: parsed.as_ref().map_or("/".into(), |u| u.path().to_owned()),
            query: parsed
                .as_ref()
                .and_then(|u| u.query())
                .unwrap_or_default()
                .to_owned(),
            headers: event.meta.headers.clone(),
            body: event.body.clone(),
        });
        return;
    };
    match apply_transform(transform, url, event, 1).await {
        Transformed::Send(sent) => {
            let (path, query) = match sent.path_and_query.split_once('?') {
                Some((path, query)) => (path.to_owned(), query.to_owned()),
                None => (sent.path_and_query, String::new()),
            };
            result.request = Some(TestedRequest {
                method: "POST".into(),
                path,
                query,
                headers: sent.headers,
                body: sent.body,
            });
        }
        Transformed::Drop => result.dropped = true,
        Transformed::Failed(why) => result.transform_error = Some(why),
    }
}

/// Whether `filter` passes the event (its body, headers, ingest path and
/// query) within the step budget ingest gives it, and why, in words.
fn filter_verdict(
    filter: &RouteFilter,
    (body, headers, path, query): (Vec<u8>, Vec<(String, String)>, String, String),
) -> (bool, String) {
    let body: serde_json::Value = serde_json::from_slice(&body).unwrap_or_default();
    let headers: Vec<(&str, &str)> = headers
        .iter()
        .map(|(k, v)| (k.as_str(), v.as_str()))
        .collect();
    let query: Vec<(Cow<'_, str>, Cow<'_, str>)> =
        form_urlencoded::parse(query.as_bytes()).collect();
    let query: Vec<(&str, &str)> = query
        .iter()
        .map(|(k, v)| (k.as_ref(), v.as_ref()))
        .collect();
    let input = FilterInput {
        body: &body,
        headers: &headers,
        path: &path,
        query: &query,
    };
    match filter.matches(&input, &Steps::new(MAX_FILTER_STEPS)) {
        Ok(true) => (true, "the filter passes the event".into()),
        Ok(false) => (
            false,
            "the filter does not pass the event: the route would not get it".into(),
        ),
        Err(over) => (false, format!("{over}: the route would not get it")),
    }
}
