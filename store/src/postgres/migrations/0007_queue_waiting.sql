-- The oldest delivery each tenant has in its queue (the oldest-pending gauge,
-- route.failing's age, the dashboard's overview). A new delivery's row is due
-- when it was accepted, so the queue's first row stands for those; a row a
-- later change wrote (a retry, a pull, a retry now) is marked `waiting`, and
-- the first of those by delivery id (a ULID: ordered by when each delivery
-- was accepted or redelivered) is read through this partial index, which the
-- ingest path never writes. Rows queued before this version are marked, so
-- none is missed.
ALTER TABLE hookd_queue ADD COLUMN waiting boolean NOT NULL DEFAULT false;
UPDATE hookd_queue SET waiting = true;
CREATE INDEX hookd_queue_waiting ON hookd_queue (tenant, delivery_id) WHERE waiting;
