//! The team server: one PostgreSQL connection, its schema (created and migrated here,
//! versioned like the SQLite migrations), the team claim, pushes and pulls, and `LISTEN`.
//!
//! Blocking (the `postgres` crate): the engine is synchronous, and the server runs a sync in
//! `spawn_blocking`. Every failure becomes an [`Error::Storage`] whose message says what to do.

use std::sync::Arc;
use std::time::Duration;

use postgres::{Client, NoTls};

use crate::config::team::TeamConfig;
use crate::error::{Error, Result};
use crate::memory::store::{LessonSupport, NoteCounts, TeamNote};

/// The server schema's migrations, in order. Append only.
pub const MIGRATIONS: &[(&str, &str)] = &[
    ("0001_team", include_str!("../migrations/0001_team.sql")),
    ("0002_history", include_str!("../migrations/0002_history.sql")),
    ("0003_evidence", include_str!("../migrations/0003_evidence.sql")),
    ("0004_counts", include_str!("../migrations/0004_counts.sql")),
    ("0005_support", include_str!("../migrations/0005_support.sql")),
];

/// The server schema version this binary writes.
pub fn schema_version() -> i32 {
    MIGRATIONS.len() as i32
}

/// How long a connection attempt may take before it counts as a failure.
pub const CONNECT_TIMEOUT: Duration = Duration::from_secs(10);
/// How long one statement may take on the server.
const STATEMENT_TIMEOUT: &str = "60s";
/// The advisory lock key that serialises schema migrations.
const MIGRATION_LOCK: i64 = 0x736b_6d65_6d00;

/// What a pushed event asserts.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum EventKind {
    /// A new note (its whole row).
    Note,
    /// The note was written again here: hits to add.
    Hit,
    Pin,
    Edit,
    Scope,
    /// A purge: the server keeps a tombstone, the other machines delete the note.
    Forget,
    /// The note left recall (replaced, retired, merged): retired on the team, kept as history.
    Retire,
    /// The note came back into recall.
    Restore,
}

impl EventKind {
    /// The local outbox's spelling.
    pub fn parse(s: &str) -> Option<EventKind> {
        Some(match s {
            "note" => EventKind::Note,
            "hit" => EventKind::Hit,
            "pin" => EventKind::Pin,
            "edit" => EventKind::Edit,
            "scope" => EventKind::Scope,
            "forget" => EventKind::Forget,
            "retire" => EventKind::Retire,
            "restore" => EventKind::Restore,
            _ => return None,
        })
    }
}

/// One local change to push: `id` is this machine's event number (increasing).
#[derive(Debug, Clone)]
pub struct Event {
    pub id: i64,
    pub kind: EventKind,
    pub uid: String,
    /// The note's current state (absent for a forget).
    pub note: Option<TeamNote>,
    /// Hits to add (new notes, hits).
    pub hits: i64,
}

/// What a push did on the server.
#[derive(Debug, Clone, Default)]
pub struct Pushed {
    /// Events applied (the others had been applied by an earlier try).
    pub applied: usize,
    /// The uids the push found forgotten by the team (their local copies go too).
    pub forgotten: Vec<String>,
}

/// A row a pull brought: its server sequence, and the note (or its tombstone).
#[derive(Debug, Clone)]
pub struct Row {
    pub seq: i64,
    pub uid: String,
    pub deleted: bool,
    pub note: TeamNote,
}

/// A connection to the team server, for one team.
pub struct Remote {
    client: Client,
    team: String,
}

/// The `LISTEN` channel of a team (an identifier; the team's name hashed).
pub fn channel(team: &str) -> String {
    use sha2::{Digest, Sha256};
    let d = Sha256::digest(team.as_bytes());
    format!("skillmem_{}", d.iter().take(8).map(|b| format!("{b:02x}")).collect::<String>())
}

fn tls() -> tokio_postgres_rustls::MakeRustlsConnect {
    let mut roots = rustls::RootCertStore::empty();
    roots.extend(webpki_roots::TLS_SERVER_ROOTS.iter().cloned());
    let config = rustls::ClientConfig::builder_with_provider(Arc::new(rustls::crypto::ring::default_provider()))
        .with_safe_default_protocol_versions()
        .expect("ring supports the default TLS versions")
        .with_root_certificates(roots)
        .with_no_client_auth();
    tokio_postgres_rustls::MakeRustlsConnect::new(config)
}

