//! The `hookd.v1` services over a [`crate::ControlBackend`]: authenticate,
//! check, convert and make one backend call.

use std::sync::Arc;

use crate::backend::ControlBackend;

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

/// One instance of each `hookd.v1` service over one backend, shared by the
/// gRPC server and the REST face so both call the same code.
///
/// The `hookd.v1` services over a [`crate::ControlBackend`]. Each call
/// authenticates, checks what the caller may touch, validates and converts
/// the request, and makes one backend call; everything about state (does it
/// exist, may it change now) is the backend's answer.
pub(crate) struct Services<B> {
    pub(crate) tenants: Arc<TenantApi<B>>,
    pub(crate) secrets: Arc<SecretApi<B>>,
    pub(crate) tokens: Arc<TokenApi<B>>,
    pub(crate) deliveries: Arc<DeliveryApi<B>>,
    pub(crate) consumer: Arc<ConsumerApi<B>>,
    pub(crate) contracts: Arc<ContractApi<B>>,
    pub(crate) rejections: Arc<RejectionApi<B>>,
    pub(crate) routes: Arc<RouteApi<B>>,
    pub(crate) alerts: Arc<AlertApi<B>>,
}

impl<B: ControlBackend> Services<B> {
    /// Every service over `backend`; watch streams end when `stopping`
    /// turns true.
    pub(crate) fn new(backend: &Arc<B>, stopping: Stopping) -> Self {
        Services {
            tenants: Arc::new(TenantApi::new(Arc::clone(backend))),
            secrets: Arc::new(SecretApi::new(Arc::clone(backend))),
            tokens: Arc::new(TokenApi::new(Arc::clone(backend))),
            deliveries: Arc::new(DeliveryApi::new(Arc::clone(backend), stopping)),
            consumer: Arc::new(ConsumerApi::new(Arc::clone(backend))),
            contracts: Arc::new(ContractApi::new(Arc::clone(backend))),
            rejections: Arc::new(RejectionApi::new(Arc::clone(backend))),
            routes: Arc::new(RouteApi::new(Arc::clone(backend))),
            alerts: Arc::new(AlertApi::new(Arc::clone(backend))),
        }
    }
}

/// Flips to `true` when the server starts shutting down, so long-lived
/// streams end and graceful shutdown does not wait on them forever.
pub(crate) type Stopping = tokio::sync::watch::Receiver<bool>;

#[cfg(test)]
mod tests;
