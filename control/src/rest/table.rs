//! The REST route table: each route's method, path template and the RPC it
//! calls, with the handler that calls it.

use std::sync::Arc;

use axum::{http::Method, response::Response};
use futures_util::future::BoxFuture;
use tonic::metadata::MetadataMap;

use super::message;

/// What a handler is given: the caller's metadata (its `authorization`
/// among it) and the request message as proto3 JSON, assembled from the
/// path, the query and the body.
pub(crate) struct Call {
    pub(crate) metadata: MetadataMap,
    pub(crate) message: serde_json::Value,
}

/// Calls one RPC and answers the REST caller.
pub(crate) type Handler = Arc<dyn Fn(Call) -> BoxFuture<'static, Response> + Send + Sync>;

/// One RPC's handler with what the table needs to know of it.
pub(crate) struct Endpoint {
    pub(crate) handler: Handler,
    /// The Rust type of the request message, checked against the RPC's
    /// input type in the descriptor set.
    pub(crate) request_type: &'static str,
    /// Answered as server-sent events.
    pub(crate) streaming: bool,
}

/// One REST route.
///
/// The REST route table: each route's method, path template and the RPC it
/// calls, with the handler that calls it. Templates are segments of literal
/// text and `{field}` parameters, a parameter optionally followed by a
/// literal `:verb` (`/v1/tenants/{tenant_id}/deliveries/{delivery_id}:redeliver`),
/// each parameter naming a field of the RPC's request message.
pub(crate) struct Route {
    pub(crate) method: Method,
    pub(crate) path: &'static str,
    /// `package.Service/Method`, as in the gRPC path.
    pub(crate) rpc: &'static str,
    pub(crate) endpoint: Endpoint,
}

impl Route {
    /// The names of the path's parameters, in order.
    pub(crate) fn params(&self) -> impl Iterator<Item = &'static str> {
        segments(self.path).filter_map(|segment| match segment {
            Segment::Param { name, .. } => Some(name),
            Segment::Literal(_) => None,
        })
    }

    /// Whether the caller sends a JSON body (otherwise the fields not in
    /// the path come from the query).
    pub(crate) fn has_body(&self) -> bool {
        matches!(self.method, Method::POST | Method::PUT | Method::PATCH)
    }

    /// Whether the route fits its RPC, or what does not.
    fn fits(&self) -> Result<(), String> {
        let method = message::method(self.rpc).ok_or_else(|| format!("no RPC {}", self.rpc))?;
        let input = method.input();
        let rust_name = self.endpoint.request_type.rsplit("::").next();
        if rust_name != Some(input.name()) {
            return Err(format!("{} takes {}", self.rpc, input.full_name()));
        }
        if self.endpoint.streaming != method.is_server_streaming() {
            return Err(format!(
                "{} streaming is {}",
                self.rpc,
                method.is_server_streaming()
            ));
        }
        match self.params().find(|p| input.get_field_by_name(p).is_none()) {
            Some(param) => Err(format!("{param} is no field of {}", input.full_name())),
            None => Ok(()),
        }
    }

    /// The parameters of `path` if it matches this route's template.
    fn matches(&self, path: &str) -> Option<Vec<(&'static str, String)>> {
        let mut given = path.split('/');
        let mut params = Vec::new();
        for segment in segments(self.path) {
            let part = given.next()?;
            match segment {
                Segment::Literal(text) if text == part => {}
                Segment::Literal(_) => return None,
                Segment::Param { name, suffix } => {
                    let value = part.strip_suffix(suffix)?;
                    let value = percent_encoding::percent_decode_str(value)
                        .decode_utf8()
                        .ok()?;
                    if value.is_empty() {
                        return None;
                    }
                    params.push((name, value.into_owned()));
                }
            }
        }
        given.next().is_none().then_some(params)
    }
}

/// A piece of a template between two slashes.
enum Segment {
    Literal(&'static str),
    Param {
        name: &'static str,
        suffix: &'static str,
    },
}

fn segments(template: &'static str) -> impl Iterator<Item = Segment> {
    template.split('/').map(|part| {
        match part.strip_prefix('{').and_then(|rest| rest.split_once('}')) {
            Some((name, suffix)) => Segment::Param { name, suffix },
            None => Segment::Literal(part),
        }
    })
}

/// Every REST route, in the order they are tried.
#[derive(Default)]
pub(crate) struct Table {
    routes: Vec<Route>,
}

impl Table {
    /// Adds `method path`, calling `rpc` (`package.Service/Method`).
    ///
    /// # Panics
    /// When the route does not fit the RPC in the descriptor set (no such
    /// RPC, another request type, a parameter that is no field of it, a
    /// stream answered as unary): a bug in the table, found when it is built.
    pub(crate) fn add(
        &mut self,
        method: Method,
        path: &'static str,
        rpc: &'static str,
        endpoint: Endpoint,
    ) -> &mut Self {
        let route = Route {
            method,
            path,
            rpc,
            endpoint,
        };
        if let Err(problem) = route.fits() {
            panic!("REST route {} {path}: {problem}", route.method);
        }
        self.routes.push(route);
        self
    }

    /// Every route.
    pub(crate) fn routes(&self) -> &[Route] {
        &self.routes
    }

    /// The first route that takes `method path`, with its parameters.
    pub(crate) fn find(
        &self,
        method: &Method,
        path: &str,
    ) -> Option<(&Route, Vec<(&'static str, String)>)> {
        self.routes
            .iter()
            .filter(|route| route.method == *method)
            .find_map(|route| route.matches(path).map(|params| (route, params)))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn route(method: Method, path: &'static str) -> Route {
        let handler: Handler = Arc::new(|_| unreachable!("not called"));
        Route {
            method,
            path,
            rpc: "hookd.v1.X/Y",
            endpoint: Endpoint {
                handler,
                request_type: "",
                streaming: false,
            },
        }
    }

    #[test]
    fn templates_match_literals_parameters_and_verbs() {
        let redeliver = route(
            Method::POST,
            "/v1/tenants/{tenant_id}/deliveries/{delivery_id}:redeliver",
        );
        assert_eq!(
            redeliver.matches("/v1/tenants/acme/deliveries/dlv_1:redeliver"),
            Some(vec![
                ("tenant_id", "acme".to_owned()),
                ("delivery_id", "dlv_1".to_owned())
            ])
        );
        assert_eq!(redeliver.matches("/v1/tenants/acme/deliveries/dlv_1"), None);
        assert_eq!(
            redeliver.matches("/v1/tenants/acme/deliveries/:redeliver"),
            None
        );
        assert_eq!(
            redeliver.matches("/v1/tenants/acme/deliveries/dlv_1:redeliver/x"),
            None
        );
        let get = route(Method::GET, "/v1/tenants/{tenant_id}");
        assert_eq!(
            get.matches("/v1/tenants/a%20b"),
            Some(vec![("tenant_id", "a b".to_owned())])
        );
        assert_eq!(get.params().collect::<Vec<_>>(), ["tenant_id"]);
        assert!(!get.has_body() && redeliver.has_body());
    }
}
