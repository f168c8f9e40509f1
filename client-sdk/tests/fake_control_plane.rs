//! The client and `hookctl` against a small in-process fake of hookd's control plane
//! (tenants and deliveries, paged in twos, admin token `adm`): the bearer header, the
//! paging helpers, status codes, the watch stream and what the CLI prints and exits with.

use std::{pin::Pin, process::Command};

use futures_util::{stream, Stream, StreamExt};
use hookd_sdk::client::{
    proto::{
        delivery_service_server::{DeliveryService, DeliveryServiceServer},
        tenant_service_server::{TenantService, TenantServiceServer},
        CreateTenantRequest, CreateTenantResponse, DeadLetter, DeleteTenantRequest,
        DeleteTenantResponse, Delivery, DeliveryEvent, DeliveryEventKind, GetDeliveryRequest,
        GetTenantRequest, ListDeadLettersRequest, ListDeadLettersResponse, ListDeliveriesRequest,
        ListDeliveriesResponse, ListTenantsRequest, ListTenantsResponse, PurgeDeadLettersRequest,
        PurgeDeadLettersResponse, RedeliverRequest, RedeliverResponse, Tenant, UpdateTenantRequest,
        WatchDeliveriesRequest,
    },
    Code, DeadLetterFilter, HookdClient,
};
use tonic::{transport::server::TcpIncoming, Request, Response, Status};

const TENANTS: [&str; 5] = ["t1", "t2", "t3", "t4", "t5"];

fn authorize<T>(request: &Request<T>) -> Result<(), Status> {
    match request.metadata().get("authorization") {
        Some(value) if value == "Bearer adm" => Ok(()),
        _ => Err(Status::unauthenticated("unknown token")),
    }
}

/// Pages of two: the token is the index of the page's first item.
fn page<T: Clone>(items: &[T], page_token: &str) -> Result<(Vec<T>, String), Status> {
    let start: usize = match page_token {
        "" => 0,
        token => token
            .parse()
            .map_err(|_| Status::invalid_argument("page_token"))?,
    };
    let end = (start + 2).min(items.len());
    let next = if end < items.len() {
        end.to_string()
    } else {
        String::new()
    };
    Ok((items[start..end].to_vec(), next))
}

fn tenant(id: &str) -> Tenant {
    Tenant {
        tenant_id: id.to_owned(),
        scheme: "standard".to_owned(),
        enabled: true,
        ingest_path: format!("/hooks/{id}"),
        ..Default::default()
    }
}

struct FakeTenants;

#[tonic::async_trait]
impl TenantService for FakeTenants {
    async fn create_tenant(
        &self,
        request: Request<CreateTenantRequest>,
    ) -> Result<Response<CreateTenantResponse>, Status> {
        authorize(&request)?;
        Ok(Response::new(CreateTenantResponse {
            tenant: Some(tenant(&request.get_ref().tenant_id)),
            kid: "k1".to_owned(),
            secret: "whsec_c2VuZGVyLXNlY3JldA==".to_owned(),
            destination_secret: "whsec_ZGVzdGluYXRpb24=".to_owned(),
        }))
    }

    async fn get_tenant(
        &self,
        request: Request<GetTenantRequest>,
    ) -> Result<Response<Tenant>, Status> {
        authorize(&request)?;
        let id = &request.get_ref().tenant_id;
        TENANTS
            .contains(&id.as_str())
            .then(|| Response::new(tenant(id)))
            .ok_or_else(|| Status::not_found(format!("tenant {id:?} not found")))
    }

    async fn list_tenants(
        &self,
        request: Request<ListTenantsRequest>,
    ) -> Result<Response<ListTenantsResponse>, Status> {
        authorize(&request)?;
        let all: Vec<Tenant> = TENANTS.iter().map(|id| tenant(id)).collect();
        let (tenants, next_page_token) = page(&all, &request.get_ref().page_token)?;
        Ok(Response::new(ListTenantsResponse {
            tenants,
            next_page_token,
        }))
    }

