-- A note's life on the team (docs/team.md): a note replaced or retired on one machine stays on
-- the server as history, and is replaced or retired on the others; a restore brings it back.
-- Only a purge (or a forget from a skillmem older than this schema) leaves a tombstone
-- (deleted, text cleared).
--   retired_at     when the note left recall, in ms since the epoch; NULL while it is current
--   superseded_by  the uid of the note that replaced it (NULL for a retirement)
--   reason         why it was retired or replaced, when someone said so
ALTER TABLE skillmem.notes ADD COLUMN retired_at bigint;
ALTER TABLE skillmem.notes ADD COLUMN superseded_by text;
ALTER TABLE skillmem.notes ADD COLUMN reason text;
