-- The team server's schema (PostgreSQL), created and migrated by skillmem (src/team/server.rs).
-- Isolation: row-level security keyed by team. A team belongs to the PostgreSQL role that
-- claimed it first (teams.owner); a login sees and writes the rows of the teams whose owner
-- role it is a member of, and no others (docs/team.md, "Isolation").
CREATE SCHEMA IF NOT EXISTS skillmem;

CREATE TABLE skillmem.version (
    one     boolean PRIMARY KEY DEFAULT true CHECK (one),
    version integer NOT NULL
);

-- The server sequence every change of every team takes a number from. Pushes of one team
-- are serialised (an advisory lock per team), so a team's numbers commit in order and a
-- cursor never steps over a number that commits later.
CREATE SEQUENCE skillmem.seq;

CREATE TABLE skillmem.teams (
    team       text PRIMARY KEY,
    owner      name NOT NULL DEFAULT current_user,
    created_at timestamptz NOT NULL DEFAULT now()
);

-- One row per note of a team (uid: hash of the note's skill, scope, project and first text),
-- as of its last change; a forgotten note stays as a tombstone (deleted, text cleared).
CREATE TABLE skillmem.notes (
    team           text    NOT NULL REFERENCES skillmem.teams (team),
    uid            text    NOT NULL,
    seq            bigint  NOT NULL,
    origin         text    NOT NULL,
    skill          text    NOT NULL,
    scope          text    NOT NULL,
    project_id     text    NOT NULL,
    origin_project text    NOT NULL,
    source         text    NOT NULL,
    kind           text    NOT NULL,
    intent         text    NOT NULL,
    delta          text    NOT NULL,
    tags           text    NOT NULL,
    pinned         boolean NOT NULL,
    hits           bigint  NOT NULL,
    norm_hash      text    NOT NULL,
    created_at     bigint  NOT NULL,
    updated_at     bigint  NOT NULL,
    deleted        boolean NOT NULL DEFAULT false,
    PRIMARY KEY (team, uid)
);
CREATE INDEX notes_by_seq ON skillmem.notes (team, seq);

-- The highest local event number applied per machine: a batch sent again applies once.
CREATE TABLE skillmem.machines (
    team     text   NOT NULL REFERENCES skillmem.teams (team),
    machine  text   NOT NULL,
    applied  bigint NOT NULL DEFAULT 0,
    seen_at  timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (team, machine)
);

ALTER TABLE skillmem.teams ENABLE ROW LEVEL SECURITY;
ALTER TABLE skillmem.teams FORCE ROW LEVEL SECURITY;
ALTER TABLE skillmem.notes ENABLE ROW LEVEL SECURITY;
ALTER TABLE skillmem.notes FORCE ROW LEVEL SECURITY;
ALTER TABLE skillmem.machines ENABLE ROW LEVEL SECURITY;
ALTER TABLE skillmem.machines FORCE ROW LEVEL SECURITY;

-- Team names are visible (to claim one, a login must see whether it is taken); a login can
-- claim a team only for itself.
CREATE POLICY teams_read ON skillmem.teams FOR SELECT USING (true);
CREATE POLICY teams_claim ON skillmem.teams FOR INSERT WITH CHECK (owner = current_user);

CREATE POLICY notes_member ON skillmem.notes
    USING (team IN (SELECT t.team FROM skillmem.teams t WHERE pg_has_role(current_user, t.owner, 'MEMBER')))
    WITH CHECK (team IN (SELECT t.team FROM skillmem.teams t WHERE pg_has_role(current_user, t.owner, 'MEMBER')));
CREATE POLICY machines_member ON skillmem.machines
    USING (team IN (SELECT t.team FROM skillmem.teams t WHERE pg_has_role(current_user, t.owner, 'MEMBER')))
    WITH CHECK (team IN (SELECT t.team FROM skillmem.teams t WHERE pg_has_role(current_user, t.owner, 'MEMBER')));

GRANT USAGE ON SCHEMA skillmem TO PUBLIC;
GRANT SELECT ON skillmem.version TO PUBLIC;
GRANT SELECT, INSERT ON skillmem.teams TO PUBLIC;
GRANT SELECT, INSERT, UPDATE ON skillmem.notes, skillmem.machines TO PUBLIC;
GRANT USAGE ON SEQUENCE skillmem.seq TO PUBLIC;
