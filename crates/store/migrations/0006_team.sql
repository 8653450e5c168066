-- Team memory (src/team/, docs/team.md): what this data directory knows of its team server.
-- Nothing here is read by recall; a store without a `[team]` configuration keeps these tables
-- empty (the triggers below stay quiet until `team_state` has its row).

-- One row once team sync has been configured: this machine's id, the server and team the rest
-- of the state belongs to, and the pull cursor (the last server sequence applied).
CREATE TABLE team_state (
    id            INTEGER PRIMARY KEY CHECK (id = 1),
    machine       TEXT    NOT NULL,
    target        TEXT    NOT NULL,
    cursor        INTEGER NOT NULL DEFAULT 0,
    last_push_at  INTEGER,
    last_pull_at  INTEGER,
    last_error    TEXT,
    last_error_at INTEGER
);

-- The team id (uid) of each local note that has one, and why a note is held back (a secret
-- found by the redaction pass, a skill that opted out); NULL when it is shared.
CREATE TABLE team_notes (
    note_id INTEGER PRIMARY KEY,
    uid     TEXT    NOT NULL UNIQUE,
    held    TEXT
);

-- Local changes not yet pushed, in order. The id is this machine's event number: the server
-- remembers the highest one it applied per machine, so a batch sent twice applies once.
CREATE TABLE team_outbox (
    id      INTEGER PRIMARY KEY AUTOINCREMENT,
    kind    TEXT    NOT NULL CHECK (kind IN ('note', 'hit', 'pin', 'edit', 'scope', 'forget')),
    note_id INTEGER NOT NULL,
    uid     TEXT,
    hits    INTEGER NOT NULL DEFAULT 0
);
CREATE INDEX team_outbox_by_note ON team_outbox (note_id);

-- Holds one row only inside a pull's own transaction, so that the triggers do not send pulled
-- changes back to the server.
CREATE TABLE team_applying (x INTEGER);

CREATE TRIGGER team_note_ai AFTER INSERT ON notes
WHEN EXISTS (SELECT 1 FROM team_state) AND NOT EXISTS (SELECT 1 FROM team_applying)
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

-- A forgotten note that the team has (it has a uid) becomes a tombstone on the server; one
-- that never left this machine just drops its pending changes.
CREATE TRIGGER team_note_ad AFTER DELETE ON notes
WHEN NOT EXISTS (SELECT 1 FROM team_applying)
BEGIN
    INSERT INTO team_outbox (kind, note_id, uid)
        SELECT 'forget', old.id, uid FROM team_notes WHERE note_id = old.id AND held IS NULL;
    DELETE FROM team_outbox WHERE note_id = old.id AND kind <> 'forget';
    DELETE FROM team_notes WHERE note_id = old.id;
END;
