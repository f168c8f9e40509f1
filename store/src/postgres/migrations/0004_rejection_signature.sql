-- Whether each refused request's signature was valid, as a column, so a
-- listing filtered by it filters in SQL and each page is full. Rows written
-- before are filled in from their record (JSON).
ALTER TABLE hookd_rejections ADD COLUMN signature_valid boolean;
UPDATE hookd_rejections
SET signature_valid = (convert_from(record, 'UTF8')::jsonb ->> 'signature_valid')::boolean;
ALTER TABLE hookd_rejections ALTER COLUMN signature_valid SET NOT NULL;
CREATE INDEX hookd_rejections_signature ON hookd_rejections (tenant, signature_valid, rkey);