/// Where the URL points, for messages (`host:port/db as user`).
fn describe(cfg: &postgres::Config) -> String {
    let host = cfg
        .get_hosts()
        .first()
        .map(|h| match h {
            postgres::config::Host::Tcp(s) => s.clone(),
            #[cfg(unix)]
            postgres::config::Host::Unix(p) => p.display().to_string(),
        })
        .unwrap_or_else(|| "localhost".into());
    let port = cfg.get_ports().first().copied().unwrap_or(5432);
    format!(
        "{host}:{port}/{} as {}",
        cfg.get_dbname().unwrap_or("(default database)"),
        cfg.get_user().unwrap_or("(default user)")
    )
}

/// The whole chain of an error's causes on one line.
fn chain(e: &dyn std::error::Error) -> String {
    let mut s = e.to_string();
    let mut src = e.source();
    while let Some(c) = src {
        let t = c.to_string();
        if !s.contains(&t) {
            s.push_str(": ");
            s.push_str(&t);
        }
        src = c.source();
    }
    s
}

/// A connection failure in words a person can act on.
fn connect_error(e: postgres::Error, at: &str, cfg: &TeamConfig) -> Error {
    use postgres::error::SqlState;
    if let Some(db) = e.as_db_error() {
        let code = db.code();
        if *code == SqlState::INVALID_PASSWORD || *code == SqlState::INVALID_AUTHORIZATION_SPECIFICATION {
            let var = cfg.password_env.as_deref().unwrap_or("(none: set team.passwordEnv)");
            return Error::storage(format!(
                "team server {at} refused the login: {}; check the role in team.url and the password in the variable named by team.passwordEnv ({var})",
                db.message()
            ));
        }
        if *code == SqlState::INVALID_CATALOG_NAME {
            return Error::storage(format!(
                "team server {at}: {}; create the database (CREATE DATABASE …) or fix team.url",
                db.message()
            ));
        }
        return Error::storage(format!("team server {at}: {}", db.message()));
    }
    Error::storage(format!(
        "cannot reach the team server {at}: {}; is it running and is team.url right? (sync retries with backoff; recall keeps working from this machine's notes)",
        chain(&e)
    ))
}

/// A failure after the connection was made.
fn server_error(e: postgres::Error, what: &str) -> Error {
    match e.as_db_error() {
        Some(db) => Error::storage(format!("team server: {what}: {} ({})", db.message(), db.code().code())),
        None => Error::storage(format!("team server: {what}: {}", chain(&e))),
    }
}

/// Connects with the configuration's URL and password, over TLS when the URL asks for it
/// (`sslmode=require`; `prefer`, the default, tries TLS first).
pub fn connect_client(cfg: &TeamConfig) -> Result<Client> {
    let mut pg: postgres::Config =
        cfg.url.parse().map_err(|e| Error::invalid(format!("team.url is not a PostgreSQL URL: {e}")))?;
    if let Some(pw) = cfg.password()? {
        pg.password(pw);
    }
    pg.application_name("skillmem");
    pg.connect_timeout(CONNECT_TIMEOUT);
    pg.keepalives(true);
    pg.keepalives_idle(Duration::from_secs(30));
    let at = describe(&pg);
    let client = match pg.get_ssl_mode() {
        postgres::config::SslMode::Disable => pg.connect(NoTls),
        _ => pg.connect(tls()),
    }
    .map_err(|e| connect_error(e, &at, cfg))?;
    Ok(client)
}

impl Remote {
    /// Connects, creates or migrates the server schema, and claims (or joins) the team.
    pub fn connect(cfg: &TeamConfig) -> Result<Remote> {
        let mut client = connect_client(cfg)?;
        client
            .batch_execute(&format!("SET statement_timeout = '{STATEMENT_TIMEOUT}'"))
            .map_err(|e| server_error(e, "cannot set the statement timeout"))?;
        migrate(&mut client)?;
        let mut r = Remote { client, team: cfg.team.clone() };
        r.claim()?;
        Ok(r)
    }

