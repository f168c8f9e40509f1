//! The catalog against the embedded store: sealed rows bound to their
//! tenant, legacy rows, deletes and token lifetimes.

use secrecy::ExposeSecret;

use std::{collections::HashSet, sync::Arc};

use hookd_sdk::signature::Scheme;

use super::*;
use crate::store::SledStore;

fn record(id: &str) -> TenantRecord {
    TenantRecord::new(
        StoredTenant::new(TenantId::try_from(id).unwrap(), Scheme::Hookd),
        1,
    )
}

fn catalog() -> (tempfile::TempDir, SledStore, Catalog) {
    let dir = tempfile::tempdir().unwrap();
    let (store, _committer) = SledStore::open(dir.path(), 16, false).unwrap();
    (dir, store.clone(), open(&store))
}

fn open(store: &SledStore) -> Catalog {
    Catalog::open(
        Arc::new(store.clone()),
        MasterKey::from_bytes([3; 32]),
        HashSet::new(),
    )
    .unwrap()
}

/// Keys of tenant `gone` in the shared data tree `kind`.
fn data_of_gone(store: &SledStore, kind: &str) -> usize {
    store
        .db()
        .open_tree(format!("data/{kind}"))
        .unwrap()
        .scan_prefix("gone/")
        .count()
}

#[test]
fn sealed_secrets_copied_to_another_tenant_do_not_open() {
    let (_dir, db, catalog) = catalog();
    catalog
        .put(
            &record("alpha"),
            &SecretSet::starting_with(Scheme::Hookd, 1, None).unwrap(),
        )
        .unwrap();
    catalog
        .put(
            &record("beta"),
            &SecretSet::starting_with(Scheme::Hookd, 1, None).unwrap(),
        )
        .unwrap();
    let secrets = db.db().open_tree("secrets").unwrap();
    let alpha = secrets.get("alpha").unwrap().unwrap();
    secrets.insert("beta", alpha).unwrap();
    let err = match catalog.get("beta") {
        Ok(_) => panic!("alpha's sealed secrets opened as beta's"),
        Err(e) => e.to_string(),
    };
    assert!(err.contains("beta"), "{err}");
}

/// Seals `plaintext` the way rows were sealed before secrets were bound:
/// `nonce || ciphertext+tag`, no associated data.
fn legacy_seal(plaintext: &[u8]) -> Vec<u8> {
    use chacha20poly1305::{
        aead::{Aead, AeadCore, KeyInit, OsRng},
        XChaCha20Poly1305,
    };
    let cipher = XChaCha20Poly1305::new_from_slice(&[3; 32]).unwrap();
    let nonce = XChaCha20Poly1305::generate_nonce(&mut OsRng);
    let mut out = nonce.to_vec();
    out.extend(cipher.encrypt(&nonce, plaintext).unwrap());
    out
}

#[test]
fn legacy_rows_still_open_and_are_rewritten_bound() {
    let dir = tempfile::tempdir().unwrap();
    let (store, _committer) = SledStore::open(dir.path(), 16, false).unwrap();
    let db = store.db();
    let old_record = serde_json::json!({
        "config": {"id": "vintage", "scheme": "hookd"},
        "created_at_ms": 1_000,
    });
    db.open_tree("tenants")
        .unwrap()
        .insert("vintage", serde_json::to_vec(&old_record).unwrap())
        .unwrap();
    let old_set = br#"{"current":{"kid":"k2","secret":"hk-current","created_at_ms":5,"expires_at_ms":null},"previous":{"kid":"k1","secret":"hk-previous","created_at_ms":1,"expires_at_ms":99},"destination":"whsec_AQID","next_kid":3}"#;
    db.open_tree("secrets")
        .unwrap()
        .insert("vintage", legacy_seal(old_set))
        .unwrap();
    let tokens = db.open_tree("tokens").unwrap();
    for (id, hash, created) in [("tok_old", "h1", 900), ("tok_new", "h2", 2_000)] {
        let token = format!(
            r#"{{"token_id":"{id}","tenant_id":"vintage","description":"","created_at_ms":{created},"hash":"{hash}"}}"#
        );
        tokens.insert(format!("id:{id}"), token.as_bytes()).unwrap();
        tokens.insert(format!("h:{hash}"), id.as_bytes()).unwrap();
    }

    let catalog = open(&store);
    let (record, set) = catalog.get("vintage").unwrap().unwrap();
    assert!(!record.incarnation.is_empty());
    assert_eq!(set.current.kid, "k2");
    assert_eq!(set.current.secret.expose_secret(), "hk-current");
    let previous = set.previous.unwrap();
    assert_eq!(
        (previous.kid.as_str(), previous.secret.expose_secret()),
        ("k1", "hk-previous")
    );
    assert_eq!(previous.expires_at_ms, Some(99));
    assert_eq!(set.destination.expose_secret(), "whsec_AQID");
    let row = db
        .open_tree("secrets")
        .unwrap()
        .get("vintage")
        .unwrap()
        .unwrap();
    assert!(!sealed::is_legacy(&row), "the row was rewritten bound");
    let kept: Vec<_> = catalog
        .list_tokens(Some("vintage"))
        .unwrap()
        .into_iter()
        .map(|t| (t.token_id, t.tenant_incarnation))
        .collect();
    assert_eq!(
        kept,
        [("tok_new".to_owned(), record.incarnation.clone())],
        "a token older than its tenant is revoked, a newer one bound to it"
    );
}

