//! The request headers as the verifier reads them: case-insensitive, and a
//! repeated or non-text header is never read as one of its values.

use actix_web::http::header::HeaderMap;
use hookd_sdk::signature::{HeaderLookup, HeaderSource};

/// Case-insensitive header access for the verifier.
pub(super) struct SignedHeaders<'a>(pub(super) &'a HeaderMap);

impl HeaderSource for SignedHeaders<'_> {
    fn header(&self, name: &str) -> Option<&str> {
        self.0.get(name)?.to_str().ok()
    }

    /// Every line of `name`: two lines are `Repeated`, a value that is not
    /// ASCII text is `NotText`, never "absent".
    fn lookup(&self, name: &str) -> HeaderLookup<'_> {
        let mut values = self.0.get_all(name);
        match (values.next(), values.next()) {
            (None, _) => HeaderLookup::Absent,
            (Some(_), Some(_)) => HeaderLookup::Repeated,
            (Some(value), None) => match value.to_str() {
                Ok(text) => HeaderLookup::of_value(text),
                Err(_) => HeaderLookup::NotText,
            },
        }
    }
}
