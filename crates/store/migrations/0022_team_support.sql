-- A held mined lesson's support across the team (docs/team.md, "What travels"; team schema
-- 0005).
--
-- The other machines' support of each lesson: per skill and SHA-256 (hex) of the lesson's key,
-- how many distinct sessions of that machine mined it, replaced whole by each pull. A lesson's
-- support is this machine's sessions plus these.
CREATE TABLE mined_support_remote (
    skill    TEXT    NOT NULL,
    key_hash TEXT    NOT NULL,
    machine  TEXT    NOT NULL,
    sessions INTEGER NOT NULL,
    PRIMARY KEY (skill, key_hash, machine)
) WITHOUT ROWID;
-- What this machine last pushed of each lesson's support: a lesson whose count differs is
-- pushed (a lesson gone from here is pushed once more, at 0).
CREATE TABLE mined_support_sent (
    skill    TEXT    NOT NULL,
    key_hash TEXT    NOT NULL,
    sessions INTEGER NOT NULL,
    PRIMARY KEY (skill, key_hash)
) WITHOUT ROWID;
-- The server sequence the support pull has reached (apart from the notes' and counts' cursors).
ALTER TABLE team_state ADD COLUMN support_cursor INTEGER NOT NULL DEFAULT 0;