#[test]
fn delete_takes_tokens_with_it_and_an_interrupted_drop_finishes_at_open() {
    let (_dir, store, catalog) = catalog();
    catalog
        .put(
            &record("gone"),
            &SecretSet::starting_with(Scheme::Hookd, 1, None).unwrap(),
        )
        .unwrap();
    let (_, token) = catalog.create_token("gone", "ci", 1).unwrap();
    assert_eq!(
        catalog
            .token_record(&token)
            .unwrap()
            .map(|r| r.tenant_id)
            .as_deref(),
        Some("gone")
    );
    store
        .db()
        .open_tree("data/state")
        .unwrap()
        .insert("gone/d1", "x")
        .unwrap();
    assert!(catalog.delete("gone").unwrap());
    assert_eq!(
        catalog.token_record(&token).unwrap().map(|r| r.tenant_id),
        None
    );
    assert!(catalog.list_tokens(None).unwrap().is_empty());
    assert!(catalog.get("gone").unwrap().is_none());
    assert!(
        catalog.rows.get(Table::Drops, "gone").unwrap().is_some(),
        "the delete leaves a marker until the data trees are dropped"
    );

    // A crash after the delete's transaction, before its data went.
    store
        .db()
        .open_tree("data/queue")
        .unwrap()
        .insert("gone/q1", "x")
        .unwrap();
    assert_eq!(data_of_gone(&store, "state"), 1);
    let catalog = open(&store);
    assert_eq!(
        data_of_gone(&store, "state") + data_of_gone(&store, "queue"),
        0
    );
    assert!(catalog.rows.scan(Table::Drops, "").unwrap().is_empty());
}

#[test]
fn a_new_tenant_with_a_reused_id_does_not_inherit_tokens() {
    let (_dir, _db, catalog) = catalog();
    catalog
        .put(
            &record("again"),
            &SecretSet::starting_with(Scheme::Hookd, 1, None).unwrap(),
        )
        .unwrap();
    let (_, token) = catalog.create_token("again", "ci", 1).unwrap();
    // The tenant record replaced as if deleted and created anew, its
    // token left behind.
    catalog
        .put(
            &record("again"),
            &SecretSet::starting_with(Scheme::Hookd, 1, None).unwrap(),
        )
        .unwrap();
    assert_eq!(
        catalog.token_record(&token).unwrap().map(|r| r.tenant_id),
        None
    );
}

/// A delete finished at the next start (after a crash) drops the data of
/// the tenant's routes too: the marker names them.
#[test]
fn a_delete_finished_after_a_crash_drops_the_routes_data_too() {
    let (_dir, store, catalog) = catalog();
    let mut gone = record("gone");
    gone.tenant.routes.push(StoredRoute {
        name: "audit".into(),
        destination_url: None,
        max_in_flight: 1,
        delivery_rate: None,
        retry: Default::default(),
        breaker: Default::default(),
        filter: None,
        transform: None,
        transform_cpu_ms: 50,
        transform_memory_mib: 16,
        adaptive_concurrency: false,
        min_in_flight: 1,
        latency_target_ms: None,
        delay_ms: 0,
    });
    catalog
        .put(
            &gone,
            &SecretSet::starting_with(Scheme::Hookd, 1, None).unwrap(),
        )
        .unwrap();
    let state = store.db().open_tree("data/state").unwrap();
    state.insert("gone~audit/d1", "x").unwrap();
    state.insert("gone/d1", "x").unwrap();
    assert!(catalog.delete("gone").unwrap());
    let routes_left = || state.scan_prefix("gone~audit/").count();
    assert_eq!(routes_left(), 1, "left for the drop after the delete");
    open(&store);
    assert_eq!(routes_left(), 0, "the route's data went with the tenant's");
    assert_eq!(data_of_gone(&store, "state"), 0);
}

#[test]
fn key_pair_schemes_get_no_generated_secret_and_rotation_changes_nothing() {
    for scheme in [Scheme::Discord, Scheme::Sendgrid] {
        assert!(
            SecretSet::starting_with(scheme, 1, None).is_none(),
            "{scheme}"
        );
        let mut secrets = SecretSet::starting_with(Scheme::Hookd, 1, None).unwrap();
        let before = secrets.current.secret.expose_secret().to_owned();
        assert!(secrets.rotate(scheme, 2, 1_000, None).is_none(), "{scheme}");
        assert_eq!(secrets.current.kid, "k1");
        assert_eq!(secrets.current.secret.expose_secret(), before);
        assert!(secrets.previous.is_none());
    }
}
