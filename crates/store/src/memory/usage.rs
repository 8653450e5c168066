//! Skill uses as hosts record them (table `skill_uses`, migration 0003): which skills a
//! session used, written by a host's door (the Claude Code hook records the skills a
//! session's transcript shows), read by `stats`. Every statement over the table is here.

use rusqlite::{params, Connection};

use crate::error::Result;

/// Records that `session` of `host` used `skills` in `project` at `at` (inside the caller's
/// transaction).
pub fn record(conn: &Connection, host: &str, session: &str, project: &str, skills: &[String], at: i64) -> Result<()> {
    let mut stmt = conn.prepare_cached(
        "INSERT INTO skill_uses(host, session_id, project_id, skill, used_at) VALUES (?1, ?2, ?3, ?4, ?5)",
    )?;
    for s in skills {
        stmt.execute(params![host, session, project, s, at])?;
    }
    Ok(())
}

/// The skills already recorded as used by `session` of `host` (inside the caller's
/// transaction): a door that reads a session's transcript records only the others, so that
/// the loads its skill-load hook recorded are not counted twice.
pub fn of_session(conn: &Connection, host: &str, session: &str) -> Result<Vec<String>> {
    let mut st = conn.prepare_cached("SELECT DISTINCT skill FROM skill_uses WHERE host = ?1 AND session_id = ?2")?;
    let rows = st.query_map(params![host, session], |r| r.get(0))?;
    Ok(rows.collect::<std::result::Result<_, _>>()?)
}

/// Whether `session` of `host` used a skill in `project`.
pub fn used_in(conn: &Connection, host: &str, session: &str, project: &str) -> Result<bool> {
    let mut st = conn.prepare_cached(
        "SELECT EXISTS (SELECT 1 FROM skill_uses WHERE host = ?1 AND session_id = ?2 AND project_id = ?3)",
    )?;
    Ok(st.query_row(params![host, session, project], |r| r.get(0))?)
}

/// The uses of one skill in a project.
#[derive(Debug, Clone, PartialEq)]
pub struct SkillUses {
    pub skill: String,
    /// Distinct sessions (of any host) that used it.
    pub sessions: i64,
    /// The last use, in milliseconds since the epoch.
    pub last_used: i64,
}

/// Every skill used in `project`, with its sessions and last use.
pub fn by_skill(conn: &Connection, project: &str) -> Result<Vec<SkillUses>> {
    let mut st = conn.prepare(
        "SELECT skill, count(DISTINCT host || ' ' || session_id), max(used_at) FROM skill_uses
         WHERE project_id = ?1 GROUP BY skill",
    )?;
    let rows =
        st.query_map([project], |r| Ok(SkillUses { skill: r.get(0)?, sessions: r.get(1)?, last_used: r.get(2)? }))?;
    Ok(rows.collect::<std::result::Result<_, _>>()?)
}

/// The uses of one skill on one day.
#[derive(Debug, Clone, PartialEq)]
pub struct DaySkillUses {
    /// `YYYY-MM-DD` in UTC.
    pub day: String,
    pub skill: String,
    /// Distinct sessions that used the skill that day.
    pub sessions: i64,
}

/// The uses in `project` since `since` (milliseconds), by day (latest first) and skill.
pub fn by_day(conn: &Connection, project: &str, since: i64) -> Result<Vec<DaySkillUses>> {
    let mut st = conn.prepare(
        "SELECT date(used_at / 1000, 'unixepoch') AS day, skill, count(DISTINCT host || ' ' || session_id)
         FROM skill_uses WHERE project_id = ?1 AND used_at >= ?2
         GROUP BY day, skill ORDER BY day DESC, skill",
    )?;
    let rows = st.query_map(params![project, since], |r| {
        Ok(DaySkillUses { day: r.get(0)?, skill: r.get(1)?, sessions: r.get(2)? })
    })?;
    Ok(rows.collect::<std::result::Result<_, _>>()?)
}

/// The loads of one skill across every project and host.
#[derive(Debug, Clone, PartialEq)]
pub struct Loads {
    pub skill: String,
    /// Recorded uses (each host session's load counts once per record).
    pub loads: i64,
    /// The last use, in milliseconds since the epoch.
    pub last_used: i64,
    /// The hosts that used it, sorted.
    pub hosts: Vec<String>,
}

/// Every skill ever recorded as used, across projects and hosts (`skills list`, `skills prune`).
pub fn totals(conn: &Connection) -> Result<Vec<Loads>> {
    let mut st = conn.prepare(
        "SELECT skill, count(*), max(used_at), group_concat(DISTINCT host) FROM skill_uses GROUP BY skill ORDER BY skill",
    )?;
    let rows = st.query_map([], |r| {
        let hosts: Option<String> = r.get(3)?;
        let mut hosts: Vec<String> =
            hosts.unwrap_or_default().split(',').filter(|h| !h.is_empty()).map(str::to_string).collect();
        hosts.sort();
        Ok(Loads { skill: r.get(0)?, loads: r.get(1)?, last_used: r.get(2)?, hosts })
    })?;
    Ok(rows.collect::<std::result::Result<_, _>>()?)
}
