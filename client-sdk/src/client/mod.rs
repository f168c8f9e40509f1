//! The typed admin client for hookd's gRPC control plane: [`HookdClient`], a
//! method per RPC of the `hookd.v1` services, and paging helpers.

mod alerts;
mod auth;
mod consumer;
mod contracts;
mod deliveries;
mod error;
mod paging;
mod rejections;
mod routes;
mod secrets;
mod tenants;
mod tls;
mod tokens;

use std::{fmt, time::Duration};

use hookd_proto::v1::{
    alert_service_client::AlertServiceClient, consumer_service_client::ConsumerServiceClient,
    contract_service_client::ContractServiceClient, delivery_service_client::DeliveryServiceClient,
    rejection_service_client::RejectionServiceClient, route_service_client::RouteServiceClient,
    secret_service_client::SecretServiceClient, tenant_service_client::TenantServiceClient,
    token_service_client::TokenServiceClient,
};
use tonic::{
    service::interceptor::InterceptedService,
    transport::{Channel, Endpoint},
};

use auth::BearerAuth;
pub use deliveries::{DeadLetterFilter, DeliveryEventStream};
pub use error::ClientError;
/// The generated `hookd.v1` messages the client takes and returns, so callers need no
/// direct dependency on `hookd-proto`.
pub use hookd_proto::v1 as proto;
/// The wire contract's message size limits, which the client applies too.
pub use hookd_proto::{MAX_REQUEST_BYTES, MAX_RESPONSE_BYTES, PULL_RESPONSE_BUDGET_BYTES};
pub use tls::ClientTls;
/// gRPC status codes, as returned by [`ClientError::code`], so scripts can branch on
/// them without depending on tonic.
pub use tonic::Code;

/// How long [`HookdClient::connect`] waits for the TCP connection before reporting
/// hookd unreachable, so a wrong endpoint fails fast instead of hanging a script.
const CONNECT_TIMEOUT: Duration = Duration::from_secs(5);

type Authed = InterceptedService<Channel, BearerAuth>;

/// A service client that reads responses up to [`MAX_RESPONSE_BYTES`]. What it
/// sends is left to hookd to refuse: a request over [`MAX_REQUEST_BYTES`] is
/// answered `OUT_OF_RANGE` naming the limit, whereas tonic's own send limit
/// ends the call with an opaque `INTERNAL: h2 protocol error`.
macro_rules! limited {
    ($client:expr) => {
        $client.max_decoding_message_size(MAX_RESPONSE_BYTES)
    };
}

/// A connection to hookd's control plane that sends `authorization: Bearer <token>`
/// with every call.
///
/// Cloning is cheap and clones share the one HTTP/2 connection, so hand a clone to each
/// task instead of wrapping the client in a lock. Methods take the generated
/// [`proto`] types (or plain ids for the simple calls) and fail with a [`ClientError`]
/// whose [`code`](ClientError::code) says what went wrong.
///
/// ```no_run
/// use hookd_sdk::client::{Code, HookdClient};
///
/// # async fn demo() -> Result<(), hookd_sdk::client::ClientError> {
/// let client = HookdClient::connect("http://127.0.0.1:50051", "admin-token").await?;
/// match client.get_tenant("acme").await {
///     Ok(tenant) => println!("{} uses {}", tenant.tenant_id, tenant.scheme),
///     Err(err) if err.code() == Code::NotFound => println!("no tenant acme"),
///     Err(err) => return Err(err),
/// }
/// # Ok(())
/// # }
/// ```
///
/// The typed admin client for hookd's gRPC control plane: one [`HookdClient`] over one
/// channel (plaintext or TLS), a method per RPC of the `hookd.v1` services, and
/// paging helpers.
#[derive(Clone)]
pub struct HookdClient {
    tenants: TenantServiceClient<Authed>,
    secrets: SecretServiceClient<Authed>,
    tokens: TokenServiceClient<Authed>,
    deliveries: DeliveryServiceClient<Authed>,
    consumer: ConsumerServiceClient<Authed>,
    contracts: ContractServiceClient<Authed>,
    rejections: RejectionServiceClient<Authed>,
    routes: RouteServiceClient<Authed>,
    alerts: AlertServiceClient<Authed>,
}

