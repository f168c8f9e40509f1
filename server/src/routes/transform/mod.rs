//! A route's transform: tenant JavaScript run at forward time in a sandboxed
//! QuickJS engine that rewrites the request or drops the event for the route.

pub(crate) mod apply;
pub mod backoff;
mod error;
mod output;
pub mod pool;
mod sandbox;
#[cfg(test)]
mod tests;
mod wire;
pub mod worker;

use std::{fmt, time::Duration};

pub use error::{Oversize, TransformError};
use hookd_proto::domain::defaults;
use pool::{RouteShare, TransformPool};
use serde_json::{json, Map, Value};
use wire::{Answer, Job};

use crate::ids::{DeliveryId, EventId, TenantId};

/// The memory limit a run gets unless the route sets one: 16 MiB.
pub const DEFAULT_MEMORY_BYTES: usize = (defaults::TRANSFORM_MEMORY_MIB as usize) << 20;
/// The smallest memory limit a route may set: 1 MiB.
pub const MIN_MEMORY_BYTES: usize = 1 << 20;
/// The largest memory limit a route may set: 256 MiB.
pub const MAX_MEMORY_BYTES: usize = 256 << 20;
/// The CPU budget a run gets unless the route sets one: 50 ms.
pub const DEFAULT_CPU: Duration = Duration::from_millis(defaults::TRANSFORM_CPU_MS as u64);
/// The hard limit on a run's CPU budget: 1 s.
pub const MAX_CPU: Duration = Duration::from_secs(1);
/// How many times its CPU budget a run may take in wall-clock time.
pub const WALL_FACTOR: u32 = 20;
/// The shortest wall-clock limit a run gets: 10 s.
pub const MIN_WALL: Duration = Duration::from_secs(10);
/// The largest transform source accepted: 256 KiB.
pub const MAX_CODE_BYTES: usize = 256 << 10;
/// The largest request a transform may return (path, query, header names
/// and values, serialized body): 4 MiB.
pub const MAX_OUTPUT_BYTES: usize = 4 << 20;
/// The engine's stack limit: deeper recursion is [`TransformError::StackOverflow`].
pub const MAX_STACK_BYTES: usize = 512 << 10;
/// How much of a thrown message [`TransformError::Threw`] keeps.
pub const MAX_MESSAGE_BYTES: usize = 512;

/// The resources one run may use.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TransformLimits {
    memory_bytes: usize,
    cpu: Duration,
}

/// Limits outside their bounds.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum InvalidLimits {
    /// The memory limit is outside `MIN_MEMORY_BYTES..=MAX_MEMORY_BYTES`.
    #[error("transform memory must be between 1 MiB and 256 MiB")]
    Memory,
    /// The CPU budget is zero or above `MAX_CPU`.
    #[error("transform cpu must be above 0 and at most 1 s")]
    Cpu,
}

impl TransformLimits {
    /// Limits within bounds: memory 1..=256 MiB, CPU above zero and at most 1 s.
    pub fn new(memory_bytes: usize, cpu: Duration) -> Result<Self, InvalidLimits> {
        if !(MIN_MEMORY_BYTES..=MAX_MEMORY_BYTES).contains(&memory_bytes) {
            return Err(InvalidLimits::Memory);
        }
        if cpu.is_zero() || cpu > MAX_CPU {
            return Err(InvalidLimits::Cpu);
        }
        Ok(TransformLimits { memory_bytes, cpu })
    }

    /// The engine's allocation cap, the parsed request included.
    pub fn memory_bytes(&self) -> usize {
        self.memory_bytes
    }

    /// CPU time the run (top-level code, handler, serializing the result)
    /// may use before the interrupt stops it.
    pub fn cpu(&self) -> Duration {
        self.cpu
    }

    /// Wall-clock time after which the interrupt stops a run that has not
    /// used its CPU budget yet (it was waiting for a core):
    /// [`WALL_FACTOR`] times the budget, at least [`MIN_WALL`].
    pub fn wall(&self) -> Duration {
        (self.cpu * WALL_FACTOR).max(MIN_WALL)
    }
}

impl Default for TransformLimits {
    fn default() -> Self {
        TransformLimits {
            memory_bytes: DEFAULT_MEMORY_BYTES,
            cpu: DEFAULT_CPU,
        }
    }
}

/// A request body as the handler sees it.
#[derive(Debug, Clone, PartialEq)]
pub enum TransformBody {
    /// A body that parses as JSON: the handler gets the parsed value.
    Json(Value),
    /// Any other UTF-8 body: the handler gets a string.
    Text(String),
}

