-- Lessons mined at a session's end (docs/historian.md, "Where mining runs").
--
-- The error → fix miner reads a session's reported calls (`call_log`, 0012) when the session
-- ends: it needs the command as the host ran it (the shell line, which `args` mixes with the
-- call's other arguments) and the lines of a failed call's output its error is read from
-- (`errors` keeps the lines that say error, for a note's use; the miner reads more).
ALTER TABLE call_log ADD COLUMN command TEXT NOT NULL DEFAULT '';
ALTER TABLE call_log ADD COLUMN key_lines TEXT NOT NULL DEFAULT '';

-- The failed calls the miner has judged (a lesson written, or refused), by session and the
-- call's position (`{"callId": ...}` or `{"recordIndex": N}`, as in a lesson's evidence): a
-- session that ends again, or a host's turn that ends again over the same transcript, mines
-- only what is new. Rows older than 30 days are dropped.
CREATE TABLE mined_calls (
    session_id  TEXT    NOT NULL,
    position    TEXT    NOT NULL,
    at          INTEGER NOT NULL,
    PRIMARY KEY (session_id, position)
) WITHOUT ROWID;
