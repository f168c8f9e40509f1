//! Control-plane changes racing across replicas of one PostgreSQL database
//! (skipped without `HOOKD_TEST_POSTGRES_URL` unless
//! `HOOKD_REQUIRE_POSTGRES=1`): one tenant id created on two replicas at
//! once is created exactly once, a replica starting while a secret is
//! revoked elsewhere applies the revocation, and a replica that has not
//! polled since a delete takes nothing more for the deleted tenant.

use std::time::{Duration, Instant};

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
    let admins = [replicas[0].admin().await, replicas[1].admin().await];
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
            let deadline = Instant::now() + Duration::from_secs(5);
            loop {
                match send(replica, &id, &won.kid, &won.secret, &event).await {
                    StatusCode::ACCEPTED => break,
                    status => {
                        assert!(
                            Instant::now() < deadline,
                            "round {round}: the winner's secret answered {status}"
                        );
                        tokio::time::sleep(Duration::from_millis(50)).await;
                    }
                }
            }
        }
    }
}

/// A connection of the test's own to the cluster's database.
async fn raw(url: &str) -> tokio_postgres::Client {
    let (client, connection) = tokio_postgres::connect(url, tokio_postgres::NoTls)
        .await
        .unwrap();
    tokio::spawn(connection);
    client
}

/// Waits until another session of the database waits for a lock.
async fn until_someone_waits_for_a_lock(probe: &tokio_postgres::Client) {
    let deadline = Instant::now() + Duration::from_secs(20);
    loop {
        let waiting: i64 = probe
            .query_one(
                "SELECT count(*) FROM pg_stat_activity WHERE datname = current_database() \
                 AND wait_event_type = 'Lock' AND pid <> pg_backend_pid()",
                &[],
            )
            .await
            .unwrap()
            .get(0);
        if waiting > 0 {
            return;
        }
        assert!(Instant::now() < deadline, "nobody waits for a lock");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_replica_starting_while_a_secret_is_revoked_elsewhere_applies_the_revocation() {
    let Some(cluster) = Cluster::with_tenants("start_race", "") else {
        return;
    };
    let mut first = cluster.start(0, MASTER_KEY);
    let admin = HookdClient::connect(first.grpc.clone(), ADMIN_TOKEN)
        .await
        .unwrap();
    let created = admin
        .create_tenant(CreateTenantRequest {
            tenant_id: "orders".into(),
            ..Default::default()
        })
        .await
        .unwrap();
    let url = cluster.url().to_owned();
    let db = raw(&url).await;
    let secrets = "SELECT value FROM hookd_catalog WHERE tbl = 'secrets' AND key = 'orders'";
    let rotated = admin.rotate_secret("orders", 3600).await.unwrap();
    let before: Vec<u8> = db.query_one(secrets, &[]).await.unwrap().get(0);
    admin.revoke_secret("orders", &created.kid).await.unwrap();
    let after: Vec<u8> = db.query_one(secrets, &[]).await.unwrap().get(0);
    first.terminate();
    // The secrets as they were before the first one was revoked; the
    // revocation is replayed below, while the next replica starts.
    let put = "UPDATE hookd_catalog SET value = $1 WHERE tbl = 'secrets' AND key = 'orders'";
    db.execute(put, &[&before]).await.unwrap();
    // Nobody reads the catalog's version until this transaction ends: the
    // starting replica stops at its first read of it, and the secret is
    // revoked right then.
    db.batch_execute("BEGIN; LOCK TABLE hookd_catalog_version IN ACCESS EXCLUSIVE MODE")
        .await
        .unwrap();
    let starting = cluster.start_apart(1, MASTER_KEY);
    until_someone_waits_for_a_lock(&raw(&url).await).await;
    db.execute(put, &[&after]).await.unwrap();
    db.batch_execute("UPDATE hookd_catalog_version SET version = version + 1 WHERE id = 1; COMMIT")
        .await
        .unwrap();
    let replica = tokio::task::spawn_blocking(move || starting.join().unwrap())
        .await
        .unwrap();
    let deadline = Instant::now() + Duration::from_secs(5);
    for n in 0.. {
        let event = format!("evt_old_{n}");
        match send(&replica, "orders", &created.kid, &created.secret, &event).await {
            StatusCode::UNAUTHORIZED => break,
            status => assert!(
                Instant::now() < deadline,
                "a revoked secret still answers {status} on the replica that started meanwhile"
            ),
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    let fresh = send(&replica, "orders", &rotated.kid, &rotated.secret, "evt_new").await;
    assert_eq!(fresh, StatusCode::ACCEPTED);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_replica_that_has_not_polled_since_a_delete_takes_nothing_for_the_tenant() {
    let Some(cluster) = Cluster::with_tenants("stale_delete", "") else {
        return;
    };
    let first = cluster.start(0, MASTER_KEY);
    let admin = HookdClient::connect(first.grpc.clone(), ADMIN_TOKEN)
        .await
        .unwrap();
    let created = admin
        .create_tenant(CreateTenantRequest {
            tenant_id: "orders".into(),
            ..Default::default()
        })
        .await
        .unwrap();
    // Started after the create (so it serves the tenant), it does not
    // look at the catalog again within the test.
    let slow = cluster.start_with(
        1,
        MASTER_KEY,
        &[("HOOKD_STORAGE__POSTGRES__CATALOG_POLL_MS", "60000")],
    );
    let (kid, secret) = (&created.kid, &created.secret);
    assert_eq!(
        send(&slow, "orders", kid, secret, "evt_before").await,
        StatusCode::ACCEPTED
    );
    admin.delete_tenant("orders").await.unwrap();
    assert_eq!(
        send(&slow, "orders", kid, secret, "evt_after").await,
        StatusCode::NOT_FOUND,
        "a deleted tenant's delivery was accepted"
    );
    let db = raw(cluster.url()).await;
    let left: i64 = db
        .query_one(
            "SELECT count(*) FROM hookd_states WHERE tenant = 'orders'",
            &[],
        )
        .await
        .unwrap()
        .get(0);
    assert_eq!(left, 0, "rows of the deleted tenant");
}
