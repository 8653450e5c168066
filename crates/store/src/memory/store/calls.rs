//! Sessions' calls and notes' evidence (migration 0012): every statement over `tool_sessions`,
//! `call_log`, `note_sessions` and `note_evidence`. A call is appended to its session's log;
//! a session's accounting writes what it said of each note it was shown, once per session, and
//! prunes the log of sessions that ended long ago.

use std::collections::HashMap;

use rusqlite::{params, Connection, OptionalExtension};

use super::{Candidate, Candidates};
use crate::db::{now_ms, write_tx};
use crate::error::Result;
use crate::memory::calls::{Call, SESSION_CALLS_MAX};
use crate::memory::evidence::{Evidence, Uses};

/// How long the calls of an ended session are kept (ms).
pub const KEEP_ENDED_MS: i64 = 7 * 86_400_000;
/// How many ended sessions' calls are kept at most.
pub const KEEP_ENDED_SESSIONS: i64 = 500;
/// A session with no call for this long is dropped, ended or not (ms): its process is gone.
pub const KEEP_SILENT_MS: i64 = 30 * 86_400_000;

/// Appends calls to their sessions' logs, in one transaction. A session past
/// [`SESSION_CALLS_MAX`] calls keeps only its skill loads; a session that had ended opens again.
pub fn record_calls(conn: &mut Connection, project: &str, calls: &[Call]) -> Result<()> {
    if calls.is_empty() {
        return Ok(());
    }
    let tx = write_tx(conn)?;
    {
        let mut session = tx.prepare_cached(
            "INSERT INTO tool_sessions (session_id, project_id, calls, started_at, last_at) VALUES (?1, ?2, 0, ?3, ?3)
             ON CONFLICT (session_id) DO UPDATE SET last_at = max(last_at, excluded.last_at), ended_at = NULL
             RETURNING calls",
        )?;
        let mut insert = tx.prepare_cached(
            "INSERT INTO call_log (session_id, position, call_id, tool, skill, shown, args, failed, exit_code, errors, at,
                                   command, key_lines, withheld)
             VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14)",
        )?;
        let mut count = tx.prepare_cached("UPDATE tool_sessions SET calls = calls + 1 WHERE session_id = ?1")?;
        for c in calls {
            let n: i64 = session.query_row(params![c.session, project, c.at], |r| r.get(0))?;
            if n >= SESSION_CALLS_MAX && c.skill.is_none() {
                continue;
            }
            let shown = c.skill.as_ref().map(|_| serde_json::to_string(&c.shown).unwrap_or_else(|_| "[]".into()));
            let withheld = (!c.withheld.is_empty()).then(|| serde_json::to_string(&c.withheld).unwrap_or_default());
            insert.execute(params![
                c.session,
                c.position,
                c.call_id,
                c.tool,
                c.skill,
                shown,
                c.args,
                c.failed,
                c.exit_code,
                c.errors,
                c.at,
                c.command,
                c.key_lines,
                withheld
            ])?;
            count.execute([&c.session])?;
        }
    }
    tx.commit()?;
    Ok(())
}

/// The calls of `session`, in arrival order.
pub fn session_calls(conn: &Connection, session: &str) -> Result<Vec<Call>> {
    let mut st = conn.prepare_cached(
        "SELECT session_id, position, call_id, tool, skill, shown, args, failed, exit_code, errors, at, command, key_lines,
                withheld
         FROM call_log WHERE session_id = ?1 ORDER BY position, id",
    )?;
    let rows = st.query_map([session], |r| {
        let shown: Option<String> = r.get(5)?;
        Ok(Call {
            session: r.get(0)?,
            position: r.get(1)?,
            call_id: r.get(2)?,
            tool: r.get(3)?,
            skill: r.get(4)?,
            shown: shown.and_then(|s| serde_json::from_str(&s).ok()).unwrap_or_default(),
            args: r.get(6)?,
            failed: r.get(7)?,
            exit_code: r.get(8)?,
            errors: r.get(9)?,
            at: r.get(10)?,
            command: r.get(11)?,
            key_lines: r.get(12)?,
            withheld: r.get::<_, Option<String>>(13)?.and_then(|s| serde_json::from_str(&s).ok()).unwrap_or_default(),
        })
    })?;
    Ok(rows.collect::<rusqlite::Result<_>>()?)
}

/// How many of the store's other sessions a note's specifics are compared against (the base
/// rate of [`crate::memory::evidence::distinctive`]): the most recent.
pub const REFERENCE_SESSIONS: i64 = 100;

/// One of the store's other sessions, as a base rate reads it: its calls that are not skill
/// loads, and where each skill's first load falls among them and among its loads. Read once
/// per session at a session's end, however many skills of the ending session compare
/// against it: read whole once per skill, an end that had loaded ten skills held ten copies of
/// up to [`REFERENCE_SESSIONS`] logs of up to [`SESSION_CALLS_MAX`] calls and more loads.
#[derive(Debug, Clone, Default)]
pub struct Reference {
    pub session: String,
    /// Its calls that are not skill loads, in order.
    pub calls: Vec<ReferenceCall>,
    /// Each note its loads showed, and the last of its loads (counted from 0) that showed it.
    pub shown: HashMap<i64, u32>,
    /// Each skill it loaded: how many of `calls` came before its first load of it, and which
    /// of its loads that was.
    pub first_load: HashMap<String, (usize, u32)>,
}

/// What a base rate reads of a call that is not a skill load.
#[derive(Debug, Clone)]
pub struct ReferenceCall {
    pub args: String,
    pub errors: String,
    /// The tool only reads ([`crate::memory::calls::reads_only`]).
    pub read_only: bool,
}

/// The most recent [`REFERENCE_SESSIONS`] sessions other than `except` (ended or not), those
/// that loaded `skill` first, each with whether it loaded `skill`: what the store's sessions
/// do without a note ([`reference`] reads each).
pub fn reference_sessions(conn: &Connection, skill: &str, except: &str) -> Result<Vec<(String, bool)>> {
    let mut st = conn.prepare_cached(
        "SELECT session_id, EXISTS (SELECT 1 FROM call_log l WHERE l.session_id = t.session_id AND l.skill = ?1) AS same
         FROM tool_sessions t WHERE session_id <> ?2 ORDER BY same DESC, last_at DESC, session_id LIMIT ?3",
    )?;
    let ids = st
        .query_map(params![skill, except, REFERENCE_SESSIONS], |r| Ok((r.get(0)?, r.get(1)?)))?
        .collect::<rusqlite::Result<_>>()?;
    Ok(ids)
}

/// The log of `session` as a base rate reads it.
pub fn reference(conn: &Connection, session: &str) -> Result<Reference> {
    let mut st = conn.prepare_cached(
        "SELECT skill, shown, args, errors, tool FROM call_log WHERE session_id = ?1 ORDER BY position, id",
    )?;
    let mut rows = st.query([session])?;
    let mut out = Reference { session: session.to_string(), ..Default::default() };
    let mut loads: u32 = 0;
    while let Some(r) = rows.next()? {
        match r.get::<_, Option<String>>(0)? {
            Some(skill) => {
                out.first_load.entry(skill).or_insert((out.calls.len(), loads));
                let shown: Vec<i64> =
                    r.get::<_, Option<String>>(1)?.and_then(|s| serde_json::from_str(&s).ok()).unwrap_or_default();
                for id in shown {
                    out.shown.insert(id, loads);
                }
                loads += 1;
            }
            None => out.calls.push(ReferenceCall {
                args: r.get(2)?,
                errors: r.get(3)?,
                read_only: crate::memory::calls::reads_only(&r.get::<_, String>(4)?),
            }),
        }
    }
    Ok(out)
}

/// How long the miner remembers the pairs it judged (ms).
pub const KEEP_MINED_MS: i64 = 30 * 86_400_000;

/// The pairs (digests) the miner has judged in `session`.
pub fn mined_pairs(conn: &Connection, session: &str) -> Result<std::collections::HashSet<String>> {
    let mut st = conn.prepare_cached("SELECT pair FROM mined_pairs WHERE session_id = ?1")?;
    let rows = st.query_map([session], |r| r.get(0))?;
    Ok(rows.collect::<rusqlite::Result<_>>()?)
}

