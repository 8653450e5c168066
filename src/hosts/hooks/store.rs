//! The tables of hosts that cannot keep a sidecar running (migration 0003): how far each
//! session's transcript has been read (`host_sessions`). Every statement over them is here;
//! the skills a session used go to [`crate::memory::usage`] in the same transaction.

use rusqlite::{params, Connection, OptionalExtension};

use crate::db::write_tx;
use crate::error::Result;
use crate::memory::usage;

/// The transcript `session` of `host` was read from last time, and the byte offset reached.
pub fn offset(conn: &Connection, host: &str, session: &str) -> Result<Option<(String, i64)>> {
    Ok(conn
        .query_row(
            "SELECT transcript, offset FROM host_sessions WHERE host = ?1 AND session_id = ?2",
            params![host, session],
            |r| Ok((r.get(0)?, r.get(1)?)),
        )
        .optional()?)
}

/// What one read of a session's transcript found.
pub struct Read<'a> {
    pub host: &'a str,
    pub session: &'a str,
    pub project: &'a str,
    pub transcript: &'a str,
    /// The byte offset just past the last complete line read.
    pub offset: i64,
    /// The skills the slice read shows used.
    pub skills: &'a [String],
    pub at: i64,
}

/// Records a read, in one transaction: the skills used and the offset reached.
pub fn record_read(conn: &mut Connection, r: &Read<'_>) -> Result<()> {
    let tx = write_tx(conn)?;
    usage::record(&tx, r.host, r.session, r.project, r.skills, r.at)?;
    tx.execute(
        "INSERT INTO host_sessions(host, session_id, transcript, offset, updated_at) VALUES (?1, ?2, ?3, ?4, ?5)
         ON CONFLICT(host, session_id) DO UPDATE SET transcript = excluded.transcript, offset = excluded.offset, updated_at = excluded.updated_at",
        params![r.host, r.session, r.transcript, r.offset, r.at],
    )?;
    tx.commit()?;
    Ok(())
}

/// Records a read like [`record_read`], but only the skills the session has no use of yet
/// (the skill-load hook recorded those it saw): the transcript is the safety net for loads
/// the hook missed, not a second count. The skills recorded now are returned.
pub fn record_unseen_read(conn: &mut Connection, r: &Read<'_>) -> Result<Vec<String>> {
    let tx = write_tx(conn)?;
    let known = usage::of_session(&tx, r.host, r.session)?;
    let new: Vec<String> = r.skills.iter().filter(|s| !known.contains(s)).cloned().collect();
    usage::record(&tx, r.host, r.session, r.project, &new, r.at)?;
    tx.execute(
        "INSERT INTO host_sessions(host, session_id, transcript, offset, updated_at) VALUES (?1, ?2, ?3, ?4, ?5)
         ON CONFLICT(host, session_id) DO UPDATE SET transcript = excluded.transcript, offset = excluded.offset, updated_at = excluded.updated_at",
        params![r.host, r.session, r.transcript, r.offset, r.at],
    )?;
    tx.commit()?;
    Ok(new)
}

/// Records the skills a hook saw loaded in a session (hosts whose skill loads the hook sees
/// directly), in one transaction.
pub fn record_use(
    conn: &mut Connection,
    host: &str,
    session: &str,
    project: &str,
    skills: &[String],
    at: i64,
) -> Result<()> {
    let tx = write_tx(conn)?;
    usage::record(&tx, host, session, project, skills, at)?;
    tx.commit()?;
    Ok(())
}

/// The sessions of `host` that used a skill in `project` and whose transcript was read since
/// `since` (ms), other than `but`: each with its transcript and the offset reached, the most
/// recently read first, at most `limit`.
pub fn read_sessions(
    conn: &Connection,
    host: &str,
    project: &str,
    but: &str,
    since: i64,
    limit: usize,
) -> Result<Vec<(String, String, i64)>> {
    let mut st = conn.prepare_cached(
        "SELECT session_id, transcript, offset FROM host_sessions
         WHERE host = ?1 AND session_id != ?2 AND updated_at >= ?3 ORDER BY updated_at DESC",
    )?;
    let rows = st.query_map(params![host, but, since], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)))?;
    let mut out = vec![];
    for row in rows {
        let row: (String, String, i64) = row?;
        if usage::used_in(conn, host, &row.0, project)? {
            out.push(row);
            if out.len() == limit {
                break;
            }
        }
    }
    Ok(out)
}
