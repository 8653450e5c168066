-- The holdout and a note's lift (docs/protocol.md, "Use and trust"): a load may withhold one
-- eligible unverified note from its block (`memory.holdout`); the load's row names it, and the
-- session's end counts whether the note's distinctive specific appeared anyway.
ALTER TABLE call_log ADD COLUMN withheld TEXT;
-- what the session said of a note it withheld: withheld, and whether its specific appeared
ALTER TABLE note_sessions ADD COLUMN withheld INTEGER NOT NULL DEFAULT 0;
ALTER TABLE note_sessions ADD COLUMN appeared INTEGER NOT NULL DEFAULT 0;
-- sessions that withheld the note, and of those, the sessions whose calls carried its
-- distinctive specific anyway
ALTER TABLE note_evidence ADD COLUMN withheld INTEGER NOT NULL DEFAULT 0;
ALTER TABLE note_evidence ADD COLUMN appeared INTEGER NOT NULL DEFAULT 0;
-- The summed view of 0018 with this machine's holdout counts (the team's machines do not send
-- theirs yet).
DROP VIEW note_evidence_all;
CREATE VIEW note_evidence_all AS
SELECT e.note_id,
       e.shown + (SELECT coalesce(sum(r.shown), 0) FROM note_evidence_remote r WHERE r.note_id = e.note_id) AS shown,
       e.used + (SELECT coalesce(sum(r.used), 0) FROM note_evidence_remote r WHERE r.note_id = e.note_id) AS used,
       e.ignored + (SELECT coalesce(sum(r.ignored), 0) FROM note_evidence_remote r WHERE r.note_id = e.note_id)
           AS ignored,
       nullif(max(coalesce(e.used_at, 0),
                  (SELECT coalesce(max(r.used_at), 0) FROM note_evidence_remote r WHERE r.note_id = e.note_id)), 0)
           AS used_at,
       max(e.vouched, (SELECT coalesce(max(r.vouched), 0) FROM note_evidence_remote r WHERE r.note_id = e.note_id))
           AS vouched,
       e.used_elsewhere
           + (SELECT coalesce(sum(r.used_elsewhere), 0) FROM note_evidence_remote r WHERE r.note_id = e.note_id)
           AS used_elsewhere,
       e.withheld AS withheld,
       e.appeared AS appeared
FROM note_evidence e;