    async fn update_tenant(
        &self,
        _: Request<UpdateTenantRequest>,
    ) -> Result<Response<Tenant>, Status> {
        Err(Status::unimplemented("not faked"))
    }

    async fn delete_tenant(
        &self,
        _: Request<DeleteTenantRequest>,
    ) -> Result<Response<DeleteTenantResponse>, Status> {
        Err(Status::unimplemented("not faked"))
    }
}

struct FakeDeliveries;

type EventStream = Pin<Box<dyn Stream<Item = Result<DeliveryEvent, Status>> + Send>>;

#[tonic::async_trait]
impl DeliveryService for FakeDeliveries {
    type WatchDeliveriesStream = EventStream;

    async fn list_deliveries(
        &self,
        _: Request<ListDeliveriesRequest>,
    ) -> Result<Response<ListDeliveriesResponse>, Status> {
        Err(Status::unimplemented("not faked"))
    }

    async fn get_delivery(
        &self,
        _: Request<GetDeliveryRequest>,
    ) -> Result<Response<Delivery>, Status> {
        Err(Status::unimplemented("not faked"))
    }

    /// Three dead letters of `acme`, but only when asked for those mentioning 503.
    async fn list_dead_letters(
        &self,
        request: Request<ListDeadLettersRequest>,
    ) -> Result<Response<ListDeadLettersResponse>, Status> {
        authorize(&request)?;
        let request = request.into_inner();
        if request.tenant_id != "acme" || request.reason_contains != "503" {
            return Err(Status::invalid_argument("expected acme and reason 503"));
        }
        let all: Vec<DeadLetter> = (1..=3)
            .map(|n| DeadLetter {
                tenant_id: "acme".to_owned(),
                delivery_id: format!("dlv_{n}"),
                reason: "last: 503 Service Unavailable".to_owned(),
                ..Default::default()
            })
            .collect();
        let (dead_letters, next_page_token) = page(&all, &request.page_token)?;
        Ok(Response::new(ListDeadLettersResponse {
            dead_letters,
            next_page_token,
        }))
    }

    async fn redeliver(
        &self,
        _: Request<RedeliverRequest>,
    ) -> Result<Response<RedeliverResponse>, Status> {
        Err(Status::unimplemented("not faked"))
    }

    async fn purge_dead_letters(
        &self,
        _: Request<PurgeDeadLettersRequest>,
    ) -> Result<Response<PurgeDeadLettersResponse>, Status> {
        Err(Status::unimplemented("not faked"))
    }

    /// Two events, then the stream ends as if hookd shut down.
    async fn watch_deliveries(
        &self,
        request: Request<WatchDeliveriesRequest>,
    ) -> Result<Response<EventStream>, Status> {
        authorize(&request)?;
        let events = ["dlv_1", "dlv_2"].map(|delivery_id| {
            Ok(DeliveryEvent {
                kind: DeliveryEventKind::Accepted.into(),
                tenant_id: "acme".to_owned(),
                delivery_id: delivery_id.to_owned(),
                ..Default::default()
            })
        });
        Ok(Response::new(Box::pin(stream::iter(events))))
    }
}

/// Serves the fakes on a free port for the rest of the test; returns the endpoint.
async fn fake_hookd() -> String {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
        .await
        .expect("bind");
    let endpoint = format!("http://{}", listener.local_addr().expect("addr"));
    let server = tonic::transport::Server::builder()
        .add_service(TenantServiceServer::new(FakeTenants))
        .add_service(DeliveryServiceServer::new(FakeDeliveries))
        .serve_with_incoming(TcpIncoming::from(listener));
    tokio::spawn(server);
    endpoint
}

#[tokio::test]
async fn list_all_tenants_follows_every_page_with_the_token() {
    let client = HookdClient::connect(fake_hookd().await, "adm")
        .await
        .expect("connect");
    let ids: Vec<String> = client
        .list_all_tenants()
        .await
        .expect("all pages")
        .into_iter()
        .map(|tenant| tenant.tenant_id)
        .collect();
    assert_eq!(ids, TENANTS);
}