/// Records pairs of `session` the miner judged, in one transaction, and forgets those judged
/// over [`KEEP_MINED_MS`] ago.
pub fn record_mined(conn: &mut Connection, session: &str, pairs: &[String]) -> Result<()> {
    if pairs.is_empty() {
        return Ok(());
    }
    let now = now_ms();
    let tx = write_tx(conn)?;
    {
        let mut put = tx.prepare_cached(
            "INSERT INTO mined_pairs (session_id, pair, at) VALUES (?1, ?2, ?3)
             ON CONFLICT (session_id, pair) DO NOTHING",
        )?;
        for p in pairs {
            put.execute(params![session, p, now])?;
        }
    }
    tx.execute("DELETE FROM mined_pairs WHERE at < ?1", [now - KEEP_MINED_MS])?;
    tx.commit()?;
    Ok(())
}

/// The note that holds the mined lesson `key` of `skill`, current or retired (a lesson a
/// person rejected stays rejected when another session mines it again); else a note of the
/// skill whose evidence names that key (a lesson another machine of the team released, pulled
/// here), current first.
pub fn lesson_note(conn: &Connection, skill: &str, key: &str) -> Result<Option<i64>> {
    let mined = conn
        .prepare_cached(
            "SELECT s.note_id FROM mined_support s JOIN notes n ON n.id = s.note_id
             WHERE s.skill = ?1 AND s.lesson_key = ?2 ORDER BY n.retired_at IS NOT NULL, s.at LIMIT 1",
        )?
        .query_row(params![skill, key], |r| r.get(0))
        .optional()?;
    if mined.is_some() {
        return Ok(mined);
    }
    Ok(conn
        .prepare_cached(&format!(
            "SELECT id FROM notes WHERE skill = ?1 AND {EVIDENCE_KEY} = ?2 AND (retired_at IS NULL OR review IS NOT NULL)
             ORDER BY retired_at IS NOT NULL, id LIMIT 1"
        ))?
        .query_row(params![skill, key], |r| r.get(0))
        .optional()?)
}

/// A note's mined lesson key, as its evidence names it (NULL when it names none).
const EVIDENCE_KEY: &str = "(CASE WHEN json_valid(evidence) THEN json_extract(evidence, '$.key') END)";

/// Sessions an import counted: `imported:` and the session's token ([`session_token`]) as the
/// export named it (`minedSessions`), or `imported:N` from an export that named none.
const IMPORTED: &str = "substr(session_id, 1, 9) = 'imported:'";

/// The SHA-256 (hex) of `text`.
fn sha256_hex(text: &str) -> String {
    use sha2::{Digest, Sha256};
    Sha256::digest(text.as_bytes()).iter().map(|b| format!("{b:02x}")).collect()
}

/// The name a mined lesson's key travels under to the team: the SHA-256 (hex) of the key, so
/// that the team learns of a held lesson only that its key recurred.
pub fn lesson_key_hash(key: &str) -> String {
    sha256_hex(key)
}

/// Whether `s` is a session token: 64 lowercase hex digits (a SHA-256).
pub fn is_session_token(s: &str) -> bool {
    s.len() == 64 && s.bytes().all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b))
}

/// What names a session that mined a lesson wherever its support travels by export: the
/// SHA-256 (hex) of the host's session id, and for a session an import counted the token its
/// export named. A host's session id is unique to its session (a UUID or the like), so the same
/// token is the same session, whichever machine's export brings it, and this machine's own
/// session coming back in its own export is recognised.
fn session_token(session_id: &str) -> String {
    match session_id.strip_prefix("imported:") {
        Some(t) if is_session_token(t) => t.to_string(),
        _ => sha256_hex(session_id),
    }
}

/// The sessions that mined the lesson `key` of `skill`, by their tokens: this machine's own
/// and those imports counted (not the team's, which travel by sync), each once, sorted.
pub fn lesson_sessions(conn: &Connection, skill: &str, key: &str) -> Result<Vec<String>> {
    let (own, imported) = lesson_tokens(conn, skill, key)?;
    let mut out: Vec<String> = own.into_iter().chain(imported).collect();
    out.sort();
    Ok(out)
}

/// A set of session tokens ([`session_token`]).
type Tokens = std::collections::HashSet<String>;

/// The tokens of this machine's own sessions of a lesson, and of the sessions imports counted
/// that are none of them (an export of this machine's lesson imported back counts nothing).
fn lesson_tokens(conn: &Connection, skill: &str, key: &str) -> Result<(Tokens, Tokens)> {
    let mut st = conn.prepare_cached("SELECT session_id FROM mined_support WHERE skill = ?1 AND lesson_key = ?2")?;
    let (mut own, mut imported) = (Tokens::new(), Tokens::new());
    for r in st.query_map(params![skill, key], |r| r.get::<_, String>(0))? {
        let s = r?;
        if s.starts_with("imported:") { &mut imported } else { &mut own }.insert(session_token(&s));
    }
    imported.retain(|t| !own.contains(t));
    Ok((own, imported))
}

/// The support of the mined lesson `key` of `skill`: this machine's own sessions, plus the
/// larger of the other sessions imports counted (each session once, however many exports
/// named it) and the sessions of the team's other machines (an import from a teammate and
/// that teammate's sync count the same sessions: never both).
pub fn lesson_support(conn: &Connection, skill: &str, key: &str) -> Result<i64> {
    let (own, imported) = lesson_tokens(conn, skill, key)?;
    let team: i64 = conn
        .prepare_cached(
            "SELECT coalesce(sum(sessions), 0) FROM mined_support_remote WHERE skill = ?1 AND key_hash = ?2",
        )?
        .query_row(params![skill, lesson_key_hash(key)], |r| r.get(0))?;
    Ok(own.len() as i64 + (imported.len() as i64).max(team))
}

/// Records that `session` mined the lesson `key` of `skill`, held by `note`; returns its
/// support ([`lesson_support`]: the distinct sessions that mined it, here and on the team).
pub fn record_support(conn: &mut Connection, skill: &str, key: &str, session: &str, note: i64) -> Result<i64> {
    let tx = write_tx(conn)?;
    tx.prepare_cached(
        "INSERT INTO mined_support (skill, lesson_key, session_id, note_id, at) VALUES (?1, ?2, ?3, ?4, ?5)
         ON CONFLICT (skill, lesson_key, session_id) DO NOTHING",
    )?
    .execute(params![skill, key, session, note, now_ms()])?;
    let n = lesson_support(&tx, skill, key)?;
    tx.commit()?;
    Ok(n)
}

/// The support of the mined lessons among `ids` ([`lesson_support`]), by note id: a note this
/// machine mined, or one whose evidence names a lesson key (pulled from the team). Notes that
/// hold no mined lesson are left out.
pub fn support_of(conn: &Connection, ids: &[i64]) -> Result<std::collections::HashMap<i64, i64>> {
    let mut out = std::collections::HashMap::new();
    let mut key_of = conn.prepare_cached(&format!(
        "SELECT skill, lesson_key FROM mined_support WHERE note_id = ?1
         UNION ALL SELECT skill, {EVIDENCE_KEY} FROM notes WHERE id = ?1 AND {EVIDENCE_KEY} IS NOT NULL
         LIMIT 1"
    ))?;
    for id in ids {
        let Some((skill, key)) =
            key_of.query_row([id], |r| Ok((r.get::<_, String>(0)?, r.get::<_, String>(1)?))).optional()?
        else {
            continue;
        };
        let n = lesson_support(conn, &skill, &key)?;
        if n > 0 {
            out.insert(*id, n);
        }
    }
    Ok(out)
}

/// The note here that holds the mined lesson `key` of `skill` in the partition (`scope`,
/// `project`), with its team id when it has one: mined here (held, released or rejected in
/// review) or pulled with evidence naming the key, current first. A pull maps the team's row of
/// the same lesson onto it rather than keeping two notes of one lesson.
pub(super) fn lesson_here(
    tx: &Connection,
    skill: &str,
    scope: &str,
    project: &str,
    key: &str,
) -> Result<Option<(i64, Option<String>)>> {
    Ok(tx
        .prepare_cached(&format!(
            "SELECT n.id, t.uid FROM notes n LEFT JOIN team_notes t ON t.note_id = n.id
             WHERE n.skill = ?1 AND n.scope = ?2 AND n.project_id = ?3 AND (n.retired_at IS NULL OR n.review IS NOT NULL)
               AND (n.id IN (SELECT note_id FROM mined_support WHERE skill = ?1 AND lesson_key = ?4)
                    OR {EVIDENCE_KEY} = ?4)
             ORDER BY n.retired_at IS NOT NULL, n.id LIMIT 1"
        ))?
        .query_row(params![skill, scope, project, key], |r| Ok((r.get(0)?, r.get(1)?)))
        .optional()?)
}