impl HookdClient {
    /// Connects to `endpoint` (e.g. `http://127.0.0.1:50051`) before returning, so an
    /// unreachable hookd is reported here ([`Code::Unavailable`]) rather than on the
    /// first call.
    ///
    /// ```no_run
    /// # async fn demo() -> Result<(), hookd_sdk::client::ClientError> {
    /// let token = std::env::var("HOOKD_ADMIN_TOKEN").unwrap_or_default();
    /// let client = hookd_sdk::client::HookdClient::connect("http://127.0.0.1:50051", token).await?;
    /// # Ok(())
    /// # }
    /// ```
    ///
    /// An `https://` endpoint is reached over TLS, trusting the web PKI; use
    /// [`connect_with_tls`](HookdClient::connect_with_tls) for a private CA or a
    /// client certificate.
    pub async fn connect(
        endpoint: impl Into<String>,
        token: impl Into<String>,
    ) -> Result<HookdClient, ClientError> {
        HookdClient::connect_with_tls(endpoint, token, ClientTls::new()).await
    }

    /// Connects like [`connect`](HookdClient::connect), over TLS as `tls` says. The
    /// endpoint must be `https://` unless `tls` is the default; a server certificate
    /// the client does not trust, or a client certificate hookd refuses, fails here
    /// with [`Code::Unavailable`].
    pub async fn connect_with_tls(
        endpoint: impl Into<String>,
        token: impl Into<String>,
        tls: ClientTls,
    ) -> Result<HookdClient, ClientError> {
        let endpoint = endpoint.into();
        let mut builder = Endpoint::from_shared(endpoint.clone())
            .map_err(|source| ClientError::InvalidEndpoint {
                endpoint: endpoint.clone(),
                source,
            })?
            .connect_timeout(CONNECT_TIMEOUT);
        if builder.uri().scheme_str() == Some("https") {
            builder = builder
                .tls_config(tls.config())
                .map_err(|e| ClientError::Tls(format!("unusable TLS settings: {e}")))?;
        } else if !tls.is_default() {
            return Err(ClientError::Tls(format!(
                "TLS settings need an https:// endpoint, not {endpoint:?}"
            )));
        }
        let channel = builder
            .connect()
            .await
            .map_err(|source| ClientError::Connect { endpoint, source })?;
        HookdClient::with_channel(channel, token)
    }

    /// Wraps a channel the caller built, for TLS, custom timeouts, or a test harness
    /// that already holds one. Fails only if the token cannot be sent as a header.
    pub fn with_channel(
        channel: Channel,
        token: impl Into<String>,
    ) -> Result<HookdClient, ClientError> {
        let auth = BearerAuth::new(&token.into())?;
        let authed = InterceptedService::new(channel, auth);
        Ok(HookdClient {
            tenants: limited!(TenantServiceClient::new(authed.clone())),
            secrets: limited!(SecretServiceClient::new(authed.clone())),
            tokens: limited!(TokenServiceClient::new(authed.clone())),
            deliveries: limited!(DeliveryServiceClient::new(authed.clone())),
            consumer: limited!(ConsumerServiceClient::new(authed.clone())),
            contracts: limited!(ContractServiceClient::new(authed.clone())),
            rejections: limited!(RejectionServiceClient::new(authed.clone())),
            routes: limited!(RouteServiceClient::new(authed.clone())),
            alerts: limited!(AlertServiceClient::new(authed)),
        })
    }
}

impl fmt::Debug for HookdClient {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("HookdClient").finish_non_exhaustive()
    }
}
