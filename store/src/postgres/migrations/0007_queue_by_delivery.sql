-- The oldest delivery each tenant has in its queue (the oldest-pending gauge
-- and route.failing's age), read as the first row of this index instead of
-- every queue row of the tenant. Delivery ids are ULIDs, ordered by when
-- each delivery was accepted or redelivered.
CREATE INDEX hookd_queue_by_delivery ON hookd_queue (tenant, delivery_id);
