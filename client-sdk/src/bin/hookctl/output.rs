//! Where results go: an aligned table or field list for people, or exactly one JSON
//! document on stdout for scripts (`--json`); notes for people go to stderr in JSON mode.

use std::io::{self, Write};

use serde_json::{json, Map, Value};

use crate::{table::Table, view::View};

/// The output mode chosen by `--json`, threaded through every command.
#[derive(Debug, Clone, Copy)]
pub struct Output {
    json: bool,
}

impl Output {
    /// Tables when `json` is false, one JSON document when true.
    pub fn new(json: bool) -> Output {
        Output { json }
    }

    /// Whether scripts are reading: commands print their JSON document then.
    pub fn is_json(self) -> bool {
        self.json
    }

    /// A list as a table, or as `{key: [...], "next_page_token": ...}`; a non-empty
    /// `next_page_token` is a page hint for people and a field for scripts.
    pub fn list<T: View>(
        self,
        key: &str,
        items: &[T],
        next_page_token: Option<&str>,
    ) -> io::Result<()> {
        if self.json {
            let mut document = Map::new();
            document.insert(key.to_owned(), items.iter().map(View::json).collect());
            if let Some(token) = next_page_token {
                document.insert("next_page_token".to_owned(), json!(token));
            }
            return self.document(&Value::Object(document));
        }
        print(&rows(items))?;
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
        if self.json {
            return self.document(&item.json());
        }
        print(&Table::fields(item.fields()))
    }

    /// A result that has no record type: `text` for people, `document` for scripts.
    pub fn result(self, text: &str, document: &Value) -> io::Result<()> {
        if self.json {
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
        if self.json {
            eprintln!("{WARNING}");
            return self.document(document);
        }
        print(&Table::fields(fields))?;
        writeln!(io::stdout().lock(), "\n{WARNING}")
    }

    /// Writes one pretty-printed JSON document.
    pub fn document(self, document: &Value) -> io::Result<()> {
        let mut stdout = io::stdout().lock();
        serde_json::to_writer_pretty(&mut stdout, document)?;
        writeln!(stdout)
    }

    /// One compact JSON value on its own line, for `tail --json`.
    pub fn json_line(self, value: &Value) -> io::Result<()> {
        writeln!(io::stdout().lock(), "{value}")
    }
}

/// The list table of `items`, for callers that print more than one table.
pub fn rows<T: View>(items: &[T]) -> Table {
    let mut table = Table::with_header(T::COLUMNS);
    for item in items {
        table.row(item.cells());
    }
    table
}

/// Writes a table to stdout, reporting a closed pipe instead of panicking.
pub fn print(table: &Table) -> io::Result<()> {
    write!(io::stdout().lock(), "{table}")
}
