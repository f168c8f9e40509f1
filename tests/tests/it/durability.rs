//! Storage faults through real HTTP and gRPC: a failed fsync or a failed
//! write makes hookd refuse everything with 503 until a restart, control-plane writes answer
//! only after a sync, and a panicking tenant actor is restarted without
//! touching other tenants.

use hookd_sdk::{
    client::{proto::CreateTenantRequest, Code, HookdClient},
    signature::{sign, Scheme, Secret},
};
use hookd_server::{
    ids::TenantId,
    testing::{
        faults::{fail_next_write, panic_next_ingest, FaultSync, Synced},
        SharedSync, Table,
    },
};
use reqwest::StatusCode;

use crate::harness::{order, signed, TestServer, ACME};

/// Syncs of sled's log so far.
fn log_syncs(sync: &FaultSync) -> usize {
    sync.synced()
        .iter()
        .filter(|s| matches!(s, Synced::File { path, .. } if path.ends_with("store/db")))
        .count()
}

async fn post_order(s: &TestServer, event_id: &str) -> crate::harness::Answer {
    post_to(s, "acme", event_id).await
}

async fn post_to(s: &TestServer, tenant: &str, event_id: &str) -> crate::harness::Answer {
    let body = order(event_id);
    s.post(tenant, &signed(event_id, s.clock_secs(), &body), &body)
        .await
}

/// A batch of writes that fails in storage itself (not in its sync) poisons
/// the store the same way: the write, its retry, new and known events all
/// get 503 STORAGE_UNAVAILABLE and /readyz fails, until a restart, which
/// recovers from what is on disk.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_failed_write_answers_503_until_a_restart() {
    let toml = ACME.replace("id = \"acme\"", "id = \"writefail\"");
    let mut s = TestServer::start(&toml);
    assert_eq!(
        post_to(&s, "writefail", "evt_1").await.status,
        StatusCode::ACCEPTED
    );

    fail_next_write("writefail");
    for (event, what) in [
        ("evt_2", "the write that failed"),
        ("evt_2", "the sender's retry"),
        ("evt_3", "a new event"),
        ("evt_1", "an event stored before the failure"),
    ] {
        let answer = post_to(&s, "writefail", event).await;
        assert_eq!(
            (answer.status, answer.code()),
            (StatusCode::SERVICE_UNAVAILABLE, "STORAGE_UNAVAILABLE"),
            "{what} ({event}): {:?}",
            answer.body
        );
    }
    assert_eq!(
        s.get("/readyz").await.status(),
        StatusCode::SERVICE_UNAVAILABLE
    );

    s.restart(&toml);
    assert_eq!(s.get("/readyz").await.status(), StatusCode::OK);
    assert_eq!(
        post_to(&s, "writefail", "evt_2").await.status,
        StatusCode::ACCEPTED,
        "the failed write was never acknowledged, so its retry is new"
    );
    assert_eq!(
        post_to(&s, "writefail", "evt_1").await.status,
        StatusCode::OK
    );
}

/// A full disk fails the log's sync; space returns (the syncs after it
/// succeed), but a failed fsync leaves the page cache unknown, so the store
/// stays poisoned: every write 503, and liveness fails too (`/healthz`
/// 503), so a supervisor restarts hookd, which is the recovery: after the
/// restart liveness holds and writes are taken again.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_poisoned_store_fails_liveness_until_the_restart_that_recovers_it() {
    let sync = FaultSync::new();
    let mut s = TestServer::start_with_sync(ACME, sync.clone() as SharedSync);
    assert_eq!(post_order(&s, "evt_1").await.status, StatusCode::ACCEPTED);
    assert_eq!(s.get("/healthz").await.status(), StatusCode::OK);

    sync.fail_once();
    assert_eq!(
        post_order(&s, "evt_2").await.status,
        StatusCode::SERVICE_UNAVAILABLE
    );
    let answer = post_order(&s, "evt_3").await;
    assert_eq!(
        (answer.status, answer.code()),
        (StatusCode::SERVICE_UNAVAILABLE, "STORAGE_UNAVAILABLE"),
        "the disk has room again, the store is still poisoned: {:?}",
        answer.body
    );
    let live = s.get("/healthz").await;
    assert_eq!(live.status(), StatusCode::SERVICE_UNAVAILABLE);
    let live: serde_json::Value = live.json().await.unwrap();
    assert_eq!(live["code"], "STORAGE_UNAVAILABLE", "{live}");

    s.restart(ACME);
    assert_eq!(s.get("/healthz").await.status(), StatusCode::OK);
    assert_eq!(post_order(&s, "evt_3").await.status, StatusCode::ACCEPTED);
}

