//! Forwarding accepted events to each tenant's destination: the per-tenant
//! dispatcher, one attempt, the retry policy, the circuit breaker and the
//! destination address policy, and the certificate authorities forwards trust.

mod address;
mod attempt;
mod breaker;
mod dispatcher;
pub mod policy;
mod trust;

pub(crate) use address::GuardedResolver;
pub use address::{AddressPolicy, DeniedAddress, Rule};
pub(crate) use attempt::send as send_attempt;
pub use attempt::{ATTEMPT_HEADER, DELIVERY_ID_HEADER, RESPONSE_KEEP_BYTES};
pub use breaker::{Breaker, BreakerState};
pub use dispatcher::{Dispatcher, DispatcherParts};
pub use trust::load_ca_file;
