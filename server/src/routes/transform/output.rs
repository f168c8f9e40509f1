//! What a handler returned, checked before anything is sent, at most
//! [`MAX_OUTPUT_BYTES`] in all.

use std::collections::HashSet;

use actix_web::http::header::{HeaderName, HeaderValue};
use serde_json::{Map, Value};

use super::{Oversize, TransformBody, TransformError, TransformRequest, MAX_OUTPUT_BYTES};

/// The request in `json` (the handler's result, serialized by the engine);
/// `method` is the one the handler was given, which it may not change.
///
/// What a handler returned, checked before anything is sent: a path with a
/// single leading `/`, a query and header names and values legal in HTTP,
/// an object, array or string body, at most [`MAX_OUTPUT_BYTES`] in all.
pub(super) fn read(json: &str, method: &str) -> Result<TransformRequest, TransformError> {
    let value: Value =
        serde_json::from_str(json).map_err(|e| bad(format!("the request cannot be read: {e}")))?;
    let Value::Object(mut fields) = value else {
        return Err(bad("the handler must return the request object".into()));
    };
    match fields.remove("method") {
        None | Some(Value::Null) => {}
        Some(Value::String(m)) if m == method => {}
        Some(_) => return Err(bad("the method cannot be changed".into())),
    }
    let path = match fields.remove("path") {
        Some(Value::String(path)) => path,
        _ => return Err(bad("path must be a string".into())),
    };
    check_path(&path)?;
    let query = match fields.remove("query") {
        None | Some(Value::Null) => String::new(),
        Some(Value::String(query)) => query.strip_prefix('?').unwrap_or(&query).to_owned(),
        Some(_) => return Err(bad("query must be a string".into())),
    };
    check_query(&query)?;
    let headers = headers(fields.remove("headers"))?;
    let body = match fields.remove("body") {
        Some(Value::String(text)) => TransformBody::Text(text),
        Some(json @ (Value::Object(_) | Value::Array(_))) => TransformBody::Json(json),
        _ => return Err(bad("body must be an object, an array or a string".into())),
    };
    let size = path.len()
        + query.len()
        + headers
            .iter()
            .map(|(n, v)| n.len() + v.len())
            .sum::<usize>()
        + body_len(&body);
    if size > MAX_OUTPUT_BYTES {
        return Err(TransformError::TooLarge(Oversize::Output));
    }
    Ok(TransformRequest {
        method: method.to_owned(),
        path,
        query,
        headers,
        body,
    })
}

fn bad(why: String) -> TransformError {
    TransformError::BadResult(why)
}

/// A character that may appear unescaped in a URL's path or query.
fn url_char(c: char) -> bool {
    c.is_ascii_graphic()
        && !matches!(
            c,
            '"' | '<' | '>' | '\\' | '^' | '`' | '{' | '|' | '}' | '#'
        )
}

/// One leading `/` only: `//host` or `/\host` would name another host when
/// joined to the destination's URL.
fn check_path(path: &str) -> Result<(), TransformError> {
    if !path.starts_with('/') || path.starts_with("//") {
        return Err(bad("path must start with a single /".into()));
    }
    match path.chars().find(|&c| !url_char(c) || c == '?') {
        Some(c) => Err(bad(format!("path has {c:?}, which a URL path cannot hold"))),
        None => Ok(()),
    }
}

fn check_query(query: &str) -> Result<(), TransformError> {
    match query.chars().find(|&c| !url_char(c)) {
        Some(c) => Err(bad(format!(
            "query has {c:?}, which a URL query cannot hold"
        ))),
        None => Ok(()),
    }
}

fn headers(value: Option<Value>) -> Result<Vec<(String, String)>, TransformError> {
    let map = match value {
        None | Some(Value::Null) => Map::new(),
        Some(Value::Object(map)) => map,
        Some(_) => return Err(bad("headers must be an object of strings".into())),
    };
    let mut seen = HashSet::new();
    let mut headers = Vec::with_capacity(map.len());
    for (name, value) in map {
        let shown = shown(&name);
        let Value::String(value) = value else {
            return Err(bad(format!("header {shown} must be a string")));
        };
        if HeaderName::from_bytes(name.as_bytes()).is_err() {
            return Err(bad(format!(
                "header name {shown} is not a valid HTTP header name"
            )));
        }
        if HeaderValue::from_bytes(value.as_bytes()).is_err() {
            return Err(bad(format!(
                "header {shown} has a character an HTTP header value cannot hold"
            )));
        }
        if !seen.insert(name.to_ascii_lowercase()) {
            return Err(bad(format!("header {shown} is given twice")));
        }
        headers.push((name, value));
    }
    Ok(headers)
}

/// A header name as an error quotes it: at most 64 characters.
fn shown(name: &str) -> String {
    let cut: String = name.chars().take(64).collect();
    format!("{cut:?}")
}

fn body_len(body: &TransformBody) -> usize {
    match body {
        TransformBody::Json(json) => json.to_string().len(),
        TransformBody::Text(text) => text.len(),
    }
}