/// The sync of the batch holding evt_2 fails once (as Linux reports a
/// writeback error once): its retry, new events and known events all get
/// 503 STORAGE_UNAVAILABLE and /readyz fails, until a restart.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_failed_sync_answers_503_until_a_restart() {
    let sync = FaultSync::new();
    let mut s = TestServer::start_with_sync(ACME, sync.clone() as SharedSync);
    assert_eq!(post_order(&s, "evt_1").await.status, StatusCode::ACCEPTED);

    sync.fail_once();
    for (event, what) in [
        ("evt_2", "the write whose sync failed"),
        ("evt_2", "the sender's retry"),
        ("evt_3", "a new event"),
        ("evt_1", "an event stored before the failure"),
    ] {
        let answer = post_order(&s, event).await;
        assert_eq!(
            (answer.status, answer.code()),
            (StatusCode::SERVICE_UNAVAILABLE, "STORAGE_UNAVAILABLE"),
            "{what} ({event}): {:?}",
            answer.body
        );
    }
    let ready = s.get("/readyz").await;
    assert_eq!(ready.status(), StatusCode::SERVICE_UNAVAILABLE);

    s.restart(ACME);
    assert_eq!(s.get("/readyz").await.status(), StatusCode::OK);
    let retry = post_order(&s, "evt_2").await;
    assert!(
        retry.status.is_success(),
        "after the restart the retry is taken: {:?}",
        retry.body
    );
    assert_eq!(post_order(&s, "evt_4").await.status, StatusCode::ACCEPTED);
    assert_eq!(post_order(&s, "evt_1").await.status, StatusCode::OK);
}

/// Each control-plane write is answered only after a sync of sled's log
/// that it waited for; when that sync fails, the call fails.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn control_plane_writes_answer_only_after_a_sync() {
    let sync = FaultSync::new();
    let s = TestServer::start_with_sync("", sync.clone() as SharedSync);
    let admin: HookdClient = s.admin().await;

    let before = log_syncs(&sync);
    admin
        .create_tenant(CreateTenantRequest {
            tenant_id: "shop".into(),
            ..Default::default()
        })
        .await
        .unwrap();
    let mut after = log_syncs(&sync);
    assert!(after > before, "create_tenant answered without a sync");

    let steps: [(&str, _); 5] = [
        ("rotate_secret", 0),
        ("revoke_secret", 1),
        ("create_token", 2),
        ("revoke_token", 3),
        ("set_tenant_enabled", 4),
    ];
    let mut token_id = String::new();
    let mut previous_kid = String::new();
    for (name, step) in steps {
        let before = after;
        match step {
            0 => previous_kid = admin.rotate_secret("shop", 60).await.unwrap().previous_kid,
            1 => admin.revoke_secret("shop", &previous_kid).await.unwrap(),
            2 => token_id = admin.create_token("shop", "ci").await.unwrap().token_id,
            3 => admin.revoke_token(&token_id).await.unwrap(),
            _ => drop(admin.set_tenant_enabled("shop", false).await.unwrap()),
        }
        after = log_syncs(&sync);
        assert!(after > before, "{name} answered without a sync");
    }

    let token = admin.create_token("shop", "ops").await.unwrap().token_id;
    sync.fail_from_now();
    let revoked = admin.revoke_token(&token).await;
    assert_eq!(
        revoked.map_err(|e| e.code()),
        Err(Code::Unavailable),
        "a revoke whose sync failed must not be answered OK"
    );
    let deleted = admin.delete_tenant("shop").await;
    assert_eq!(deleted.map_err(|e| e.code()), Err(Code::Unavailable));
}

