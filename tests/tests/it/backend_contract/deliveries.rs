//! Deliveries, dead letters, rejections, pulls and contracts under the
//! contract.

use hookd_sdk::client::{
    proto::{DeliveryStatus, ListRejectionsRequest},
    Code,
};

use super::{refused, Subject};

pub(super) async fn a_new_tenant_has_no_deliveries_dead_letters_or_rejections(s: Subject) {
    s.create("orders", "https://orders.example/hooks").await;
    let a = &s.admin;
    assert!(a
        .list_all_deliveries("orders", DeliveryStatus::Unspecified)
        .await
        .unwrap()
        .is_empty());
    assert!(a
        .list_all_dead_letters("orders", &Default::default())
        .await
        .unwrap()
        .is_empty());
    let rejections = a
        .list_rejections(ListRejectionsRequest {
            tenant_id: "orders".into(),
            ..Default::default()
        })
        .await
        .unwrap();
    assert!(rejections.rejections.is_empty());
    assert_eq!(rejections.next_page_token, "");
    assert_eq!(
        refused(a.get_delivery("orders", "dlv_none").await).0,
        Code::NotFound
    );
    let unknown = a
        .list_rejections(ListRejectionsRequest {
            tenant_id: "nobody".into(),
            ..Default::default()
        })
        .await;
    assert_eq!(refused(unknown).0, Code::NotFound);
}

pub(super) async fn a_dead_letter_is_redelivered_once(s: Subject) {
    let dead_id = s.dead_letter("orders", "evt_dead").await;
    let a = &s.admin;
    let dead = a
        .list_all_dead_letters("orders", &Default::default())
        .await
        .unwrap();
    assert_eq!(dead.len(), 1);
    assert_eq!(
        (
            dead[0].delivery_id.as_str(),
            dead[0].event_id.as_str(),
            dead[0].route.as_str(),
            dead[0].last_status_code
        ),
        (dead_id.as_str(), "evt_dead", "default", 400)
    );
    let got = a.get_delivery("orders", dead_id.clone()).await.unwrap();
    assert_eq!(got.status, DeliveryStatus::Dead as i32);

    let unknown = a
        .redeliver_ids("orders", [dead_id.clone(), "dlv_none".into()])
        .await;
    assert_eq!(refused(unknown).0, Code::NotFound);
    let new_ids = a.redeliver_ids("orders", [dead_id.clone()]).await.unwrap();
    assert_eq!(new_ids.len(), 1);
    assert_ne!(new_ids[0], dead_id);
    // The redelivery may die in turn (hookd's destination refuses it); the
    // dead letter redelivered is gone either way.
    let dead = a
        .list_all_dead_letters("orders", &Default::default())
        .await
        .unwrap();
    assert!(dead.iter().all(|d| d.delivery_id != dead_id), "{dead:?}");
    let old = a.get_delivery("orders", dead_id.clone()).await.unwrap();
    assert_eq!(old.status, DeliveryStatus::Redelivered as i32);
    assert_eq!(old.redelivered_as, new_ids[0]);
    let again = a.redeliver_ids("orders", [dead_id]).await;
    assert_eq!(refused(again).0, Code::FailedPrecondition);
}

pub(super) async fn pulling_is_for_tenants_without_a_destination(s: Subject) {
    s.create("pushed", "https://orders.example/hooks").await;
    s.create("pulled", "").await;
    assert_eq!(
        refused(s.admin.pull("pushed", 10, 30).await).0,
        Code::FailedPrecondition
    );
    assert!(s.admin.pull("pulled", 10, 30).await.unwrap().is_empty());
    assert_eq!(s.admin.ack("pulled", ["dlv_none"]).await.unwrap(), 0);
}

pub(super) async fn a_new_tenant_has_no_contracts(s: Subject) {
    s.create("orders", "").await;
    let listed = s.admin.list_contracts("orders").await.unwrap();
    assert!(listed.contracts.is_empty());
    assert_eq!(
        (
            listed.type_field.as_str(),
            listed.version_field.as_str(),
            listed.unknown_event_types.as_str()
        ),
        ("type", "version", "accept")
    );
    let none = s.admin.get_contract("orders", "order.paid", "").await;
    assert_eq!(refused(none).0, Code::NotFound);
}
