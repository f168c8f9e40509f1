-- Each delivery's event type, for ListDeliveries' event_type filter: a
-- column the ingest path writes with the state, and a partial index of the
-- deliveries whose body names a type, newest first within a type. Rows
-- stored before this version have none and are not found by type.
ALTER TABLE hookd_states ADD COLUMN event_type text COLLATE "C";
CREATE INDEX hookd_states_type ON hookd_states (tenant, event_type, delivery_id)
    WHERE event_type IS NOT NULL;
