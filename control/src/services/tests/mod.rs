//! The services against the fake backend, called directly: who may call
//! what, which requests are refused before the backend, and how backend
//! answers reach the caller.

use std::sync::Arc;

use hookd_proto::v1::{
    self as pb, consumer_service_server::ConsumerService, contract_service_server::ContractService,
    delivery_service_server::DeliveryService, secret_service_server::SecretService,
    tenant_service_server::TenantService, token_service_server::TokenService,
};
use tonic::{Code, Request, Response, Status};

use super::*;
use crate::fake::{FakeBackend, ACME, ADMIN};

mod alert;
mod delivery;
mod redeliver;

pub(super) fn request<T>(token: Option<&str>, message: T) -> Request<T> {
    let mut request = Request::new(message);
    if let Some(token) = token {
        let value = format!("Bearer {token}").parse().unwrap();
        request.metadata_mut().insert("authorization", value);
    }
    request
}

pub(super) fn refused<T: std::fmt::Debug>(result: Result<Response<T>, Status>) -> (Code, String) {
    let status = result.expect_err("the call should have been refused");
    (status.code(), status.message().to_owned())
}

fn tenants(backend: &Arc<FakeBackend>) -> TenantApi<FakeBackend> {
    TenantApi::new(Arc::clone(backend))
}

fn deliveries(
    backend: &Arc<FakeBackend>,
) -> (DeliveryApi<FakeBackend>, tokio::sync::watch::Sender<bool>) {
    let (stop, stopping) = tokio::sync::watch::channel(false);
    (DeliveryApi::new(Arc::clone(backend), stopping), stop)
}

fn get(tenant_id: &str) -> pb::GetTenantRequest {
    pb::GetTenantRequest {
        tenant_id: tenant_id.into(),
    }
}

#[tokio::test]
async fn a_missing_malformed_or_unknown_token_is_unauthenticated() {
    let backend = Arc::new(FakeBackend::new());
    let api = tenants(&backend);
    let mut basic = request(None, get("acme"));
    basic
        .metadata_mut()
        .insert("authorization", format!("Basic {ADMIN}").parse().unwrap());
    let attempts = [
        request(None, get("acme")),
        basic,
        request(Some("no-such-token"), get("acme")),
    ];
    for attempt in attempts {
        let (code, message) = refused(api.get_tenant(attempt).await);
        assert_eq!(code, Code::Unauthenticated);
        assert_eq!(message, "missing or invalid bearer token");
    }
    let empty = refused(api.get_tenant(request(None, get(""))).await);
    assert_eq!(empty.0, Code::Unauthenticated, "authentication comes first");
    assert!(backend.calls().is_empty());
}

#[tokio::test]
async fn a_tenant_token_on_another_tenant_is_permission_denied() {
    let backend = Arc::new(FakeBackend::new());
    let (delivery_api, _stop) = deliveries(&backend);
    let results = [
        refused(
            tenants(&backend)
                .get_tenant(request(Some(ACME), get("globex")))
                .await,
        ),
        refused(
            SecretApi::new(Arc::clone(&backend))
                .rotate_secret(request(
                    Some(ACME),
                    pb::RotateSecretRequest {
                        tenant_id: "globex".into(),
                        overlap_secs: 0,
                        secret: String::new(),
                    },
                ))
                .await,
        ),
        refused(
            delivery_api
                .list_deliveries(request(
                    Some(ACME),
                    pb::ListDeliveriesRequest {
                        tenant_id: "globex".into(),
                        ..Default::default()
                    },
                ))
                .await,
        ),
        refused(
            ConsumerApi::new(Arc::clone(&backend))
                .pull(request(
                    Some(ACME),
                    pb::PullRequest {
                        tenant_id: "globex".into(),
                        ..Default::default()
                    },
                ))
                .await,
        ),
    ];
    for (code, message) in results {
        assert_eq!(code, Code::PermissionDenied);
        assert!(message.contains("\"globex\""), "{message}");
    }
    assert!(backend.calls().is_empty());
}