impl TransformBody {
    /// JSON when the bytes parse as JSON, else text; [`TransformError::NotText`]
    /// when they are not UTF-8 (a binary body cannot pass through JavaScript
    /// unchanged).
    pub fn from_bytes(bytes: &[u8]) -> Result<Self, TransformError> {
        if let Ok(value) = serde_json::from_slice(bytes) {
            return Ok(TransformBody::Json(value));
        }
        match std::str::from_utf8(bytes) {
            Ok(text) => Ok(TransformBody::Text(text.to_owned())),
            Err(_) => Err(TransformError::NotText),
        }
    }

    /// The bytes to send: JSON serialized compactly, text as it is.
    pub fn to_bytes(&self) -> Vec<u8> {
        match self {
            TransformBody::Json(value) => value.to_string().into_bytes(),
            TransformBody::Text(text) => text.clone().into_bytes(),
        }
    }

    fn to_json(&self) -> Value {
        match self {
            TransformBody::Json(value) => value.clone(),
            TransformBody::Text(text) => Value::String(text.clone()),
        }
    }
}

/// The request a transform reads, and the one it returns.
#[derive(Debug, Clone, PartialEq)]
pub struct TransformRequest {
    /// The HTTP method; the handler may read it but not change it.
    pub method: String,
    /// The path sent to the destination, starting with one `/`.
    pub path: String,
    /// The query string without its `?`, empty when there is none.
    pub query: String,
    /// Header names and values, in order.
    pub headers: Vec<(String, String)>,
    /// The body.
    pub body: TransformBody,
}

impl TransformRequest {
    /// What the handler's first argument is: headers as one object with
    /// lower-case names, repeated ones joined with `", "`.
    fn to_json(&self) -> Value {
        let mut headers = Map::new();
        for (name, value) in &self.headers {
            let name = name.to_ascii_lowercase();
            match headers.get_mut(&name) {
                Some(Value::String(joined)) => {
                    joined.push_str(", ");
                    joined.push_str(value);
                }
                _ => {
                    headers.insert(name, Value::String(value.clone()));
                }
            }
        }
        json!({
            "method": self.method,
            "path": self.path,
            "query": self.query,
            "headers": headers,
            "body": self.body.to_json(),
        })
    }
}

/// Which delivery a run is for: the handler's second argument.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TransformContext {
    /// The tenant that owns the route.
    pub tenant: TenantId,
    /// The route's id.
    pub route: String,
    /// The event being forwarded.
    pub event_id: EventId,
    /// The delivery to this route.
    pub delivery_id: DeliveryId,
    /// The attempt number, from 1.
    pub attempt: u32,
}

impl TransformContext {
    /// The handler's second argument; `env` is always empty and exists so
    /// Hookdeck code reading `context.env` runs.
    fn to_json(&self) -> Value {
        json!({
            "tenant": self.tenant.as_str(),
            "route": self.route,
            "event_id": self.event_id.as_str(),
            "delivery_id": self.delivery_id.as_str(),
            "attempt": self.attempt,
            "env": {},
        })
    }
}

/// What a run decided for its route.
#[derive(Debug, Clone, PartialEq)]
pub enum TransformOutcome {
    /// Send this request to the route's destination.
    Send(TransformRequest),
    /// The handler returned `null`, `undefined` or `false`: this route does
    /// not get the event (the delivery is settled, not failed).
    Drop,
}

/// A route's compiled transform: code known to parse and register a handler.
///
/// The stored event is never touched: [`Transform::run`] takes a copy of the
/// request and returns what to send, so the event stays as its sender signed
/// it. Every run happens in a worker process (`worker.rs`, the hookd binary
/// started as `hookd transform-worker`), never in hookd itself, and hookd
/// enforces its budget from outside (`pool`): it kills the worker once
/// the run has used its CPU budget plus `pool::KILL_MARGIN`, whatever the
/// script is doing, even inside a built-in's own loop. Inside the worker
/// each run gets a fresh runtime and context (nothing leaks between runs,
/// routes or tenants), a memory limit, a stack limit and an interrupt that
/// stops the script once it has used its CPU budget (the thread's own CPU
/// time, so waiting for a core is not charged) or, if it is kept waiting
/// that long, at a wall-clock limit of `WALL_FACTOR` times the budget
/// (at least `MIN_WALL`). The context holds the
/// language's own built-ins (objects, JSON, Date, RegExp, Map/Set, typed
/// arrays, Proxy, Promise) and nothing else: no module loader, no timers, no
/// network or file system, no `performance` clock. `console` exists and
/// discards what it is given, so pasted code that logs still runs. `eval` and
/// `Function` work, but they only compile more code into the same sandbox:
/// there is no host function for them to reach. No tenant code runs when a
/// route is loaded ([`Transform::new`]): its top level runs when it is
/// saved ([`Transform::check`]) and in each run.
///
/// The handler is the Hookdeck form, `addHandler("transform", (request,
/// context) => request)`, or a top-level `function transform(request,
/// context)`. `docs/routes.md` (`## Transforms`) is the user's reference.
/// The dispatcher and the control plane await runs on the `pool`'s
/// workers, which are in the idle scheduling class so that a busy transform
/// yields its core to ingest and to other tenants' work (the engine's stack
/// limit is `MAX_STACK_BYTES`, well inside the worker's main thread's).
#[derive(Clone, PartialEq, Eq)]
pub struct Transform {
    code: String,
    version: u32,
}

