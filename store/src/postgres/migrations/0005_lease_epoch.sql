-- Each forwarding lease's epoch, bumped whenever the lease passes to
-- another holder: every attempt is claimed and recorded only while the
-- lease still has the holder's epoch, so a holder that stalled past its
-- lease neither sends nor records once another took the tenant over.
-- A released lease keeps its row (expired), so epochs never go back.
ALTER TABLE hookd_forward_leases ADD COLUMN epoch bigint NOT NULL DEFAULT 1;
