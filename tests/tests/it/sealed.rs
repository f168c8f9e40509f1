//! Tenant secrets at rest over the real server: a sealed row copied from
//! one tenant to another in the data dir is refused, by name, and never
//! verifies a delivery.

use hookd_sdk::{
    client::{proto::CreateTenantRequest, Code},
    signature::{sign, Scheme, Secret},
};
use hookd_server::testing::{RowChange, Table};
use reqwest::StatusCode;

use crate::harness::{order, TestServer};

#[tokio::test]
async fn secrets_copied_to_another_tenant_never_verify() {
    let mut s = TestServer::start("");
    let admin = s.admin().await;
    let mut alpha = None;
    for id in ["alpha", "beta"] {
        let created = admin
            .create_tenant(CreateTenantRequest {
                tenant_id: id.into(),
                ..Default::default()
            })
            .await
            .unwrap();
        alpha.get_or_insert((created.kid, created.secret));
    }
    let (kid, secret) = alpha.unwrap();

    let started = s.try_restart_with("", |data| {
        let db = sled::Config::new()
            .path(data.join("store"))
            .segment_size(8 * 1024 * 1024)
            .open()
            .unwrap();
        let secrets = db.open_tree("secrets").unwrap();
        let row = secrets.get("alpha").unwrap().unwrap();
        secrets.insert("beta", row).unwrap();
        db.flush().unwrap();
    });
    match started {
        Err(e) => {
            let e = e.to_string();
            assert!(
                e.contains("tenant beta") && e.contains("another tenant or kid"),
                "{e}"
            );
        }
        Ok(()) => {
            let key = Secret::from_provider(Scheme::Standard, kid, &secret).unwrap();
            let body = order("evt_swapped");
            let headers = sign(Scheme::Standard, &key, "evt_swapped", s.clock_secs(), &body);
            let answer = s.post("beta", &headers, &body).await;
            assert_ne!(
                answer.status,
                StatusCode::ACCEPTED,
                "beta verified a delivery with alpha's secret"
            );
        }
    }
}

#[tokio::test]
async fn a_tenant_whose_secrets_do_not_open_can_still_be_deleted() {
    let s = TestServer::start("");
    let admin = s.admin().await;
    for id in ["alpha", "beta"] {
        admin
            .create_tenant(CreateTenantRequest {
                tenant_id: id.into(),
                ..Default::default()
            })
            .await
            .unwrap();
    }
    let rows = s.server().services().store.catalog_rows().unwrap();
    let alpha = rows.get(Table::Secrets, "alpha").unwrap().unwrap();
    rows.apply(&[RowChange::Put(Table::Secrets, "beta".into(), alpha)])
        .unwrap();
    let refused = admin.rotate_secret("beta", 60).await.unwrap_err();
    assert_eq!(refused.code(), Code::Internal, "{refused}");

    admin.delete_tenant("beta").await.unwrap();
    assert_eq!(
        admin.get_tenant("beta").await.unwrap_err().code(),
        Code::NotFound
    );
    assert!(rows.get(Table::Secrets, "beta").unwrap().is_none());
    assert_eq!(admin.get_tenant("alpha").await.unwrap().tenant_id, "alpha");
}