/// One machine's support of a mined lesson, as the team server keeps it (team schema 0005):
/// the distinct sessions of that machine that mined the lesson whose key hashes to
/// `key_hash` ([`lesson_key_hash`]).
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct LessonSupport {
    pub skill: String,
    pub key_hash: String,
    /// The machine it is of (empty in a push: the pushing machine).
    pub machine: String,
    pub sessions: i64,
}

/// This machine's own support of each mined lesson (its sessions, not those an import counted)
/// that changed since it was last pushed; a lesson no longer here (its note purged) goes once
/// more, at 0.
pub fn support_to_push(conn: &Connection) -> Result<Vec<LessonSupport>> {
    let mut own: std::collections::BTreeMap<(String, String), i64> = std::collections::BTreeMap::new();
    let mut st = conn.prepare_cached(&format!(
        "SELECT skill, lesson_key, count(*) FROM mined_support WHERE NOT ({IMPORTED}) GROUP BY skill, lesson_key"
    ))?;
    for r in st.query_map([], |r| Ok((r.get::<_, String>(0)?, r.get::<_, String>(1)?, r.get::<_, i64>(2)?)))? {
        let (skill, key, n) = r?;
        *own.entry((skill, lesson_key_hash(&key))).or_default() += n;
    }
    let mut sent: HashMap<(String, String), i64> = HashMap::new();
    let mut st = conn.prepare_cached("SELECT skill, key_hash, sessions FROM mined_support_sent")?;
    for r in st.query_map([], |r| Ok((r.get::<_, String>(0)?, r.get::<_, String>(1)?, r.get::<_, i64>(2)?)))? {
        let (skill, hash, n) = r?;
        sent.insert((skill, hash), n);
    }
    let mut out = vec![];
    for ((skill, key_hash), n) in &own {
        if sent.get(&(skill.clone(), key_hash.clone())) != Some(n) {
            out.push(LessonSupport {
                skill: skill.clone(),
                key_hash: key_hash.clone(),
                machine: String::new(),
                sessions: *n,
            });
        }
    }
    let mut gone: Vec<_> = sent.into_keys().filter(|k| !own.contains_key(k)).collect();
    gone.sort();
    for (skill, key_hash) in gone {
        out.push(LessonSupport { skill, key_hash, machine: String::new(), sessions: 0 });
    }
    Ok(out)
}

/// Records the support the server committed, so that it is not pushed again unchanged.
pub fn support_sent(conn: &mut Connection, rows: &[LessonSupport]) -> Result<()> {
    if rows.is_empty() {
        return Ok(());
    }
    let tx = write_tx(conn)?;
    {
        let mut put = tx.prepare_cached(
            "INSERT OR REPLACE INTO mined_support_sent (skill, key_hash, sessions) VALUES (?1, ?2, ?3)",
        )?;
        let mut drop = tx.prepare_cached("DELETE FROM mined_support_sent WHERE skill = ?1 AND key_hash = ?2")?;
        for c in rows {
            if c.sessions > 0 {
                put.execute(params![c.skill, c.key_hash, c.sessions])?;
            } else {
                drop.execute(params![c.skill, c.key_hash])?;
            }
        }
    }
    tx.commit()?;
    Ok(())
}

/// Where the support pull stands (0 before the first).
pub fn support_cursor(conn: &Connection) -> Result<i64> {
    Ok(conn.query_row("SELECT support_cursor FROM team_state WHERE id = 1", [], |r| r.get(0)).optional()?.unwrap_or(0))
}

/// Stores the other machines' support a pull brought (each replaces that machine's row of the
/// lesson; a row at 0 drops it; rows of the `own` machine are skipped) and moves the support
/// cursor to `cursor`.
pub fn support_apply(conn: &mut Connection, own: &str, rows: &[LessonSupport], cursor: i64) -> Result<()> {
    let tx = write_tx(conn)?;
    {
        let mut put = tx.prepare_cached(
            "INSERT OR REPLACE INTO mined_support_remote (skill, key_hash, machine, sessions) VALUES (?1, ?2, ?3, ?4)",
        )?;
        let mut drop =
            tx.prepare_cached("DELETE FROM mined_support_remote WHERE skill = ?1 AND key_hash = ?2 AND machine = ?3")?;
        for c in rows.iter().filter(|c| c.machine != own) {
            if c.sessions > 0 {
                put.execute(params![c.skill, c.key_hash, c.machine, c.sessions])?;
            } else {
                drop.execute(params![c.skill, c.key_hash, c.machine])?;
            }
        }
    }
    tx.execute("UPDATE team_state SET support_cursor = max(support_cursor, ?1) WHERE id = 1", [cursor])?;
    tx.commit()?;
    Ok(())
}

/// The held mined lessons (waiting, not rejected) that may be released: their support
/// ([`lesson_support`], the team's sessions counted) reached `needed`, or a person on another
/// machine of the team vouched for the note (accepted it there).
pub fn held_supported(conn: &Connection, needed: i64) -> Result<Vec<i64>> {
    let mut st = conn.prepare_cached(
        "SELECT s.note_id, s.skill, s.lesson_key,
                EXISTS (SELECT 1 FROM note_evidence_remote r WHERE r.note_id = s.note_id AND r.vouched = 1)
         FROM mined_support s JOIN notes n ON n.id = s.note_id
         WHERE n.review IS NOT NULL AND n.retired_at IS NULL
         GROUP BY s.note_id, s.skill, s.lesson_key ORDER BY s.note_id",
    )?;
    let held: Vec<(i64, String, String, bool)> =
        st.query_map([], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?, r.get(3)?)))?.collect::<rusqlite::Result<_>>()?;
    let mut out = vec![];
    for (id, skill, key, vouched) in held {
        if (vouched || lesson_support(conn, &skill, &key)? >= needed) && !out.contains(&id) {
            out.push(id);
        }
    }
    Ok(out)
}

/// A mined lesson of this machine that the team's other machines mined too (or that a person
/// accepted on one of them): what `sync status` and the dashboard's review page list.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TeamBacked {
    pub note_id: i64,
    pub skill: String,
    /// Distinct sessions here: this machine's own and those imports counted.
    pub here: i64,
    /// Sessions of the team's other machines.
    pub team: i64,
    /// The support as every read counts it ([`lesson_support`]).
    pub support: i64,
    /// Still held in review.
    pub held: bool,
    /// A person accepted it, edited it, pinned it or called it useful on this machine.
    pub vouched_here: bool,
    /// A person accepted it on another machine of the team.
    pub vouched_team: bool,
}

impl TeamBacked {
    /// Released (no longer held) by the team: its sessions here fell short of `needed` and no
    /// person here vouched for it, so the team's sessions, or a teammate's acceptance, did it.
    pub fn released_by_team(&self, needed: i64) -> bool {
        !self.held && !self.vouched_here && self.here < needed && (self.support >= needed || self.vouched_team)
    }
}

/// The current (not retired) mined lessons of this machine with support on the team's other
/// machines, or accepted on one of them, by note id.
pub fn team_backed(conn: &Connection) -> Result<Vec<TeamBacked>> {
    let mut st = conn.prepare_cached(
        "SELECT s.note_id, s.skill, s.lesson_key, n.review IS NOT NULL,
                coalesce((SELECT e.vouched FROM note_evidence e WHERE e.note_id = s.note_id), 0) != 0,
                EXISTS (SELECT 1 FROM note_evidence_remote r WHERE r.note_id = s.note_id AND r.vouched = 1)
         FROM mined_support s JOIN notes n ON n.id = s.note_id
         WHERE n.retired_at IS NULL
         GROUP BY s.note_id, s.skill, s.lesson_key ORDER BY s.note_id",
    )?;
    type Row = (i64, String, String, bool, bool, bool);
    let rows: Vec<Row> = st
        .query_map([], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?, r.get(3)?, r.get(4)?, r.get(5)?)))?
        .collect::<rusqlite::Result<_>>()?;
    let mut team_of = conn.prepare_cached(
        "SELECT coalesce(sum(sessions), 0) FROM mined_support_remote WHERE skill = ?1 AND key_hash = ?2",
    )?;
    let mut out: Vec<TeamBacked> = vec![];
    for (note_id, skill, key, held, vouched_here, vouched_team) in rows {
        let team: i64 = team_of.query_row(params![skill, lesson_key_hash(&key)], |r| r.get(0))?;
        if (team == 0 && !vouched_team) || out.last().is_some_and(|b| b.note_id == note_id) {
            continue;
        }
        let (own, imported) = lesson_tokens(conn, &skill, &key)?;
        let here = (own.len() + imported.len()) as i64;
        let support = lesson_support(conn, &skill, &key)?;
        out.push(TeamBacked { note_id, skill, here, team, support, held, vouched_here, vouched_team });
    }
    Ok(out)
}

