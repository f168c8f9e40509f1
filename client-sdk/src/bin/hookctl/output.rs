//! Where results go: a table or field list for people, or exactly one JSON or
//! YAML document on stdout for scripts.

use std::io::{self, Write};

use clap::ValueEnum;
use serde_json::{json, Map, Value};

use crate::{table::Table, view::View};

/// How results are printed (`--output`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum OutputMode {
    /// Aligned tables of the main columns, and field lists.
    Table,
    /// Tables and field lists of every field, named as in json.
    Wide,
    /// One pretty-printed JSON document (tail: one compact value per line).
    Json,
    /// One YAML document (tail: one document per event).
    Yaml,
}

/// The output mode, threaded through every command.
///
/// Where results go: an aligned table or field list for people (`--output table`, or
/// `wide` with every field), or exactly one JSON or YAML document on stdout for scripts
/// (`--output json|yaml`, `--json`); notes for people go to stderr in those modes.
#[derive(Debug, Clone, Copy)]
pub struct Output {
    mode: OutputMode,
}

impl Output {
    /// Output in `mode`.
    pub fn new(mode: OutputMode) -> Output {
        Output { mode }
    }

    /// Whether scripts are reading (json or yaml): commands print their document then.
    pub fn is_document(self) -> bool {
        matches!(self.mode, OutputMode::Json | OutputMode::Yaml)
    }

    /// A list as a table, or as `{key: [...], "next_page_token": ...}`; a non-empty
    /// `next_page_token` is a page hint for people and a field for scripts.
    pub fn list<T: View>(
        self,
        key: &str,
        items: &[T],
        next_page_token: Option<&str>,
    ) -> io::Result<()> {
        if self.is_document() {
            let mut document = Map::new();
            document.insert(key.to_owned(), items.iter().map(View::json).collect());
            if let Some(token) = next_page_token {
                document.insert("next_page_token".to_owned(), json!(token));
            }
            return self.document(&Value::Object(document));
        }
        self.table(items)?;
        match next_page_token {
            Some(token) if !token.is_empty() => {
                eprintln!("more results: repeat with --page-token {token} (or use --all)");
            }
            _ => {}
        }
        Ok(())
    }

    /// One record as a field list, or as its JSON object.
    pub fn record<T: View>(self, item: &T) -> io::Result<()> {
        if self.is_document() {
            return self.document(&item.json());
        }
        self.fields(item)
    }

    /// `items` as a table: the main columns, or in wide mode every field.
    pub fn table<T: View>(self, items: &[T]) -> io::Result<()> {
        if self.mode == OutputMode::Wide {
            return print(&wide_rows(items));
        }
        print(&rows(items))
    }

    /// One record as a field list: the main fields, or in wide mode every one.
    pub fn fields<T: View>(self, item: &T) -> io::Result<()> {
        if self.mode == OutputMode::Wide {
            return print(&Table::fields(
                wide_fields(&item.json())
                    .iter()
                    .map(|(name, value)| (name.as_str(), value.clone())),
            ));
        }
        print(&Table::fields(item.fields()))
    }

    /// A result that has no record type: `text` for people, `document` for scripts.
    pub fn result(self, text: &str, document: &Value) -> io::Result<()> {
        if self.is_document() {
            return self.document(document);
        }
        self.line(text)
    }

    /// One line of text for people, e.g. a `tail` event.
    pub fn line(self, text: &str) -> io::Result<()> {
        writeln!(io::stdout().lock(), "{text}")
    }

    /// Secrets hookd returns only once, with the warning people must not miss; the
    /// warning goes to stderr in JSON mode so stdout stays one document.
    pub fn once(self, fields: Vec<(&str, String)>, document: &Value) -> io::Result<()> {
        const WARNING: &str =
            "Note: secret values are shown only this once. Store them now; hookd cannot show them again.";
        if self.is_document() {
            eprintln!("{WARNING}");
            return self.document(document);
        }
        print(&Table::fields(fields))?;
        writeln!(io::stdout().lock(), "\n{WARNING}")
    }

