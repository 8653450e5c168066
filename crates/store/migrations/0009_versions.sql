-- A note's life (docs/protocol.md, "A note's life"): a note that is replaced or retired stays
-- in the table as history, out of recall and the default listings, until it is purged.
--   retired_at     when the note left recall (replaced by a newer version, or retired);
--                  NULL while it is current
--   superseded_by  the note that replaced it (NULL for a retirement)
--   reason         why it was retired or replaced, when someone said so
ALTER TABLE notes ADD COLUMN retired_at INTEGER;
ALTER TABLE notes ADD COLUMN superseded_by INTEGER;
ALTER TABLE notes ADD COLUMN reason TEXT;

-- Only current notes must differ in their normalised text: history may repeat a lesson that
-- was retired and written again.
DROP INDEX notes_exact;
CREATE UNIQUE INDEX notes_exact ON notes (skill, scope, project_id, norm_hash) WHERE retired_at IS NULL;

-- Recall's catalog reads current notes only, from the same covering index as before.
DROP INDEX notes_catalog;
CREATE INDEX notes_catalog ON notes (skill, scope, project_id, pinned, hits, created_at) WHERE retired_at IS NULL;

-- The versions of a note: which notes a note replaced.
CREATE INDEX notes_by_successor ON notes (superseded_by) WHERE superseded_by IS NOT NULL;

-- Conflicting pairs: a newer note that reads as a new version of an older one (the same
-- subject, other specifics or the other polarity), both kept. A pair is unresolved while both
-- are current; the newer leads in a block, the older names it.
CREATE TABLE note_conflicts (
    older      INTEGER NOT NULL REFERENCES notes (id) ON DELETE CASCADE,
    newer      INTEGER NOT NULL REFERENCES notes (id) ON DELETE CASCADE,
    created_at INTEGER NOT NULL,
    PRIMARY KEY (older, newer)
);
CREATE INDEX note_conflicts_by_newer ON note_conflicts (newer);

-- A history row written by this machine (the old text an edit keeps) is not a new note for
-- the team.
DROP TRIGGER team_note_ai;
CREATE TRIGGER team_note_ai AFTER INSERT ON notes
WHEN new.retired_at IS NULL AND EXISTS (SELECT 1 FROM team_state) AND NOT EXISTS (SELECT 1 FROM team_applying)
BEGIN
    INSERT INTO team_outbox (kind, note_id, hits) VALUES ('note', new.id, new.hits);
END;

-- A note that leaves recall here (replaced, retired, merged into another) leaves the team: the
-- server keeps a tombstone, as for a deleted note; this machine keeps the note as history. A
-- note restored later stays on this machine (its tombstone is not undone).
CREATE TRIGGER team_note_retire AFTER UPDATE OF retired_at ON notes
WHEN old.retired_at IS NULL AND new.retired_at IS NOT NULL AND NOT EXISTS (SELECT 1 FROM team_applying)
BEGIN
    INSERT INTO team_outbox (kind, note_id, uid)
        SELECT 'forget', old.id, uid FROM team_notes WHERE note_id = old.id AND held IS NULL;
    DELETE FROM team_outbox WHERE note_id = old.id AND kind <> 'forget';
    DELETE FROM team_notes WHERE note_id = old.id;
END;
