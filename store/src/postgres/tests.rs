//! What only an engine shared by several processes must get right: each
//! case opens two or more [`PgStore`]s on one fresh database, as replicas
//! would (skipped without `HOOKD_TEST_POSTGRES_URL`).

use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use super::{testing::TestDatabase, PgOptions, PgStore};
use crate::{
    api::{FencedAttempt, PullRequest, RowChange, Storage, Table, TenantStore},
    conformance::{accepted, new_delivery},
    error::Error,
    ids::TenantId,
};

/// Now, in Unix ms, as this process's clock reads it.
fn now_ms() -> i64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_millis() as i64)
        .unwrap_or_default()
}

/// A fresh database, or `None` when there is none to test on.
fn database(case: &str) -> Option<TestDatabase> {
    super::testing::test_database(&format!("hookd_pg_{case}"))
}

/// A replica's store on `database` with at most `connections` connections.
fn replica(database: &TestDatabase, connections: usize) -> PgStore {
    PgStore::open(PgOptions {
        url: database.url.clone().into(),
        max_connections: connections,
        statement_timeout_ms: 30_000,
        batch_max: 64,
    })
    .unwrap()
}

fn tenant(store: &PgStore, id: &str) -> TenantStore {
    store.tenant(&TenantId::try_from(id).unwrap()).unwrap()
}

/// A pull of up to `max` at `now_ms` hiding each for 30 s.
fn pull_at(max: usize, now_ms: i64) -> PullRequest {
    PullRequest {
        max,
        max_bytes: 1 << 20,
        visibility_ms: 30_000,
        window_ms: 3_600_000,
        now_ms,
    }
}