    /// Makes the team exist and checks that this login may use it.
    fn claim(&mut self) -> Result<()> {
        self.client
            .execute("INSERT INTO skillmem.teams (team) VALUES ($1) ON CONFLICT (team) DO NOTHING", &[&self.team])
            .map_err(|e| server_error(e, "cannot claim the team"))?;
        let row = self
            .client
            .query_one(
                "SELECT owner::text, pg_has_role(current_user, owner, 'MEMBER'), current_user::text FROM skillmem.teams WHERE team = $1",
                &[&self.team],
            )
            .map_err(|e| server_error(e, "cannot read the team"))?;
        let (owner, member, me): (String, bool, String) = (row.get(0), row.get(1), row.get(2));
        if !member {
            return Err(Error::storage(format!(
                "team {:?} belongs to the PostgreSQL role {owner}, and {me} is not a member of it; log in as {owner}, have {owner} run GRANT {owner} TO {me}, or choose another team name",
                self.team
            )));
        }
        Ok(())
    }

    /// Applies `events` (in order) in one transaction, skipping those an earlier try of the
    /// same batch applied, and wakes the team's listeners.
    pub fn push(&mut self, machine: &str, events: &[Event]) -> Result<Pushed> {
        let team = self.team.clone();
        let mut out = Pushed::default();
        let mut tx = self.client.transaction().map_err(|e| server_error(e, "cannot start a push"))?;
        let err = |e| server_error(e, "push failed");
        tx.execute("SELECT pg_advisory_xact_lock(hashtext('skillmem:' || $1))", &[&team]).map_err(err)?;
        tx.execute(
            "INSERT INTO skillmem.machines (team, machine) VALUES ($1, $2) ON CONFLICT DO NOTHING",
            &[&team, &machine],
        )
        .map_err(err)?;
        let applied: i64 = tx
            .query_one("SELECT applied FROM skillmem.machines WHERE team = $1 AND machine = $2", &[&team, &machine])
            .map_err(err)?
            .get(0);
        let insert = tx
            .prepare(
                "INSERT INTO skillmem.notes (team, uid, seq, origin, skill, scope, project_id, origin_project, source, kind,
                     intent, delta, tags, pinned, hits, norm_hash, created_at, updated_at, retired_at, superseded_by, reason,
                     evidence)
                 VALUES ($1, $2, nextval('skillmem.seq'), $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15, $16, $17,
                         $18, $19, $20, $21)
                 ON CONFLICT (team, uid) DO UPDATE
                     SET hits = skillmem.notes.hits + excluded.hits
                             + CASE WHEN skillmem.notes.origin <> excluded.origin THEN 1 ELSE 0 END,
                         -- The first evidence a note gets stays.
                         evidence = COALESCE(skillmem.notes.evidence, excluded.evidence),
                         seq = excluded.seq,
                         -- The lesson written again as a current note brings a retired row back.
                         retired_at = CASE WHEN excluded.retired_at IS NULL THEN NULL ELSE skillmem.notes.retired_at END,
                         superseded_by = CASE WHEN excluded.retired_at IS NULL THEN NULL ELSE skillmem.notes.superseded_by END,
                         reason = CASE WHEN excluded.retired_at IS NULL THEN NULL ELSE skillmem.notes.reason END
                     WHERE NOT skillmem.notes.deleted",
            )
            .map_err(err)?;
        let mut last = applied;
        for ev in events.iter().filter(|e| e.id > applied) {
            last = last.max(ev.id);
            out.applied += 1;
            let uid = &ev.uid;
            let changed = match (ev.kind, &ev.note) {
                (EventKind::Forget, _) => {
                    tx.execute(
                        "INSERT INTO skillmem.notes (team, uid, seq, origin, skill, scope, project_id, origin_project, source,
                             kind, intent, delta, tags, pinned, hits, norm_hash, created_at, updated_at, deleted)
                         VALUES ($1, $2, nextval('skillmem.seq'), $3, '', 'global', '', '', 'agent', 'gotcha', '', '', '[]',
                                 false, 0, '', 0, 0, true)
                         ON CONFLICT (team, uid) DO UPDATE SET deleted = true, intent = '', delta = '', tags = '[]',
                             pinned = false, reason = NULL, seq = excluded.seq
                         WHERE NOT skillmem.notes.deleted",
                        &[&team, uid, &machine],
                    )
                    .map_err(err)?;
                    continue;
                }
                (_, None) => continue,
                (EventKind::Note, Some(n)) => insert_note(&mut tx, &insert, &team, uid, machine, n, ev.hits)?,
                (EventKind::Hit, Some(_)) => tx
                    .execute(
                        "UPDATE skillmem.notes SET hits = hits + $3, seq = nextval('skillmem.seq')
                         WHERE team = $1 AND uid = $2 AND NOT deleted",
                        &[&team, uid, &ev.hits],
                    )
                    .map_err(err)?,
                (EventKind::Pin, Some(n)) => tx
                    .execute(
                        "UPDATE skillmem.notes SET pinned = $3, seq = nextval('skillmem.seq')
                         WHERE team = $1 AND uid = $2 AND NOT deleted",
                        &[&team, uid, &n.pinned],
                    )
                    .map_err(err)?,
                (EventKind::Edit, Some(n)) => tx
                    .execute(
                        "UPDATE skillmem.notes SET delta = $3, intent = $4, norm_hash = $5, tags = $6, updated_at = $7,
                             evidence = COALESCE(evidence, $8), seq = nextval('skillmem.seq')
                         WHERE team = $1 AND uid = $2 AND NOT deleted",
                        &[&team, uid, &n.delta, &n.intent, &n.norm_hash, &n.tags, &n.updated_at, &n.evidence],
                    )
                    .map_err(err)?,
                (EventKind::Retire, Some(n)) => tx
                    .execute(
                        "UPDATE skillmem.notes SET retired_at = $3, superseded_by = $4, reason = $5, seq = nextval('skillmem.seq')
                         WHERE team = $1 AND uid = $2 AND NOT deleted",
                        &[&team, uid, &n.retired_at.or(Some(n.updated_at)), &n.superseded_by, &n.reason],
                    )
                    .map_err(err)?,
                (EventKind::Restore, Some(_)) => tx
                    .execute(
                        "UPDATE skillmem.notes SET retired_at = NULL, superseded_by = NULL, reason = NULL,
                             seq = nextval('skillmem.seq')
                         WHERE team = $1 AND uid = $2 AND NOT deleted",
                        &[&team, uid],
                    )
                    .map_err(err)?,
                (EventKind::Scope, Some(n)) => tx
                    .execute(
                        "UPDATE skillmem.notes SET scope = $3, project_id = $4, seq = nextval('skillmem.seq')
                         WHERE team = $1 AND uid = $2 AND NOT deleted",
                        &[&team, uid, &n.scope, &n.project_id],
                    )
                    .map_err(err)?,
            };
            if changed == 0 {
                // Either the team forgot the note, or the server does not have it (a change
                // whose note row is missing): the first is reported, the second re-sent whole.
                let deleted: Option<bool> = tx
                    .query_opt("SELECT deleted FROM skillmem.notes WHERE team = $1 AND uid = $2", &[&team, uid])
                    .map_err(err)?
                    .map(|r| r.get(0));
                match (deleted, &ev.note) {
                    (Some(true), _) => out.forgotten.push(uid.clone()),
                    (None, Some(n)) => {
                        insert_note(&mut tx, &insert, &team, uid, machine, n, n.hits)?;
                    }
                    _ => {}
                }
            }
        }
        tx.execute(
            "UPDATE skillmem.machines SET applied = $3, seen_at = now() WHERE team = $1 AND machine = $2",
            &[&team, &machine, &last],
        )
        .map_err(err)?;
        if out.applied > 0 {
            tx.execute("SELECT pg_notify($1, '')", &[&channel(&team)]).map_err(err)?;
        }
        tx.commit().map_err(|e| server_error(e, "push failed at commit"))?;
        Ok(out)
    }

    /// The team's rows changed after `cursor`, in server order, at most `limit`.
    pub fn pull(&mut self, cursor: i64, limit: i64) -> Result<Vec<Row>> {
        let rows = self
            .client
            .query(
                "SELECT seq, uid, deleted, skill, scope, project_id, origin_project, source, kind, intent, delta, tags,
                        pinned, hits, norm_hash, created_at, updated_at, retired_at, superseded_by, reason, evidence
                 FROM skillmem.notes WHERE team = $1 AND seq > $2 ORDER BY seq LIMIT $3",
                &[&self.team, &cursor, &limit],
            )
            .map_err(|e| server_error(e, "pull failed"))?;
        Ok(rows
            .into_iter()
            .map(|r| Row {
                seq: r.get(0),
                uid: r.get(1),
                deleted: r.get(2),
                note: TeamNote {
                    skill: r.get(3),
                    scope: r.get(4),
                    project_id: r.get(5),
                    origin_project: r.get(6),
                    source: r.get(7),
                    kind: r.get(8),
                    intent: r.get(9),
                    delta: r.get(10),
                    tags: r.get(11),
                    pinned: r.get(12),
                    hits: r.get(13),
                    norm_hash: r.get(14),
                    created_at: r.get(15),
                    updated_at: r.get(16),
                    retired_at: r.get(17),
                    superseded_by: r.get(18),
                    reason: r.get(19),
                    evidence: r.get(20),
                },
            })
            .collect())
    }

    /// Replaces this machine's counts of the notes in `rows` (each row whole: a push sent twice
    /// counts once), and wakes the team's listeners when any changed.
    pub fn push_counts(&mut self, machine: &str, rows: &[NoteCounts]) -> Result<()> {
        if rows.is_empty() {
            return Ok(());
        }
        let team = self.team.clone();
        let mut tx = self.client.transaction().map_err(|e| server_error(e, "cannot start a push of counts"))?;
        let err = |e| server_error(e, "push of counts failed");
        // Serialised with the team's other pushes, so that a pull's cursor never steps over a
        // sequence number that commits later.
        tx.execute("SELECT pg_advisory_xact_lock(hashtext('skillmem:' || $1))", &[&team]).map_err(err)?;
        let put = tx
            .prepare(
                "INSERT INTO skillmem.note_counts (team, uid, machine, seq, shown, used, ignored, used_elsewhere, used_at, vouched,
                                                   withheld, appeared)
                 VALUES ($1, $2, $3, nextval('skillmem.seq'), $4, $5, $6, $7, $8, $9, $10, $11)
                 ON CONFLICT (team, uid, machine) DO UPDATE
                     SET shown = excluded.shown, used = excluded.used, ignored = excluded.ignored,
                         used_elsewhere = excluded.used_elsewhere, used_at = excluded.used_at,
                         vouched = excluded.vouched, withheld = excluded.withheld, appeared = excluded.appeared,
                         seq = excluded.seq
                     WHERE (skillmem.note_counts.shown, skillmem.note_counts.used, skillmem.note_counts.ignored,
                            skillmem.note_counts.used_elsewhere, skillmem.note_counts.vouched,
                            skillmem.note_counts.withheld, skillmem.note_counts.appeared)
                           IS DISTINCT FROM (excluded.shown, excluded.used, excluded.ignored,
                                             excluded.used_elsewhere, excluded.vouched, excluded.withheld,
                                             excluded.appeared)
                        OR skillmem.note_counts.used_at IS DISTINCT FROM excluded.used_at",
            )
            .map_err(err)?;
        let mut changed = 0;
        for c in rows {
            changed += tx
                .execute(
                    &put,
                    &[
                        &team,
                        &c.uid,
                        &machine,
                        &c.shown,
                        &c.used,
                        &c.ignored,
                        &c.used_elsewhere,
                        &c.used_at,
                        &c.vouched,
                        &c.withheld,
                        &c.appeared,
                    ],
                )
                .map_err(err)?;
        }
        if changed > 0 {
            tx.execute("SELECT pg_notify($1, '')", &[&channel(&team)]).map_err(err)?;
        }
        tx.commit().map_err(|e| server_error(e, "push of counts failed at commit"))?;
        Ok(())
    }

    /// The other machines' counts changed after `cursor`, in server order, at most `limit`,
    /// each with its sequence number.
    pub fn pull_counts(&mut self, machine: &str, cursor: i64, limit: i64) -> Result<Vec<(i64, NoteCounts)>> {
        let rows = self
            .client
            .query(
                "SELECT seq, uid, machine, shown, used, ignored, used_elsewhere, used_at, vouched, withheld, appeared
                 FROM skillmem.note_counts WHERE team = $1 AND seq > $2 AND machine <> $3 ORDER BY seq LIMIT $4",
                &[&self.team, &cursor, &machine, &limit],
            )
            .map_err(|e| server_error(e, "pull of counts failed"))?;
        Ok(rows
            .into_iter()
            .map(|r| {
                (
                    r.get(0),
                    NoteCounts {
                        uid: r.get(1),
                        machine: r.get(2),
                        shown: r.get(3),
                        used: r.get(4),
                        ignored: r.get(5),
                        used_elsewhere: r.get(6),
                        used_at: r.get(7),
                        vouched: r.get(8),
                        withheld: r.get(9),
                        appeared: r.get(10),
                    },
                )
            })
            .collect())
    }

    /// Replaces this machine's support of the lessons in `rows` (each row whole: a push sent
    /// twice counts once; a lesson at 0 is no longer mined here), and wakes the team's
    /// listeners when any changed. A lesson is named by its key's hash, never by its text.
    pub fn push_support(&mut self, machine: &str, rows: &[LessonSupport]) -> Result<()> {
        if rows.is_empty() {
            return Ok(());
        }
        let team = self.team.clone();
        let mut tx = self.client.transaction().map_err(|e| server_error(e, "cannot start a push of support"))?;
        let err = |e| server_error(e, "push of support failed");
        // Serialised with the team's other pushes (the pull's cursor, as for the counts).
        tx.execute("SELECT pg_advisory_xact_lock(hashtext('skillmem:' || $1))", &[&team]).map_err(err)?;
        let put = tx
            .prepare(
                "INSERT INTO skillmem.lesson_support (team, skill, key_hash, machine, seq, sessions)
                 VALUES ($1, $2, $3, $4, nextval('skillmem.seq'), $5)
                 ON CONFLICT (team, skill, key_hash, machine) DO UPDATE
                     SET sessions = excluded.sessions, seq = excluded.seq
                     WHERE skillmem.lesson_support.sessions IS DISTINCT FROM excluded.sessions",
            )
            .map_err(err)?;
        let mut changed = 0;
        for c in rows {
            changed += tx.execute(&put, &[&team, &c.skill, &c.key_hash, &machine, &c.sessions]).map_err(err)?;
        }
        if changed > 0 {
            tx.execute("SELECT pg_notify($1, '')", &[&channel(&team)]).map_err(err)?;
        }
        tx.commit().map_err(|e| server_error(e, "push of support failed at commit"))?;
        Ok(())
    }

    /// The other machines' support changed after `cursor`, in server order, at most `limit`,
    /// each with its sequence number.
    pub fn pull_support(&mut self, machine: &str, cursor: i64, limit: i64) -> Result<Vec<(i64, LessonSupport)>> {
        let rows = self
            .client
            .query(
                "SELECT seq, skill, key_hash, machine, sessions FROM skillmem.lesson_support
                 WHERE team = $1 AND seq > $2 AND machine <> $3 ORDER BY seq LIMIT $4",
                &[&self.team, &cursor, &machine, &limit],
            )
            .map_err(|e| server_error(e, "pull of support failed"))?;
        Ok(rows
            .into_iter()
            .map(|r| {
                (r.get(0), LessonSupport { skill: r.get(1), key_hash: r.get(2), machine: r.get(3), sessions: r.get(4) })
            })
            .collect())
    }

    /// The highest server sequence of the team (for `sync status`).
    pub fn head(&mut self) -> Result<i64> {
        Ok(self
            .client
            .query_one("SELECT COALESCE(max(seq), 0) FROM skillmem.notes WHERE team = $1", &[&self.team])
            .map_err(|e| server_error(e, "cannot read the team's head"))?
            .get(0))
    }
}

