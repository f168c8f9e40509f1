//! Forwarding accepted events to each tenant's destination: the dispatcher,
//! one attempt, the retry policy, the breaker and adaptive concurrency.

mod adaptive;
mod attempt;
mod breaker;
mod dispatcher;
mod lease;
pub mod policy;
mod replayer;
mod report;
mod round;
mod runtime;

pub(crate) use crate::routes::transform::apply::{preview as apply_transform, Transformed};
pub(crate) use attempt::send as send_attempt;
pub use dispatcher::{Dispatcher, DispatcherParts};
pub use lease::LeaseTerms;
pub use replayer::{count as count_replay, FindRoute, ReplayTarget, Replayer, ReplayerParts};
pub use runtime::ForwardRuntime;
