//! Bounds on tenant settings over real gRPC, and a stored tenant with a bad
//! value (as an older hookd could have written it) that must not stop a
//! restart: its ingest answers 503, every other tenant runs.

use std::path::Path;

use hookd_sdk::client::{
    proto::{CreateTenantRequest, UpdateTenantRequest},
    Code, HookdClient,
};
use hookd_server::testing::{RowChange, SledStore, Storage, Table};
use reqwest::StatusCode;
use serde_json::Value;

use crate::harness::{order, signed, Answer, TestServer, ACME};

/// Sends a Standard Webhooks delivery to a tenant created over the API.
async fn send(s: &TestServer, tenant: &str, kid: &str, secret: &str, event_id: &str) -> Answer {
    s.post_signed(tenant, kid, secret, event_id).await
}

/// Expects INVALID_ARGUMENT naming `field`.
fn refused<T: std::fmt::Debug>(
    field: &str,
    result: Result<T, hookd_sdk::client::ClientError>,
) -> String {
    let err = result.expect_err(field);
    assert_eq!(err.code(), Code::InvalidArgument, "{field}: {err:?}");
    let message = err.to_string();
    assert!(message.contains(field), "{field}: {message}");
    message
}

async fn create(admin: &HookdClient, request: CreateTenantRequest) -> (String, String) {
    let created = admin.create_tenant(request).await.unwrap();
    (created.kid, created.secret)
}

#[tokio::test]
async fn out_of_range_tenant_numbers_are_refused_over_grpc() {
    let s = TestServer::start("");
    let admin = s.admin().await;
    let base = CreateTenantRequest {
        tenant_id: "huge".into(),
        ..Default::default()
    };
    let cases = [
        (
            "tolerance_secs",
            CreateTenantRequest {
                tolerance_secs: u64::MAX / 2 + 1,
                ..base.clone()
            },
        ),
        (
            "max_in_flight",
            CreateTenantRequest {
                max_in_flight: u32::MAX,
                ..base.clone()
            },
        ),
        (
            "rate_limit_per_sec",
            CreateTenantRequest {
                rate_limit_per_sec: 1e300,
                rate_limit_burst: 10,
                ..base.clone()
            },
        ),
        (
            "rate_limit_burst",
            CreateTenantRequest {
                rate_limit_per_sec: 10.0,
                rate_limit_burst: u32::MAX,
                ..base.clone()
            },
        ),
        (
            "max_body_bytes",
            CreateTenantRequest {
                max_body_bytes: u64::MAX,
                ..base.clone()
            },
        ),
    ];
    for (field, request) in cases {
        refused(field, admin.create_tenant(request).await);
        assert_eq!(
            admin.get_tenant("huge").await.unwrap_err().code(),
            Code::NotFound,
            "{field}: a refused tenant must not exist"
        );
    }

    let (kid, secret) = create(&admin, base.clone()).await;
    refused(
        "tolerance_secs",
        admin
            .update_tenant(UpdateTenantRequest {
                tenant_id: "huge".into(),
                tolerance_secs: Some(100 * 365 * 86_400),
                ..Default::default()
            })
            .await,
    );
    let tenant = admin.get_tenant("huge").await.unwrap();
    assert_eq!(
        tenant.tolerance_secs, 300,
        "a refused update changes nothing"
    );
    let a = send(&s, "huge", &kid, &secret, "evt_1").await;
    assert_eq!(a.status, StatusCode::ACCEPTED, "{:?}", a.body);
}

#[tokio::test]
async fn the_operator_caps_the_body_limit_tenants_may_set() {
    let s = TestServer::start("[limits]\ntenant_max_body_bytes = 4096\n");
    let admin = s.admin().await;
    let request = CreateTenantRequest {
        tenant_id: "capped".into(),
        max_body_bytes: 4097,
        ..Default::default()
    };
    let message = refused("max_body_bytes", admin.create_tenant(request.clone()).await);
    assert!(message.contains("4096"), "{message}");
    admin
        .create_tenant(CreateTenantRequest {
            max_body_bytes: 4096,
            ..request
        })
        .await
        .unwrap();
}

/// Rewrites one field of a stored tenant record, as an older hookd without
/// bounds could have stored it.
fn poison_stored_tenant(data: &Path, tenant: &str, field: &str, value: Value) {
    let (store, committer) = SledStore::open(data, 1, false).unwrap();
    let rows = Storage::catalog_rows(&store).unwrap();
    let raw = rows
        .get(Table::Tenants, tenant)
        .unwrap()
        .expect("stored tenant");
    let mut record: Value = serde_json::from_slice(&raw).unwrap();
    record["tenant"][field] = value;
    rows.apply(&[RowChange::Put(
        Table::Tenants,
        tenant.into(),
        serde_json::to_vec(&record).unwrap(),
    )])
    .unwrap();
    store.flush().unwrap();
    drop(rows);
    drop(store);
    committer.join().unwrap();
}

#[tokio::test]
async fn a_stored_tenant_with_a_bad_value_does_not_stop_a_restart() {
    let mut s = TestServer::start(ACME);
    let admin = s.admin().await;
    let (kid, secret) = create(
        &admin,
        CreateTenantRequest {
            tenant_id: "older".into(),
            ..Default::default()
        },
    )
    .await;
    create(
        &admin,
        CreateTenantRequest {
            tenant_id: "unreadable".into(),
            ..Default::default()
        },
    )
    .await;
    let (good_kid, good_secret) = create(
        &admin,
        CreateTenantRequest {
            tenant_id: "fine".into(),
            ..Default::default()
        },
    )
    .await;
    drop(admin);

    s.restart_after(ACME, |data| {
        poison_stored_tenant(data, "older", "tolerance_secs", Value::from(u64::MAX));
        poison_stored_tenant(data, "unreadable", "max_in_flight", Value::from("many"));
    });

    for tenant in ["older", "unreadable"] {
        let a = send(&s, tenant, &kid, &secret, "evt_1").await;
        assert_eq!(
            (a.status, a.code()),
            (StatusCode::SERVICE_UNAVAILABLE, "TENANT_UNAVAILABLE"),
            "{tenant}: {:?}",
            a.body
        );
    }
    let admin = s.admin().await;
    let err = admin.get_tenant("older").await.unwrap_err();
    assert_eq!(err.code(), Code::FailedPrecondition, "{err:?}");
    assert!(err.to_string().contains("tolerance_secs"), "{err}");
    let a = send(&s, "fine", &good_kid, &good_secret, "evt_1").await;
    assert_eq!(a.status, StatusCode::ACCEPTED, "{:?}", a.body);
    let body = order("evt_1");
    let a = s
        .post("acme", &signed("evt_1", s.clock_secs(), &body), &body)
        .await;
    assert_eq!(a.status, StatusCode::ACCEPTED, "{:?}", a.body);

    // Fixing the setting over the API brings the tenant back.
    admin
        .update_tenant(UpdateTenantRequest {
            tenant_id: "older".into(),
            tolerance_secs: Some(600),
            ..Default::default()
        })
        .await
        .unwrap();
    let a = send(&s, "older", &kid, &secret, "evt_2").await;
    assert_eq!(a.status, StatusCode::ACCEPTED, "{:?}", a.body);
}
