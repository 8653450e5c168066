-- skillmem: rebuild notes
-- Lessons mined from what happened (docs/historian.md, "Lessons mined from what happened").
--
-- A lesson the miner reads off a session's transcript (a failed call, then the call that
-- worked) is stored with source 'transcript' and its evidence. SQLite changes no CHECK in
-- place, so the table is rebuilt as 0011 rebuilt it (db::migrate, `rebuild_notes`): every
-- column copied, every index and trigger created again, ids kept.

-- The one trigger of another table that reads `notes` would stop the swap: it is created
-- again, as it was, below the swap.
DROP TRIGGER team_outbox_not_pending;

CREATE TABLE notes_new (
    id             INTEGER PRIMARY KEY,
    skill          TEXT    NOT NULL,
    scope          TEXT    NOT NULL CHECK (scope IN ('project', 'global')),
    project_id     TEXT    NOT NULL,
    origin_project TEXT    NOT NULL,
    -- how the note came to this store: the agent's note tool, the historian, an import, a
    -- team pull, the transcript (an error and its fix, mined)
    source         TEXT    NOT NULL CHECK (source IN ('agent', 'historian', 'import', 'team', 'transcript')),
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
    origin_source  TEXT    CHECK (origin_source IN ('agent', 'historian', 'import', 'team', 'transcript')),
    -- 'pending' while a promoted observation waits for a person (historian.review): out of
    -- recall, out of the default listings, not pushed to the team
    review         TEXT    CHECK (review IN ('pending')),
    -- a pending correction (`| replaces #id`): the note it takes the place of once accepted
    review_replaces INTEGER,
    -- what backs the note, as JSON: for a mined lesson the failed call, its error lines, the
    -- call that worked and their positions; for a historian lesson the error line it names
    evidence       TEXT
);
-- skillmem: swap

CREATE TRIGGER team_outbox_not_pending AFTER INSERT ON team_outbox
WHEN (SELECT review FROM notes WHERE id = new.note_id) IS NOT NULL
BEGIN
    DELETE FROM team_outbox WHERE id = new.id;
END;
