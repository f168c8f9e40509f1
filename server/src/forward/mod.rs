//! Forwarding accepted events to each tenant's destination: the per-tenant
//! dispatcher, one attempt, the retry policy, the circuit breaker and the
//! destination address policy, and the certificate authorities forwards trust.

mod address;
mod attempt;
mod breaker;
mod dispatcher;
mod lease;
pub mod policy;
mod trust;

pub use address::{AddressPolicy, DeniedAddress, Rule};
pub use attempt::{ATTEMPT_HEADER, DELIVERY_ID_HEADER, RESPONSE_KEEP_BYTES};
pub use breaker::{Breaker, BreakerState};
pub use dispatcher::{Dispatcher, DispatcherParts};
pub use lease::LeaseTerms;
pub use trust::load_ca_file;
