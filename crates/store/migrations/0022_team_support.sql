-- A held mined lesson's support across the team, and the holdout's counts of the team's other
-- machines (docs/team.md, "What travels"; team schema 0005).
--
-- The other machines' support of each lesson: per skill and SHA-256 (hex) of the lesson's key,
-- how many distinct sessions of that machine mined it, replaced whole by each pull. A lesson's
-- support is this machine's sessions plus these.
CREATE TABLE mined_support_remote (
    skill    TEXT    NOT NULL,
    key_hash TEXT    NOT NULL,
    machine  TEXT    NOT NULL,
    sessions INTEGER NOT NULL,
    PRIMARY KEY (skill, key_hash, machine)
) WITHOUT ROWID;
-- What this machine last pushed of each lesson's support: a lesson whose count differs is
-- pushed (a lesson gone from here is pushed once more, at 0).
CREATE TABLE mined_support_sent (
    skill    TEXT    NOT NULL,
    key_hash TEXT    NOT NULL,
    sessions INTEGER NOT NULL,
    PRIMARY KEY (skill, key_hash)
) WITHOUT ROWID;
-- The server sequence the support pull has reached (apart from the notes' and counts' cursors).
ALTER TABLE team_state ADD COLUMN support_cursor INTEGER NOT NULL DEFAULT 0;

-- The holdout's counts travel with the other counts of each machine.
ALTER TABLE note_evidence_remote ADD COLUMN withheld INTEGER NOT NULL DEFAULT 0;
ALTER TABLE note_evidence_remote ADD COLUMN appeared INTEGER NOT NULL DEFAULT 0;
ALTER TABLE note_evidence_sent ADD COLUMN withheld INTEGER NOT NULL DEFAULT 0;
ALTER TABLE note_evidence_sent ADD COLUMN appeared INTEGER NOT NULL DEFAULT 0;
-- 0021's summed view, with the other machines' holdout counts added too.
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
       e.withheld + (SELECT coalesce(sum(r.withheld), 0) FROM note_evidence_remote r WHERE r.note_id = e.note_id)
           AS withheld,
       e.appeared + (SELECT coalesce(sum(r.appeared), 0) FROM note_evidence_remote r WHERE r.note_id = e.note_id)
           AS appeared
FROM note_evidence e;
