//! The handlers of the route table: JSON in, the service the gRPC server uses,
//! JSON (or server-sent events) out.

use std::{any::type_name, convert::Infallible, future::Future, sync::Arc};

use axum::{
    http::{header, HeaderValue},
    response::{
        sse::{Event, KeepAlive, Sse},
        IntoResponse, Response,
    },
};
use futures_util::{Stream, StreamExt};
use serde::{de::DeserializeOwned, Serialize};
use tonic::Status;

use super::{
    error::{self, ErrorBody},
    table::{Call, Endpoint, Handler},
};

/// A unary RPC of `service`: `call(service, request)` is the service's
/// own method, e.g. `|s, r| async move { s.get_tenant(r).await }`.
///
/// The handlers of the route table: decode the assembled JSON into the
/// RPC's request message, call the service the gRPC server uses with the
/// caller's metadata, and encode its answer as JSON, or a stream's as
/// server-sent events (one JSON message per `data:` event; a failure ends
/// the stream with one `error` event carrying the error body).
pub(crate) fn unary<S, Req, Resp, F, Fut>(service: &Arc<S>, call: F) -> Endpoint
where
    S: Send + Sync + 'static,
    Req: DeserializeOwned + Send + 'static,
    Resp: Serialize + Send + 'static,
    F: Fn(Arc<S>, tonic::Request<Req>) -> Fut + Send + Sync + 'static,
    Fut: Future<Output = Result<tonic::Response<Resp>, Status>> + Send + 'static,
{
    let service = Arc::clone(service);
    let handler: Handler = Arc::new(move |request: Call| {
        let answer = decode(request).map(|request| call(Arc::clone(&service), request));
        Box::pin(async move {
            match answer {
                Ok(answer) => match answer.await {
                    Ok(response) => json(response.get_ref()),
                    Err(status) => error::response(&status),
                },
                Err(status) => error::response(&status),
            }
        })
    });
    Endpoint {
        handler,
        request_type: type_name::<Req>(),
        streaming: false,
    }
}

/// A server-streaming RPC of `service`, answered as server-sent events.
pub(crate) fn streaming<S, Req, Resp, St, F, Fut>(service: &Arc<S>, call: F) -> Endpoint
where
    S: Send + Sync + 'static,
    Req: DeserializeOwned + Send + 'static,
    Resp: Serialize + Send + 'static,
    St: Stream<Item = Result<Resp, Status>> + Send + Unpin + 'static,
    F: Fn(Arc<S>, tonic::Request<Req>) -> Fut + Send + Sync + 'static,
    Fut: Future<Output = Result<tonic::Response<St>, Status>> + Send + 'static,
{
    let service = Arc::clone(service);
    let handler: Handler = Arc::new(move |request: Call| {
        let answer = decode(request).map(|request| call(Arc::clone(&service), request));
        Box::pin(async move {
            match answer {
                Ok(answer) => match answer.await {
                    Ok(response) => events(response.into_inner()),
                    Err(status) => error::response(&status),
                },
                Err(status) => error::response(&status),
            }
        })
    });
    Endpoint {
        handler,
        request_type: type_name::<Req>(),
        streaming: true,
    }
}

/// The request message with the caller's metadata, or INVALID_ARGUMENT
/// naming what in the JSON does not fit the message.
fn decode<Req: DeserializeOwned>(call: Call) -> Result<tonic::Request<Req>, Status> {
    let message = serde_json::from_value(call.message)
        .map_err(|e| Status::invalid_argument(format!("invalid request: {e}")))?;
    let mut request = tonic::Request::new(message);
    *request.metadata_mut() = call.metadata;
    Ok(request)
}

fn json<T: Serialize>(message: &T) -> Response {
    match serde_json::to_vec(message) {
        Ok(body) => {
            let mut response = body.into_response();
            response.headers_mut().insert(
                header::CONTENT_TYPE,
                HeaderValue::from_static("application/json"),
            );
            response
        }
        Err(e) => error::response(&Status::internal(format!("encoding the answer: {e}"))),
    }
}

fn events<Resp, St>(stream: St) -> Response
where
    Resp: Serialize + Send + 'static,
    St: Stream<Item = Result<Resp, Status>> + Send + Unpin + 'static,
{
    let events = futures_util::stream::unfold(Some(stream), |stream| async move {
        let mut stream = stream?;
        let event = match stream.next().await? {
            Ok(message) => match serde_json::to_string(&message) {
                Ok(data) => return Some((Ok(Event::default().data(data)), Some(stream))),
                Err(e) => error_event(&Status::internal(format!("encoding an event: {e}"))),
            },
            Err(status) => error_event(&status),
        };
        Some((Ok::<_, Infallible>(event), None))
    });
    Sse::new(events)
        .keep_alive(KeepAlive::default())
        .into_response()
}

fn error_event(status: &Status) -> Event {
    let data = serde_json::to_string(&ErrorBody::of(status)).unwrap_or_default();
    Event::default().event("error").data(data)
}
