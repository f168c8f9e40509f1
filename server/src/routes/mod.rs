//! routes: a tenant's destinations, each with an optional filter and transform.

pub mod transform;
