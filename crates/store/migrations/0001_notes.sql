-- Notes: one lesson of one skill, in one scope.
CREATE TABLE notes (
    id             INTEGER PRIMARY KEY,
    skill          TEXT    NOT NULL,
    scope          TEXT    NOT NULL CHECK (scope IN ('project', 'global')),
    -- the project a project-scoped note belongs to; '' for global notes
    project_id     TEXT    NOT NULL,
    -- the project the note was written from (kept for global notes too)
    origin_project TEXT    NOT NULL,
    source         TEXT    NOT NULL CHECK (source IN ('agent', 'historian')),
    kind           TEXT    NOT NULL CHECK (kind IN ('gotcha', 'discovery', 'fix', 'workflow')),
    intent         TEXT    NOT NULL DEFAULT '',
    delta          TEXT    NOT NULL,
    tags           TEXT    NOT NULL DEFAULT '[]',
    hits           INTEGER NOT NULL DEFAULT 0,
    recalls        INTEGER NOT NULL DEFAULT 0,
    pinned         INTEGER NOT NULL DEFAULT 0,
    norm_hash      TEXT    NOT NULL,
    skill_hash     TEXT,
    session_id     TEXT,
    created_at     INTEGER NOT NULL,
    updated_at     INTEGER NOT NULL,
    last_used_at   INTEGER,
    vector         BLOB,
    vector_model   TEXT
);

CREATE INDEX notes_by_skill ON notes (skill, scope, project_id);
CREATE UNIQUE INDEX notes_exact ON notes (skill, scope, project_id, norm_hash);

CREATE VIRTUAL TABLE notes_fts USING fts5 (
    intent, delta,
    content = 'notes', content_rowid = 'id',
    tokenize = 'porter unicode61'
);

CREATE TRIGGER notes_ai AFTER INSERT ON notes BEGIN
    INSERT INTO notes_fts (rowid, intent, delta) VALUES (new.id, new.intent, new.delta);
END;
CREATE TRIGGER notes_ad AFTER DELETE ON notes BEGIN
    INSERT INTO notes_fts (notes_fts, rowid, intent, delta) VALUES ('delete', old.id, old.intent, old.delta);
END;
CREATE TRIGGER notes_au AFTER UPDATE OF intent, delta ON notes BEGIN
    INSERT INTO notes_fts (notes_fts, rowid, intent, delta) VALUES ('delete', old.id, old.intent, old.delta);
    INSERT INTO notes_fts (rowid, intent, delta) VALUES (new.id, new.intent, new.delta);
END;

-- Small key/value facts the sidecar caches (e.g. a repository's root commit).
CREATE TABLE kv (
    key   TEXT PRIMARY KEY,
    value TEXT NOT NULL
);
