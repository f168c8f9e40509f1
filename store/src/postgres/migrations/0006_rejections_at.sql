-- Refusal counts since a time (the dashboard's last hour and day) read one
-- tenant's recent rows through this index instead of every row it keeps.
CREATE INDEX hookd_rejections_at ON hookd_rejections (tenant, at_ms);
