//! Tenant secrets at rest over the real server: a sealed row copied from
//! one tenant to another in the data dir is refused, by name, and never
//! verifies a delivery.

use hookd_sdk::{
    client::proto::CreateTenantRequest,
    signature::{sign, Scheme, Secret},
};
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
            .path(data.join("sled"))
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
