//! The backend under contract: the fake served by `FakeServer`, or an
//! in-process hookd; each with an admin client and a way to make a dead
//! letter.

use std::sync::Arc;

use hookd_control::{
    fake::{FakeBackend, FakeServer, ADMIN},
    model::{DeadLetterView, DeliveryStatus, DeliveryView},
};
use hookd_sdk::client::{
    proto::{CreateTenantRequest, ListDeadLettersRequest},
    HookdClient,
};

use crate::{
    harness::TestServer,
    receiver::{Receiver, Reply},
};

/// Lets hookd's tenants forward to the receivers on 127.0.0.1.
const LOCAL_DESTINATIONS: &str = "[forward]\nallow_networks = [\"127.0.0.1/32\"]\n";

/// One backend behind its gRPC server.
pub(super) struct Subject {
    /// A client with the admin token.
    pub(super) admin: HookdClient,
    backend: Backend,
}

enum Backend {
    Fake(FakeServer),
    Real {
        server: Box<TestServer>,
        /// Answers every forward with 400, so a delivery dies at once.
        refusing: Receiver,
    },
}

impl Subject {
    /// The fake, with its own tenants `acme` and `globex`.
    pub(super) async fn fake() -> Subject {
        let server = FakeServer::start(Arc::new(FakeBackend::new())).await;
        let admin = HookdClient::connect(server.endpoint.clone(), ADMIN)
            .await
            .unwrap();
        Subject {
            admin,
            backend: Backend::Fake(server),
        }
    }

    /// hookd in-process, without tenants.
    pub(super) async fn real() -> Subject {
        let server = TestServer::start(LOCAL_DESTINATIONS);
        let refusing = Receiver::start(Reply::Status(400)).await;
        Subject {
            admin: server.admin().await,
            backend: Backend::Real {
                server: Box::new(server),
                refusing,
            },
        }
    }

    /// Creates tenant `id` forwarding to `destination` (empty: pull mode).
    pub(super) async fn create(&self, id: &str, destination: &str) -> (String, String) {
        let created = self
            .admin
            .create_tenant(CreateTenantRequest {
                tenant_id: id.into(),
                destination_url: destination.into(),
                ..Default::default()
            })
            .await
            .unwrap();
        (created.kid, created.secret)
    }

    /// A tenant `id` whose one delivery, of event `event_id`, is dead on
    /// the default route: its delivery id.
    pub(super) async fn dead_letter(&self, id: &str, event_id: &str) -> String {
        match &self.backend {
            Backend::Fake(server) => {
                self.create(id, "https://dead.example/hooks").await;
                let delivery_id = format!("dlv_{event_id}");
                server
                    .backend
                    .add_delivery(dead_delivery(id, &delivery_id, event_id));
                server.backend.add_dead_letter(DeadLetterView {
                    tenant_id: id.into(),
                    delivery_id: delivery_id.clone(),
                    event_id: event_id.into(),
                    reason: "HTTP 400 is not retried".into(),
                    dead_at_ms: 1_700_000_000_000,
                    attempt_count: 1,
                    last_status_code: Some(400),
                    route: "default".into(),
                });
                delivery_id
            }
            Backend::Real { server, refusing } => {
                let (kid, secret) = self.create(id, &refusing.url).await;
                let answer = server.post_signed(id, &kid, &secret, event_id).await;
                let delivery_id = answer.body["delivery_id"].as_str().unwrap().to_owned();
                self.wait_for_dead_letter(id, &delivery_id).await;
                delivery_id
            }
        }
    }

    async fn wait_for_dead_letter(&self, tenant_id: &str, delivery_id: &str) {
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
        loop {
            let page = self
                .admin
                .list_dead_letters(ListDeadLettersRequest {
                    tenant_id: tenant_id.into(),
                    ..Default::default()
                })
                .await
                .unwrap();
            if page
                .dead_letters
                .iter()
                .any(|d| d.delivery_id == delivery_id)
            {
                return;
            }
            assert!(
                std::time::Instant::now() < deadline,
                "no dead letter {delivery_id}"
            );
            tokio::time::sleep(std::time::Duration::from_millis(20)).await;
        }
    }
}

/// A delivery the fake holds as dead after one refused attempt.
fn dead_delivery(tenant_id: &str, delivery_id: &str, event_id: &str) -> DeliveryView {
    DeliveryView {
        tenant_id: tenant_id.into(),
        delivery_id: delivery_id.into(),
        event_id: event_id.into(),
        status: DeliveryStatus::Dead,
        received_at_ms: 1_700_000_000_000,
        attempt_count: 1,
        next_attempt_at_ms: None,
        last_error: Some("HTTP 400 is not retried".into()),
        redelivery_of: None,
        redelivered_as: None,
        attempts: Vec::new(),
        redirects: Vec::new(),
        route: "default".into(),
        routes: Vec::new(),
    }
}