/// Deleting a tenant is answered after a sync, and leaves nothing of it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn tenant_delete_answers_only_after_a_sync() {
    let sync = FaultSync::new();
    let s = TestServer::start_with_sync("", sync.clone() as SharedSync);
    let admin = s.admin().await;
    admin
        .create_tenant(CreateTenantRequest {
            tenant_id: "gone".into(),
            ..Default::default()
        })
        .await
        .unwrap();
    let before = log_syncs(&sync);
    admin.delete_tenant("gone").await.unwrap();
    assert!(log_syncs(&sync) > before, "delete answered without a sync");
    let store = s.server().services().store.clone();
    let rows = store.catalog_rows().unwrap();
    assert_eq!(rows.get(Table::Tenants, "gone").unwrap(), None);
    assert_eq!(
        rows.scan(Table::Drops, "").unwrap(),
        vec![],
        "no drop left to finish"
    );
    let gone = store.tenant(&TenantId::try_from("gone").unwrap()).unwrap();
    assert!(gone.deliveries(None, None, 10).unwrap().is_empty());
}

/// A tenant is deleted while it and another tenant take deliveries: every
/// delivery to the other tenant is accepted; the deleted tenant's get 202
/// (before the delete) or 404, never a 5xx.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn deleting_a_tenant_during_ingest_leaves_other_tenants_alone() {
    let s = TestServer::start(ACME);
    let admin = s.admin().await;
    let created = admin
        .create_tenant(CreateTenantRequest {
            tenant_id: "gone".into(),
            ..Default::default()
        })
        .await
        .unwrap();
    let key = Secret::from_provider(Scheme::Standard, &created.kid, &created.secret).unwrap();
    let ts = s.clock_secs();
    let posts = (0..60).map(|n| {
        let event_id = format!("evt_{n}");
        let body = order(&event_id);
        let (tenant, headers) = match n % 2 {
            0 => ("acme", signed(&event_id, ts, &body)),
            _ => ("gone", sign(Scheme::Standard, &key, &event_id, ts, &body)),
        };
        let s = &s;
        async move { (tenant, s.post(tenant, &headers, &body).await) }
    });
    let delete = async {
        admin.delete_tenant("gone").await.unwrap();
    };
    let (answers, ()) = tokio::join!(futures_util::future::join_all(posts), delete);
    for (tenant, answer) in answers {
        match tenant {
            "acme" => assert_eq!(answer.status, StatusCode::ACCEPTED, "{:?}", answer.body),
            _ => assert!(
                answer.status == StatusCode::ACCEPTED
                    || (answer.status == StatusCode::NOT_FOUND
                        && answer.code() == "TENANT_NOT_FOUND"),
                "a delivery to the deleted tenant: {} {:?}",
                answer.status,
                answer.body
            ),
        }
    }
}

const TWO: &str = r#"
[[tenants]]
id = "boom"
scheme = "standard"
[[tenants.secrets]]
kid = "k2"
secret = "whsec_AQIDBAUGBwgJCgsMDQ4PEBESExQVFhcYGRobHB0eHyA="
[[tenants]]
id = "calm"
scheme = "standard"
[[tenants.secrets]]
kid = "k2"
secret = "whsec_AQIDBAUGBwgJCgsMDQ4PEBESExQVFhcYGRobHB0eHyA="
"#;

/// The actor of `boom` panics on one delivery: that delivery gets a 5xx,
/// `calm` is untouched, and `boom`'s supervisor restarts it so its next
/// delivery is taken.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_panicking_actor_is_restarted_and_others_are_untouched() {
    let s = TestServer::start(TWO);
    let post = |tenant: &'static str, event_id: &'static str| {
        let body = order(event_id);
        let headers = signed(event_id, s.clock_secs(), &body);
        let s = &s;
        async move { s.post(tenant, &headers, &body).await }
    };
    assert_eq!(post("boom", "evt_1").await.status, StatusCode::ACCEPTED);
    panic_next_ingest("boom");
    let hit = post("boom", "evt_2").await;
    assert!(
        hit.status.is_server_error(),
        "the delivery that hit the panic: {:?}",
        hit.body
    );
    assert_eq!(post("calm", "evt_2").await.status, StatusCode::ACCEPTED);
    let retried = post("boom", "evt_2").await;
    assert_eq!(
        retried.status,
        StatusCode::ACCEPTED,
        "the restarted actor takes the retry: {:?}",
        retried.body
    );
    assert_eq!(post("boom", "evt_1").await.status, StatusCode::OK);
    assert_eq!(s.get("/readyz").await.status(), StatusCode::OK);
}