impl fmt::Debug for Transform {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Transform")
            .field("version", &self.version)
            .field("code_bytes", &self.code.len())
            .finish()
    }
}

impl Transform {
    /// Takes `code` (at most [`MAX_CODE_BYTES`]) as a route's transform.
    /// Nothing runs here: a tenant's code never runs while hookd starts,
    /// resolves a tenant or follows another replica's change. Whether it
    /// parses and registers a handler is [`Transform::check`]ed when it is
    /// saved, and every run fails with the reason if it does not.
    pub fn new(code: &str, version: u32) -> Result<Transform, TransformError> {
        if code.len() > MAX_CODE_BYTES {
            return Err(TransformError::TooLarge(Oversize::Code));
        }
        Ok(Transform {
            code: code.to_owned(),
            version,
        })
    }

    /// Runs the code's top level in a worker within `limits` on `share`
    /// and checks that it registers a handler.
    pub async fn check(
        &self,
        share: &RouteShare,
        limits: &TransformLimits,
    ) -> Result<(), TransformError> {
        let job = Job::Check {
            code: self.code.clone(),
            limits: *limits,
        };
        match TransformPool::shared().run(share, job).await.answer? {
            Answer::Checked => Ok(()),
            Answer::Failed(e) => Err(e),
            _ => Err(TransformError::Stopped(
                "the transform worker answered another job".into(),
            )),
        }
    }

    /// Runs the handler on a copy of `request` in a fresh sandbox of a
    /// worker, on `share`.
    pub async fn run(
        &self,
        share: &RouteShare,
        request: &TransformRequest,
        context: &TransformContext,
        limits: &TransformLimits,
    ) -> Result<TransformOutcome, TransformError> {
        self.run_measured(share, request, context, limits).await.0
    }

    /// [`Transform::run`], with the CPU time its worker spent on it.
    pub async fn run_measured(
        &self,
        share: &RouteShare,
        request: &TransformRequest,
        context: &TransformContext,
        limits: &TransformLimits,
    ) -> (Result<TransformOutcome, TransformError>, Duration) {
        let input = request.to_json().to_string();
        // The engine could not hold it parsed within its memory limit.
        if input.len() > limits.memory_bytes() {
            let limit_bytes = limits.memory_bytes();
            return (
                Err(TransformError::OutOfMemory { limit_bytes }),
                Duration::ZERO,
            );
        }
        let job = Job::Run {
            code: self.code.clone(),
            input,
            context: context.to_json().to_string(),
            limits: *limits,
        };
        let ran = TransformPool::shared().run(share, job).await;
        let outcome = ran.answer.and_then(|answer| match answer {
            Answer::Drop => Ok(TransformOutcome::Drop),
            Answer::Send(json) => output::read(&json, &request.method).map(TransformOutcome::Send),
            Answer::Failed(e) => Err(e),
            Answer::Checked => Err(TransformError::Stopped(
                "the transform worker answered another job".into(),
            )),
        });
        (outcome, ran.cpu)
    }

    /// [`Transform::run`] on the calling thread, without a worker: for the
    /// sandbox's own tests.
    #[cfg(test)]
    fn run_here(
        &self,
        request: &TransformRequest,
        context: &TransformContext,
        limits: &TransformLimits,
    ) -> Result<TransformOutcome, TransformError> {
        let input = request.to_json().to_string();
        let context = context.to_json().to_string();
        match sandbox::run(&self.code, &input, &context, limits)? {
            None => Ok(TransformOutcome::Drop),
            Some(returned) => output::read(&returned, &request.method).map(TransformOutcome::Send),
        }
    }

    /// The source, as compiled.
    pub fn code(&self) -> &str {
        &self.code
    }

    /// The version each attempt records as the one that ran.
    pub fn version(&self) -> u32 {
        self.version
    }
}