/// Forgets the team's support and what was pushed of it (the sync target changed).
pub(super) fn support_forget(tx: &Connection) -> Result<()> {
    tx.execute("DELETE FROM mined_support_remote", [])?;
    tx.execute("DELETE FROM mined_support_sent", [])?;
    Ok(())
}

/// What a session said of one note it was shown.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SessionVerdict {
    pub note: i64,
    /// When the call that used it arrived.
    pub used_at: Option<i64>,
    pub ignored: bool,
}

/// What a session said of a note its load withheld (the holdout): whether the note's
/// distinctive specific appeared anyway.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SessionWithheld {
    pub note: i64,
    pub appeared: bool,
}

/// Writes a session's accounting in one transaction: each note's counts move only by what
/// this session newly says of it (a session counts once per note, however often it ends);
/// notes purged meanwhile are skipped. The session is marked ended, and the logs of sessions
/// ended or silent long ago are dropped.
pub fn account(
    conn: &mut Connection,
    session: &str,
    verdicts: &[SessionVerdict],
    withheld: &[SessionWithheld],
) -> Result<()> {
    let now = now_ms();
    let tx = write_tx(conn)?;
    apply_verdicts(&tx, session, verdicts)?;
    apply_withheld(&tx, session, withheld)?;
    tx.execute("UPDATE tool_sessions SET ended_at = ?2 WHERE session_id = ?1", params![session, now])?;
    prune(&tx, now)?;
    tx.commit()?;
    Ok(())
}

/// Counts a use of `note` in `session` (a confirmation: `skillmem/feedback` useful), under
/// the rule of every use: once per session, a shown session too when the session had not
/// been shown it. False when the note does not exist.
pub fn count_use(conn: &mut Connection, session: &str, note: i64, at: i64) -> Result<bool> {
    let tx = write_tx(conn)?;
    let found = apply_verdicts(&tx, session, &[SessionVerdict { note, used_at: Some(at), ignored: false }])?;
    tx.commit()?;
    Ok(found > 0)
}

/// Writes what `session` says of each note; returns how many of the notes exist.
fn apply_verdicts(tx: &rusqlite::Transaction<'_>, session: &str, verdicts: &[SessionVerdict]) -> Result<usize> {
    let mut writer = tx.prepare_cached("SELECT session_id FROM notes WHERE id = ?1")?;
    let mut before =
        tx.prepare_cached("SELECT used, ignored FROM note_sessions WHERE note_id = ?1 AND session_id = ?2")?;
    let mut put = tx.prepare_cached(
        "INSERT INTO note_sessions (note_id, session_id, used, ignored) VALUES (?1, ?2, ?3, ?4)
         ON CONFLICT (note_id, session_id) DO UPDATE SET used = excluded.used, ignored = excluded.ignored",
    )?;
    let mut add = tx.prepare_cached(
        "INSERT INTO note_evidence (note_id, shown, used, ignored, used_at, used_elsewhere) VALUES (?1, ?2, ?3, ?4, ?5, ?6)
         ON CONFLICT (note_id) DO UPDATE SET shown = shown + excluded.shown, used = used + excluded.used,
             ignored = ignored + excluded.ignored, used_at = max(coalesce(used_at, 0), coalesce(excluded.used_at, 0)),
             used_elsewhere = used_elsewhere + excluded.used_elsewhere",
    )?;
    let mut found = 0;
    for v in verdicts {
        // The session that wrote the note: a use in any other earns it trust.
        let Some(wrote) = writer.query_row([v.note], |r| r.get::<_, Option<String>>(0)).optional()? else {
            continue;
        };
        found += 1;
        let was: Option<(bool, bool)> =
            before.query_row(params![v.note, session], |r| Ok((r.get(0)?, r.get(1)?))).optional()?;
        let (was_used, was_ignored) = was.unwrap_or_default();
        let used = was_used || v.used_at.is_some();
        let ignored = was_ignored || v.ignored;
        let shown = i64::from(was.is_none());
        let new_use = i64::from(used && !was_used);
        let new_ignore = i64::from(ignored && !was_ignored);
        let elsewhere = new_use * i64::from(wrote.as_deref() != Some(session));
        put.execute(params![v.note, session, used, ignored])?;
        if shown + new_use + new_ignore > 0 {
            add.execute(params![v.note, shown, new_use, new_ignore, v.used_at.filter(|_| new_use > 0), elsewhere])?;
        }
    }
    Ok(found)
}

/// Writes what `session` says of each note it withheld: counted once per session (a note the
/// session was shown too is none of these: the engine leaves it out).
fn apply_withheld(tx: &rusqlite::Transaction<'_>, session: &str, withheld: &[SessionWithheld]) -> Result<()> {
    let mut before =
        tx.prepare_cached("SELECT withheld, appeared FROM note_sessions WHERE note_id = ?1 AND session_id = ?2")?;
    let mut put = tx.prepare_cached(
        "INSERT INTO note_sessions (note_id, session_id, withheld, appeared)
         SELECT ?1, ?2, 1, ?3 WHERE EXISTS (SELECT 1 FROM notes WHERE id = ?1)
         ON CONFLICT (note_id, session_id) DO UPDATE SET withheld = 1, appeared = max(appeared, excluded.appeared)",
    )?;
    let mut add = tx.prepare_cached(
        "INSERT INTO note_evidence (note_id, withheld, appeared) SELECT ?1, ?2, ?3 WHERE EXISTS (SELECT 1 FROM notes WHERE id = ?1)
         ON CONFLICT (note_id) DO UPDATE SET withheld = withheld + excluded.withheld, appeared = appeared + excluded.appeared",
    )?;
    for w in withheld {
        let (was_withheld, was_appeared) = before
            .query_row(params![w.note, session], |r| Ok((r.get::<_, bool>(0)?, r.get::<_, bool>(1)?)))
            .optional()?
            .unwrap_or((false, false));
        put.execute(params![w.note, session, w.appeared])?;
        let (new_withheld, new_appeared) = (i64::from(!was_withheld), i64::from(w.appeared && !was_appeared));
        if new_withheld + new_appeared > 0 {
            add.execute(params![w.note, new_withheld, new_appeared])?;
        }
    }
    Ok(())
}

/// Records a person's act on notes (wrote, edited, pinned, accepted, confirmed): they are
/// trusted from now on. Notes that do not exist are skipped.
pub fn vouch(conn: &mut Connection, ids: &[i64]) -> Result<()> {
    if ids.is_empty() {
        return Ok(());
    }
    let tx = write_tx(conn)?;
    {
        let mut put = tx.prepare_cached(
            "INSERT INTO note_evidence (note_id, vouched) SELECT id, 1 FROM notes WHERE id = ?1
             ON CONFLICT (note_id) DO UPDATE SET vouched = 1",
        )?;
        for id in ids {
            put.execute([id])?;
        }
    }
    tx.commit()?;
    Ok(())
}

/// Drops the logs of sessions that ended more than [`KEEP_ENDED_MS`] ago, of ended sessions
/// past the newest [`KEEP_ENDED_SESSIONS`], and of sessions silent for [`KEEP_SILENT_MS`].
fn prune(tx: &rusqlite::Transaction<'_>, now: i64) -> Result<()> {
    let gone = "SELECT session_id FROM tool_sessions WHERE (ended_at IS NOT NULL AND ended_at < ?1) OR last_at < ?2
                UNION SELECT session_id FROM (SELECT session_id FROM tool_sessions WHERE ended_at IS NOT NULL
                                              ORDER BY ended_at DESC, session_id LIMIT -1 OFFSET ?3)";
    let args = params![now - KEEP_ENDED_MS, now - KEEP_SILENT_MS, KEEP_ENDED_SESSIONS];
    tx.execute(&format!("DELETE FROM note_sessions WHERE session_id IN ({gone})"), args)?;
    tx.execute(&format!("DELETE FROM tool_sessions WHERE session_id IN ({gone})"), args)?;
    Ok(())
}

