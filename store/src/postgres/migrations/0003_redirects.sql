-- Redirects of a delivery (sent once to a typed URL from the dashboard),
-- kept with the delivery: deleting its state row (purge, retention, a
-- dropped tenant) deletes its redirects.
CREATE TABLE hookd_redirects (
    tenant text COLLATE "C" NOT NULL,
    delivery_id text COLLATE "C" NOT NULL,
    request_id text COLLATE "C" NOT NULL,
    started_at_ms bigint NOT NULL,
    record bytea NOT NULL,
    PRIMARY KEY (tenant, delivery_id, request_id),
    FOREIGN KEY (tenant, delivery_id) REFERENCES hookd_states (tenant, delivery_id)
        ON DELETE CASCADE
);
