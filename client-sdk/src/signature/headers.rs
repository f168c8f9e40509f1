//! `HeaderSource`: the view of request headers the verifier reads, so the SDK works
//! with any HTTP stack (or none) and header names match case-insensitively.

use std::collections::HashMap;
use std::hash::BuildHasher;

/// How one header name appears in a request, as the verifier sees it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum HeaderLookup<'a> {
    /// Not sent.
    Absent,
    /// Sent on exactly one line, as ASCII text.
    One(&'a str),
    /// Sent on more than one line: which one the sender meant is unknowable, so a
    /// verifier refuses it rather than pick one.
    Repeated,
    /// Sent with bytes other than visible ASCII, space or tab.
    NotText,
}

impl<'a> HeaderLookup<'a> {
    /// One value, checked to be ASCII text (visible characters, space, tab).
    pub fn of_value(value: &'a str) -> HeaderLookup<'a> {
        let text = value
            .bytes()
            .all(|b| b == b'\t' || (b' '..=b'~').contains(&b));
        if text {
            HeaderLookup::One(value)
        } else {
            HeaderLookup::NotText
        }
    }

    /// The lookup of the values `values` found under one name.
    pub fn of_values(mut values: impl Iterator<Item = &'a str>) -> HeaderLookup<'a> {
        match (values.next(), values.next()) {
            (None, _) => HeaderLookup::Absent,
            (Some(value), None) => HeaderLookup::of_value(value),
            (Some(_), Some(_)) => HeaderLookup::Repeated,
        }
    }
}

/// Case-insensitive header lookup so the verifier does not depend on any HTTP crate.
pub trait HeaderSource {
    /// The first value of header `name` (given in any case); implementations compare
    /// names ASCII-case-insensitively because HTTP header names are case-insensitive.
    fn header(&self, name: &str) -> Option<&str>;

    /// Every line of header `name`, so the verifier can refuse a repeated or non-text
    /// header instead of reading one of them. The default suits sources that hold one
    /// value per name; sources that can repeat a name must override it.
    fn lookup(&self, name: &str) -> HeaderLookup<'_> {
        match self.header(name) {
            Some(value) => HeaderLookup::of_value(value),
            None => HeaderLookup::Absent,
        }
    }
}

impl<K: AsRef<str>, V: AsRef<str>> HeaderSource for [(K, V)] {
    fn header(&self, name: &str) -> Option<&str> {
        self.iter()
            .find(|(key, _)| key.as_ref().eq_ignore_ascii_case(name))
            .map(|(_, value)| value.as_ref())
    }

    fn lookup(&self, name: &str) -> HeaderLookup<'_> {
        HeaderLookup::of_values(
            self.iter()
                .filter(|(key, _)| key.as_ref().eq_ignore_ascii_case(name))
                .map(|(_, value)| value.as_ref()),
        )
    }
}

impl<K: AsRef<str>, V: AsRef<str>, const N: usize> HeaderSource for [(K, V); N] {
    fn header(&self, name: &str) -> Option<&str> {
        self.as_slice().header(name)
    }

    fn lookup(&self, name: &str) -> HeaderLookup<'_> {
        self.as_slice().lookup(name)
    }
}

impl<K: AsRef<str>, V: AsRef<str>> HeaderSource for Vec<(K, V)> {
    fn header(&self, name: &str) -> Option<&str> {
        self.as_slice().header(name)
    }

    fn lookup(&self, name: &str) -> HeaderLookup<'_> {
        self.as_slice().lookup(name)
    }
}

impl<S: BuildHasher> HeaderSource for HashMap<String, String, S> {
    fn header(&self, name: &str) -> Option<&str> {
        self.get(name)
            .or_else(|| {
                self.iter()
                    .find(|(key, _)| key.eq_ignore_ascii_case(name))
                    .map(|(_, value)| value)
            })
            .map(String::as_str)
    }

    /// Keys that differ only in case are the same header sent twice.
    fn lookup(&self, name: &str) -> HeaderLookup<'_> {
        HeaderLookup::of_values(
            self.iter()
                .filter(|(key, _)| key.eq_ignore_ascii_case(name))
                .map(|(_, value)| value.as_str()),
        )
    }
}

impl<T: HeaderSource + ?Sized> HeaderSource for &T {
    fn header(&self, name: &str) -> Option<&str> {
        (**self).header(name)
    }

    fn lookup(&self, name: &str) -> HeaderLookup<'_> {
        (**self).lookup(name)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Takes the source by value, so passing `&map` exercises the `&T` impl.
    fn owned_lookup<H: HeaderSource>(headers: H, name: &str) -> Option<String> {
        headers.header(name).map(str::to_owned)
    }

    #[test]
    fn lookups_ignore_ascii_case() {
        let pairs = [("X-Hub-Signature-256", "a"), ("webhook-id", "b")];
        assert_eq!(pairs.header("x-hub-signature-256"), Some("a"));
        assert_eq!(pairs[..].header("WEBHOOK-ID"), Some("b"));
        assert_eq!(pairs.header("webhook-ids"), None);

        let owned = vec![("Stripe-Signature".to_owned(), "c".to_owned())];
        assert_eq!(owned.header("stripe-signature"), Some("c"));

        let map: HashMap<String, String> = owned.into_iter().collect();
        assert_eq!(map.header("Stripe-Signature"), Some("c"));
        assert_eq!(map.header("STRIPE-SIGNATURE"), Some("c"));
        assert_eq!(owned_lookup(&map, "stripe-signature").as_deref(), Some("c"));
        assert_eq!(owned_lookup(&map, "missing"), None);
    }

    /// Takes the source by value, so passing `&map` exercises the `&T` impl.
    fn repeated<H: HeaderSource>(headers: H, name: &str) -> bool {
        headers.lookup(name) == HeaderLookup::Repeated
    }

    #[test]
    fn repeated_and_non_text_values_are_told_apart() {
        let pairs = [("A", "1"), ("b", "x\ty z"), ("a", "2"), ("c", "caf\u{e9}")];
        assert_eq!(pairs.lookup("a"), HeaderLookup::Repeated);
        assert_eq!(pairs.lookup("B"), HeaderLookup::One("x\ty z"));
        assert_eq!(pairs.lookup("c"), HeaderLookup::NotText);
        assert_eq!(pairs.lookup("d"), HeaderLookup::Absent);
        let map: HashMap<String, String> = [
            ("X".to_owned(), "1".to_owned()),
            ("x".to_owned(), "1".to_owned()),
        ]
        .into_iter()
        .collect();
        assert_eq!(map.lookup("x"), HeaderLookup::Repeated);
        assert!(repeated(&map, "X"), "through the &T impl");
        assert_eq!(HeaderLookup::of_value("a\u{7f}"), HeaderLookup::NotText);
    }
}
