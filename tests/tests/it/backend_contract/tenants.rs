//! Tenants, their signing secrets and their tokens under the contract.

use hookd_sdk::client::{
    proto::{CreateTenantRequest, UpdateTenantRequest},
    Code,
};

use super::{refused, Subject};

pub(super) async fn created_tenant_is_read_listed_changed_and_deleted(s: Subject) {
    let created = s
        .admin
        .create_tenant(CreateTenantRequest {
            tenant_id: "orders".into(),
            destination_url: "https://orders.example/hooks".into(),
            ..Default::default()
        })
        .await
        .unwrap();
    let tenant = created.tenant.clone().unwrap();
    assert_eq!(tenant.tenant_id, "orders");
    assert_eq!(tenant.scheme, "standard");
    assert_eq!(tenant.destination_url, "https://orders.example/hooks");
    assert_eq!(tenant.ingest_path, "/hooks/orders");
    assert!(tenant.enabled);
    assert!(!tenant.from_config);
    assert!(!created.kid.is_empty());
    assert!(created.secret.starts_with("whsec_"), "{}", created.secret);
    assert!(created.destination_secret.starts_with("whsec_"));

    assert_eq!(s.admin.get_tenant("orders").await.unwrap(), tenant);
    let listed = s.admin.list_all_tenants().await.unwrap();
    assert_eq!(listed.iter().filter(|t| t.tenant_id == "orders").count(), 1);
    assert!(listed.windows(2).all(|w| w[0].tenant_id < w[1].tenant_id));

    let changed = s
        .admin
        .update_tenant(UpdateTenantRequest {
            tenant_id: "orders".into(),
            enabled: Some(false),
            destination_url: Some(String::new()),
            ..Default::default()
        })
        .await
        .unwrap();
    assert!(!changed.enabled);
    assert_eq!(changed.destination_url, "");
    assert_eq!(s.admin.get_tenant("orders").await.unwrap(), changed);

    s.admin.delete_tenant("orders").await.unwrap();
    let (code, _) = refused(s.admin.get_tenant("orders").await);
    assert_eq!(code, Code::NotFound);
    let (code, _) = refused(s.admin.delete_tenant("orders").await);
    assert_eq!(code, Code::NotFound);
}

pub(super) async fn a_taken_or_malformed_tenant_id_is_refused(s: Subject) {
    s.create("orders", "").await;
    let again = s
        .admin
        .create_tenant(CreateTenantRequest {
            tenant_id: "orders".into(),
            ..Default::default()
        })
        .await;
    assert_eq!(refused(again).0, Code::AlreadyExists);
    for bad in ["Orders", "", "a b"] {
        let made = s
            .admin
            .create_tenant(CreateTenantRequest {
                tenant_id: bad.into(),
                ..Default::default()
            })
            .await;
        assert_eq!(refused(made).0, Code::InvalidArgument, "{bad:?}");
    }
    let unknown_scheme = s
        .admin
        .create_tenant(CreateTenantRequest {
            tenant_id: "payments".into(),
            scheme: "carrier-pigeon".into(),
            ..Default::default()
        })
        .await;
    assert_eq!(refused(unknown_scheme).0, Code::InvalidArgument);
    assert_eq!(
        refused(s.admin.get_tenant("payments").await).0,
        Code::NotFound
    );
}