#[tokio::test]
async fn statuses_keep_their_code_and_message() {
    let endpoint = fake_hookd().await;
    let wrong = HookdClient::connect(endpoint.as_str(), "nope")
        .await
        .expect("connect");
    let err = wrong.list_all_tenants().await.expect_err("bad token");
    assert_eq!(err.code(), Code::Unauthenticated);

    let client = HookdClient::connect(endpoint, "adm")
        .await
        .expect("connect");
    let err = client
        .get_tenant("ghost")
        .await
        .expect_err("unknown tenant");
    assert_eq!(err.code(), Code::NotFound);
    assert_eq!(err.to_string(), "NOT_FOUND: tenant \"ghost\" not found");
}

#[tokio::test]
async fn list_all_dead_letters_sends_the_filter_on_every_page() {
    let client = HookdClient::connect(fake_hookd().await, "adm")
        .await
        .expect("connect");
    let filter = DeadLetterFilter {
        reason_contains: "503".to_owned(),
        ..Default::default()
    };
    let dead = client
        .list_all_dead_letters("acme", &filter)
        .await
        .expect("all pages");
    let ids: Vec<&str> = dead.iter().map(|d| d.delivery_id.as_str()).collect();
    assert_eq!(ids, ["dlv_1", "dlv_2", "dlv_3"]);
}

#[tokio::test]
async fn watch_deliveries_yields_events_until_the_stream_ends() {
    let client = HookdClient::connect(fake_hookd().await, "adm")
        .await
        .expect("connect");
    let events: Vec<DeliveryEvent> = client
        .watch_deliveries("")
        .await
        .expect("watch")
        .map(|event| event.expect("event"))
        .collect()
        .await;
    let ids: Vec<&str> = events.iter().map(|e| e.delivery_id.as_str()).collect();
    assert_eq!(ids, ["dlv_1", "dlv_2"]);
}

