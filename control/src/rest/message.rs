//! The request message of a REST call as proto3 JSON: the body's object with
//! the path's parameters and the query's fields put in.

use std::sync::OnceLock;

use prost_reflect::{DescriptorPool, FieldDescriptor, Kind, MessageDescriptor, MethodDescriptor};
use serde_json::{Map, Value};
use tonic::Status;

/// The `hookd.v1` descriptor set, with its source comments.
pub(crate) fn pool() -> &'static DescriptorPool {
    static POOL: OnceLock<DescriptorPool> = OnceLock::new();
    POOL.get_or_init(|| {
        DescriptorPool::decode(hookd_proto::FILE_DESCRIPTOR_SET)
            .expect("the descriptor set compiled into hookd-proto decodes")
    })
}

/// The method `package.Service/Method` of the descriptor set.
pub(crate) fn method(rpc: &str) -> Option<MethodDescriptor> {
    let (service, method) = rpc.split_once('/')?;
    pool()
        .get_service_by_name(service)?
        .methods()
        .find(|m| m.name() == method)
}

/// The JSON object for a request of type `input`: `body` (empty, or a JSON
/// object), then `params` from the path and the fields of `query`, each of
/// which replaces the same field in the body.
///
/// The request message of a REST call as proto3 JSON: the body's object,
/// with the path's parameters and the query's fields put in, each turned
/// into the JSON its field takes (a query's `true`, an enum value by its
/// name or its short name, `status=dead` for `DELIVERY_STATUS_DEAD`).
pub(crate) fn assemble(
    input: &MessageDescriptor,
    params: Vec<(&'static str, String)>,
    query: Option<&str>,
    body: &[u8],
) -> Result<Value, Status> {
    let mut object = parse_body(body)?;
    let mut from_path = Vec::new();
    for (name, text) in params {
        let field = input
            .get_field_by_name(name)
            .ok_or_else(|| Status::internal(format!("the route names no field {name:?}")))?;
        let value = scalar(&field, &text)?;
        let value = if field.is_list() {
            Value::Array(vec![value])
        } else {
            value
        };
        set(&mut object, &field, value);
        from_path.push(field);
    }
    let mut repeated: Vec<(FieldDescriptor, Vec<Value>)> = Vec::new();
    for (key, text) in form_urlencoded::parse(query.unwrap_or_default().as_bytes()) {
        let field = query_field(input, &key)?;
        if from_path.contains(&field) {
            return Err(Status::invalid_argument(format!(
                "query parameter {key:?} is already given by the path"
            )));
        }
        let value = scalar(&field, &text)?;
        if field.is_list() {
            match repeated.iter_mut().find(|(f, _)| *f == field) {
                Some((_, values)) => values.push(value),
                None => repeated.push((field, vec![value])),
            }
        } else {
            set(&mut object, &field, value);
        }
    }
    for (field, values) in repeated {
        set(&mut object, &field, Value::Array(values));
    }
    Ok(Value::Object(object))
}

fn parse_body(body: &[u8]) -> Result<Map<String, Value>, Status> {
    if body.iter().all(u8::is_ascii_whitespace) {
        return Ok(Map::new());
    }
    match serde_json::from_slice(body) {
        Ok(Value::Object(object)) => Ok(object),
        Ok(_) => Err(Status::invalid_argument("the body must be a JSON object")),
        Err(e) => Err(Status::invalid_argument(format!(
            "the body is not valid JSON: {e}"
        ))),
    }
}

/// The field a query parameter names, by its proto name or its JSON name;
/// only scalars, enums and lists of them can be given in a query.
fn query_field(input: &MessageDescriptor, key: &str) -> Result<FieldDescriptor, Status> {
    let field = input
        .get_field_by_name(key)
        .or_else(|| input.get_field_by_json_name(key))
        .ok_or_else(|| Status::invalid_argument(format!("unknown query parameter {key:?}")))?;
    if field.is_map() || matches!(field.kind(), Kind::Message(_)) {
        return Err(Status::invalid_argument(format!(
            "{key:?} cannot be given in the query; send it in a JSON body"
        )));
    }
    Ok(field)
}

/// Puts `value` in as `field`, in place of the field under either name.
fn set(object: &mut Map<String, Value>, field: &FieldDescriptor, value: Value) {
    object.remove(field.name());
    object.insert(field.json_name().to_owned(), value);
}

/// The JSON of one value of `field` written as text in a path or query.
/// Numbers stay strings, which the proto3 JSON mapping accepts.
fn scalar(field: &FieldDescriptor, text: &str) -> Result<Value, Status> {
    match field.kind() {
        Kind::Bool => match text {
            "true" => Ok(Value::Bool(true)),
            "false" => Ok(Value::Bool(false)),
            _ => Err(Status::invalid_argument(format!(
                "{} must be true or false, not {text:?}",
                field.name()
            ))),
        },
        Kind::Enum(kind) => {
            let prefix = screaming_snake(kind.name());
            let short = format!("{prefix}_{}", text.to_ascii_uppercase());
            kind.values()
                .find(|v| v.name() == text || v.name() == short)
                .map(|v| Value::String(v.name().to_owned()))
                .ok_or_else(|| {
                    let names: Vec<_> = kind.values().map(|v| v.name().to_owned()).collect();
                    Status::invalid_argument(format!(
                        "{} must be one of {} (or the part after {prefix}_), not {text:?}",
                        field.name(),
                        names.join(", ")
                    ))
                })
        }
        _ => Ok(Value::String(text.to_owned())),
    }
}

/// `DeliveryStatus` as `DELIVERY_STATUS`, the prefix of its values' names.
fn screaming_snake(name: &str) -> String {
    let mut out = String::with_capacity(name.len() + 4);
    for (i, c) in name.chars().enumerate() {
        if c.is_ascii_uppercase() && i > 0 {
            out.push('_');
        }
        out.push(c.to_ascii_uppercase());
    }
    out
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn input(name: &str) -> MessageDescriptor {
        pool().get_message_by_name(name).unwrap()
    }

    #[test]
    fn path_query_and_body_fill_the_message() {
        let list = input("hookd.v1.ListDeliveriesRequest");
        let message = assemble(
            &list,
            vec![("tenant_id", "acme".into())],
            Some("status=dead&page_size=5&pageToken=t"),
            b"",
        )
        .unwrap();
        assert_eq!(
            message,
            json!({"tenantId": "acme", "status": "DELIVERY_STATUS_DEAD", "pageSize": "5", "pageToken": "t"})
        );
        let redeliver = input("hookd.v1.RedeliverRequest");
        let message = assemble(
            &redeliver,
            vec![("tenant_id", "acme".into()), ("delivery_id", "d".into())],
            None,
            br#"{"tenant_id": "other", "dryRun": true}"#,
        );
        assert!(
            message.is_err(),
            "delivery_id is no field of RedeliverRequest"
        );
        let message = assemble(
            &redeliver,
            vec![("tenant_id", "acme".into()), ("delivery_ids", "d".into())],
            None,
            br#"{"tenant_id": "other", "dryRun": true}"#,
        )
        .unwrap();
        assert_eq!(
            message,
            json!({"tenantId": "acme", "deliveryIds": ["d"], "dryRun": true})
        );
    }

    #[test]
    fn bad_input_is_invalid_argument_naming_the_problem() {
        let list = input("hookd.v1.ListDeliveriesRequest");
        let cases = [
            (Some("status=lost"), &b""[..], "status must be one of"),
            (
                Some("colour=red"),
                b"",
                "unknown query parameter \"colour\"",
            ),
            (Some("tenant_id=x"), b"", "already given by the path"),
            (None, b"{", "the body is not valid JSON"),
            (None, b"[1]", "the body must be a JSON object"),
        ];
        for (query, body, expected) in cases {
            let status = assemble(&list, vec![("tenant_id", "acme".into())], query, body)
                .expect_err(expected);
            assert_eq!(status.code(), tonic::Code::InvalidArgument);
            assert!(status.message().contains(expected), "{}", status.message());
        }
        let delete = input("hookd.v1.DeleteRouteRequest");
        let status = assemble(&delete, vec![], Some("force=yes"), b"").unwrap_err();
        assert_eq!(status.message(), "force must be true or false, not \"yes\"");
    }
}