/// The evidence of notes, by id (a note never shown has none). Many ids are read in one scan.
pub fn evidence_of(conn: &Connection, ids: &[i64]) -> Result<HashMap<i64, Evidence>> {
    let mut out = HashMap::new();
    if ids.is_empty() {
        return Ok(out);
    }
    let row = |r: &rusqlite::Row| -> rusqlite::Result<(i64, Evidence)> {
        let used_at: Option<i64> = r.get(4)?;
        let e = Evidence {
            shown: r.get(1)?,
            used: r.get(2)?,
            ignored: r.get(3)?,
            used_at: used_at.filter(|t| *t > 0),
            vouched: r.get(5)?,
            used_elsewhere: r.get(6)?,
            withheld: r.get(7)?,
            appeared: r.get(8)?,
            ..Default::default()
        };
        Ok((r.get(0)?, e.with_trust()))
    };
    const COLUMNS: &str = "note_id, shown, used, ignored, used_at, vouched, used_elsewhere, withheld, appeared";
    if ids.len() > 256 {
        let wanted: std::collections::HashSet<i64> = ids.iter().copied().collect();
        let mut st = conn.prepare_cached(&format!("SELECT {COLUMNS} FROM note_evidence_all"))?;
        for r in st.query_map([], row)? {
            let (id, e) = r?;
            if wanted.contains(&id) {
                out.insert(id, e);
            }
        }
        return Ok(out);
    }
    let mut st = conn.prepare_cached(&format!("SELECT {COLUMNS} FROM note_evidence_all WHERE note_id = ?1"))?;
    for id in ids {
        if let Some((id, e)) = st.query_row([id], row).optional()? {
            out.insert(id, e);
        }
    }
    Ok(out)
}

/// Adds evidence that came with notes (an import), in one transaction.
pub fn add_evidence(conn: &mut Connection, notes: &[(i64, Evidence)]) -> Result<()> {
    if notes.is_empty() {
        return Ok(());
    }
    let tx = write_tx(conn)?;
    {
        let mut add = tx.prepare_cached(
            "INSERT INTO note_evidence (note_id, shown, used, ignored, used_at, vouched, used_elsewhere, withheld, appeared)
             VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9)
             ON CONFLICT (note_id) DO UPDATE SET shown = shown + excluded.shown, used = used + excluded.used,
                 ignored = ignored + excluded.ignored, used_at = max(coalesce(used_at, 0), coalesce(excluded.used_at, 0)),
                 vouched = max(vouched, excluded.vouched), used_elsewhere = used_elsewhere + excluded.used_elsewhere,
                 withheld = withheld + excluded.withheld, appeared = appeared + excluded.appeared",
        )?;
        for (id, e) in notes {
            let e = e.carried();
            let counts = (e.shown.max(0), e.used.max(0), e.ignored.max(0), e.used_elsewhere.max(0));
            let holdout = (e.withheld.max(0), e.appeared.max(0).min(e.withheld.max(0)));
            add.execute(params![
                id, counts.0, counts.1, counts.2, e.used_at, e.vouched, counts.3, holdout.0, holdout.1
            ])?;
        }
    }
    tx.commit()?;
    Ok(())
}

/// One machine's own counts of a shared note, as the team server keeps them (team schema
/// 0004): replaced whole by each push of that machine, summed with the local row here.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct NoteCounts {
    pub uid: String,
    /// The machine they are of (empty in a push: the pushing machine).
    pub machine: String,
    pub shown: i64,
    pub used: i64,
    pub ignored: i64,
    pub used_elsewhere: i64,
    pub used_at: Option<i64>,
    pub vouched: bool,
    /// Sessions that withheld the note (the holdout), and of those the sessions whose calls
    /// carried its specific anyway (team schema 0005).
    pub withheld: i64,
    pub appeared: i64,
}

/// This machine's counts of shared notes that changed since they were last pushed, with the
/// local note ids (for [`counts_sent`]).
pub fn counts_to_push(conn: &Connection) -> Result<Vec<(i64, NoteCounts)>> {
    let mut st = conn.prepare_cached(
        "SELECT e.note_id, t.uid, e.shown, e.used, e.ignored, e.used_elsewhere, e.used_at, e.vouched, e.withheld,
                e.appeared
         FROM note_evidence e JOIN team_notes t ON t.note_id = e.note_id AND t.held IS NULL
         LEFT JOIN note_evidence_sent s ON s.note_id = e.note_id
         WHERE CASE WHEN s.note_id IS NULL
                    THEN e.shown > 0 OR e.used > 0 OR e.ignored > 0 OR e.vouched > 0 OR e.withheld > 0
                    ELSE s.shown IS NOT e.shown OR s.used IS NOT e.used OR s.ignored IS NOT e.ignored
                         OR s.used_elsewhere IS NOT e.used_elsewhere OR s.used_at IS NOT e.used_at
                         OR s.vouched IS NOT e.vouched OR s.withheld IS NOT e.withheld
                         OR s.appeared IS NOT e.appeared END
         ORDER BY e.note_id",
    )?;
    let rows = st.query_map([], |r| {
        Ok((
            r.get(0)?,
            NoteCounts {
                uid: r.get(1)?,
                machine: String::new(),
                shown: r.get(2)?,
                used: r.get(3)?,
                ignored: r.get(4)?,
                used_elsewhere: r.get(5)?,
                used_at: r.get(6)?,
                vouched: r.get::<_, i64>(7)? != 0,
                withheld: r.get(8)?,
                appeared: r.get(9)?,
            },
        ))
    })?;
    Ok(rows.collect::<rusqlite::Result<_>>()?)
}

/// Records the counts the server committed, so that they are not pushed again unchanged.
pub fn counts_sent(conn: &mut Connection, rows: &[(i64, NoteCounts)]) -> Result<()> {
    if rows.is_empty() {
        return Ok(());
    }
    let tx = write_tx(conn)?;
    {
        let mut put = tx.prepare_cached(
            "INSERT OR REPLACE INTO note_evidence_sent
                 (note_id, shown, used, ignored, used_elsewhere, used_at, vouched, withheld, appeared)
             SELECT ?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9 WHERE EXISTS (SELECT 1 FROM notes WHERE id = ?1)",
        )?;
        for (id, c) in rows {
            put.execute(params![
                id,
                c.shown,
                c.used,
                c.ignored,
                c.used_elsewhere,
                c.used_at,
                c.vouched as i64,
                c.withheld,
                c.appeared
            ])?;
        }
    }
    tx.commit()?;
    Ok(())
}

/// Where the counts pull stands (0 before the first).
pub fn counts_cursor(conn: &Connection) -> Result<i64> {
    Ok(conn.query_row("SELECT counts_cursor FROM team_state WHERE id = 1", [], |r| r.get(0)).optional()?.unwrap_or(0))
}

/// Stores the other machines' counts a pull brought (each replaces that machine's row of the
/// note; rows of `own` machine and of notes not here are skipped) and moves the counts cursor
/// to `cursor`. Returns the local ids of the notes whose counts changed.
pub fn counts_apply(conn: &mut Connection, own: &str, rows: &[NoteCounts], cursor: i64) -> Result<Vec<i64>> {
    let tx = write_tx(conn)?;
    let mut touched = vec![];
    {
        let mut id_of = tx.prepare_cached("SELECT note_id FROM team_notes WHERE uid = ?1")?;
        let mut put = tx.prepare_cached(
            "INSERT OR REPLACE INTO note_evidence_remote
                 (note_id, machine, shown, used, ignored, used_elsewhere, used_at, vouched, withheld, appeared)
             SELECT ?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10 WHERE EXISTS (SELECT 1 FROM notes WHERE id = ?1)",
        )?;
        // The summed view reads from the local row: the note has one, at zero if never shown here.
        let mut local =
            tx.prepare_cached("INSERT INTO note_evidence (note_id) VALUES (?1) ON CONFLICT (note_id) DO NOTHING")?;
        for c in rows.iter().filter(|c| c.machine != own) {
            let Some(id) = id_of.query_row([&c.uid], |r| r.get::<_, i64>(0)).optional()? else { continue };
            local.execute([id])?;
            let n = put.execute(params![
                id,
                c.machine,
                c.shown,
                c.used,
                c.ignored,
                c.used_elsewhere,
                c.used_at,
                c.vouched as i64,
                c.withheld,
                c.appeared
            ])?;
            if n > 0 {
                touched.push(id);
            }
        }
    }
    tx.execute("UPDATE team_state SET counts_cursor = max(counts_cursor, ?1) WHERE id = 1", [cursor])?;
    tx.commit()?;
    Ok(touched)
}

/// Forgets the team's counts and what was pushed (the sync target changed: a new team, or a
/// server that starts over).
pub(super) fn counts_forget(tx: &Connection) -> Result<()> {
    tx.execute("DELETE FROM note_evidence_remote", [])?;
    tx.execute("DELETE FROM note_evidence_sent", [])?;
    Ok(())
}

