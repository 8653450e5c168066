-- Session skills: installed sources and the skills each one provides.
-- A source is the normalised URL or absolute path it was installed from; each skill row
-- points at its immutable, content-addressed folder under <dataDir>/store.
CREATE TABLE skill_sources (
    source        TEXT PRIMARY KEY,
    requested_ref TEXT,
    pinned_ref    TEXT NOT NULL,
    installed_at  INTEGER NOT NULL,
    updated_at    INTEGER NOT NULL
);

CREATE TABLE installed_skills (
    name         TEXT PRIMARY KEY,
    source       TEXT NOT NULL REFERENCES skill_sources (source) ON DELETE CASCADE,
    description  TEXT NOT NULL DEFAULT '',
    pinned_ref   TEXT NOT NULL,
    subpath      TEXT NOT NULL,
    content_hash TEXT NOT NULL,
    -- relative to the data directory, e.g. store/pdf/<contentHash>
    store_path   TEXT NOT NULL,
    installed_at INTEGER NOT NULL,
    warnings     TEXT NOT NULL DEFAULT '[]'
);

CREATE INDEX installed_skills_by_source ON installed_skills (source);
