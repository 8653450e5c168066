-- Lessons mined at a session's end (docs/historian.md, "Where mining runs").
--
-- The error → fix miner reads a session's reported calls (`call_log`, 0012) when the session
-- ends: it needs the command as the host ran it (the shell line, which `args` mixes with the
-- call's other arguments) and the lines of a failed call's output its error is read from
-- (`errors` keeps the lines that say error, for a note's use; the miner reads more).
ALTER TABLE call_log ADD COLUMN command TEXT NOT NULL DEFAULT '';
ALTER TABLE call_log ADD COLUMN key_lines TEXT NOT NULL DEFAULT '';

-- The pairs the miner has judged in a session (a lesson written, or refused): a digest of
-- the skill in use, the failed call and the call that worked, as the lesson's evidence
-- quotes them. A session that ends again, a host's turn that ends again over the same
-- transcript, or a door that mines the transcript whose calls the session's log also holds,
-- judges each pair once. Rows older than 30 days are dropped.
CREATE TABLE mined_pairs (
    session_id  TEXT    NOT NULL,
    pair        TEXT    NOT NULL,
    at          INTEGER NOT NULL,
    PRIMARY KEY (session_id, pair)
) WITHOUT ROWID;
