//! The control plane's domain types: what [`crate::ControlBackend`] takes and
//! returns, protobuf's zero values resolved into `Option`s and values.

mod alert;
mod contract;
mod delivery;
mod rejection;
mod replay;
mod route;
mod tenant;

pub use alert::{
    AlertFilter, AlertRuleView, AlertSettingsView, AlertSinkFormat, AlertSinkView, AlertState,
    AlertView, NewAlertSettings, NewAlertSink, SetAlertSettingsOutcome,
};
pub use contract::{ContractCheck, ContractDef, ContractList, ContractView, ViolationView};
pub use delivery::{
    AttemptView, BodyField, Cancel, DeadLetterFilter, DeadLetterView, DeliveryContent,
    DeliveryEventKind, DeliveryEventView, DeliveryQuery, DeliveryStatus, DeliveryView, Matched,
    Matching, Pick, PulledDelivery, Redelivered, RedirectView, RetryNow, RouteOutcomeView,
    Selection, Waiting, WaitingFilter, DEFAULT_ROUTE, MAX_BODIES_READ, MAX_BODY_BYTES_READ,
    MAX_BODY_WINDOW_MS, MAX_MATCHED_IDS, MAX_REDELIVER_PER_CALL, MAX_SEARCH_RESULTS,
};
pub use rejection::{RejectionFilter, RejectionView};
pub use replay::{
    NewReplay, ReplayAction, ReplayCounts, ReplayStarted, ReplayState, ReplayView,
    DEFAULT_REPLAY_RATE, MAX_REPLAY_RATE,
};
pub use route::{
    MetricsPoint, MetricsQuery, NewRoute, PastedEvent, RouteBreaker, RouteConcurrency, RouteHold,
    RouteMetricsView, RoutePatch, RouteRetry, RouteTest, RouteTestResult, RouteUnderTest,
    RouteView, TestEvent, TestedRequest, DEFAULT_RAMP_SECS, MAX_RAMP_SECS,
};
pub use tenant::{
    CreatedTenant, CreatedToken, HandshakeActivity, HmacFields, IngestCounts, NewTenant,
    ProvidedSecret, RateLimit, RotatedSecret, Scheme, SecretInfo, SecretState, TenantActivity,
    TenantPatch, TenantView, TokenInfo,
};

/// Who is calling, as decided by [`crate::ControlBackend::authenticate`] from
/// the bearer token. The services enforce what each may do.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Principal {
    /// The operator's admin token: may call everything.
    Admin,
    /// A tenant-scoped token: may act on this tenant only, and never on
    /// tenant lifecycle or tokens.
    Tenant(String),
}

/// A bearer token as [`crate::ControlBackend::authenticate`] found it: who
/// holds it and, for a tenant token, which token of which incarnation of
/// its tenant. A holder that outlives the call (a watch, a dashboard
/// session) keeps this instead of the token and asks
/// [`crate::ControlBackend::still_valid`] again.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Grant {
    /// Who holds the token.
    pub principal: Principal,
    /// The tenant token it was; `None` for the admin token.
    pub binding: Option<TokenBinding>,
}

/// The tenant token behind a [`Grant`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TokenBinding {
    /// The token's public id (`tok_…`).
    pub token_id: String,
    /// The incarnation of the tenant the token was made for: a tenant made
    /// anew under the same id has another one.
    pub tenant_incarnation: String,
}

impl Grant {
    /// The admin token's grant.
    pub fn admin() -> Grant {
        Grant {
            principal: Principal::Admin,
            binding: None,
        }
    }

    /// What per-token limits count by: the token id, or `admin`.
    pub fn key(&self) -> &str {
        self.binding.as_ref().map_or("admin", |b| &b.token_id)
    }
}

impl Principal {
    /// Whether this caller may read or change `tenant_id`'s data.
    pub fn may_act_on(&self, tenant_id: &str) -> bool {
        match self {
            Principal::Admin => true,
            Principal::Tenant(own) => own == tenant_id,
        }
    }
}

/// Which page of a listing to read. The size is already clamped to the
/// API's range (1..=1000, 100 when unset).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PageRequest {
    /// Most items to return; always between 1 and 1000.
    pub size: u32,
    /// The `next_token` of the previous page; `None` for the first page. The
    /// backend owns its format and answers [`crate::Error::InvalidArgument`]
    /// for one it did not issue.
    pub token: Option<String>,
}

/// One page of a listing.
#[derive(Debug, Clone, PartialEq)]
pub struct Page<T> {
    /// At most the requested size, in the listing's documented order.
    pub items: Vec<T>,
    /// Where the next page starts; `None` on the last page.
    pub next_token: Option<String>,
}
