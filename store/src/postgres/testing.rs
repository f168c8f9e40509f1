//! Throwaway databases for the tests of both crates, one per test on the
//! server `HOOKD_TEST_POSTGRES_URL` names.

use tokio_postgres::NoTls;

/// A database made for one test, dropped (with whatever still connects
/// to it) when this is dropped.
pub struct TestDatabase {
    /// Its connection URL.
    pub url: String,
    admin: String,
    name: String,
}

/// A new, empty database whose name starts with `prefix`, or `None` (the
/// test is skipped) when no server is configured.
///
/// # Panics
/// When no server is configured but one is required, or it cannot be
/// reached: a test has no better way to fail.
///
/// Throwaway databases for the tests of both crates: each test creates its
/// own database on the server `HOOKD_TEST_POSTGRES_URL` names, so tests run
/// in parallel, and drops it after. Without that variable a test is skipped (with a line
/// saying so), unless `HOOKD_REQUIRE_POSTGRES=1` makes that a failure.
pub fn test_database(prefix: &str) -> Option<TestDatabase> {
    let Ok(admin) = std::env::var("HOOKD_TEST_POSTGRES_URL") else {
        if std::env::var("HOOKD_REQUIRE_POSTGRES").as_deref() == Ok("1") {
            panic!("HOOKD_REQUIRE_POSTGRES=1 but HOOKD_TEST_POSTGRES_URL is not set");
        }
        eprintln!(
            "skipped ({prefix}): HOOKD_TEST_POSTGRES_URL is not set, no PostgreSQL to test on"
        );
        return None;
    };
    let name = format!("{prefix}_{}", ulid::Ulid::new()).to_lowercase();
    run_on(&admin, format!("CREATE DATABASE \"{name}\""));
    Some(TestDatabase {
        url: with_database(&admin, &name),
        admin,
        name,
    })
}

impl Drop for TestDatabase {
    fn drop(&mut self) {
        run_on(
            &self.admin,
            format!("DROP DATABASE IF EXISTS \"{}\" WITH (FORCE)", self.name),
        );
    }
}

/// Runs `statement` on the server at `url`, on a thread and runtime of its
/// own (the caller may be inside a runtime).
fn run_on(url: &str, statement: String) {
    let url = url.to_owned();
    std::thread::spawn(move || {
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .expect("a runtime");
        runtime.block_on(async move {
            let (client, connection) = tokio_postgres::connect(&url, NoTls)
                .await
                .expect("HOOKD_TEST_POSTGRES_URL: cannot connect");
            tokio::spawn(connection);
            client
                .batch_execute(&statement)
                .await
                .unwrap_or_else(|e| panic!("{statement}: {e}"));
        });
    })
    .join()
    .expect("a statement on the test server");
}

/// `url` with its database replaced by `name`.
fn with_database(url: &str, name: &str) -> String {
    let (base, query) = match url.split_once('?') {
        Some((base, query)) => (base, Some(query)),
        None => (url, None),
    };
    let host_start = base.find("://").map_or(0, |i| i + 3);
    let server = match base[host_start..].find('/') {
        Some(slash) => &base[..host_start + slash],
        None => base,
    };
    match query {
        Some(query) => format!("{server}/{name}?{query}"),
        None => format!("{server}/{name}"),
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn the_database_is_replaced_and_the_rest_kept() {
        assert_eq!(
            super::with_database("postgres://u:p@h:5432/postgres?sslmode=disable", "t1"),
            "postgres://u:p@h:5432/t1?sslmode=disable"
        );
        assert_eq!(
            super::with_database("postgres://h", "t2"),
            "postgres://h/t2"
        );
    }
}
