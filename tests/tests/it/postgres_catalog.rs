//! Control-plane changes racing across replicas of one PostgreSQL database
//! (skipped without `HOOKD_TEST_POSTGRES_URL` unless
//! `HOOKD_REQUIRE_POSTGRES=1`): one tenant id created on two replicas at
//! once is created exactly once.

use futures_util::future::join;
use hookd_sdk::{
    client::{proto::CreateTenantRequest, Code, HookdClient},
    signature::{sign, Scheme, Secret},
};
use reqwest::StatusCode;

use crate::{
    harness::{now_secs, order, ADMIN_TOKEN},
    postgres::{Cluster, MASTER_KEY},
    process::HookdProcess,
};

/// POSTs a signed order event to `tenant` on `replica` with `kid`/`secret`.
async fn send(
    replica: &HookdProcess,
    tenant: &str,
    kid: &str,
    secret: &str,
    event_id: &str,
) -> StatusCode {
    let key = Secret::from_provider(Scheme::Standard, kid, secret).unwrap();
    let body = order(event_id);
    let mut request = reqwest::Client::new().post(format!("{}/hooks/{tenant}", replica.base));
    for (name, value) in sign(Scheme::Standard, &key, event_id, now_secs(), &body) {
        request = request.header(name, value);
    }
    request.body(body).send().await.unwrap().status()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn one_tenant_id_created_on_two_replicas_at_once_is_created_once() {
    let Some(cluster) = Cluster::with_tenants("create_race", "") else {
        return;
    };
    let replicas = [cluster.start(0, MASTER_KEY), cluster.start(1, MASTER_KEY)];
    let mut admins = Vec::new();
    for replica in &replicas {
        admins.push(
            HookdClient::connect(replica.grpc.clone(), ADMIN_TOKEN)
                .await
                .unwrap(),
        );
    }
    for round in 0..5 {
        let id = format!("race{round}");
        let request = CreateTenantRequest {
            tenant_id: id.clone(),
            ..Default::default()
        };
        let (a, b) = join(
            admins[0].create_tenant(request.clone()),
            admins[1].create_tenant(request),
        )
        .await;
        let (won, lost) = match (a, b) {
            (Ok(won), Err(lost)) | (Err(lost), Ok(won)) => (won, lost),
            (a, b) => panic!("round {round}: not exactly one create: {a:?} / {b:?}"),
        };
        assert_eq!(lost.code(), Code::AlreadyExists, "{lost}");
        // The winner's secret is the one in force on both replicas.
        for replica in &replicas {
            let event = format!("evt_{round}_{}", replica.base);
            let deadline = std::time::Instant::now() + std::time::Duration::from_secs(5);
            loop {
                match send(replica, &id, &won.kid, &won.secret, &event).await {
                    StatusCode::ACCEPTED => break,
                    status => {
                        assert!(
                            std::time::Instant::now() < deadline,
                            "round {round}: the winner's secret answered {status}"
                        );
                        tokio::time::sleep(std::time::Duration::from_millis(50)).await;
                    }
                }
            }
        }
    }
}
