-- A mined lesson's support (docs/protocol.md, "Lessons from outcomes"): the distinct sessions
-- that mined the same lesson (the same program, the same change from the failed call to the
-- working one, the same error signature: the miner's `key`). A mined lesson is held (stored
-- `review = 'pending'`: out of recall, listed in review) until `memory.minedSupport` sessions
-- mined it, or a person accepts it. A lesson that came by import counts the sessions its
-- export said (`imported:` rows).
CREATE TABLE mined_support (
    skill       TEXT    NOT NULL,
    lesson_key  TEXT    NOT NULL,
    session_id  TEXT    NOT NULL,
    note_id     INTEGER NOT NULL REFERENCES notes (id) ON DELETE CASCADE,
    at          INTEGER NOT NULL,
    PRIMARY KEY (skill, lesson_key, session_id)
) WITHOUT ROWID;

CREATE INDEX mined_support_by_note ON mined_support (note_id);
