//! What hookd's benchmarks and black-box tests reach below the public surface;
//! not stable: integrators use [`crate::run`], [`crate::Server`], [`crate::config`].

pub use crate::{
    catalog::contracts::{ContractStore, NewContract},
    contracts::{Contract, ContractSource, ContractSpec, Policy, TenantContracts},
    feed::{DeliveryEvent, DeliveryEventKind, DeliveryFeed},
    ingest::Ingest,
    routes::filter::{
        FilterError, FilterInput, OverBudget, RouteFilter, Steps, INLINE_STEPS, MAX_FILTER_STEPS,
    },
    routes::transform::{
        pool::{RouteShare, TransformPool, KILL_MARGIN, WATCH_INTERVAL},
        InvalidLimits, Oversize, Transform, TransformBody, TransformContext, TransformError,
        TransformLimits, TransformOutcome, TransformRequest,
    },
    store::{
        api::{Receipt, Rejection, RowChange, Storage, Table, TenantData},
        lifecycle::Next,
        postgres::{
            testing::{test_database, TestDatabase},
            PgOptions, PgStore,
        },
        records::{AttemptRecord, EventMeta},
        NewDelivery, OsSync, SharedSync, SledStore, Store, TenantStore,
    },
    sweeper::{pass, Due, Removed},
    telemetry::Spans,
    tenant::{replay_cache, Gate, ReplayCache, ReplayScope, TenantSettings},
};

/// Fault injection for the crash and durability tests.
#[cfg(any(test, feature = "fault-injection"))]
pub mod faults {
    pub use crate::faults::*;
}