/// Runs blocking storage calls off the test's runtime threads.
async fn off_runtime<T: Send + 'static>(work: impl FnOnce() -> T + Send + 'static) -> T {
    tokio::task::spawn_blocking(work).await.unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_pull_at_a_sequence_block_boundary_needs_no_second_connection() {
    let Some(db) = database("pull_pool") else {
        return;
    };
    let writer = replica(&db, 4);
    let data = tenant(&writer, "acme");
    let now = now_ms();
    for n in 0..3 {
        accepted(&data, &format!("evt_{n}"), now).await;
    }
    // A replica that has taken no sequence block yet, on one connection:
    // its pull's first hidden entry needs a new block.
    let consumer = replica(&db, 1);
    let pulled = tenant(&consumer, "acme");
    let started = Instant::now();
    let got = off_runtime(move || pulled.pull(pull_at(3, now))).await;
    let took = started.elapsed();
    assert_eq!(got.map(|g| g.len()).map_err(|e| e.to_string()), Ok(3));
    assert!(took < Duration::from_secs(5), "the pull waited {took:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_nack_at_a_sequence_block_boundary_needs_no_second_connection() {
    let Some(db) = database("nack_pool") else {
        return;
    };
    let writer = replica(&db, 4);
    let data = tenant(&writer, "acme");
    let now = now_ms();
    let id = accepted(&data, "evt_1", now).await;
    let first = data.clone();
    assert_eq!(
        off_runtime(move || first.pull(pull_at(1, now)).unwrap().len()).await,
        1
    );
    let consumer = replica(&db, 1);
    let nacking = tenant(&consumer, "acme");
    let started = Instant::now();
    let returned = off_runtime(move || nacking.nack(&[id], now)).await;
    assert_eq!(returned.map_err(|e| e.to_string()), Ok(1));
    assert!(started.elapsed() < Duration::from_secs(5));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn queue_counts_and_health_answer_while_every_ingest_connection_is_busy() {
    let Some(db) = database("side_pool") else {
        return;
    };
    let store = replica(&db, 1);
    let data = tenant(&store, "acme");
    accepted(&data, "evt_1", now_ms()).await;
    let held = store.run(|db| async move { db.client().await }).unwrap();
    let started = Instant::now();
    let counts = off_runtime(move || data.counts()).await;
    assert_eq!(counts.map(|c| c.depth).map_err(|e| e.to_string()), Ok(1));
    assert!(started.elapsed() < Duration::from_secs(5));
    tokio::time::sleep(Duration::from_millis(1_200)).await;
    assert!(store.is_healthy(), "the probe has a connection of its own");
    drop(held);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn clearing_a_tenant_keeps_the_data_of_one_stored_again_under_its_id() {
    let Some(db) = database("clear_stored") else {
        return;
    };
    let (winner, loser) = (replica(&db, 4), replica(&db, 4));
    let rows = winner.catalog_rows().unwrap();
    rows.apply(&[RowChange::Put(
        Table::Tenants,
        "acme".into(),
        b"record".to_vec(),
    )])
    .unwrap();
    let data = tenant(&winner, "acme");
    let id = accepted(&data, "evt_1", now_ms()).await;
    // A create that lost the race clears what an earlier tenant left.
    let acme = TenantId::try_from("acme").unwrap();
    off_runtime(move || loser.clear_tenant(&acme).unwrap()).await;
    let kept = off_runtime(move || data.event(&id).unwrap()).await;
    assert!(kept.is_some(), "the stored tenant's delivery was wiped");
}

/// A connection of the test's own, outside any store's pool.
async fn raw(db: &TestDatabase) -> tokio_postgres::Client {
    let (client, connection) = tokio_postgres::connect(&db.url, tokio_postgres::NoTls)
        .await
        .unwrap();
    tokio::spawn(connection);
    client
}

/// Waits until another session of the database waits for a lock.
async fn until_someone_waits_for_a_lock(probe: &tokio_postgres::Client) {
    let deadline = Instant::now() + Duration::from_secs(10);
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

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_tenant_delete_waits_for_a_forwarding_transaction_instead_of_deadlocking() {
    let Some(db) = database("delete_order") else {
        return;
    };
    let store = replica(&db, 4);
    let data = tenant(&store, "acme");
    let id = accepted(&data, "evt_1", now_ms()).await;
    let queued = data.clone();
    let (entry, _) = off_runtime(move || queued.queue(None, 1).unwrap().remove(0)).await;
    // A forwarding transaction as `record_attempt` runs it: the state row
    // first, then the queue entry.
    let forwarding = raw(&db).await;
    forwarding.batch_execute("BEGIN").await.unwrap();
    forwarding
        .execute(
            "SELECT 1 FROM hookd_states WHERE tenant = 'acme' AND delivery_id = $1 FOR UPDATE",
            &[&id.as_str()],
        )
        .await
        .unwrap();
    let acme = TenantId::try_from("acme").unwrap();
    let deleting = tokio::spawn(store.drop_tenant_trees(&acme));
    until_someone_waits_for_a_lock(&raw(&db).await).await;
    let entry_locked = forwarding
        .execute(
            "SELECT 1 FROM hookd_queue WHERE tenant = 'acme' AND qkey = $1 FOR UPDATE",
            &[&entry.as_bytes()],
        )
        .await;
    let committed = forwarding.batch_execute("COMMIT").await;
    let deleted = deleting.await.unwrap();
    assert_eq!(deleted.map_err(|e| e.to_string()), Ok(()), "the delete");
    assert!(
        entry_locked.is_ok() && committed.is_ok(),
        "{entry_locked:?}"
    );
    let left = off_runtime(move || data.counts().unwrap().depth).await;
    assert_eq!(left, 0, "the tenant's rows stay");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_replica_that_has_not_seen_a_delete_yet_cannot_commit_for_the_tenant() {
    let Some(db) = database("stale_ingest") else {
        return;
    };
    let (deleting, stale) = (replica(&db, 4), replica(&db, 4));
    let rows = deleting.catalog_rows().unwrap();
    let put = rows.clone();
    off_runtime(move || {
        put.apply(&[RowChange::Put(
            Table::Tenants,
            "acme".into(),
            b"record".to_vec(),
        )])
    })
    .await
    .unwrap();
    let data = tenant(&stale, "acme");
    accepted(&data, "evt_1", now_ms()).await;
    off_runtime(move || rows.apply(&[RowChange::Remove(Table::Tenants, "acme".into())]))
        .await
        .unwrap();
    let acme = TenantId::try_from("acme").unwrap();
    deleting.drop_tenant_trees(&acme).await.unwrap();
    let late = data.commit(new_delivery("evt_2", now_ms(), None)).await;
    assert!(matches!(late, Err(Error::TenantDeleted(_))), "{late:?}");
    let left = off_runtime(move || data.counts().unwrap().depth).await;
    assert_eq!(left, 0, "rows of a deleted tenant");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_replica_whose_clock_runs_ahead_never_hands_out_what_another_pulled() {
    let Some(db) = database("pull_clock") else {
        return;
    };
    let (on_time, ahead) = (replica(&db, 4), replica(&db, 4));
    let real = now_ms();
    let ahead_clock = real + 40_000;
    let data = tenant(&on_time, "acme");
    for n in 0..5 {
        accepted(&data, &format!("evt_{n}"), real).await;
    }
    let first = data.clone();
    let pulled = off_runtime(move || first.pull(pull_at(5, real)).unwrap()).await;
    assert_eq!(pulled.len(), 5);
    let second = tenant(&ahead, "acme");
    let now = ahead_clock;
    let again = off_runtime(move || second.pull(pull_at(5, now)).unwrap()).await;
    assert_eq!(
        again.len(),
        0,
        "handed to a second consumer within their visibility timeout"
    );
    // A nack on the replica ahead makes them visible now, not 40 s on.
    let ids: Vec<_> = pulled
        .iter()
        .map(|(e, _)| e.meta.delivery_id.clone())
        .collect();
    let nacking = tenant(&ahead, "acme");
    assert_eq!(
        off_runtime(move || nacking.nack(&ids, now).unwrap()).await,
        5
    );
    let third = data.clone();
    assert_eq!(
        off_runtime(move || third.pull(pull_at(5, real)).unwrap().len()).await,
        5
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_replica_whose_lease_passed_to_another_cannot_record_its_attempt() {
    let Some(db) = database("fence") else {
        return;
    };
    let (stalled, taking_over) = (replica(&db, 4), replica(&db, 4));
    let acme = TenantId::try_from("acme").unwrap();
    let data = tenant(&stalled, "acme");
    let now = now_ms();
    accepted(&data, "evt_1", now).await;
    // The stalled replica held the lease (for no time at all), and the
    // other has taken it over since.
    let (s, t, id) = (stalled.clone(), taking_over.clone(), acme.clone());
    let (stale, current) = off_runtime(move || {
        let stale = s.claim_forwarding(&id, "stalled", -1).unwrap().unwrap();
        let current = t.claim_forwarding(&id, "taking-over", 15_000).unwrap();
        (stale, current.unwrap())
    })
    .await;
    let queued = data.clone();
    let (entry, delivery) = off_runtime(move || queued.queue(None, 1).unwrap().remove(0)).await;
    let next = crate::lifecycle::Next::Delivered;
    let attempt = crate::records::AttemptRecord {
        attempt: 1,
        started_at_ms: now,
        duration_ms: 3,
        status_code: Some(200),
        error: None,
        response_body: Vec::new(),
        next_retry_at_ms: None,
        request_id: crate::ids::RequestId::generate(),
        transform_version: None,
    };
    let (on_stale, on_current) = (data.clone(), data.clone());
    let (entry_again, delivery_again) = (entry.clone(), delivery.clone());
    let may_send = off_runtime(move || {
        let stale_claim = on_stale.claim_attempt(&entry, &delivery, &stale).unwrap();
        let fenced = FencedAttempt {
            entry: &entry,
            id: &delivery,
            record: &attempt,
            fence: &stale,
        };
        let recorded = on_stale.record_fenced_attempt(fenced, &next, now).unwrap();
        assert!(
            recorded.is_none(),
            "the stale holder recorded: {recorded:?}"
        );
        stale_claim
    })
    .await;
    assert_eq!(may_send, None, "the stale holder may still send");
    let current_claim = off_runtime(move || {
        on_current
            .claim_attempt(&entry_again, &delivery_again, &current)
            .unwrap()
    })
    .await;
    let left = current_claim.expect("the holder of the lease may send");
    assert!(
        left > Duration::from_secs(10) && left <= Duration::from_secs(15),
        "the claim says how long the 15 s lease has left: {left:?}"
    );
}

/// The dashboard's refusal counts by code (`count_by_code`: one tenant's
/// rows since a time) are read through an index on that time, not by
/// walking every refusal the tenant has kept.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn refusal_counts_since_a_time_are_read_through_an_index() {
    let Some(db) = database("rejections_at") else {
        return;
    };
    drop(replica(&db, 2));
    let (client, connection) = tokio_postgres::connect(&db.url, tokio_postgres::NoTls)
        .await
        .unwrap();
    tokio::spawn(connection);
    client
        .batch_execute("SET enable_seqscan = off")
        .await
        .unwrap();
    let plan = client
        .query(
            "EXPLAIN SELECT code FROM hookd_rejections WHERE tenant = 'acme' AND at_ms >= 0 LIMIT 10",
            &[],
        )
        .await
        .unwrap();
    let plan: Vec<String> = plan.iter().map(|r| r.get(0)).collect();
    assert!(
        plan.iter().any(|l| l.contains("hookd_rejections_at")),
        "{plan:#?}"
    );
}

/// A forwarding pass's read and its round's take stay index lookups on
/// hookd's sessions when the queue grows from empty to a backlog. hookd's
/// sessions plan every run of a prepared statement for its parameters: a
/// generic plan made while the queue was small (kept after five runs) held
/// a PostgreSQL drain at ~2,800/s after a load instead of ~9,000/s.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_pass_and_a_round_read_by_index_once_the_queue_has_grown() {
    let Some(db) = database("round_plans") else {
        return;
    };
    drop(replica(&db, 2));
    let options = PgOptions {
        url: db.url.clone().into(),
        max_connections: 1,
        statement_timeout_ms: 30_000,
        batch_max: 64,
    };
    let config = super::connect::session_config(&options).unwrap();
    let (client, connection) = config.connect(tokio_postgres::NoTls).await.unwrap();
    tokio::spawn(connection);
    let mode = client.query_one("SHOW plan_cache_mode", &[]).await.unwrap();
    assert_eq!(
        mode.get::<_, &str>(0),
        "force_custom_plan",
        "a statement prepared while the queue was small keeps no plan made for it"
    );
    let cases = [
        (
            super::round::DUE,
            "text, bytea, bytea[], int8, bytea",
            "'acme', '\\xff', '{}', 64, '\\x'",
        ),
        (
            super::round::TAKE_ENTRIES,
            "text, bytea[], text[], text, int8",
            "'acme', '{\"\\\\x01\"}', '{d1}', 'me', 1",
        ),
    ];
    // Each prepared and run more than five times while the queue is empty.
    for (n, (sql, types, args)) in cases.iter().enumerate() {
        let runs = format!("EXECUTE p{n}({args});").repeat(8);
        client
            .batch_execute(&format!("PREPARE p{n}({types}) AS {sql}; {runs}"))
            .await
            .unwrap();
    }
    // Then a backlog of 20,000 deliveries of 1 KiB arrives.
    client
        .batch_execute(
            "INSERT INTO hookd_events SELECT 'acme', 'd' || n, convert_to(repeat('x', 1024), 'UTF8') \
             FROM generate_series(1, 20000) n; \
             INSERT INTO hookd_states SELECT 'acme', 'd' || n, 'pending', '\\x00' \
             FROM generate_series(1, 20000) n; \
             INSERT INTO hookd_queue SELECT 'acme', int8send(n), 'd' || n \
             FROM generate_series(1, 20000) n",
        )
        .await
        .unwrap();
    for (n, (sql, _, args)) in cases.iter().enumerate() {
        let mut lines = Vec::new();
        let explain = format!("EXPLAIN EXECUTE p{n}({args})");
        for message in client.simple_query(&explain).await.unwrap() {
            if let tokio_postgres::SimpleQueryMessage::Row(row) = message {
                lines.push(row.get(0).unwrap_or_default().to_owned());
            }
        }
        let plan = lines.join("\n");
        for table in ["hookd_queue", "hookd_states", "hookd_events"] {
            let scan = format!("Seq Scan on {table}");
            assert!(!plan.contains(&scan), "{sql}\n{plan}");
        }
    }
}
