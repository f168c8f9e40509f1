//! The contract sheet: what a sender needs to send a tenant webhooks it
//! accepts, as Markdown.

use std::fmt::Write;

use hookd_sdk::{
    client::proto::{ListContractsResponse, Tenant},
    signature::Scheme,
};

/// The sheet of `tenant` with its contracts `list`.
///
/// The contract sheet: what a sender needs to send a tenant webhooks it accepts, as
/// Markdown (signing scheme, tolerance, event id, and every event type with its
/// required fields, schema and example).
pub fn markdown(tenant: &Tenant, list: &ListContractsResponse) -> String {
    let mut md = String::new();
    let id = &tenant.tenant_id;
    let _ = writeln!(md, "# Webhook contract: tenant `{id}`\n");
    let _ = writeln!(
        md,
        "Send each event as one JSON object in the body of `POST {}`.\n",
        tenant.ingest_path
    );
    let scheme = tenant.scheme.parse::<Scheme>().ok();
    let tolerance = match scheme.map(Scheme::has_timestamp) {
        Some(false) => "none: this scheme signs no timestamp".to_owned(),
        _ => format!(
            "{} s either way between the signed timestamp and hookd's clock; keep your clock in sync (NTP)",
            tenant.tolerance_secs
        ),
    };
    let event_id = match (tenant.event_id_field.as_str(), scheme) {
        ("", Some(s)) => match (s.body_event_id_field(), s.event_id_header()) {
            (Some(field), _) => format!("body field `{field}`"),
            (None, Some(header)) => format!("header `{header}`"),
            (None, None) => "`sha256:` and the hex digest of the signed content".to_owned(),
        },
        ("", None) => "as the signing scheme defines it".to_owned(),
        (rule, _) => event_id_rule(rule),
    };
    let unknown = match list.unknown_event_types.as_str() {
        "reject" => "refused (422 `UNKNOWN_EVENT_TYPE`)",
        _ => "accepted unchecked",
    };
    let _ = writeln!(md, "| | |\n|---|---|");
    let _ = writeln!(md, "| Signing scheme | `{}` |", tenant.scheme);
    let _ = writeln!(md, "| Timestamp tolerance | {tolerance} |");
    let _ = writeln!(
        md,
        "| Event id | {event_id}; the same id is never accepted twice |"
    );
    let _ = writeln!(md, "| Event type | body field `{}` |", list.type_field);
    let _ = writeln!(md, "| Version | body field `{}` |", list.version_field);
    let _ = writeln!(md, "| Event types without a contract | {unknown} |");
    if !tenant.required_fields.is_empty() {
        let fields = code_list(&tenant.required_fields);
        let _ = writeln!(md, "| Fields every event needs | {fields} |");
    }
    let _ = writeln!(md, "\n## Event types\n");
    if list.contracts.is_empty() {
        let _ = writeln!(md, "No contracts yet: any event type is accepted.");
    }
    for info in &list.contracts {
        let Some(c) = &info.contract else { continue };
        let version = match c.version.as_str() {
            "" => String::new(),
            v => format!(" (version `{v}`)"),
        };
        let _ = writeln!(md, "### `{}`{version}\n", c.r#type);
        let required = match info.required_fields.is_empty() {
            true => "none".to_owned(),
            false => code_list(&info.required_fields),
        };
        let _ = writeln!(md, "Required fields: {required}\n");
        let _ = writeln!(md, "Example:\n\n```json\n{}\n```\n", pretty(&c.example));
        let _ = writeln!(
            md,
            "JSON Schema (draft 2020-12):\n\n```json\n{}\n```\n",
            pretty(&c.schema)
        );
    }
    let _ = writeln!(
        md,
        "## Refusals\n\n- `422 CONTRACT_VIOLATION`: the body breaks its type's schema; `details.violations` lists each JSON pointer and what was expected. Do not retry the same body.\n- `422 UNKNOWN_EVENT_TYPE`: no contract for this type and version (only when such types are refused).\n- `401 STALE_TIMESTAMP` / `FUTURE_TIMESTAMP`: the signed timestamp is outside the tolerance; check your clock.\n\nAdding fields never breaks a contract; renaming or removing one needs a new version."
    );
    md
}

fn code_list(fields: &[String]) -> String {
    fields
        .iter()
        .map(|f| format!("`{f}`"))
        .collect::<Vec<_>>()
        .join(", ")
}

/// JSON text pretty-printed, or as given when it does not parse.
fn pretty(text: &str) -> String {
    serde_json::from_str::<serde_json::Value>(text)
        .and_then(|v| serde_json::to_string_pretty(&v))
        .unwrap_or_else(|_| text.to_owned())
}

/// Where a tenant's `event_id_field` says the id is, in words.
fn event_id_rule(rule: &str) -> String {
    if rule.contains('{') {
        format!("template `{rule}` (each `{{...}}` a JSON pointer, `header:` or `form:` field)")
    } else if let Some(header) = rule.strip_prefix("header:") {
        format!("header `{header}`")
    } else if let Some(field) = rule.strip_prefix("form:") {
        format!("form field `{field}`")
    } else if rule.starts_with('/') {
        format!("JSON pointer `{rule}`")
    } else {
        format!("body field `{rule}`")
    }
}

#[cfg(test)]
mod tests {
    use hookd_sdk::client::proto::{Contract, ContractInfo};

    use super::*;

    #[test]
    fn the_sheet_names_scheme_tolerance_types_required_fields_and_examples() {
        let tenant = Tenant {
            tenant_id: "acme".into(),
            scheme: "standard".into(),
            tolerance_secs: 300,
            ingest_path: "/hooks/acme".into(),
            ..Default::default()
        };
        let list = ListContractsResponse {
            contracts: vec![ContractInfo {
                contract: Some(Contract {
                    r#type: "order.paid".into(),
                    version: "2".into(),
                    schema: r#"{"required":["data"]}"#.into(),
                    example: r#"{"type":"order.paid","data":{}}"#.into(),
                }),
                required_fields: vec!["data".into()],
                ..Default::default()
            }],
            type_field: "type".into(),
            version_field: "version".into(),
            unknown_event_types: "reject".into(),
        };
        let md = markdown(&tenant, &list);
        for expected in [
            "# Webhook contract: tenant `acme`",
            "`POST /hooks/acme`",
            "| Signing scheme | `standard` |",
            "| Timestamp tolerance | 300 s either way",
            "| Event id | header `webhook-id`",
            "| Event types without a contract | refused (422 `UNKNOWN_EVENT_TYPE`) |",
            "### `order.paid` (version `2`)",
            "Required fields: `data`",
            "\"type\": \"order.paid\"",
        ] {
            assert!(md.contains(expected), "{expected:?} missing from:\n{md}");
        }
    }

    #[test]
    fn the_sheet_says_where_a_tenants_event_id_rule_looks() {
        for (rule, words) in [
            ("id", "body field `id`"),
            ("/data/id", "JSON pointer `/data/id`"),
            ("header:X-Event-Id", "header `X-Event-Id`"),
            ("form:MessageSid", "form field `MessageSid`"),
            ("{/a}:{/b}", "template `{/a}:{/b}`"),
        ] {
            assert!(event_id_rule(rule).contains(words), "{rule}");
        }
    }
}
