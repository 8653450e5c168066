//! The registry: which sources are installed, at which commit, and which skills each provides
//! (tables `skill_sources` and `installed_skills`). Every write is one `BEGIN IMMEDIATE`
//! transaction; a name belongs to exactly one source.

use std::path::Path;

use rusqlite::{params, Connection, OptionalExtension, Row};

use super::{Choice, SkillInfo};
use crate::db;
use crate::error::{Error, Result};

/// One installed source.
#[derive(Debug, Clone)]
pub struct SourceRow {
    pub source: String,
    pub requested_ref: Option<String>,
    pub pinned_ref: String,
    /// The choices it was installed with (empty: every skill; an empty choice among others
    /// also stands for every skill).
    pub choices: Vec<Choice>,
}

/// A skill about to be recorded, with its store folder relative to the data directory.
#[derive(Debug, Clone)]
pub struct NewSkill {
    pub info: SkillInfo,
    pub store_path: String,
}

const COLUMNS: &str =
    "name, source, description, pinned_ref, subpath, content_hash, store_path, installed_at, warnings, plugin";

const SOURCE_COLUMNS: &str = "source, requested_ref, pinned_ref, choices";

fn source_of(r: &Row<'_>) -> rusqlite::Result<SourceRow> {
    let choices: String = r.get(3)?;
    Ok(SourceRow {
        source: r.get(0)?,
        requested_ref: r.get(1)?,
        pinned_ref: r.get(2)?,
        choices: serde_json::from_str(&choices).unwrap_or_default(),
    })
}

fn info_of(row: &Row<'_>, data_dir: &Path) -> rusqlite::Result<SkillInfo> {
    let warnings: String = row.get(8)?;
    let store_path: String = row.get(6)?;
    Ok(SkillInfo {
        name: row.get(0)?,
        source: row.get(1)?,
        description: row.get(2)?,
        pinned_ref: row.get(3)?,
        subpath: row.get(4)?,
        plugin: row.get(9)?,
        content_hash: row.get(5)?,
        path: data_dir.join(store_path).display().to_string(),
        installed_at: row.get(7)?,
        warnings: serde_json::from_str(&warnings).unwrap_or_default(),
    })
}

/// The source row of `source`, if installed.
pub fn source(conn: &Connection, source: &str) -> Result<Option<SourceRow>> {
    Ok(conn
        .query_row(&format!("SELECT {SOURCE_COLUMNS} FROM skill_sources WHERE source = ?1"), [source], source_of)
        .optional()?)
}

/// Every source, sorted.
pub fn sources(conn: &Connection) -> Result<Vec<SourceRow>> {
    let mut st = conn.prepare(&format!("SELECT {SOURCE_COLUMNS} FROM skill_sources ORDER BY source"))?;
    let rows = st.query_map([], source_of)?;
    Ok(rows.collect::<rusqlite::Result<_>>()?)
}

/// The skills of `source`, sorted by name.
pub fn skills_of(conn: &Connection, data_dir: &Path, source: &str) -> Result<Vec<SkillInfo>> {
    let mut st = conn.prepare(&format!("SELECT {COLUMNS} FROM installed_skills WHERE source = ?1 ORDER BY name"))?;
    let rows = st.query_map([source], |r| info_of(r, data_dir))?;
    Ok(rows.collect::<rusqlite::Result<_>>()?)
}

/// One installed skill by name.
pub fn skill(conn: &Connection, data_dir: &Path, name: &str) -> Result<Option<SkillInfo>> {
    Ok(conn
        .query_row(&format!("SELECT {COLUMNS} FROM installed_skills WHERE name = ?1"), [name], |r| info_of(r, data_dir))
        .optional()?)
}

/// The store folder of `name` relative to the data directory, if installed.
pub fn store_path(conn: &Connection, name: &str) -> Result<Option<String>> {
    Ok(conn.query_row("SELECT store_path FROM installed_skills WHERE name = ?1", [name], |r| r.get(0)).optional()?)
}

/// Every installed name.
pub fn names(conn: &Connection) -> Result<Vec<String>> {
    let mut st = conn.prepare("SELECT name FROM installed_skills ORDER BY name")?;
    let rows = st.query_map([], |r| r.get(0))?;
    Ok(rows.collect::<rusqlite::Result<_>>()?)
}

/// The names of `names` installed from a source other than `source`: name -> (that source,
/// the skill's subpath there).
pub fn owners<'a>(
    conn: &Connection,
    source: &str,
    names: impl Iterator<Item = &'a str>,
) -> Result<std::collections::HashMap<String, (String, String)>> {
    let mut out = std::collections::HashMap::new();
    for name in names {
        let owner: Option<(String, String)> = conn
            .query_row("SELECT source, subpath FROM installed_skills WHERE name = ?1", [name], |r| {
                Ok((r.get(0)?, r.get(1)?))
            })
            .optional()?;
        if let Some(owner) = owner.filter(|o| o.0 != source) {
            out.insert(name.to_string(), owner);
        }
    }
    Ok(out)
}