#[allow(clippy::too_many_arguments)]
fn insert_note(
    tx: &mut postgres::Transaction<'_>,
    insert: &postgres::Statement,
    team: &str,
    uid: &str,
    machine: &str,
    n: &TeamNote,
    hits: i64,
) -> Result<u64> {
    tx.execute(
        insert,
        &[
            &team,
            &uid,
            &machine,
            &n.skill,
            &n.scope,
            &n.project_id,
            &n.origin_project,
            &n.source,
            &n.kind,
            &n.intent,
            &n.delta,
            &n.tags,
            &n.pinned,
            &hits,
            &n.norm_hash,
            &n.created_at,
            &n.updated_at,
            &n.retired_at,
            &n.superseded_by,
            &n.reason,
            &n.evidence,
        ],
    )
    .map_err(|e| server_error(e, "push failed"))
}

/// Creates the schema, or applies the migrations it lacks; refuses a newer one.
fn migrate(client: &mut Client) -> Result<()> {
    let known = schema_version();
    let mut tx = client.transaction().map_err(|e| server_error(e, "cannot start the schema check"))?;
    tx.execute("SELECT pg_advisory_xact_lock($1)", &[&MIGRATION_LOCK])
        .map_err(|e| server_error(e, "cannot lock the schema"))?;
    let exists: bool = tx
        .query_one("SELECT to_regclass('skillmem.version') IS NOT NULL", &[])
        .map_err(|e| server_error(e, "cannot read the schema"))?
        .get(0);
    let current: i32 = if exists {
        tx.query_opt("SELECT version FROM skillmem.version", &[])
            .map_err(|e| server_error(e, "cannot read the schema version"))?
            .map(|r| r.get(0))
            .unwrap_or(0)
    } else {
        0
    };
    if current > known {
        return Err(Error::storage(format!(
            "the team server's schema is version {current}, newer than this skillmem knows (version {known}); upgrade skillmem on this machine (recall keeps working from this machine's notes meanwhile)"
        )));
    }
    for (i, (name, sql)) in MIGRATIONS.iter().enumerate().skip(current as usize) {
        tx.batch_execute(sql).map_err(|e| {
            let why = e.as_db_error().map(|d| d.message().to_string()).unwrap_or_else(|| chain(&e));
            Error::storage(format!(
                "cannot create the team server's schema (migration {name}): {why}; run skillmem sync once as the database's owner (or a role with CREATE on it), then the team's roles can use it"
            ))
        })?;
        let v = i as i32 + 1;
        tx.execute(
            "INSERT INTO skillmem.version (one, version) VALUES (true, $1) ON CONFLICT (one) DO UPDATE SET version = $1",
            &[&v],
        )
        .map_err(|e| server_error(e, "cannot record the schema version"))?;
        tracing::info!(migration = name, "applied team server migration");
    }
    tx.commit().map_err(|e| server_error(e, "cannot commit the schema"))?;
    Ok(())
}

