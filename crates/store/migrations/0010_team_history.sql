-- Team sync carries a note's life (docs/team.md, "A note's life on the team"): a note replaced
-- or retired here is replaced or retired on the team's other machines, a restore brings it
-- back there, and only a purge deletes it (a tombstone on the server). Until this migration a
-- retirement left the team as a tombstone, and the other machines deleted the note.

-- The outbox gains the kinds 'retire' and 'restore'. Its CHECK constraint is part of the
-- table, so the table is made again with its pending rows in order, and the triggers that
-- write it are made again after it. Its ids are this machine's event numbers (the server skips
-- any number it has applied), so the AUTOINCREMENT counter is carried over, not restarted.
DROP TRIGGER team_note_ai;
DROP TRIGGER team_note_hits;
DROP TRIGGER team_note_pin;
DROP TRIGGER team_note_edit;
DROP TRIGGER team_note_scope;
DROP TRIGGER team_note_ad;
DROP TRIGGER team_note_retire;

CREATE TABLE team_outbox_seq AS
    SELECT max(COALESCE((SELECT seq FROM sqlite_sequence WHERE name = 'team_outbox'), 0),
               COALESCE((SELECT max(id) FROM team_outbox), 0)) AS seq;

CREATE TABLE team_outbox_v2 (
    id      INTEGER PRIMARY KEY AUTOINCREMENT,
    kind    TEXT    NOT NULL CHECK (kind IN ('note', 'hit', 'pin', 'edit', 'scope', 'forget', 'retire', 'restore')),
    note_id INTEGER NOT NULL,
    uid     TEXT,
    hits    INTEGER NOT NULL DEFAULT 0
);
INSERT INTO team_outbox_v2 (id, kind, note_id, uid, hits) SELECT id, kind, note_id, uid, hits FROM team_outbox ORDER BY id;
DROP TABLE team_outbox;
ALTER TABLE team_outbox_v2 RENAME TO team_outbox;
CREATE INDEX team_outbox_by_note ON team_outbox (note_id);
DELETE FROM sqlite_sequence WHERE name IN ('team_outbox', 'team_outbox_v2');
INSERT INTO sqlite_sequence (name, seq) SELECT 'team_outbox', seq FROM team_outbox_seq WHERE seq > 0;
DROP TABLE team_outbox_seq;

-- A pulled retirement names its successor by team id; when the successor has not reached this
-- machine yet, the id waits here until it does (see store::team_apply).
ALTER TABLE team_notes ADD COLUMN successor TEXT;

-- The triggers, as before, except that a note leaving recall keeps its team id.
CREATE TRIGGER team_note_ai AFTER INSERT ON notes
WHEN new.retired_at IS NULL AND EXISTS (SELECT 1 FROM team_state) AND NOT EXISTS (SELECT 1 FROM team_applying)
BEGIN
    INSERT INTO team_outbox (kind, note_id, hits) VALUES ('note', new.id, new.hits);
END;

CREATE TRIGGER team_note_hits AFTER UPDATE OF hits ON notes
WHEN new.hits > old.hits AND EXISTS (SELECT 1 FROM team_state) AND NOT EXISTS (SELECT 1 FROM team_applying)
BEGIN
    INSERT INTO team_outbox (kind, note_id, hits) VALUES ('hit', new.id, new.hits - old.hits);
END;

CREATE TRIGGER team_note_pin AFTER UPDATE OF pinned ON notes
WHEN new.pinned IS NOT old.pinned AND EXISTS (SELECT 1 FROM team_state) AND NOT EXISTS (SELECT 1 FROM team_applying)
BEGIN
    INSERT INTO team_outbox (kind, note_id) VALUES ('pin', new.id);
END;

CREATE TRIGGER team_note_edit AFTER UPDATE OF delta ON notes
WHEN new.delta IS NOT old.delta AND EXISTS (SELECT 1 FROM team_state) AND NOT EXISTS (SELECT 1 FROM team_applying)
BEGIN
    INSERT INTO team_outbox (kind, note_id) VALUES ('edit', new.id);
END;

CREATE TRIGGER team_note_scope AFTER UPDATE OF scope, project_id ON notes
WHEN (new.scope IS NOT old.scope OR new.project_id IS NOT old.project_id)
     AND EXISTS (SELECT 1 FROM team_state) AND NOT EXISTS (SELECT 1 FROM team_applying)
BEGIN
    INSERT INTO team_outbox (kind, note_id) VALUES ('scope', new.id);
END;

-- A purged note that the team has (it has a uid) becomes a tombstone on the server; one that
-- never left this machine just drops its pending changes.
CREATE TRIGGER team_note_ad AFTER DELETE ON notes
WHEN NOT EXISTS (SELECT 1 FROM team_applying)
BEGIN
    INSERT INTO team_outbox (kind, note_id, uid)
        SELECT 'forget', old.id, uid FROM team_notes WHERE note_id = old.id AND held IS NULL;
    DELETE FROM team_outbox WHERE note_id = old.id AND kind <> 'forget';
    DELETE FROM team_notes WHERE note_id = old.id;
END;

-- A note that leaves recall here (replaced, retired, merged into another) is retired on the
-- team too, with its successor and reason; a restore brings it back there.
CREATE TRIGGER team_note_retire AFTER UPDATE OF retired_at ON notes
WHEN old.retired_at IS NULL AND new.retired_at IS NOT NULL
     AND EXISTS (SELECT 1 FROM team_state) AND NOT EXISTS (SELECT 1 FROM team_applying)
BEGIN
    INSERT INTO team_outbox (kind, note_id) VALUES ('retire', new.id);
END;

CREATE TRIGGER team_note_restore AFTER UPDATE OF retired_at ON notes
WHEN old.retired_at IS NOT NULL AND new.retired_at IS NULL
     AND EXISTS (SELECT 1 FROM team_state) AND NOT EXISTS (SELECT 1 FROM team_applying)
BEGIN
    INSERT INTO team_outbox (kind, note_id) VALUES ('restore', new.id);
END;
