//! The REST routes of the `hookd.v1` services: one line per route, each
//! naming the RPC it calls and the service method that serves it.

use axum::http::Method;
use hookd_proto::v1::{
    alert_service_server::AlertService, consumer_service_server::ConsumerService,
    contract_service_server::ContractService, delivery_service_server::DeliveryService,
    rejection_service_server::RejectionService, route_service_server::RouteService,
    secret_service_server::SecretService, tenant_service_server::TenantService,
    token_service_server::TokenService,
};

use super::{
    call::{streaming, unary},
    table::Table,
};
use crate::{backend::ControlBackend, services::Services};

/// A unary call of `$method` on `$service`.
macro_rules! rpc {
    ($service:expr, $method:ident) => {
        unary($service, |s, r| async move { s.$method(r).await })
    };
}

/// The route table over `services`, one route a line.
///
/// A new service adds its block here (and a field to `Services`); the tests
/// then hold it to a route per RPC and to its authorization.
#[rustfmt::skip]
pub(crate) fn table<B: ControlBackend>(services: &Services<B>) -> Table {
    let mut t = Table::default();
    let s = &services.tenants;
    t.add(Method::POST, "/v1/tenants", "hookd.v1.TenantService/CreateTenant", rpc!(s, create_tenant))
        .add(Method::GET, "/v1/tenants", "hookd.v1.TenantService/ListTenants", rpc!(s, list_tenants))
        .add(Method::GET, "/v1/tenants/{tenant_id}", "hookd.v1.TenantService/GetTenant", rpc!(s, get_tenant))
        .add(Method::PATCH, "/v1/tenants/{tenant_id}", "hookd.v1.TenantService/UpdateTenant", rpc!(s, update_tenant))
        .add(Method::DELETE, "/v1/tenants/{tenant_id}", "hookd.v1.TenantService/DeleteTenant", rpc!(s, delete_tenant));
    let s = &services.secrets;
    t.add(Method::POST, "/v1/tenants/{tenant_id}/secrets:rotate", "hookd.v1.SecretService/RotateSecret", rpc!(s, rotate_secret))
        .add(Method::GET, "/v1/tenants/{tenant_id}/secrets", "hookd.v1.SecretService/ListSecrets", rpc!(s, list_secrets))
        .add(Method::DELETE, "/v1/tenants/{tenant_id}/secrets/{kid}", "hookd.v1.SecretService/RevokeSecret", rpc!(s, revoke_secret));
    let s = &services.tokens;
    t.add(Method::POST, "/v1/tenants/{tenant_id}/tokens", "hookd.v1.TokenService/CreateToken", rpc!(s, create_token))
        .add(Method::GET, "/v1/tokens", "hookd.v1.TokenService/ListTokens", rpc!(s, list_tokens))
        .add(Method::GET, "/v1/tenants/{tenant_id}/tokens", "hookd.v1.TokenService/ListTokens", rpc!(s, list_tokens))
        .add(Method::DELETE, "/v1/tokens/{token_id}", "hookd.v1.TokenService/RevokeToken", rpc!(s, revoke_token));
    let s = &services.deliveries;
    t.add(Method::GET, "/v1/tenants/{tenant_id}/deliveries", "hookd.v1.DeliveryService/ListDeliveries", rpc!(s, list_deliveries))
        .add(Method::GET, "/v1/tenants/{tenant_id}/deliveries/{delivery_id}", "hookd.v1.DeliveryService/GetDelivery", rpc!(s, get_delivery))
        .add(Method::GET, "/v1/deliveries:search", "hookd.v1.DeliveryService/SearchDeliveries", rpc!(s, search_deliveries))
        .add(Method::GET, "/v1/tenants/{tenant_id}/dead-letters", "hookd.v1.DeliveryService/ListDeadLetters", rpc!(s, list_dead_letters))
        .add(Method::POST, "/v1/tenants/{tenant_id}/deliveries/{delivery_ids}:redeliver", "hookd.v1.DeliveryService/Redeliver", rpc!(s, redeliver))
        .add(Method::POST, "/v1/tenants/{tenant_id}/deliveries:redeliver", "hookd.v1.DeliveryService/Redeliver", rpc!(s, redeliver))
        .add(Method::GET, "/v1/tenants/{tenant_id}/deliveries/{delivery_id}/event", "hookd.v1.DeliveryService/GetEvent", rpc!(s, get_event))
        .add(Method::POST, "/v1/tenants/{tenant_id}/deliveries/{delivery_ids}:retryNow", "hookd.v1.DeliveryService/RetryNow", rpc!(s, retry_now))
        .add(Method::POST, "/v1/tenants/{tenant_id}/deliveries:retryNow", "hookd.v1.DeliveryService/RetryNow", rpc!(s, retry_now))
        .add(Method::POST, "/v1/tenants/{tenant_id}/deliveries/{delivery_ids}:cancel", "hookd.v1.DeliveryService/CancelDeliveries", rpc!(s, cancel_deliveries))
        .add(Method::POST, "/v1/tenants/{tenant_id}/deliveries:cancel", "hookd.v1.DeliveryService/CancelDeliveries", rpc!(s, cancel_deliveries))
        .add(Method::POST, "/v1/tenants/{tenant_id}/dead-letters:purge", "hookd.v1.DeliveryService/PurgeDeadLetters", rpc!(s, purge_dead_letters))
        .add(Method::GET, "/v1/deliveries:watch", "hookd.v1.DeliveryService/WatchDeliveries", streaming(s, |s, r| async move { s.watch_deliveries(r).await }))
        .add(Method::GET, "/v1/tenants/{tenant_id}/deliveries:watch", "hookd.v1.DeliveryService/WatchDeliveries", streaming(s, |s, r| async move { s.watch_deliveries(r).await }));
    let s = &services.consumer;
    t.add(Method::POST, "/v1/tenants/{tenant_id}/deliveries:pull", "hookd.v1.ConsumerService/Pull", rpc!(s, pull))
        .add(Method::POST, "/v1/tenants/{tenant_id}/deliveries:ack", "hookd.v1.ConsumerService/Ack", rpc!(s, ack))
        .add(Method::POST, "/v1/tenants/{tenant_id}/deliveries:nack", "hookd.v1.ConsumerService/Nack", rpc!(s, nack));
    let s = &services.contracts;
    t.add(Method::POST, "/v1/tenants/{tenant_id}/contracts", "hookd.v1.ContractService/PutContract", rpc!(s, put_contract))
        .add(Method::GET, "/v1/tenants/{tenant_id}/contracts", "hookd.v1.ContractService/ListContracts", rpc!(s, list_contracts))
        .add(Method::GET, "/v1/tenants/{tenant_id}/contracts/{type}/{version}", "hookd.v1.ContractService/GetContract", rpc!(s, get_contract))
        .add(Method::DELETE, "/v1/tenants/{tenant_id}/contracts/{type}/{version}", "hookd.v1.ContractService/DeleteContract", rpc!(s, delete_contract))
        .add(Method::POST, "/v1/tenants/{tenant_id}/contracts:validate", "hookd.v1.ContractService/Validate", rpc!(s, validate));
    let s = &services.rejections;
    t.add(Method::GET, "/v1/tenants/{tenant_id}/rejections", "hookd.v1.RejectionService/ListRejections", rpc!(s, list_rejections));
    let s = &services.routes;
    t.add(Method::POST, "/v1/tenants/{tenant_id}/routes", "hookd.v1.RouteService/CreateRoute", rpc!(s, create_route))
        .add(Method::GET, "/v1/tenants/{tenant_id}/routes", "hookd.v1.RouteService/ListRoutes", rpc!(s, list_routes))
        .add(Method::GET, "/v1/tenants/{tenant_id}/routes/{name}", "hookd.v1.RouteService/GetRoute", rpc!(s, get_route))
        .add(Method::PATCH, "/v1/tenants/{tenant_id}/routes/{name}", "hookd.v1.RouteService/UpdateRoute", rpc!(s, update_route))
        .add(Method::DELETE, "/v1/tenants/{tenant_id}/routes/{name}", "hookd.v1.RouteService/DeleteRoute", rpc!(s, delete_route))
        .add(Method::POST, "/v1/tenants/{tenant_id}/routes/{name}:test", "hookd.v1.RouteService/TestRoute", rpc!(s, test_route))
        .add(Method::GET, "/v1/tenants/{tenant_id}/routes/{name}/metrics", "hookd.v1.RouteService/GetRouteMetrics", rpc!(s, get_route_metrics))
        .add(Method::POST, "/v1/tenants/{tenant_id}/routes/{name}:pause", "hookd.v1.RouteService/PauseRoute", rpc!(s, pause_route))
        .add(Method::POST, "/v1/tenants/{tenant_id}/routes/{name}:resume", "hookd.v1.RouteService/ResumeRoute", rpc!(s, resume_route))
        .add(Method::POST, "/v1/tenants/{tenant_id}/routes:test", "hookd.v1.RouteService/TestRoute", rpc!(s, test_route))
        .add(Method::POST, "/v1/tenants/{tenant_id}/routes/{route}:replay", "hookd.v1.RouteService/ReplayToRoute", rpc!(s, replay_to_route))
        .add(Method::GET, "/v1/tenants/{tenant_id}/replays", "hookd.v1.RouteService/ListReplays", rpc!(s, list_replays))
        .add(Method::GET, "/v1/tenants/{tenant_id}/replays/{replay_id}", "hookd.v1.RouteService/GetReplay", rpc!(s, get_replay))
        .add(Method::POST, "/v1/tenants/{tenant_id}/replays/{replay_id}:pause", "hookd.v1.RouteService/PauseReplay", rpc!(s, pause_replay))
        .add(Method::POST, "/v1/tenants/{tenant_id}/replays/{replay_id}:resume", "hookd.v1.RouteService/ResumeReplay", rpc!(s, resume_replay))
        .add(Method::POST, "/v1/tenants/{tenant_id}/replays/{replay_id}:cancel", "hookd.v1.RouteService/CancelReplay", rpc!(s, cancel_replay));
    let s = &services.alerts;
    t.add(Method::GET, "/v1/tenants/{tenant_id}/alert-settings", "hookd.v1.AlertService/GetAlertSettings", rpc!(s, get_alert_settings))
        .add(Method::PUT, "/v1/tenants/{tenant_id}/alert-settings", "hookd.v1.AlertService/SetAlertSettings", rpc!(s, set_alert_settings))
        .add(Method::GET, "/v1/tenants/{tenant_id}/alerts", "hookd.v1.AlertService/ListAlerts", rpc!(s, list_alerts))
        .add(Method::POST, "/v1/tenants/{tenant_id}/alerts/{alert_id}:acknowledge", "hookd.v1.AlertService/AcknowledgeAlert", rpc!(s, acknowledge_alert));
    t
}
