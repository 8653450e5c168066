-- skillmem: rebuild notes
-- Provenance and review (docs/protocol.md, "Provenance" and "Review").
--
-- SQLite cannot change a CHECK constraint in place, and `notes.source` must take 'import' and
-- 'team'. The line above makes the runner (db::migrate) rebuild the table the way SQLite's
-- documentation says (foreign keys off, a new table, every row copied, the old one dropped,
-- the new one renamed): it runs the part of this file above the `swap` line (the new table),
-- copies every column the old table has (it fails when the new one lacks any), drops `notes`,
-- renames `notes_new`, creates again every index and trigger `notes` had (as they were), and
-- runs the part below the `swap` line. Ids are kept, so the full-text index (external content
-- by rowid), the word pieces, the conflicting pairs and the team's rows stay as they were.
CREATE TABLE notes_new (
    id             INTEGER PRIMARY KEY,
    skill          TEXT    NOT NULL,
    scope          TEXT    NOT NULL CHECK (scope IN ('project', 'global')),
    project_id     TEXT    NOT NULL,
    origin_project TEXT    NOT NULL,
    -- how the note came to this store: the agent's note tool, the historian, an import, a
    -- team pull
    source         TEXT    NOT NULL CHECK (source IN ('agent', 'historian', 'import', 'team')),
    kind           TEXT    NOT NULL CHECK (kind IN ('gotcha', 'discovery', 'fix', 'workflow')),
    intent         TEXT    NOT NULL DEFAULT '',
    delta          TEXT    NOT NULL,
    tags           TEXT    NOT NULL DEFAULT '[]',
    hits           INTEGER NOT NULL DEFAULT 0,
    recalls        INTEGER NOT NULL DEFAULT 0,
    pinned         INTEGER NOT NULL DEFAULT 0,
    norm_hash      TEXT    NOT NULL,
    skill_hash     TEXT,
    -- the host's session the note was written in (NULL: not known)
    session_id     TEXT,
    created_at     INTEGER NOT NULL,
    updated_at     INTEGER NOT NULL,
    last_used_at   INTEGER,
    vector         BLOB,
    vector_model   TEXT,
    skill_key      TEXT GENERATED ALWAYS AS ('sk' || lower(hex(skill))) VIRTUAL,
    retired_at     INTEGER,
    superseded_by  INTEGER,
    reason         TEXT,
    -- the host that wrote it (claude-code, opencode, an LSP client's name, cli, ui, mcp: ...)
    host           TEXT,
    -- historian notes: the transcript the observation was read from (a path, or the host's
    -- id of it), and where in it (`bytes A-B`, `message ID`, `messages ID..ID`)
    transcript     TEXT,
    transcript_at  TEXT,
    -- for a note that came by import or team pull: who first wrote it (agent, historian)
    origin_source  TEXT    CHECK (origin_source IN ('agent', 'historian', 'import', 'team')),
    -- 'pending' while a promoted observation waits for a person (historian.review): out of
    -- recall, out of the default listings, not pushed to the team
    review         TEXT    CHECK (review IN ('pending')),
    -- a pending correction (`| replaces #id`): the note it takes the place of once accepted
    review_replaces INTEGER
);
-- skillmem: swap

-- Recall's catalog reads notes that are current and not waiting for review.
DROP INDEX notes_catalog;
CREATE INDEX notes_catalog ON notes (skill, scope, project_id, pinned, hits, created_at)
    WHERE retired_at IS NULL AND review IS NULL;

-- A session's notes (the dashboard links a note to them); the review queue.
CREATE INDEX notes_by_session ON notes (session_id) WHERE session_id IS NOT NULL;
CREATE INDEX notes_pending ON notes (skill, created_at) WHERE review IS NOT NULL;

-- A note waiting for review stays on this machine: every change the team triggers queue for
-- it is dropped as it is queued (one rule, whatever the triggers of `notes` are)...
CREATE TRIGGER team_outbox_not_pending AFTER INSERT ON team_outbox
WHEN (SELECT review FROM notes WHERE id = new.note_id) IS NOT NULL
BEGIN
    DELETE FROM team_outbox WHERE id = new.id;
END;

-- ...and once accepted it is a new note for the team.
CREATE TRIGGER team_note_accept AFTER UPDATE OF review ON notes
WHEN old.review IS NOT NULL AND new.review IS NULL AND new.retired_at IS NULL
     AND EXISTS (SELECT 1 FROM team_state) AND NOT EXISTS (SELECT 1 FROM team_applying)
BEGIN
    INSERT INTO team_outbox (kind, note_id, hits) VALUES ('note', new.id, new.hits);
END;

-- A note a team pull brings is a note from the team; who wrote it first is kept. (Not the
-- old text a pulled edit keeps here as a version of a note: that row names its note in
-- superseded_by from the start, and keeps the note's own source.)
CREATE TRIGGER notes_from_team AFTER INSERT ON notes
WHEN new.source <> 'team' AND new.superseded_by IS NULL AND EXISTS (SELECT 1 FROM team_applying)
BEGIN
    UPDATE notes SET origin_source = COALESCE(new.origin_source, new.source), source = 'team' WHERE id = new.id;
END;
