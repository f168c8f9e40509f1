//! JSON Schemas of the `hookd.v1` messages and enums in the proto3 JSON
//! mapping, described by the protos' own comments.

use prost_reflect::{
    prost_types::FileDescriptorProto, EnumDescriptor, FieldDescriptor, Kind, MessageDescriptor,
    OneofDescriptor,
};
use serde_json::{json, Map, Value};

use crate::rest::message::pool;

/// The package whose types the document describes.
const PACKAGE: &str = "hookd.v1";

/// Every message (but map entries) and enum of the package, by schema name.
///
/// JSON Schemas of the `hookd.v1` messages and enums in the proto3 JSON
/// mapping (64-bit integers as strings, enums by name, bytes as base64,
/// repeated fields as arrays, maps as objects, at most one field of a
/// oneof), described by the protos' own comments.
pub(super) fn components() -> Map<String, Value> {
    let mut schemas = Map::new();
    for message in pool().all_messages() {
        if message.package_name() == PACKAGE && !message.is_map_entry() {
            schemas.insert(schema_name(message.full_name()), message_schema(&message));
        }
    }
    for kind in pool().all_enums() {
        if kind.package_name() == PACKAGE {
            schemas.insert(schema_name(kind.full_name()), enum_schema(&kind));
        }
    }
    schemas
}

/// `hookd.v1.Outer.Inner` as `Outer.Inner`.
pub(super) fn schema_name(full_name: &str) -> String {
    full_name
        .strip_prefix(PACKAGE)
        .and_then(|name| name.strip_prefix('.'))
        .unwrap_or(full_name)
        .to_owned()
}

/// A `$ref` to the schema of the message or enum named `full_name`.
pub(super) fn reference(full_name: &str) -> Value {
    json!({ "$ref": format!("#/components/schemas/{}", schema_name(full_name)) })
}

fn message_schema(message: &MessageDescriptor) -> Value {
    let mut properties = Map::new();
    for field in message.fields() {
        properties.insert(field.json_name().to_owned(), field_schema(&field));
    }
    let mut schema = json!({ "type": "object", "properties": properties });
    let description = comments(
        message.parent_file().file_descriptor_proto(),
        message.path(),
    );
    if let Some(description) = description {
        schema["description"] = Value::String(description);
    }
    let oneofs: Vec<Value> = message
        .oneofs()
        .filter(|oneof| !oneof.is_synthetic())
        .map(|oneof| at_most_one(&oneof))
        .collect();
    if !oneofs.is_empty() {
        schema["allOf"] = Value::Array(oneofs);
    }
    schema
}

/// A oneof: at most one of its fields is set.
fn at_most_one(oneof: &OneofDescriptor) -> Value {
    let each: Vec<Value> = oneof
        .fields()
        .map(|field| json!({ "required": [field.json_name()] }))
        .collect();
    let mut choices = each.clone();
    choices.push(json!({ "not": { "anyOf": each } }));
    json!({ "oneOf": choices })
}

/// A field's schema, with its comment and, for a field of a oneof or a
/// proto3 `optional`, that it may be absent on purpose.
pub(super) fn field_schema(field: &FieldDescriptor) -> Value {
    let value = if field.is_map() {
        match field.kind() {
            Kind::Message(entry) => {
                let value = entry.map_entry_value_field();
                json!({ "type": "object", "additionalProperties": kind_schema(&value.kind()) })
            }
            _ => kind_schema(&field.kind()),
        }
    } else if field.is_list() {
        json!({ "type": "array", "items": kind_schema(&field.kind()) })
    } else {
        kind_schema(&field.kind())
    };
    let mut description =
        comments(field.parent_file().file_descriptor_proto(), field.path()).unwrap_or_default();
    if let Some(oneof) = field.containing_oneof().filter(|o| !o.is_synthetic()) {
        let note = format!("One of `{}`: at most one of them is set.", oneof.name());
        description = [description, note].join("\n\n").trim().to_owned();
    }
    with_description(value, description)
}

/// `schema` with `description`, if any (3.1 allows it beside a `$ref`).
fn with_description(mut schema: Value, description: String) -> Value {
    if !description.is_empty() {
        schema["description"] = Value::String(description);
    }
    schema
}

/// The proto3 JSON type of one value of a field.
fn kind_schema(kind: &Kind) -> Value {
    match kind {
        Kind::Double | Kind::Float => json!({ "type": "number" }),
        Kind::Int32 | Kind::Sint32 | Kind::Sfixed32 => {
            json!({ "type": "integer", "format": "int32" })
        }
        Kind::Uint32 | Kind::Fixed32 => {
            json!({ "type": "integer", "format": "int64", "minimum": 0, "maximum": u32::MAX })
        }
        Kind::Int64 | Kind::Sint64 | Kind::Sfixed64 => {
            json!({ "type": "string", "format": "int64", "pattern": "^-?[0-9]+$" })
        }
        Kind::Uint64 | Kind::Fixed64 => {
            json!({ "type": "string", "format": "uint64", "pattern": "^[0-9]+$" })
        }
        Kind::Bool => json!({ "type": "boolean" }),
        Kind::String => json!({ "type": "string" }),
        Kind::Bytes => json!({ "type": "string", "contentEncoding": "base64" }),
        Kind::Message(message) => reference(message.full_name()),
        Kind::Enum(kind) => reference(kind.full_name()),
    }
}

fn enum_schema(kind: &EnumDescriptor) -> Value {
    let file = kind.parent_file();
    let names: Vec<String> = kind.values().map(|v| v.name().to_owned()).collect();
    let mut description = comments(file.file_descriptor_proto(), kind.path()).unwrap_or_default();
    for value in kind.values() {
        let said = comments(file.file_descriptor_proto(), value.path()).unwrap_or_default();
        description.push_str(&format!(
            "\n- `{}`: {}",
            value.name(),
            said.replace('\n', " ")
        ));
    }
    json!({ "type": "string", "enum": names, "description": description.trim() })
}

/// The leading comment of the element at `path` in `file`, as one text.
pub(super) fn comments(file: &FileDescriptorProto, path: &[i32]) -> Option<String> {
    let info = file.source_code_info.as_ref()?;
    let location = info.location.iter().find(|l| l.path == path)?;
    let text = location.leading_comments.as_deref()?;
    let lines: Vec<&str> = text.lines().map(str::trim).collect();
    Some(lines.join("\n").trim().to_owned()).filter(|t| !t.is_empty())
}
