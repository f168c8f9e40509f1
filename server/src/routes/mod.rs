//! Routes: the rule engines a tenant's routes run ([`filter`], [`transform`]);
//! a route's declaration is config's, its running handle the tenant's.

pub mod filter;
pub mod transform;
