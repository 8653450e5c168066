-- What recall's in-memory catalog loads at start, as a covering index: a scan of it reads a
-- few MB instead of every note row with its vector (measured: the catalog load at 100k notes
-- dominated spawn-to-first-recall).
CREATE INDEX notes_catalog ON notes (skill, scope, project_id, pinned, hits, created_at);
