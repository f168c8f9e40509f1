//! What the conformance suites of hookd's crates share: an engine under test
//! ([`Engine`]) and [`engines!`](crate::engines); not a stable interface.

use std::sync::Arc;

use crate::{
    api::Store,
    postgres::{testing::TestDatabase, PgOptions, PgStore},
    SledStore,
};

/// An engine under test and what must live as long as it.
///
/// An engine under test, on sled or on PostgreSQL; [`engines!`](crate::engines)
/// runs each case on both.
pub struct Engine {
    /// The engine.
    pub store: Store,
    /// Whether several processes may share it (PostgreSQL).
    pub shared: bool,
    _dir: Option<tempfile::TempDir>,
    _database: Option<TestDatabase>,
}

/// The embedded engine in a fresh data dir.
pub fn sled() -> Engine {
    let dir = tempfile::tempdir().unwrap();
    let (store, _committer) = SledStore::open(dir.path(), 64, false).unwrap();
    Engine {
        store: Arc::new(store),
        shared: false,
        _dir: Some(dir),
        _database: None,
    }
}

/// PostgreSQL on a fresh database named after `case`, or `None` (the case
/// is skipped) when there is no server to test on.
pub fn postgres(case: &str) -> Option<Engine> {
    let database = crate::postgres::testing::test_database(&format!("hookd_c_{case}"))?;
    let store = PgStore::open(PgOptions {
        url: database.url.clone().into(),
        max_connections: 8,
        statement_timeout_ms: 30_000,
        batch_max: 64,
    })
    .unwrap();
    Some(Engine {
        store: Arc::new(store),
        shared: true,
        _dir: None,
        _database: Some(database),
    })
}

/// Runs each case, an `async fn(Engine)` of the calling module, on both
/// engines: `sled::case` and `postgres::case`.
#[macro_export]
#[doc(hidden)]
macro_rules! engines {
    ($($case:ident),* $(,)?) => {
        mod sled {
            $(#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
            async fn $case() {
                super::$case($crate::testing::sled()).await;
            })*
        }
        mod postgres {
            $(#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
            async fn $case() {
                if let Some(engine) = $crate::testing::postgres(stringify!($case)) {
                    super::$case(engine).await;
                }
            })*
        }
    };
}