#[tokio::test]
async fn tenant_tokens_cannot_create_or_delete_tenants_or_touch_tokens() {
    let backend = Arc::new(FakeBackend::new());
    let api = tenants(&backend);
    let create = pb::CreateTenantRequest {
        tenant_id: "acme2".into(),
        ..Default::default()
    };
    let (code, message) = refused(api.create_tenant(request(Some(ACME), create)).await);
    assert_eq!(code, Code::PermissionDenied);
    assert!(message.contains("admin token"), "{message}");
    let delete = pb::DeleteTenantRequest {
        tenant_id: "acme".into(),
    };
    assert_eq!(
        refused(api.delete_tenant(request(Some(ACME), delete)).await).0,
        Code::PermissionDenied
    );
    let own_token = pb::CreateTokenRequest {
        tenant_id: "acme".into(),
        description: String::new(),
    };
    let tokens = TokenApi::new(Arc::clone(&backend));
    assert_eq!(
        refused(tokens.create_token(request(Some(ACME), own_token)).await).0,
        Code::PermissionDenied
    );
    assert!(backend.calls().is_empty());
}

#[tokio::test]
async fn the_admin_creates_a_tenant_and_sees_its_secrets_once() {
    let backend = Arc::new(FakeBackend::new());
    let create = pb::CreateTenantRequest {
        tenant_id: "initech".into(),
        destination_url: "https://initech.test/hooks".into(),
        ..Default::default()
    };
    let created = tenants(&backend)
        .create_tenant(request(Some(ADMIN), create.clone()))
        .await
        .unwrap()
        .into_inner();
    let tenant = created.tenant.unwrap();
    assert_eq!(tenant.ingest_path, "/hooks/initech");
    assert_eq!(tenant.destination_url, "https://initech.test/hooks");
    assert!(!created.secret.is_empty() && !created.destination_secret.is_empty());
    let again = refused(
        tenants(&backend)
            .create_tenant(request(Some(ADMIN), create))
            .await,
    );
    assert_eq!(again.0, Code::AlreadyExists);
}

#[tokio::test]
async fn an_empty_tenant_id_is_invalid_argument_before_the_backend() {
    let backend = Arc::new(FakeBackend::new());
    let (delivery_api, _stop) = deliveries(&backend);
    let results = [
        refused(
            tenants(&backend)
                .get_tenant(request(Some(ADMIN), get("")))
                .await,
        ),
        refused(
            delivery_api
                .get_delivery(request(
                    Some(ADMIN),
                    pb::GetDeliveryRequest {
                        tenant_id: String::new(),
                        delivery_id: "dlv_1".into(),
                    },
                ))
                .await,
        ),
        refused(
            TokenApi::new(Arc::clone(&backend))
                .create_token(request(Some(ADMIN), pb::CreateTokenRequest::default()))
                .await,
        ),
    ];
    for (code, message) in results {
        assert_eq!(code, Code::InvalidArgument);
        assert_eq!(message, "tenant_id is required");
    }
    assert!(backend.calls().is_empty());
}

#[tokio::test]
async fn invalid_requests_name_the_field() {
    let backend = Arc::new(FakeBackend::new());
    let (delivery_api, _stop) = deliveries(&backend);
    let visibility = pb::PullRequest {
        tenant_id: "acme".into(),
        visibility_timeout_secs: 50_000,
        ..Default::default()
    };
    let (code, message) = refused(
        ConsumerApi::new(Arc::clone(&backend))
            .pull(request(Some(ACME), visibility))
            .await,
    );
    assert_eq!(code, Code::InvalidArgument);
    assert!(message.contains("visibility_timeout_secs"), "{message}");
    let status = pb::ListDeliveriesRequest {
        tenant_id: "acme".into(),
        status: 42,
        ..Default::default()
    };
    let (code, message) = refused(
        delivery_api
            .list_deliveries(request(Some(ACME), status))
            .await,
    );
    assert_eq!(code, Code::InvalidArgument);
    assert!(message.contains("status"), "{message}");
    let kid = pb::RevokeSecretRequest {
        tenant_id: "acme".into(),
        kid: String::new(),
    };
    let (code, message) = refused(
        SecretApi::new(Arc::clone(&backend))
            .revoke_secret(request(Some(ACME), kid))
            .await,
    );
    assert_eq!(
        (code, message.as_str()),
        (Code::InvalidArgument, "kid is required")
    );
    assert!(backend.calls().is_empty());
}

