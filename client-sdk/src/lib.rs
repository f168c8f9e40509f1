//! hookd client SDK: the webhook signature schemes hookd accepts, for senders (sign)
//! and for the receiver (verify), with no dependency on any HTTP crate.
#![forbid(unsafe_code)]
#![warn(missing_docs)]

mod error;
pub mod signature;
