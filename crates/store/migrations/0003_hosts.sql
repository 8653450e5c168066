-- Hosts that cannot keep a sidecar running (Claude Code hooks): how far each session's
-- transcript has been read, and which skills the session used.
CREATE TABLE host_sessions (
    host        TEXT    NOT NULL,
    session_id  TEXT    NOT NULL,
    transcript  TEXT    NOT NULL,
    -- byte offset just past the last complete line read
    offset      INTEGER NOT NULL DEFAULT 0,
    updated_at  INTEGER NOT NULL,
    PRIMARY KEY (host, session_id)
);

CREATE TABLE skill_uses (
    id          INTEGER PRIMARY KEY,
    host        TEXT    NOT NULL,
    session_id  TEXT    NOT NULL,
    project_id  TEXT    NOT NULL,
    skill       TEXT    NOT NULL,
    used_at     INTEGER NOT NULL
);

CREATE INDEX skill_uses_by_skill ON skill_uses (skill, project_id);
