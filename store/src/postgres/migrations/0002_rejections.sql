-- Refused requests of each tenant (the dashboard and ListRejections), kept
-- for the delivered-events retention. Written as a refusal is answered.
CREATE TABLE hookd_rejections (
    tenant text COLLATE "C" NOT NULL,
    rkey text COLLATE "C" NOT NULL,
    at_ms bigint NOT NULL,
    request_id text COLLATE "C" NOT NULL,
    code text COLLATE "C" NOT NULL,
    record bytea NOT NULL,
    PRIMARY KEY (tenant, rkey)
);
CREATE INDEX hookd_rejections_request ON hookd_rejections (tenant, request_id);
