//! `HeaderSource`: the one-method view of request headers the verifier reads, so the
//! SDK works with any HTTP stack (or none) and header names match case-insensitively.

use std::collections::HashMap;
use std::hash::BuildHasher;

/// Case-insensitive header lookup so the verifier does not depend on any HTTP crate.
pub trait HeaderSource {
    /// The first value of header `name` (given in any case); implementations compare
    /// names ASCII-case-insensitively because HTTP header names are case-insensitive.
    fn header(&self, name: &str) -> Option<&str>;
}

impl<K: AsRef<str>, V: AsRef<str>> HeaderSource for [(K, V)] {
    fn header(&self, name: &str) -> Option<&str> {
        self.iter()
            .find(|(key, _)| key.as_ref().eq_ignore_ascii_case(name))
            .map(|(_, value)| value.as_ref())
    }
}

impl<K: AsRef<str>, V: AsRef<str>, const N: usize> HeaderSource for [(K, V); N] {
    fn header(&self, name: &str) -> Option<&str> {
        self.as_slice().header(name)
    }
}

impl<K: AsRef<str>, V: AsRef<str>> HeaderSource for Vec<(K, V)> {
    fn header(&self, name: &str) -> Option<&str> {
        self.as_slice().header(name)
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
}

impl<T: HeaderSource + ?Sized> HeaderSource for &T {
    fn header(&self, name: &str) -> Option<&str> {
        (**self).header(name)
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
}