/// Runs `hookctl` against `endpoint` off the runtime's threads, so the fake keeps serving.
async fn hookctl(endpoint: &str, args: &[&str]) -> (Option<i32>, String, String) {
    let mut command = Command::new(env!("CARGO_BIN_EXE_hookctl"));
    command
        .args(["--endpoint", endpoint])
        .args(args)
        .env_remove("HOOKCTL_TOKEN")
        .env("HOOKD_ADMIN_TOKEN", "adm");
    let output = tokio::task::spawn_blocking(move || command.output())
        .await
        .expect("join")
        .expect("hookctl runs");
    (
        output.status.code(),
        String::from_utf8_lossy(&output.stdout).into_owned(),
        String::from_utf8_lossy(&output.stderr).into_owned(),
    )
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn hookctl_prints_tables_and_json_and_exits_by_status() {
    let endpoint = fake_hookd().await;

    let (code, out, err) = hookctl(&endpoint, &["--json", "tenants", "list"]).await;
    assert_eq!(code, Some(0), "{err}");
    let document: serde_json::Value = serde_json::from_str(&out).expect("one JSON document");
    assert_eq!(document["tenants"].as_array().map(Vec::len), Some(5));
    assert_eq!(document["tenants"][4]["ingest_path"], "/hooks/t5");

    let (code, out, _) = hookctl(&endpoint, &["tenants", "list"]).await;
    assert_eq!(code, Some(0));
    let header = out.lines().next().expect("header line");
    assert!(header.starts_with("TENANT_ID  SCHEME"), "{out}");
    assert_eq!(out.lines().count(), 6, "{out}");

    let (code, _, err) = hookctl(&endpoint, &["tenants", "get", "ghost"]).await;
    assert_eq!(code, Some(3), "{err}");
    assert!(err.contains("NOT_FOUND"), "{err}");

    let (code, _, err) = hookctl(&endpoint, &["--token", "nope", "tenants", "list"]).await;
    assert_eq!(code, Some(4), "{err}");

    let (code, _, err) = hookctl(&endpoint, &["tenants", "update", "t1", "--disable"]).await;
    assert_eq!(code, Some(1), "{err}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn hookctl_shows_new_secrets_once_with_a_warning() {
    let endpoint = fake_hookd().await;
    let (code, out, err) = hookctl(&endpoint, &["tenants", "create", "acme"]).await;
    assert_eq!(code, Some(0), "{err}");
    assert!(out.contains("whsec_c2VuZGVyLXNlY3JldA=="), "{out}");
    assert!(out.contains("whsec_ZGVzdGluYXRpb24="), "{out}");
    assert!(out.contains("shown only this once"), "{out}");

    let (code, out, err) = hookctl(&endpoint, &["--json", "tenants", "create", "acme"]).await;
    assert_eq!(code, Some(0), "{err}");
    let document: serde_json::Value = serde_json::from_str(&out).expect("stdout is JSON only");
    assert_eq!(document["destination_secret"], "whsec_ZGVzdGluYXRpb24=");
    assert!(err.contains("shown only this once"), "{err}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn hookctl_tail_prints_one_line_per_event() {
    let endpoint = fake_hookd().await;
    let (code, out, err) = hookctl(&endpoint, &["--json", "tail", "--tenant", "acme"]).await;
    assert_eq!(code, Some(0), "{err}");
    let kinds: Vec<serde_json::Value> = out
        .lines()
        .map(|line| serde_json::from_str(line).expect("one JSON value per line"))
        .collect();
    assert_eq!(kinds.len(), 2, "{out}");
    assert_eq!(kinds[1]["kind"], "accepted");
    assert_eq!(kinds[1]["delivery_id"], "dlv_2");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn hookctl_output_is_a_table_wide_json_or_yaml() {
    let endpoint = fake_hookd().await;

    let (code, out, err) = hookctl(&endpoint, &["--output", "wide", "tenants", "list"]).await;
    assert_eq!(code, Some(0), "{err}");
    let header = out.lines().next().expect("header line");
    for column in [
        "TENANT_ID",
        "INGEST_PATH",
        "MAX_BODY_BYTES",
        "TOLERANCE_SECS",
    ] {
        assert!(header.contains(column), "{column} in {out}");
    }
    assert_eq!(out.lines().count(), 6, "{out}");
    assert!(out.lines().nth(5).unwrap().contains("/hooks/t5"), "{out}");

    let (code, out, err) = hookctl(&endpoint, &["-o", "yaml", "tenants", "list"]).await;
    assert_eq!(code, Some(0), "{err}");
    let document: serde_json::Value = serde_norway::from_str(&out).expect("one YAML document");
    assert_eq!(document["tenants"].as_array().map(Vec::len), Some(5));
    assert_eq!(document["tenants"][4]["ingest_path"], "/hooks/t5");

    let (code, out, err) = hookctl(&endpoint, &["tenants", "get", "t2", "-o", "yaml"]).await;
    assert_eq!(code, Some(0), "{err}");
    let document: serde_json::Value = serde_norway::from_str(&out).expect("one YAML document");
    assert_eq!(document["tenant_id"], "t2");

    let (code, out, err) = hookctl(&endpoint, &["-o", "json", "tenants", "get", "t2"]).await;
    assert_eq!(code, Some(0), "{err}");
    let document: serde_json::Value = serde_json::from_str(&out).expect("one JSON document");
    assert_eq!(document["enabled"], true);

    let (code, out, err) = hookctl(&endpoint, &["-o", "wide", "tenants", "get", "t2"]).await;
    assert_eq!(code, Some(0), "{err}");
    assert!(
        out.lines()
            .any(|l| l.starts_with("ingest_path:") && l.ends_with("/hooks/t2")),
        "{out}"
    );

    let (code, _, err) = hookctl(&endpoint, &["-o", "xml", "tenants", "list"]).await;
    assert_eq!(code, Some(2), "{err}");
    assert!(err.contains("wide") && err.contains("yaml"), "{err}");
}