/// Every note of `skill` visible from `project` (its own plus global), with its uses (here,
/// beside the other statements over `note_evidence`).
pub fn candidates(conn: &Connection, skill: &str, project: &str) -> Result<Candidates> {
    let mut stmt = conn.prepare_cached(&format!(
        "SELECT id, pinned, created_at, e.shown, e.used, e.ignored, e.vouched, e.used_elsewhere, e.withheld, e.appeared
         FROM notes LEFT JOIN note_evidence_all e ON e.note_id = notes.id WHERE skill = ?1 AND {} ORDER BY id",
        super::visible_from(2)
    ))?;
    let rows = stmt.query_map(params![skill, project], |r| {
        Ok(Candidate { id: r.get(0)?, pinned: r.get::<_, i64>(1)? != 0, created_at: r.get(2)?, uses: uses_from(r, 3)? })
    })?;
    Ok(rows.collect::<Result<_, _>>()?)
}

/// The uses and trust of the note `only`, or of every note with evidence (`None`).
pub fn scan_uses(conn: &Connection, only: Option<i64>) -> Result<Vec<(i64, Uses)>> {
    const COLUMNS: &str = "SELECT note_id, shown, used, ignored, vouched, used_elsewhere, withheld, appeared";
    let row = |r: &rusqlite::Row| -> rusqlite::Result<(i64, Evidence)> { Ok((r.get(0)?, evidence_from(r, 1)?)) };
    if let Some(id) = only {
        return Ok(conn
            .prepare_cached(&format!("{COLUMNS} FROM note_evidence_all WHERE note_id = ?1"))?
            .query_map([id], |r| Ok((r.get(0)?, uses_from(r, 1)?)))?
            .collect::<rusqlite::Result<_>>()?);
    }
    // Every note: what the summed view gives, added up here. The view sums the other
    // machines' rows of each note in seven subqueries a row, and a start's catalog reads
    // every row (27,000 rows: about 60 ms of a start's first recall).
    let mut remote: HashMap<i64, Evidence> = conn
        .prepare_cached(
            "SELECT note_id, sum(shown), sum(used), sum(ignored), max(vouched), sum(used_elsewhere), sum(withheld),
                    sum(appeared)
             FROM note_evidence_remote GROUP BY note_id",
        )?
        .query_map([], row)?
        .collect::<rusqlite::Result<_>>()?;
    let mut stmt = conn.prepare_cached(&format!("{COLUMNS} FROM note_evidence"))?;
    let rows = stmt.query_map([], row)?;
    let mut out = vec![];
    for r in rows {
        let (id, mut e) = r?;
        if let Some(o) = remote.remove(&id) {
            e.shown += o.shown;
            e.used += o.used;
            e.ignored += o.ignored;
            e.vouched |= o.vouched;
            e.used_elsewhere += o.used_elsewhere;
            e.withheld += o.withheld;
            e.appeared += o.appeared;
        }
        out.push((id, Uses::of(&e)));
    }
    Ok(out)
}

/// [`Uses`] from the columns `shown, used, ignored, vouched, used_elsewhere, withheld,
/// appeared` at `at` (NULLs, from a note with no evidence row, read as none).
pub(super) fn uses_from(r: &rusqlite::Row, at: usize) -> rusqlite::Result<Uses> {
    Ok(Uses::of(&evidence_from(r, at)?))
}

/// The counts of [`uses_from`]'s columns (a missing count is 0).
fn evidence_from(r: &rusqlite::Row, at: usize) -> rusqlite::Result<Evidence> {
    let n = |i: usize| -> rusqlite::Result<i64> { Ok(r.get::<_, Option<i64>>(at + i)?.unwrap_or(0)) };
    Ok(Evidence {
        shown: n(0)?,
        used: n(1)?,
        ignored: n(2)?,
        vouched: n(3)? != 0,
        used_elsewhere: n(4)?,
        withheld: n(5)?,
        appeared: n(6)?,
        ..Default::default()
    })
}

/// A condition on `notes` that holds for trusted notes (a person's act, or a use in another
/// session with lift behind it: [`crate::memory::evidence::trusted_by_use`], whose constants
/// it writes out; docs/protocol.md, "Trust"), for the listing's filter.
pub(super) const TRUSTED_NOTES: &str = "notes.id IN (SELECT note_id FROM note_evidence_all WHERE vouched = 1
     OR (used_elsewhere > 0 AND withheld >= 2
         AND (used + 1.0) / (shown + 2.0) - (appeared + 1.0) / (withheld + 2.0) >= 0.25))";

/// The listing's order by use: most sessions that used it first.
pub(super) const MOST_USED_FIRST: &str =
    "coalesce((SELECT used FROM note_evidence_all WHERE note_id = notes.id), 0) DESC, notes.created_at DESC, notes.id DESC";

/// The notes shown in at least `shown` sessions and never used: those that may decay.
pub fn unused_after(conn: &Connection, shown: i64) -> Result<Vec<i64>> {
    let mut st =
        conn.prepare_cached("SELECT note_id FROM note_evidence_all WHERE shown >= ?1 AND used = 0 ORDER BY note_id")?;
    let ids = st.query_map([shown], |r| r.get(0))?.collect::<rusqlite::Result<_>>()?;
    Ok(ids)
}

