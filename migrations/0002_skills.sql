-- Session skills: installed sources and the skills each one provides.
CREATE TABLE skill_sources (
    source      TEXT PRIMARY KEY,
    pinned_ref  TEXT NOT NULL,
    requested_ref TEXT,
    installed_at INTEGER NOT NULL
);

CREATE TABLE installed_skills (
    name         TEXT PRIMARY KEY,
    source       TEXT NOT NULL REFERENCES skill_sources (source) ON DELETE CASCADE,
    description  TEXT NOT NULL DEFAULT '',
    pinned_ref   TEXT NOT NULL,
    subpath      TEXT NOT NULL,
    content_hash TEXT NOT NULL,
    store_path   TEXT NOT NULL,
    installed_at INTEGER NOT NULL,
    warnings     TEXT NOT NULL DEFAULT '[]'
);
