-- A session's calls and what they say of the notes shown (docs/protocol.md, "Use and trust").
--
-- Every tool call a host reports (`skillmem/toolAfter`) is a row of `call_log`, in the
-- order it arrived (`position`); a skill load's row names the skill and the notes its block
-- showed. Bounded: a session keeps at most a few thousand calls, and the calls of sessions
-- that ended long ago are dropped (memory/store/calls.rs).
CREATE TABLE tool_sessions (
    session_id  TEXT    PRIMARY KEY,
    project_id  TEXT    NOT NULL,
    calls       INTEGER NOT NULL DEFAULT 0,
    started_at  INTEGER NOT NULL,
    last_at     INTEGER NOT NULL,
    -- when its accounting last ran (sessionEnd, or an implicit end); NULL while open
    ended_at    INTEGER
);

CREATE TABLE call_log (
    id          INTEGER PRIMARY KEY,
    session_id  TEXT    NOT NULL REFERENCES tool_sessions (session_id) ON DELETE CASCADE,
    position    INTEGER NOT NULL,
    call_id     TEXT    NOT NULL DEFAULT '',
    tool        TEXT    NOT NULL,
    -- a skill load: the skill, and the ids of the notes its block showed (a JSON array)
    skill       TEXT,
    shown       TEXT,
    -- the arguments as text (redacted, bounded)
    args        TEXT    NOT NULL DEFAULT '',
    failed      INTEGER NOT NULL DEFAULT 0,
    exit_code   INTEGER,
    -- a failed call's error lines (redacted, bounded)
    errors      TEXT    NOT NULL DEFAULT '',
    at          INTEGER NOT NULL
);

CREATE INDEX call_log_by_session ON call_log (session_id, position);

-- What each session said of each note it was shown: counted once per session.
CREATE TABLE note_sessions (
    note_id     INTEGER NOT NULL REFERENCES notes (id) ON DELETE CASCADE,
    session_id  TEXT    NOT NULL,
    used        INTEGER NOT NULL DEFAULT 0,
    ignored     INTEGER NOT NULL DEFAULT 0,
    PRIMARY KEY (note_id, session_id)
) WITHOUT ROWID;

-- A note's evidence: sessions that were shown it, used it, ignored it; when it was last used.
-- Kept beside `notes` (no rebuild of it, no trigger of its fires).
CREATE TABLE note_evidence (
    note_id     INTEGER PRIMARY KEY REFERENCES notes (id) ON DELETE CASCADE,
    shown       INTEGER NOT NULL DEFAULT 0,
    used        INTEGER NOT NULL DEFAULT 0,
    ignored     INTEGER NOT NULL DEFAULT 0,
    used_at     INTEGER
);