/// A connection that waits for the team's notifications.
pub struct Listener {
    client: Client,
}

impl Listener {
    /// Connects and listens on the team's channel.
    pub fn connect(cfg: &TeamConfig) -> Result<Listener> {
        let mut client = connect_client(cfg)?;
        client
            .batch_execute(&format!("LISTEN {}", channel(&cfg.team)))
            .map_err(|e| server_error(e, "cannot listen"))?;
        Ok(Listener { client })
    }

    /// Waits up to `timeout` for a notification: `Ok(true)` when one came (all that are
    /// queued are taken), `Ok(false)` at the timeout, an error when the connection broke.
    pub fn wait(&mut self, timeout: Duration) -> Result<bool> {
        use postgres::fallible_iterator::FallibleIterator;
        let got = {
            let mut n = self.client.notifications();
            let first = n.timeout_iter(timeout).next();
            if let Ok(Some(_)) = first {
                // Take what else is queued: one sync answers them all.
                while let Ok(Some(_)) = n.iter().next() {}
            }
            first
        };
        match got {
            Ok(Some(_)) => Ok(true),
            Ok(None) if self.client.is_closed() => Err(Error::storage("team server: the listening connection closed")),
            Ok(None) => Ok(false),
            Err(e) => Err(server_error(e, "the listening connection broke")),
        }
    }
}