    /// Writes one document: pretty-printed JSON, or YAML in yaml mode.
    pub fn document(self, document: &Value) -> io::Result<()> {
        let mut stdout = io::stdout().lock();
        if self.mode == OutputMode::Yaml {
            let yaml = serde_norway::to_string(document).map_err(io::Error::other)?;
            return write!(stdout, "{yaml}");
        }
        serde_json::to_writer_pretty(&mut stdout, document)?;
        writeln!(stdout)
    }

    /// One streamed value: a compact JSON value on its own line, or a YAML document
    /// after its `---` separator, for `tail`.
    pub fn stream_item(self, value: &Value) -> io::Result<()> {
        if self.mode == OutputMode::Yaml {
            let yaml = serde_norway::to_string(value).map_err(io::Error::other)?;
            return write!(io::stdout().lock(), "---\n{yaml}");
        }
        writeln!(io::stdout().lock(), "{value}")
    }
}

/// The list table of `items`: the main columns.
fn rows<T: View>(items: &[T]) -> Table {
    let mut table = Table::with_header(T::COLUMNS);
    for item in items {
        table.row(item.cells());
    }
    table
}

/// The wide table of `items`: a column per field of their JSON objects (in name
/// order, headed by the name in capitals); nested lists of records are left out.
fn wide_rows<T: View>(items: &[T]) -> Table {
    let records: Vec<Vec<(String, String)>> =
        items.iter().map(|item| wide_fields(&item.json())).collect();
    let mut names: Vec<String> = Vec::new();
    for record in &records {
        for (name, _) in record {
            if !names.contains(name) {
                names.push(name.clone());
            }
        }
    }
    let header: Vec<String> = names.iter().map(|n| n.to_uppercase()).collect();
    let mut table = Table::with_header(&header.iter().map(String::as_str).collect::<Vec<_>>());
    for record in records {
        table.row(
            names
                .iter()
                .map(|name| {
                    record
                        .iter()
                        .find(|(n, _)| n == name)
                        .map_or_else(|| "-".to_owned(), |(_, v)| v.clone())
                })
                .collect(),
        );
    }
    table
}

/// The fields of a record's JSON object as text: strings as they are, `null` as
/// `-`, lists of values joined with commas; lists of records are left out (commands
/// print them as tables of their own).
fn wide_fields(record: &Value) -> Vec<(String, String)> {
    let Value::Object(fields) = record else {
        return Vec::new();
    };
    fields
        .iter()
        .filter_map(|(name, value)| Some((name.clone(), wide_cell(value)?)))
        .collect()
}

fn wide_cell(value: &Value) -> Option<String> {
    Some(match value {
        Value::Null => "-".to_owned(),
        Value::String(s) if s.is_empty() => "-".to_owned(),
        Value::String(s) => s.clone(),
        Value::Array(items) if items.iter().any(Value::is_object) => return None,
        Value::Array(items) if items.is_empty() => "-".to_owned(),
        Value::Array(items) => items
            .iter()
            .filter_map(wide_cell)
            .collect::<Vec<_>>()
            .join(","),
        other => other.to_string(),
    })
}

/// Writes a table to stdout, reporting a closed pipe instead of panicking.
pub fn print(table: &Table) -> io::Result<()> {
    write!(io::stdout().lock(), "{table}")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn wide_fields_flatten_values_and_leave_nested_records_out() {
        let record = json!({
            "tenant_id": "acme",
            "destination_url": null,
            "required_fields": ["type", "id"],
            "attempts": [{"attempt": 1}],
            "enabled": true,
            "event_id_field": "",
        });
        assert_eq!(
            wide_fields(&record),
            [
                ("destination_url".to_owned(), "-".to_owned()),
                ("enabled".to_owned(), "true".to_owned()),
                ("event_id_field".to_owned(), "-".to_owned()),
                ("required_fields".to_owned(), "type,id".to_owned()),
                ("tenant_id".to_owned(), "acme".to_owned()),
            ]
        );
    }
}