/// `Err(NameCollision)` when one of `names` is installed from a source other than `source`.
pub fn check_collisions<'a>(conn: &Connection, source: &str, names: impl Iterator<Item = &'a str>) -> Result<()> {
    let mut clashes = vec![];
    for name in names {
        let owner: Option<String> =
            conn.query_row("SELECT source FROM installed_skills WHERE name = ?1", [name], |r| r.get(0)).optional()?;
        if let Some(owner) = owner.filter(|o| o != source) {
            clashes.push(format!("{name:?} is already installed from {owner}"));
        }
    }
    if clashes.is_empty() {
        return Ok(());
    }
    Err(Error::NameCollision(format!(
        "{}; {source} provides the same name. Remove the other source first (skillmem skills remove SOURCE)",
        clashes.join("; ")
    )))
}

/// Records `source` at `pinned_ref` (installed with `choices`) with exactly `skills`, in one transaction. Returns the
/// names the source no longer has (removed from the registry). A name installed from another
/// source is a `nameCollision` and nothing is written.
pub fn replace_source(
    conn: &mut Connection,
    source: &str,
    requested_ref: Option<&str>,
    pinned_ref: &str,
    choices: &[Choice],
    skills: &[NewSkill],
) -> Result<Vec<String>> {
    let tx = db::write_tx(conn)?;
    check_collisions(&tx, source, skills.iter().map(|s| s.info.name.as_str()))?;
    let now = db::now_ms();
    tx.execute(
        "INSERT INTO skill_sources(source, requested_ref, pinned_ref, installed_at, updated_at, choices) VALUES(?1, ?2, ?3, ?4, ?4, ?5)
         ON CONFLICT(source) DO UPDATE SET requested_ref = ?2, pinned_ref = ?3, updated_at = ?4, choices = ?5",
        params![source, requested_ref, pinned_ref, now, serde_json::to_string(choices).unwrap_or_else(|_| "[]".into())],
    )?;
    let old: Vec<String> = {
        let mut st = tx.prepare("SELECT name FROM installed_skills WHERE source = ?1")?;
        let rows = st.query_map([source], |r| r.get(0))?;
        rows.collect::<rusqlite::Result<_>>()?
    };
    let removed: Vec<String> = old.into_iter().filter(|n| !skills.iter().any(|s| &s.info.name == n)).collect();
    for name in &removed {
        tx.execute("DELETE FROM installed_skills WHERE name = ?1", [name])?;
    }
    for s in skills {
        let i = &s.info;
        tx.execute(
            "INSERT INTO installed_skills(name, source, description, pinned_ref, subpath, content_hash, store_path, installed_at, warnings, plugin)
             VALUES(?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10)
             ON CONFLICT(name) DO UPDATE SET description = ?3, pinned_ref = ?4, subpath = ?5, plugin = ?10,
               installed_at = CASE WHEN content_hash = ?6 THEN installed_at ELSE ?8 END,
               content_hash = ?6, store_path = ?7, warnings = ?9",
            params![
                i.name,
                source,
                i.description,
                i.pinned_ref,
                i.subpath,
                i.content_hash,
                s.store_path,
                i.installed_at,
                serde_json::to_string(&i.warnings).unwrap_or_else(|_| "[]".into()),
                i.plugin
            ],
        )?;
    }
    tx.commit()?;
    Ok(removed)
}

/// Deletes `source` and its skills; returns their names. `notFound` when not installed.
pub fn delete_source(conn: &mut Connection, source: &str) -> Result<Vec<String>> {
    let tx = db::write_tx(conn)?;
    let names: Vec<String> = {
        let mut st = tx.prepare("SELECT name FROM installed_skills WHERE source = ?1 ORDER BY name")?;
        let rows = st.query_map([source], |r| r.get(0))?;
        rows.collect::<rusqlite::Result<_>>()?
    };
    tx.execute("DELETE FROM installed_skills WHERE source = ?1", [source])?;
    let n = tx.execute("DELETE FROM skill_sources WHERE source = ?1", [source])?;
    if n == 0 {
        return Err(not_installed(source));
    }
    tx.commit()?;
    Ok(names)
}

/// The `notFound` error of a source that is not installed.
pub fn not_installed(source: &str) -> Error {
    Error::NotFound(format!("source {source:?} is not installed; `skillmem skills list` shows the installed sources"))
}
