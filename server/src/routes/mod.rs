//! A route's room: its declaration resolved ([`settings`]), its running
//! handle and fan-out ([`handle`]), an operator's hold on it ([`hold`]),
//! a replay of stored events into it ([`replay`]),
//! and the rule engines it runs ([`filter`], [`transform`]).

pub mod filter;
pub mod handle;
pub mod hold;
pub mod replay;
pub mod settings;
pub mod transform;
