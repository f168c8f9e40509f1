//! [`serve`] on a real socket with the fake backend: health, reflection and
//! a `hookd.v1` call through generated clients, then a clean shutdown; and
//! every `hookd.v1` service of the proto files reflected and healthy.

use std::{future::Future, net::SocketAddr, sync::Arc, time::Duration};

use futures_util::stream;
use hookd_proto::{
    domain::AlertType,
    v1::{
        alert_service_client::AlertServiceClient, delivery_service_client::DeliveryServiceClient,
        tenant_service_client::TenantServiceClient, GetAlertSettingsRequest, GetTenantRequest,
        WatchDeliveriesRequest,
    },
};
use tokio::{sync::oneshot, task::JoinHandle, time::timeout};
use tonic::{transport::Channel, Code, Request};
use tonic_health::pb::{
    health_check_response::ServingStatus, health_client::HealthClient, HealthCheckRequest,
};
use tonic_reflection::pb::v1::{
    server_reflection_client::ServerReflectionClient, server_reflection_request::MessageRequest,
    server_reflection_response::MessageResponse, ServerReflectionRequest,
};

use super::*;
use crate::fake::{FakeBackend, ADMIN};

const DEADLINE: Duration = Duration::from_secs(10);

type Served = JoinHandle<Result<(), Box<dyn std::error::Error + Send + Sync>>>;

/// Serves `backend` on 127.0.0.1:0; returns a connected channel, the
/// shutdown trigger and the server task.
async fn start(backend: Arc<FakeBackend>) -> (Channel, oneshot::Sender<()>, Served) {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let addr: SocketAddr = listener.local_addr().unwrap();
    let (stop, stopped) = oneshot::channel::<()>();
    let server = tokio::spawn(serve(listener, backend, None, async {
        let _ = stopped.await;
    }));
    let channel = Channel::from_shared(format!("http://{addr}"))
        .unwrap()
        .connect()
        .await
        .unwrap();
    (channel, stop, server)
}

/// Polls `check` until it returns `want`, failing after [`DEADLINE`].
async fn eventually<F, Fut>(want: ServingStatus, mut check: F)
where
    F: FnMut() -> Fut,
    Fut: Future<Output = Option<ServingStatus>>,
{
    timeout(DEADLINE, async {
        while check().await != Some(want) {
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    })
    .await
    .unwrap_or_else(|_| panic!("health never became {want:?}"));
}

async fn health(channel: &Channel, service: &str) -> Option<ServingStatus> {
    let request = HealthCheckRequest {
        service: service.into(),
    };
    let answer = HealthClient::new(channel.clone())
        .check(request)
        .await
        .ok()?;
    Some(answer.into_inner().status())
}

/// The services server reflection lists.
async fn reflected_services(channel: &Channel) -> Vec<String> {
    let list = ServerReflectionRequest {
        host: String::new(),
        message_request: Some(MessageRequest::ListServices(String::new())),
    };
    let mut answers = ServerReflectionClient::new(channel.clone())
        .server_reflection_info(stream::iter([list]))
        .await
        .unwrap()
        .into_inner();
    let Some(MessageResponse::ListServicesResponse(listed)) =
        answers.message().await.unwrap().unwrap().message_response
    else {
        panic!("reflection did not list services");
    };
    listed.service.into_iter().map(|s| s.name).collect()
}

fn with_token<T>(message: T) -> Request<T> {
    let mut request = Request::new(message);
    let value = format!("Bearer {ADMIN}").parse().unwrap();
    request.metadata_mut().insert("authorization", value);
    request
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn serves_health_reflection_and_rpcs_then_shuts_down() {
    let (channel, stop, server) = start(Arc::new(FakeBackend::new())).await;

    for service in ["", "hookd.v1.TenantService"] {
        eventually(ServingStatus::Serving, || health(&channel, service)).await;
    }

    let mut tenants = TenantServiceClient::new(channel.clone());
    let acme = tenants
        .get_tenant(with_token(GetTenantRequest {
            tenant_id: "acme".into(),
        }))
        .await
        .unwrap()
        .into_inner();
    assert_eq!(acme.ingest_path, "/hooks/acme");
    let anonymous = tenants
        .get_tenant(GetTenantRequest {
            tenant_id: "acme".into(),
        })
        .await
        .unwrap_err();
    assert_eq!(anonymous.code(), Code::Unauthenticated);

    let names = reflected_services(&channel).await;
    for name in ["hookd.v1.DeliveryService", "grpc.health.v1.Health"] {
        assert!(
            names.iter().any(|n| n == name),
            "{name} missing from {names:?}"
        );
    }

    let mut watch = DeliveryServiceClient::new(channel)
        .watch_deliveries(with_token(WatchDeliveriesRequest::default()))
        .await
        .unwrap()
        .into_inner();
    stop.send(()).unwrap();
    let ended = timeout(DEADLINE, watch.message()).await.unwrap();
    assert_eq!(ended.unwrap_err().code(), Code::Unavailable);
    timeout(DEADLINE, server).await.unwrap().unwrap().unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn health_follows_backend_readiness() {
    let backend = Arc::new(FakeBackend::new());
    backend.set_ready(false);
    let (channel, stop, server) = start(Arc::clone(&backend)).await;
    eventually(ServingStatus::NotServing, || health(&channel, "")).await;
    backend.set_ready(true);
    eventually(ServingStatus::Serving, || health(&channel, "")).await;
    stop.send(()).unwrap();
    timeout(DEADLINE, server).await.unwrap().unwrap().unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_hookd_service_is_served_reflected_and_reports_health() {
    let (channel, stop, server) = start(Arc::new(FakeBackend::new())).await;
    let mut hookd = reflected_services(&channel).await;
    hookd.retain(|name| name.starts_with("hookd.v1."));
    assert!(
        hookd.iter().any(|n| n == "hookd.v1.AlertService"),
        "{hookd:?}"
    );
    for name in &hookd {
        eventually(ServingStatus::Serving, || health(&channel, name)).await;
    }
    let settings = AlertServiceClient::new(channel)
        .get_alert_settings(with_token(GetAlertSettingsRequest {
            tenant_id: "acme".into(),
        }))
        .await
        .expect("AlertService answers")
        .into_inner();
    assert_eq!(settings.rules.len(), AlertType::ALL.len());
    stop.send(()).unwrap();
    timeout(DEADLINE, server).await.unwrap().unwrap().unwrap();
}