pub(super) async fn an_unknown_tenant_is_not_found_everywhere(s: Subject) {
    let a = &s.admin;
    let nobody = "nobody";
    let codes = [
        ("get_tenant", refused(a.get_tenant(nobody).await).0),
        ("delete_tenant", refused(a.delete_tenant(nobody).await).0),
        (
            "update_tenant",
            refused(a.set_tenant_enabled(nobody, false).await).0,
        ),
        (
            "rotate_secret",
            refused(a.rotate_secret(nobody, 60).await).0,
        ),
        ("list_secrets", refused(a.list_secrets(nobody).await).0),
        (
            "revoke_secret",
            refused(a.revoke_secret(nobody, "k1").await).0,
        ),
        (
            "create_token",
            refused(a.create_token(nobody, "worker").await).0,
        ),
        ("list_routes", refused(a.list_routes(nobody).await).0),
        ("get_route", refused(a.get_route(nobody, "default").await).0),
        (
            "list_deliveries",
            refused(a.list_all_deliveries(nobody, Default::default()).await).0,
        ),
        (
            "list_dead_letters",
            refused(a.list_all_dead_letters(nobody, &Default::default()).await).0,
        ),
        (
            "get_delivery",
            refused(a.get_delivery(nobody, "dlv_1").await).0,
        ),
        ("pull", refused(a.pull(nobody, 1, 30).await).0),
        ("list_contracts", refused(a.list_contracts(nobody).await).0),
    ];
    for (call, code) in codes {
        assert_eq!(code, Code::NotFound, "{call}");
    }
}

pub(super) async fn a_rotation_keeps_the_previous_secret_until_revoked(s: Subject) {
    let (kid, _) = s.create("orders", "").await;
    let secrets = s.admin.list_secrets("orders").await.unwrap();
    assert_eq!(secrets.len(), 1);
    assert_eq!(
        (secrets[0].kid.as_str(), secrets[0].state.as_str()),
        (kid.as_str(), "current")
    );
    assert_eq!(secrets[0].expires_at_unix_ms, 0);

    let rotated = s.admin.rotate_secret("orders", 3600).await.unwrap();
    assert_eq!(rotated.previous_kid, kid);
    assert_ne!(rotated.kid, kid);
    assert!(rotated.secret.starts_with("whsec_"), "{}", rotated.secret);
    let secrets = s.admin.list_secrets("orders").await.unwrap();
    let states: Vec<_> = secrets
        .iter()
        .map(|s| (s.kid.as_str(), s.state.as_str()))
        .collect();
    assert_eq!(
        states,
        [
            (rotated.kid.as_str(), "current"),
            (kid.as_str(), "previous")
        ]
    );
    assert_eq!(
        secrets[1].expires_at_unix_ms,
        rotated.previous_expires_at_unix_ms
    );
    assert_eq!(
        rotated.previous_expires_at_unix_ms - secrets[0].created_at_unix_ms,
        3_600_000
    );

    let current = s.admin.revoke_secret("orders", rotated.kid.clone()).await;
    assert_eq!(refused(current).0, Code::FailedPrecondition);
    let unknown = s.admin.revoke_secret("orders", "k-none").await;
    assert_eq!(refused(unknown).0, Code::NotFound);
    s.admin.revoke_secret("orders", kid.clone()).await.unwrap();
    let secrets = s.admin.list_secrets("orders").await.unwrap();
    assert_eq!(secrets.len(), 1);
    assert_eq!(secrets[0].kid, rotated.kid);
}

pub(super) async fn tokens_are_listed_and_an_unknown_one_is_not_found(s: Subject) {
    s.create("orders", "").await;
    assert!(s.admin.list_tokens("orders").await.unwrap().is_empty());
    let issued = s.admin.create_token("orders", "worker").await.unwrap();
    assert!(issued.token_id.starts_with("tok_"), "{}", issued.token_id);
    assert!(!issued.token.is_empty());
    let listed = s.admin.list_tokens("orders").await.unwrap();
    let listed: Vec<_> = listed
        .iter()
        .map(|t| {
            (
                t.token_id.as_str(),
                t.tenant_id.as_str(),
                t.description.as_str(),
            )
        })
        .collect();
    assert_eq!(listed, [(issued.token_id.as_str(), "orders", "worker")]);
    s.admin.revoke_token(issued.token_id.clone()).await.unwrap();
    assert!(s.admin.list_tokens("orders").await.unwrap().is_empty());
    let again = s.admin.revoke_token(issued.token_id).await;
    assert_eq!(refused(again).0, Code::NotFound);
}
