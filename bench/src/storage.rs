//! Where hookd keeps its data in a run: its embedded engine (sled, in the
//! run's temp data dir, hookd's default) or PostgreSQL.

/// hookd's storage on the PostgreSQL at `url`.
pub fn postgres_config(url: &str) -> String {
    format!("\n[storage]\nbackend = \"postgres\"\n\n[storage.postgres]\nurl = {url:?}\n")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_postgres_config_names_the_backend_and_its_url() {
        let pg = postgres_config("postgres://u@127.0.0.1/b");
        assert!(pg.contains("backend = \"postgres\""), "{pg}");
        assert!(pg.contains("url = \"postgres://u@127.0.0.1/b\""), "{pg}");
    }
}
