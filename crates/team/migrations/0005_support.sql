-- A held mined lesson's support across the team (docs/team.md, "What travels"): per machine,
-- per skill and lesson, how many distinct sessions of that machine mined it. The lesson is
-- named by the SHA-256 (hex) of its key, never by its text: a held lesson stays on the machine
-- that mined it, and the team learns only that its key recurred. One row per (team, skill,
-- key hash, machine), replaced whole by each push of that machine (never added to), so a push
-- sent twice counts once; every machine adds the others' rows to its own sessions. `seq`
-- orders rows for the pull.
CREATE TABLE skillmem.lesson_support (
    team     text   NOT NULL REFERENCES skillmem.teams (team),
    skill    text   NOT NULL,
    key_hash text   NOT NULL,
    machine  text   NOT NULL,
    seq      bigint NOT NULL,
    sessions bigint NOT NULL,
    PRIMARY KEY (team, skill, key_hash, machine)
);
CREATE INDEX lesson_support_by_seq ON skillmem.lesson_support (team, seq);

ALTER TABLE skillmem.lesson_support ENABLE ROW LEVEL SECURITY;
ALTER TABLE skillmem.lesson_support FORCE ROW LEVEL SECURITY;
CREATE POLICY lesson_support_member ON skillmem.lesson_support
    USING (team IN (SELECT t.team FROM skillmem.teams t WHERE pg_has_role(current_user, t.owner, 'MEMBER')))
    WITH CHECK (team IN (SELECT t.team FROM skillmem.teams t WHERE pg_has_role(current_user, t.owner, 'MEMBER')));
GRANT SELECT, INSERT, UPDATE ON skillmem.lesson_support TO PUBLIC;

-- The holdout's counts (docs/protocol.md, "Use and trust") travel with the other per-machine
-- counts: sessions that withheld the note, and of those the sessions whose calls carried its
-- specific anyway, so that every machine's lift reads the whole team's sessions.
ALTER TABLE skillmem.note_counts ADD COLUMN withheld bigint NOT NULL DEFAULT 0;
ALTER TABLE skillmem.note_counts ADD COLUMN appeared bigint NOT NULL DEFAULT 0;