/// The ids of the sessions whose logs are kept and not ended (for tests and the doctor).
pub fn open_sessions(conn: &Connection) -> Result<Vec<String>> {
    let mut st =
        conn.prepare_cached("SELECT session_id FROM tool_sessions WHERE ended_at IS NULL ORDER BY session_id")?;
    let rows = st.query_map([], |r| r.get(0))?;
    Ok(rows.collect::<rusqlite::Result<_>>()?)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn call(session: &str, position: i64, args: &str, at: i64) -> Call {
        Call { session: session.into(), position, tool: "bash".into(), args: args.into(), at, ..Default::default() }
    }

    /// A mined lesson stored held (`review = 'pending'`), as the miner stores one.
    fn held_lesson(conn: &Connection, delta: &str, key: &str) -> i64 {
        conn.execute(
            "INSERT INTO notes (skill, scope, project_id, origin_project, source, kind, delta, norm_hash, created_at,
                                updated_at, review, evidence)
             VALUES ('npm', 'global', '', 'p', 'transcript', 'fix', ?1, ?1, 1, 1, 'pending', ?2)",
            params![delta, serde_json::json!({ "key": key }).to_string()],
        )
        .unwrap();
        conn.last_insert_rowid()
    }

    /// A reference session as a base rate reads it: its plain calls in order, the last load
    /// that showed each note, and where each skill's first load falls.
    #[test]
    fn a_reference_session_keeps_its_plain_calls_and_where_each_skill_was_first_loaded() {
        let d = tempfile::tempdir().unwrap();
        let mut conn = crate::db::open(d.path()).unwrap();
        let load = |position: i64, skill: &str, shown: &[i64]| Call {
            skill: Some(skill.into()),
            shown: shown.to_vec(),
            tool: "skill".into(),
            ..call("s", position, &format!("{{\"name\":\"{skill}\"}}"), 10)
        };
        let read = Call { tool: "read".into(), ..call("s", 2, "README.md", 10) };
        let failed = Call { errors: "error: no such file".into(), failed: true, ..call("s", 4, "make", 10) };
        let log = [
            call("s", 0, "git status", 10),
            load(1, "jq", &[7, 8]),
            read,
            load(3, "git", &[9]),
            failed,
            load(5, "jq", &[8]),
            call("s", 6, "jq -r .x", 10),
        ];
        record_calls(&mut conn, "p", &log).unwrap();
        let r = reference(&conn, "s").unwrap();
        let calls: Vec<(&str, &str, bool)> =
            r.calls.iter().map(|c| (c.args.as_str(), c.errors.as_str(), c.read_only)).collect();
        let want = [
            ("git status", "", false),
            ("README.md", "", true),
            ("make", "error: no such file", false),
            ("jq -r .x", "", false),
        ];
        assert_eq!(calls, want);
        // (note, the last load that showed it)
        let mut shown: Vec<(i64, u32)> = r.shown.iter().map(|(k, v)| (*k, *v)).collect();
        shown.sort();
        assert_eq!(shown, vec![(7, 0), (8, 2), (9, 1)]);
        // (skill, plain calls before its first load, that load)
        assert_eq!(r.first_load.get("jq"), Some(&(1, 0)));
        assert_eq!(r.first_load.get("git"), Some(&(2, 1)));
        assert_eq!(r.first_load.get("npm"), None);
        assert_eq!(reference(&conn, "nobody").unwrap().calls.len(), 0);
    }

    /// Every note's uses read at once (a start's catalog) are what the summed view gives each
    /// note: its own counts plus every other machine's, vouched when any machine vouched.
    #[test]
    fn every_notes_uses_read_at_once_are_each_notes_summed_counts() {
        let d = tempfile::tempdir().unwrap();
        let mut conn = crate::db::open(d.path()).unwrap();
        let ids: Vec<i64> = (0..5).map(|i| held_lesson(&conn, &format!("lesson {i}"), &format!("k{i}"))).collect();
        // (note, shown, used, ignored, vouched, used elsewhere, withheld, appeared) here...
        let local = [(0, 4, 2, 1, false, 1, 2, 0), (1, 1, 0, 0, true, 0, 0, 0), (2, 0, 0, 0, false, 0, 0, 0)];
        for (i, shown, used, ignored, vouched, used_elsewhere, withheld, appeared) in local {
            let e =
                Evidence { shown, used, ignored, vouched, used_elsewhere, withheld, appeared, ..Default::default() };
            add_evidence(&mut conn, &[(ids[i], e)]).unwrap();
        }
        // ...and on other machines: two of note 0, one vouching for note 2, one of note 4,
        // which has no row here (the view leaves it out).
        for (i, machine, shown, used, vouched, withheld) in
            [(0, "a", 3, 1, 0, 1), (0, "b", 2, 2, 0, 0), (2, "a", 1, 0, 1, 0), (4, "a", 9, 9, 1, 0)]
        {
            conn.execute(
                "INSERT INTO note_evidence_remote (note_id, machine, shown, used, ignored, used_elsewhere, vouched,
                                                   withheld, appeared)
                 VALUES (?1, ?2, ?3, ?4, 1, 1, ?5, ?6, 1)",
                params![ids[i], machine, shown, used, vouched, withheld],
            )
            .unwrap();
        }
        let all = scan_uses(&conn, None).unwrap();
        let mut got: Vec<i64> = all.iter().map(|(id, _)| *id).collect();
        got.sort();
        assert_eq!(got, vec![ids[0], ids[1], ids[2]]);
        for (id, uses) in &all {
            let one = scan_uses(&conn, Some(*id)).unwrap();
            assert_eq!(one, vec![(*id, *uses)], "note {id}");
        }
        let of = |i: usize| all.iter().find(|(id, _)| *id == ids[i]).unwrap().1;
        assert_eq!((of(0).shown, of(0).used), (9, 5), "4 + 3 + 2 shown, 2 + 1 + 2 used");
        assert!(of(2).trusted && of(1).trusted && !of(0).trusted, "vouched here or on another machine");
    }

    fn team(machine: &str, key: &str, sessions: i64) -> LessonSupport {
        LessonSupport { skill: "npm".into(), key_hash: lesson_key_hash(key), machine: machine.into(), sessions }
    }

    /// A lesson's support is its sessions here plus the team's other machines' (each machine's
    /// row replaced, never added up; this machine's own row skipped); what is pushed is this
    /// machine's own sessions under the key's hash, once per change, and at 0 once it is gone.
    #[test]
    fn a_lessons_support_adds_the_teams_sessions_once_and_travels_as_a_hash() {
        const KEY: &str = "npm ci | +--legacy-peer-deps | ERESOLVE unable to resolve dependency tree";
        let d = tempfile::tempdir().unwrap();
        let mut conn = crate::db::open(d.path()).unwrap();
        crate::memory::store::team_begin(&mut conn, "me", "target").unwrap();
        let id = held_lesson(&conn, "`npm ci` fails with ERESOLVE; `npm ci --legacy-peer-deps` works.", KEY);
        assert_eq!(record_support(&mut conn, "npm", KEY, "s1", id).unwrap(), 1);
        assert_eq!(record_support(&mut conn, "npm", KEY, "s1", id).unwrap(), 1, "a session counts once");
        assert_eq!(lesson_note(&conn, "npm", KEY).unwrap(), Some(id));

        // Pushed: this machine's one session, the key hashed (SHA-256, hex), never its words.
        let push = support_to_push(&conn).unwrap();
        assert_eq!(push, vec![team("", KEY, 1)]);
        assert_eq!(push[0].key_hash, "88a1f748ea3547f49f81de9ffd2af73d1e434800c5684c04555dabd1bcea4384");
        support_sent(&mut conn, &push).unwrap();
        assert!(support_to_push(&conn).unwrap().is_empty(), "unchanged: not pushed again");
        assert!(held_supported(&conn, 2).unwrap().is_empty(), "one session: held");

        // Another machine's session of the same lesson (and this machine's own row, come back).
        support_apply(&mut conn, "me", &[team("other", KEY, 1), team("me", KEY, 5)], 10).unwrap();
        assert_eq!(lesson_support(&conn, "npm", KEY).unwrap(), 2);
        assert_eq!(support_of(&conn, &[id]).unwrap().get(&id), Some(&2));
        assert_eq!(support_cursor(&conn).unwrap(), 10);
        // The same row again replaces it: a pull seen twice counts once.
        support_apply(&mut conn, "me", &[team("other", KEY, 1)], 11).unwrap();
        assert_eq!(lesson_support(&conn, "npm", KEY).unwrap(), 2);
        assert_eq!(held_supported(&conn, 2).unwrap(), vec![id]);
        assert!(held_supported(&conn, 3).unwrap().is_empty());
        // An import from that teammate counts the same sessions: not added to the team's, and
        // not pushed as this machine's.
        assert_eq!(record_support(&mut conn, "npm", KEY, "imported:0", id).unwrap(), 2);
        assert!(support_to_push(&conn).unwrap().is_empty());
        // The teammate's lesson gone (its row at 0): the import's session stands for it.
        support_apply(&mut conn, "me", &[team("other", KEY, 0)], 12).unwrap();
        assert_eq!(lesson_support(&conn, "npm", KEY).unwrap(), 2);
        support_apply(&mut conn, "me", &[team("other", KEY, 3)], 13).unwrap();
        assert_eq!(lesson_support(&conn, "npm", KEY).unwrap(), 4, "1 here + max(1 imported, 3 on the team)");

        // Released once: no longer held.
        assert_eq!(crate::memory::store::release_all(&mut conn, &[id]).unwrap(), vec![id]);
        assert!(held_supported(&conn, 2).unwrap().is_empty());
        assert!(crate::memory::store::release_all(&mut conn, &[id]).unwrap().is_empty());

        // Purged: its sessions go with it, and the team hears it at 0, once.
        conn.execute("DELETE FROM notes WHERE id = ?1", [id]).unwrap();
        let push = support_to_push(&conn).unwrap();
        assert_eq!(push, vec![team("", KEY, 0)]);
        support_sent(&mut conn, &push).unwrap();
        assert!(support_to_push(&conn).unwrap().is_empty());
    }

    /// A lesson's sessions travel by export as tokens (the SHA-256 of each session id): a
    /// session counts once however many imports name it, this machine's own session coming
    /// back counts nothing, and an import of an export that named none counts as before.
    #[test]
    fn an_imported_session_counts_once_and_never_as_one_of_this_machines() {
        const KEY: &str = "npm ci | +--legacy-peer-deps | ERESOLVE";
        let d = tempfile::tempdir().unwrap();
        let mut conn = crate::db::open(d.path()).unwrap();
        let id = held_lesson(&conn, "`npm ci` fails with ERESOLVE; `npm ci --legacy-peer-deps` works.", KEY);
        assert_eq!(record_support(&mut conn, "npm", KEY, "s1", id).unwrap(), 1);
        let mine = lesson_sessions(&conn, "npm", KEY).unwrap();
        assert_eq!(mine, vec![sha256_hex("s1")]);
        assert!(is_session_token(&mine[0]) && !is_session_token("s1") && !is_session_token(&mine[0].to_uppercase()));
        // This machine's own session, back from its own export (or a teammate's re-export).
        assert_eq!(record_support(&mut conn, "npm", KEY, &format!("imported:{}", mine[0]), id).unwrap(), 1);
        assert_eq!(lesson_sessions(&conn, "npm", KEY).unwrap(), mine);
        // Another machine's session: once, however many files name it.
        let other = format!("imported:{}", sha256_hex("elsewhere"));
        assert_eq!(record_support(&mut conn, "npm", KEY, &other, id).unwrap(), 2);
        assert_eq!(record_support(&mut conn, "npm", KEY, &other, id).unwrap(), 2);
        assert_eq!(lesson_sessions(&conn, "npm", KEY).unwrap().len(), 2);
        // An export that named no session: its count, as sessions of its own.
        assert_eq!(record_support(&mut conn, "npm", KEY, "imported:0", id).unwrap(), 3);
        // What is pushed to the team is this machine's own session only.
        assert_eq!(support_to_push(&conn).unwrap(), vec![team("", KEY, 1)]);
        // A session mined here after its export came back is still one session.
        let later = "s2";
        record_support(&mut conn, "npm", KEY, &format!("imported:{}", sha256_hex(later)), id).unwrap();
        assert_eq!(lesson_support(&conn, "npm", KEY).unwrap(), 4);
        assert_eq!(record_support(&mut conn, "npm", KEY, later, id).unwrap(), 4);
    }

    /// A held lesson a person accepted on another machine (its counts there vouched) is
    /// released here too; a rejected one is not held, so never released; a note pulled with
    /// the key in its evidence is the lesson's note when this machine mines it.
    #[test]
    fn a_held_lesson_vouched_on_the_team_is_released_and_a_pulled_one_is_found_by_its_key() {
        let d = tempfile::tempdir().unwrap();
        let mut conn = crate::db::open(d.path()).unwrap();
        let held = held_lesson(&conn, "`make` fails; `make -j1` works.", "make | +-j1 | race");
        record_support(&mut conn, "npm", "make | +-j1 | race", "s1", held).unwrap();
        let rejected = held_lesson(&conn, "`tar x` fails; `tar xf` works.", "tar | +f | usage");
        record_support(&mut conn, "npm", "tar | +f | usage", "s1", rejected).unwrap();
        conn.execute("UPDATE notes SET retired_at = 5, reason = 'rejected in review' WHERE id = ?1", [rejected])
            .unwrap();
        for id in [held, rejected] {
            conn.execute("INSERT INTO note_evidence_remote (note_id, machine, vouched) VALUES (?1, 'other', 1)", [id])
                .unwrap();
        }
        assert_eq!(held_supported(&conn, 5).unwrap(), vec![held]);

        // Pulled from the team, released there: found by the key its evidence names.
        let pulled = held_lesson(&conn, "`pip install x` fails; `pip install --user x` works.", "pip | +--user | perm");
        conn.execute("UPDATE notes SET review = NULL, source = 'team' WHERE id = ?1", [pulled]).unwrap();
        assert_eq!(lesson_note(&conn, "npm", "pip | +--user | perm").unwrap(), Some(pulled));
        assert_eq!(support_of(&conn, &[pulled]).unwrap().get(&pulled), None, "no session mined it yet");
        conn.execute(
            "INSERT INTO mined_support_remote (skill, key_hash, machine, sessions) VALUES ('npm', ?1, 'other', 2)",
            [lesson_key_hash("pip | +--user | perm")],
        )
        .unwrap();
        assert_eq!(support_of(&conn, &[pulled]).unwrap().get(&pulled), Some(&2), "the team's sessions");
        assert_eq!(lesson_here(&conn, "npm", "global", "", "pip | +--user | perm").unwrap(), Some((pulled, None)));
        assert_eq!(lesson_here(&conn, "npm", "project", "p", "pip | +--user | perm").unwrap(), None);
        assert_eq!(lesson_here(&conn, "npm", "global", "", "tar | +f | usage").unwrap(), Some((rejected, None)));
        assert_eq!(lesson_note(&conn, "npm", "no such key").unwrap(), None);
    }

    /// The holdout's counts travel with each machine's other counts: pushed when they change
    /// (a session that only withheld a note is a change), and the other machines' summed into
    /// what every read of a note's evidence sees, its lift included.
    #[test]
    fn withheld_and_appeared_are_pushed_and_the_teams_summed() {
        let d = tempfile::tempdir().unwrap();
        let mut conn = crate::db::open(d.path()).unwrap();
        crate::memory::store::team_begin(&mut conn, "me", "target").unwrap();
        conn.execute(
            "INSERT INTO notes (skill, scope, project_id, origin_project, source, kind, delta, norm_hash, created_at,
                                updated_at)
             VALUES ('aws', 'global', '', 'p', 'agent', 'gotcha', 'pass `--exact-timestamps`', 'h', 1, 1)",
            [],
        )
        .unwrap();
        let id = conn.last_insert_rowid();
        conn.execute("INSERT INTO team_notes (note_id, uid) VALUES (?1, 'u1')", [id]).unwrap();
        account(&mut conn, "s1", &[], &[SessionWithheld { note: id, appeared: true }]).unwrap();
        let push = counts_to_push(&conn).unwrap();
        assert_eq!(push.len(), 1, "only withheld: still a change to push");
        assert_eq!((push[0].1.withheld, push[0].1.appeared, push[0].1.shown), (1, 1, 0));
        counts_sent(&mut conn, &push).unwrap();
        assert!(counts_to_push(&conn).unwrap().is_empty());
        account(&mut conn, "s2", &[], &[SessionWithheld { note: id, appeared: false }]).unwrap();
        let push = counts_to_push(&conn).unwrap();
        assert_eq!((push[0].1.withheld, push[0].1.appeared), (2, 1));
        counts_sent(&mut conn, &push).unwrap();

        let theirs = NoteCounts {
            uid: "u1".into(),
            machine: "other".into(),
            shown: 2,
            used: 2,
            withheld: 3,
            appeared: 0,
            ..Default::default()
        };
        assert_eq!(counts_apply(&mut conn, "me", std::slice::from_ref(&theirs), 7).unwrap(), vec![id]);
        let e = evidence_of(&conn, &[id]).unwrap()[&id];
        assert_eq!((e.shown, e.used, e.withheld, e.appeared), (2, 2, 5, 1));
        assert!((e.lift() - ((2.0 + 1.0) / (2.0 + 2.0) - (1.0 + 1.0) / (5.0 + 2.0))).abs() < 1e-9);
        // The other machine's row again (a pull seen twice) replaces it: counted once.
        counts_apply(&mut conn, "me", &[theirs], 8).unwrap();
        assert_eq!(evidence_of(&conn, &[id]).unwrap()[&id].withheld, 5);
        assert!(counts_to_push(&conn).unwrap().is_empty(), "the team's counts are never pushed as this machine's");
    }

    /// A session keeps at most SESSION_CALLS_MAX calls, and its loads beyond them.
    #[test]
    fn a_session_log_is_capped_but_keeps_its_loads() {
        let d = tempfile::tempdir().unwrap();
        let mut conn = crate::db::open(d.path()).unwrap();
        let now = now_ms();
        let mut calls: Vec<Call> = (0..SESSION_CALLS_MAX + 5).map(|i| call("s", i, "ls", now)).collect();
        calls.push(Call { skill: Some("jq".into()), shown: vec![1], ..call("s", SESSION_CALLS_MAX + 10, "", now) });
        record_calls(&mut conn, "p", &calls).unwrap();
        let log = session_calls(&conn, "s").unwrap();
        assert_eq!(log.len() as i64, SESSION_CALLS_MAX + 1);
        assert_eq!(log.last().unwrap().shown, vec![1]);
    }

    /// Ending a session drops the logs of sessions that ended over a week ago, not the others.
    #[test]
    fn old_ended_sessions_are_pruned() {
        let d = tempfile::tempdir().unwrap();
        let mut conn = crate::db::open(d.path()).unwrap();
        let now = now_ms();
        for s in ["old", "recent", "open"] {
            record_calls(&mut conn, "p", &[call(s, 1, "ls", now)]).unwrap();
        }
        account(&mut conn, "old", &[], &[]).unwrap();
        account(&mut conn, "recent", &[], &[]).unwrap();
        conn.execute("UPDATE tool_sessions SET ended_at = ?1 WHERE session_id = 'old'", [now - KEEP_ENDED_MS - 1])
            .unwrap();
        account(&mut conn, "recent", &[], &[]).unwrap();
        assert!(session_calls(&conn, "old").unwrap().is_empty(), "pruned");
        assert_eq!(session_calls(&conn, "recent").unwrap().len(), 1);
        assert_eq!(open_sessions(&conn).unwrap(), vec!["open".to_string()]);
        // A call after the end opens the session again.
        record_calls(&mut conn, "p", &[call("recent", 2, "ls -la", now)]).unwrap();
        assert_eq!(open_sessions(&conn).unwrap(), vec!["open".to_string(), "recent".to_string()]);
    }
}
