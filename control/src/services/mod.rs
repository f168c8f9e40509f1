//! The `hookd.v1` services over a [`crate::ControlBackend`]. Each call
//! authenticates, checks what the caller may touch, validates and converts
//! the request, and makes one backend call; everything about state (does it
//! exist, may it change now) is the backend's answer.

mod alert;
mod consumer;
mod contract;
mod delivery;
mod rejection;
mod route;
mod secret;
mod tenant;
mod token;

pub(crate) use alert::AlertApi;
pub(crate) use consumer::ConsumerApi;
pub(crate) use contract::ContractApi;
pub(crate) use delivery::DeliveryApi;
pub(crate) use rejection::RejectionApi;
pub(crate) use route::RouteApi;
pub(crate) use secret::SecretApi;
pub(crate) use tenant::TenantApi;
pub(crate) use token::TokenApi;

/// Flips to `true` when the server starts shutting down, so long-lived
/// streams end and graceful shutdown does not wait on them forever.
pub(crate) type Stopping = tokio::sync::watch::Receiver<bool>;

#[cfg(test)]
mod tests;
