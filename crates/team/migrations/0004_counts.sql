-- Each machine's own counts of a note (docs/team.md, "What travels"): how many of its sessions
-- were shown, used and ignored the note, used it in a session other than the writer's, when
-- it last used it, and whether a person there vouched for it. One row per (team, note, machine),
-- replaced whole by each push of that machine (never added to), so a push sent twice counts
-- once; every machine sums the others' rows with its own. `seq` orders rows for the pull.
CREATE TABLE skillmem.note_counts (
    team           text    NOT NULL REFERENCES skillmem.teams (team),
    uid            text    NOT NULL,
    machine        text    NOT NULL,
    seq            bigint  NOT NULL,
    shown          bigint  NOT NULL,
    used           bigint  NOT NULL,
    ignored        bigint  NOT NULL,
    used_elsewhere bigint  NOT NULL,
    used_at        bigint,
    vouched        boolean NOT NULL,
    PRIMARY KEY (team, uid, machine)
);
CREATE INDEX note_counts_by_seq ON skillmem.note_counts (team, seq);

ALTER TABLE skillmem.note_counts ENABLE ROW LEVEL SECURITY;
ALTER TABLE skillmem.note_counts FORCE ROW LEVEL SECURITY;
CREATE POLICY note_counts_member ON skillmem.note_counts
    USING (team IN (SELECT t.team FROM skillmem.teams t WHERE pg_has_role(current_user, t.owner, 'MEMBER')))
    WITH CHECK (team IN (SELECT t.team FROM skillmem.teams t WHERE pg_has_role(current_user, t.owner, 'MEMBER')));
GRANT SELECT, INSERT, UPDATE ON skillmem.note_counts TO PUBLIC;
