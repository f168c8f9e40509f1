//! The OpenAPI 3.1 document of the REST face, generated from the descriptor
//! set and the route table.

mod schema;

use prost_reflect::MethodDescriptor;
use serde_json::{json, Map, Value};

use super::{
    error::{self, CODES},
    message,
    table::{Route, Table},
};

/// The document for `table`.
///
/// The OpenAPI 3.1 document of the REST face, generated from the descriptor
/// set (types and the protos' comments, `schema.rs`) and the route table
/// (paths, methods, parameters). `docs/openapi.json` is this document; a
/// test fails when it is stale (`HOOKD_WRITE_OPENAPI=1 cargo test -p
/// hookd-control --lib rest::tests::openapi` writes it anew).
pub(crate) fn document(table: &Table) -> Value {
    let mut paths = Map::new();
    paths.insert("/v1/openapi.json".into(), openapi_path());
    let mut operation_ids = Vec::new();
    for route in table.routes() {
        let Some(method) = message::method(route.rpc) else {
            continue;
        };
        let id = operation_id(&method, &mut operation_ids);
        let item = paths
            .entry(route.path.to_owned())
            .or_insert_with(|| Value::Object(Map::new()));
        item[route.method.as_str().to_ascii_lowercase()] = operation(route, &method, id);
    }
    let mut schemas = schema::components();
    schemas.insert("Error".into(), error_schema());
    json!({
        "openapi": "3.1.0",
        "info": {
            "title": "hookd control plane",
            "version": env!("CARGO_PKG_VERSION"),
            "description": "The REST/JSON face of hookd's gRPC control plane (package hookd.v1): \
                every RPC at a resource-style path, bodies in the proto3 JSON mapping, the same \
                bearer tokens as gRPC. Generated from the protos; see docs/rest.md.",
        },
        "tags": tags(),
        "security": [{ "bearer": [] }],
        "paths": paths,
        "components": {
            "securitySchemes": {
                "bearer": {
                    "type": "http",
                    "scheme": "bearer",
                    "description": "The admin token, or a tenant token (which acts on its own tenant only).",
                },
            },
            "responses": {
                "Error": {
                    "description": "The call failed; the body is the gRPC status as JSON.",
                    "content": { "application/json": { "schema": { "$ref": "#/components/schemas/Error" } } },
                },
            },
            "schemas": schemas,
        },
    })
}

/// `Service_Method`, with a number after it for the RPC's second route on.
fn operation_id(method: &MethodDescriptor, taken: &mut Vec<String>) -> String {
    let base = format!("{}_{}", method.parent_service().name(), method.name());
    let mut id = base.clone();
    let mut n = 1;
    while taken.contains(&id) {
        n += 1;
        id = format!("{base}{n}");
    }
    taken.push(id.clone());
    id
}

fn operation(route: &Route, method: &MethodDescriptor, id: String) -> Value {
    let input = method.input();
    let path_params: Vec<&str> = route.params().collect();
    let mut parameters: Vec<Value> = path_params
        .iter()
        .filter_map(|name| input.get_field_by_name(name))
        .map(|field| parameter(&field, "path"))
        .collect();
    if !route.has_body() {
        parameters.extend(
            input
                .fields()
                .filter(|f| !path_params.contains(&f.name()))
                .filter(|f| !f.is_map() && !matches!(f.kind(), prost_reflect::Kind::Message(_)))
                .map(|field| parameter(&field, "query")),
        );
    }
    let file = method.parent_file();
    let description =
        schema::comments(file.file_descriptor_proto(), method.path()).unwrap_or_default();
    let mut operation = json!({
        "operationId": id,
        "summary": format!("{}.{}", method.parent_service().name(), method.name()),
        "description": description,
        "tags": [method.parent_service().name()],
        "parameters": parameters,
        "responses": {
            "200": success(route, method),
            "default": { "$ref": "#/components/responses/Error" },
        },
    });
    if route.has_body() {
        operation["requestBody"] = json!({
            "description": "The request message; fields in the path replace the same fields here. \
                Field names in lowerCamelCase or as in the proto.",
            "required": false,
            "content": { "application/json": { "schema": schema::reference(input.full_name()) } },
        });
    }
    operation
}

fn parameter(field: &prost_reflect::FieldDescriptor, place: &str) -> Value {
    let mut schema = schema::field_schema(field);
    let description = schema
        .as_object_mut()
        .and_then(|o| o.remove("description"))
        .unwrap_or_else(|| Value::String(String::new()));
    let mut parameter = json!({
        "name": field.name(),
        "in": place,
        "required": place == "path",
        "description": description,
        "schema": schema,
    });
    if field.is_list() && place == "query" {
        parameter["explode"] = Value::Bool(true);
    }
    parameter
}

fn success(route: &Route, method: &MethodDescriptor) -> Value {
    let output = schema::reference(method.output().full_name());
    if route.endpoint.streaming {
        json!({
            "description": "Server-sent events: each `data:` line is one message as JSON; a \
                failure ends the stream with an `error` event whose data is the error body.",
            "content": { "text/event-stream": { "schema": { "type": "string" }, "x-event-data": output } },
        })
    } else {
        json!({
            "description": "The response message.",
            "content": { "application/json": { "schema": output } },
        })
    }
}

fn tags() -> Vec<Value> {
    let mut tags: Vec<Value> = message::pool()
        .services()
        .filter(|s| s.package_name() == "hookd.v1")
        .map(|service| {
            let description = schema::comments(
                service.parent_file().file_descriptor_proto(),
                service.path(),
            );
            json!({ "name": service.name(), "description": description.unwrap_or_default() })
        })
        .collect();
    tags.sort_by(|a, b| a["name"].as_str().cmp(&b["name"].as_str()));
    tags
}

fn openapi_path() -> Value {
    json!({
        "get": {
            "operationId": "OpenApi",
            "summary": "This document.",
            "description": "Served without authentication.",
            "security": [],
            "responses": {
                "200": {
                    "description": "The OpenAPI 3.1 document.",
                    "content": { "application/json": { "schema": { "type": "object" } } },
                },
            },
        },
    })
}

fn error_schema() -> Value {
    let codes: Vec<&str> = CODES.into_iter().skip(1).map(error::name).collect();
    json!({
        "type": "object",
        "description": "A failed call: the gRPC status code's name, its message, and details \
            (none today). HTTP status by code: INVALID_ARGUMENT and OUT_OF_RANGE 400, \
            UNAUTHENTICATED 401, PERMISSION_DENIED 403, NOT_FOUND 404, ALREADY_EXISTS, ABORTED \
            and FAILED_PRECONDITION 409, RESOURCE_EXHAUSTED 429, CANCELLED 499, UNIMPLEMENTED \
            501, UNAVAILABLE 503, DEADLINE_EXCEEDED 504, others 500.",
        "required": ["code", "message", "details"],
        "properties": {
            "code": { "type": "string", "enum": codes },
            "message": { "type": "string" },
            "details": { "type": "array", "items": { "type": "object" } },
        },
    })
}
