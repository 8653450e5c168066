-- Use counts across the team (docs/team.md, "What travels"): each machine pushes its own
-- `note_evidence` counts per note and keeps the other machines' here, one row per (note,
-- machine), replaced whole by each pull. A note's counts everywhere (listing, ranking, trust)
-- are its local row plus the sum of these; vouched on any machine is vouched here.
CREATE TABLE note_evidence_remote (
    note_id        INTEGER NOT NULL REFERENCES notes (id) ON DELETE CASCADE,
    machine        TEXT    NOT NULL,
    shown          INTEGER NOT NULL DEFAULT 0,
    used           INTEGER NOT NULL DEFAULT 0,
    ignored        INTEGER NOT NULL DEFAULT 0,
    used_elsewhere INTEGER NOT NULL DEFAULT 0,
    used_at        INTEGER,
    vouched        INTEGER NOT NULL DEFAULT 0,
    PRIMARY KEY (note_id, machine)
);
-- What this machine last pushed of each note's counts: a row whose counts differ is pushed.
CREATE TABLE note_evidence_sent (
    note_id        INTEGER PRIMARY KEY REFERENCES notes (id) ON DELETE CASCADE,
    shown          INTEGER NOT NULL,
    used           INTEGER NOT NULL,
    ignored        INTEGER NOT NULL,
    used_elsewhere INTEGER NOT NULL,
    used_at        INTEGER,
    vouched        INTEGER NOT NULL
);
-- The server sequence the counts pull has reached (apart from the notes' cursor).
ALTER TABLE team_state ADD COLUMN counts_cursor INTEGER NOT NULL DEFAULT 0;
-- A note's counts here and on the team's other machines, summed.
CREATE VIEW note_evidence_all AS
SELECT note_id, sum(shown) AS shown, sum(used) AS used, sum(ignored) AS ignored,
       nullif(max(coalesce(used_at, 0)), 0) AS used_at, max(vouched) AS vouched,
       sum(used_elsewhere) AS used_elsewhere
FROM (SELECT note_id, shown, used, ignored, used_at, vouched, used_elsewhere FROM note_evidence
      UNION ALL
      SELECT note_id, shown, used, ignored, used_at, vouched, used_elsewhere FROM note_evidence_remote)
GROUP BY note_id;