#[tokio::test]
async fn backend_errors_keep_their_code_and_message() {
    let backend = Arc::new(FakeBackend::new());
    let (code, message) = refused(
        tenants(&backend)
            .get_tenant(request(Some(ADMIN), get("nope")))
            .await,
    );
    assert_eq!(code, Code::NotFound);
    assert_eq!(message, "no tenant has the id \"nope\"");
    let push = pb::PullRequest {
        tenant_id: "globex".into(),
        ..Default::default()
    };
    let (code, message) = refused(
        ConsumerApi::new(Arc::clone(&backend))
            .pull(request(Some(ADMIN), push))
            .await,
    );
    assert_eq!(code, Code::FailedPrecondition);
    assert!(message.contains("destination_url"), "{message}");
}

#[tokio::test]
async fn list_tenants_with_a_tenant_token_shows_only_that_tenant() {
    let backend = Arc::new(FakeBackend::new());
    let api = tenants(&backend);
    let listed = api
        .list_tenants(request(Some(ACME), pb::ListTenantsRequest::default()))
        .await
        .unwrap()
        .into_inner();
    let ids: Vec<_> = listed
        .tenants
        .iter()
        .map(|t| t.tenant_id.as_str())
        .collect();
    assert_eq!(ids, ["acme"]);
    assert_eq!(listed.next_page_token, "");
    let all = api
        .list_tenants(request(Some(ADMIN), pb::ListTenantsRequest::default()))
        .await
        .unwrap()
        .into_inner();
    assert_eq!(all.tenants.len(), 2);
}

#[tokio::test]
async fn list_tenants_pages_through_with_the_returned_token() {
    let api = tenants(&Arc::new(FakeBackend::new()));
    let first = api
        .list_tenants(request(
            Some(ADMIN),
            pb::ListTenantsRequest {
                page_size: 1,
                page_token: String::new(),
            },
        ))
        .await
        .unwrap()
        .into_inner();
    assert_eq!(first.tenants[0].tenant_id, "acme");
    assert!(!first.next_page_token.is_empty());
    let second = api
        .list_tenants(request(
            Some(ADMIN),
            pb::ListTenantsRequest {
                page_size: 1,
                page_token: first.next_page_token,
            },
        ))
        .await
        .unwrap()
        .into_inner();
    assert_eq!(second.tenants[0].tenant_id, "globex");
    assert_eq!(second.next_page_token, "");
}

#[tokio::test]
async fn contract_calls_stay_in_the_tokens_tenant_and_need_type_schema_and_example() {
    let backend = Arc::new(FakeBackend::new());
    let api = ContractApi::new(Arc::clone(&backend));
    let contract = |schema: &str| pb::Contract {
        r#type: "order.paid".into(),
        version: String::new(),
        schema: schema.into(),
        example: "{}".into(),
    };
    let put = |tenant: &str, schema: &str| pb::PutContractRequest {
        tenant_id: tenant.into(),
        contract: Some(contract(schema)),
    };
    let (code, _) = refused(
        api.put_contract(request(Some(ACME), put("globex", "{}")))
            .await,
    );
    assert_eq!(code, Code::PermissionDenied);
    let (code, message) = refused(api.put_contract(request(Some(ACME), put("acme", ""))).await);
    assert_eq!(
        (code, message.as_str()),
        (Code::InvalidArgument, "contract.schema is required")
    );
    let delete = pb::DeleteContractRequest {
        tenant_id: "acme".into(),
        r#type: String::new(),
        version: "2".into(),
    };
    let (code, message) = refused(api.delete_contract(request(Some(ACME), delete)).await);
    assert_eq!(
        (code, message.as_str()),
        (Code::InvalidArgument, "type is required")
    );
    assert!(backend.calls().is_empty());
    let saved = api
        .put_contract(request(Some(ACME), put("acme", "{}")))
        .await
        .unwrap()
        .into_inner();
    assert_eq!(saved.contract.unwrap().contract, Some(contract("{}")));
    assert_eq!(backend.calls(), ["put_contract"]);
}
