-- What backs a note (docs/protocol.md, "Evidence"): for a lesson mined from a session's calls,
-- the failed call, its error lines, the call that worked and their positions; for a grounded
-- historian lesson, the error line it names. JSON, as the note's local `evidence`; NULL when
-- nothing backs it. The first evidence a note gets stays.
ALTER TABLE skillmem.notes ADD COLUMN evidence text;
