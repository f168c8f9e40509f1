//! A tenant's operational alerts: what AlertService shows and changes.

/// How a sink's events are written.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum AlertSinkFormat {
    /// A signed Standard Webhooks JSON event.
    #[default]
    Standard,
    /// A Slack-compatible `{"text": ...}` body, still signed.
    Slack,
}

/// Where a tenant's operational events are sent, as it runs.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AlertSinkView {
    /// Absolute http(s) URL.
    pub url: String,
    /// How its events are written.
    pub format: AlertSinkFormat,
    /// It has a secret (it always has one once set).
    pub has_secret: bool,
}

/// A sink as a request gives it.
#[derive(Clone, PartialEq, Eq)]
pub struct NewAlertSink {
    /// Not yet checked against the address policy.
    pub url: String,
    /// How its events are written.
    pub format: AlertSinkFormat,
    /// A `whsec_` secret, not yet checked; `None`: keep the sink's, or
    /// generate one for a new sink.
    pub secret: Option<String>,
}

impl std::fmt::Debug for NewAlertSink {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("NewAlertSink")
            .field("url", &self.url)
            .field("format", &self.format)
            .field("secret", &self.secret.as_ref().map(|_| "<redacted>"))
            .finish()
    }
}

/// When one alert type opens. In a request 0 and `None` mean the default;
/// in a view every value is the one in force.
#[derive(Debug, Clone, PartialEq)]
pub struct AlertRuleView {
    /// A type of the catalogue, e.g. `verification.failure_spike`; not yet
    /// checked in a request.
    pub alert_type: String,
    /// `false`: never opens for the tenant.
    pub enabled: bool,
    /// Occurrences (or depth, or seconds) that open it.
    pub threshold: u64,
    /// Counting window and debounce, in seconds.
    pub window_secs: f64,
    /// `route.failing` only: `consecutive`, `first_failure` or `last_attempt`.
    pub mode: Option<String>,
    /// In a view: the tenant overrides this type (else it runs with the
    /// operator's default). Ignored in a request.
    pub overridden: bool,
}

/// A tenant's alert settings as it runs: its sink, and one rule per type of
/// the catalogue (its own, or the operator's default).
#[derive(Debug, Clone, PartialEq)]
pub struct AlertSettingsView {
    /// `None`: the operator's sink only.
    pub sink: Option<AlertSinkView>,
    /// Every type of the catalogue, in catalogue order.
    pub rules: Vec<AlertRuleView>,
}

/// A tenant's alert settings as a request gives them; they replace the
/// tenant's whole.
#[derive(Debug, Clone, PartialEq)]
pub struct NewAlertSettings {
    /// `None`: no sink of the tenant's own.
    pub sink: Option<NewAlertSink>,
    /// Overrides of the defaults, not yet checked.
    pub rules: Vec<AlertRuleView>,
}

/// What SetAlertSettings answers.
#[derive(Clone, PartialEq)]
pub struct SetAlertSettingsOutcome {
    /// The settings now in force.
    pub settings: AlertSettingsView,
    /// The secret generated for a new sink given without one.
    pub generated_secret: Option<String>,
}

impl std::fmt::Debug for SetAlertSettingsOutcome {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SetAlertSettingsOutcome")
            .field("settings", &self.settings)
            .field(
                "generated_secret",
                &self.generated_secret.as_ref().map(|_| "<redacted>"),
            )
            .finish()
    }
}

/// Where an alert stands.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum AlertState {
    /// The condition holds; nobody acknowledged it.
    Open,
    /// The condition holds; someone is on it.
    Acknowledged,
    /// The condition cleared.
    Resolved,
}

/// One condition, from when it opened until it resolved.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AlertView {
    /// `alr_<ulid>`.
    pub id: String,
    /// The tenant it is about.
    pub tenant_id: String,
    /// Its type, e.g. `route.failing`.
    pub alert_type: String,
    /// A route name, a key id, or empty for the tenant.
    pub subject: String,
    /// Where it stands.
    pub state: AlertState,
    /// In plain words.
    pub summary: String,
    /// When it opened.
    pub opened_at_unix_ms: i64,
    /// The last time the condition held.
    pub last_seen_at_unix_ms: i64,
    /// When someone acknowledged it.
    pub acknowledged_at_unix_ms: Option<i64>,
    /// When it resolved.
    pub resolved_at_unix_ms: Option<i64>,
    /// Occurrences counted while it was open.
    pub occurrences: u64,
    /// Notifications sent for it.
    pub notifications: u32,
    /// `route.failing`: the route's latest failed deliveries when it opened
    /// (at most 5, newest last); empty for other types.
    pub delivery_ids: Vec<String>,
}

/// Which alerts ListAlerts answers.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct AlertFilter {
    /// Only these states; empty: every state.
    pub states: Vec<AlertState>,
}
