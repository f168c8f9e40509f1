-- hookd's schema on PostgreSQL, version 1. Keys are the sled engine's
-- byte keys (bytea sorts bytewise); text keys use the "C" collation so
-- that ordering and prefixes are bytewise too.

-- Idempotency: event id (or content key) -> the first delivery.
CREATE TABLE hookd_idem (
    tenant text COLLATE "C" NOT NULL,
    key bytea NOT NULL,
    delivery_id text COLLATE "C" NOT NULL,
    received_at_ms bigint NOT NULL,
    event_id text COLLATE "C",
    PRIMARY KEY (tenant, key)
);

-- Stored events: metadata and the raw body.
CREATE TABLE hookd_events (
    tenant text COLLATE "C" NOT NULL,
    delivery_id text COLLATE "C" NOT NULL,
    event bytea NOT NULL,
    PRIMARY KEY (tenant, delivery_id)
);

-- Delivery states.
CREATE TABLE hookd_states (
    tenant text COLLATE "C" NOT NULL,
    delivery_id text COLLATE "C" NOT NULL,
    status text COLLATE "C" NOT NULL,
    state bytea NOT NULL,
    PRIMARY KEY (tenant, delivery_id)
);

-- The queue: due time + sequence -> delivery.
CREATE TABLE hookd_queue (
    tenant text COLLATE "C" NOT NULL,
    qkey bytea NOT NULL,
    delivery_id text COLLATE "C" NOT NULL,
    PRIMARY KEY (tenant, qkey)
);

-- Attempts of each delivery.
CREATE TABLE hookd_attempts (
    tenant text COLLATE "C" NOT NULL,
    delivery_id text COLLATE "C" NOT NULL,
    attempt bigint NOT NULL,
    record bytea NOT NULL,
    PRIMARY KEY (tenant, delivery_id, attempt)
);

-- Dead letters: dead-at time + delivery id -> letter.
CREATE TABLE hookd_dead (
    tenant text COLLATE "C" NOT NULL,
    dkey bytea NOT NULL,
    letter bytea NOT NULL,
    PRIMARY KEY (tenant, dkey)
);

-- Delivered events by finish time, for retention.
CREATE TABLE hookd_done (
    tenant text COLLATE "C" NOT NULL,
    dkey bytea NOT NULL,
    PRIMARY KEY (tenant, dkey)
);

-- The control plane's rows (tenants, secrets, tokens, drops).
CREATE TABLE hookd_catalog (
    tbl text COLLATE "C" NOT NULL,
    key text COLLATE "C" NOT NULL,
    value bytea NOT NULL,
    PRIMARY KEY (tbl, key)
);

-- Bumped in the same transaction as every catalog change.
CREATE TABLE hookd_catalog_version (
    id int PRIMARY KEY CHECK (id = 1),
    version bigint NOT NULL
);
INSERT INTO hookd_catalog_version (id, version) VALUES (1, 0);

-- Which process forwards a tenant's deliveries, until when.
CREATE TABLE hookd_forward_leases (
    tenant text COLLATE "C" PRIMARY KEY,
    owner text NOT NULL,
    expires_at timestamptz NOT NULL
);

-- A value sealed with the master key at first start: a process with
-- another key refuses to start.
CREATE TABLE hookd_key_check (
    id int PRIMARY KEY CHECK (id = 1),
    sealed bytea NOT NULL
);

-- Queue-key sequence numbers, taken by each process in blocks.
CREATE SEQUENCE hookd_seq INCREMENT BY 1024 START WITH 1024;
