//! The SQLite file: connection setup, the migrations runner, and self-heal at open.
//!
//! Owns the pragmas every connection needs (WAL, busy timeout) so that several sidecars and
//! CLI calls can share one data directory, and the rule that every write transaction starts
//! with `BEGIN IMMEDIATE` (see [`write_tx`]): a deferred transaction that upgrades to a writer
//! fails with `SQLITE_BUSY` despite the busy timeout. Knows nothing of notes or skills beyond
//! the schema: the migrations it applies, and the one self-heal of the schema's derived
//! full-text index at open (`heal_fts`). Statements over notes are `memory::store`'s.

use std::path::Path;
use std::time::Duration;

use rusqlite::{Connection, OpenFlags, Transaction, TransactionBehavior};

use crate::error::{Error, Result};

/// The migrations, in order. Append only: a released migration never changes.
pub const MIGRATIONS: &[(&str, &str)] = &[
    ("0001_notes", include_str!("../../migrations/0001_notes.sql")),
    ("0002_skills", include_str!("../../migrations/0002_skills.sql")),
    ("0003_hosts", include_str!("../../migrations/0003_hosts.sql")),
    ("0004_fts_skill", include_str!("../../migrations/0004_fts_skill.sql")),
    ("0005_catalog_index", include_str!("../../migrations/0005_catalog_index.sql")),
    ("0006_team", include_str!("../../migrations/0006_team.sql")),
    ("0007_vector_model_index", include_str!("../../migrations/0007_vector_model_index.sql")),
    ("0008_note_pieces", include_str!("../../migrations/0008_note_pieces.sql")),
    ("0009_versions", include_str!("../../migrations/0009_versions.sql")),
    ("0010_team_history", include_str!("../../migrations/0010_team_history.sql")),
    ("0011_provenance", include_str!("../../migrations/0011_provenance.sql")),
    ("0012_calls", include_str!("../../migrations/0012_calls.sql")),
    ("0013_transcript", include_str!("../../migrations/0013_transcript.sql")),
    ("0014_trust", include_str!("../../migrations/0014_trust.sql")),
    ("0015_mined", include_str!("../../migrations/0015_mined.sql")),
    ("0016_team_evidence", include_str!("../../migrations/0016_team_evidence.sql")),
    ("0017_team_counts", include_str!("../../migrations/0017_team_counts.sql")),
    ("0018_team_counts_lookup", include_str!("../../migrations/0018_team_counts_lookup.sql")),
    ("0019_mined_support", include_str!("../../migrations/0019_mined_support.sql")),
    ("0020_skill_plugins", include_str!("../../migrations/0020_skill_plugins.sql")),
    ("0021_holdout", include_str!("../../migrations/0021_holdout.sql")),
    ("0022_team_support", include_str!("../../migrations/0022_team_support.sql")),
    ("0023_match_pieces", include_str!("../../migrations/0023_match_pieces.sql")),
    ("0024_text_changes", include_str!("../../migrations/0024_text_changes.sql")),
];

/// The file name of the database inside the data directory.
pub const DB_FILE: &str = "skillmem.db";

/// Opens (creating when needed) the database of `data_dir`, applies pending migrations and
/// heals a full-text index that lost its rows.
pub fn open(data_dir: &Path) -> Result<Connection> {
    std::fs::create_dir_all(data_dir).map_err(|e| {
        Error::storage(format!(
            "cannot create the data directory {}: {e}; set dataDir, --data-dir or SKILLMEM_HOME to a writable folder",
            data_dir.display()
        ))
    })?;
    let path = data_dir.join(DB_FILE);
    let mut conn = Connection::open_with_flags(
        &path,
        OpenFlags::SQLITE_OPEN_READ_WRITE | OpenFlags::SQLITE_OPEN_CREATE | OpenFlags::SQLITE_OPEN_NO_MUTEX,
    )
    .map_err(|e| Error::storage(format!("cannot open the database {}: {e}", path.display())))?;
    configure(&conn).map_err(|e| Error::storage(format!("cannot use the database {}: {e}", path.display())))?;
    migrate(&mut conn, MIGRATIONS)?;
    heal_fts(&mut conn)?;
    Ok(conn)
}

fn configure(conn: &Connection) -> rusqlite::Result<()> {
    conn.busy_timeout(Duration::from_secs(10))?;
    conn.pragma_update(None, "journal_mode", "WAL")?;
    conn.pragma_update(None, "synchronous", "NORMAL")?;
    conn.pragma_update(None, "foreign_keys", "ON")?;
    conn.pragma_update(None, "cache_size", -cache_kib())?;
    Ok(())
}

/// SQLite's page cache per connection, in KiB: [`CACHE_KIB`], or `SKILLMEM_SQLITE_CACHE_KIB`
/// (benchmarks).
fn cache_kib() -> i64 {
    std::env::var("SKILLMEM_SQLITE_CACHE_KIB").ok().and_then(|v| v.parse().ok()).unwrap_or(CACHE_KIB)
}

/// The page cache a connection may grow to (SQLite's default is 2 MiB). A recall in a large
/// store reads the FTS index's pages and the rows of the notes it ranks from all over the
/// file; with 2 MiB every recall read them again from the operating system (measured at 100k
/// notes: a tenth of the server's CPU time in `pread` copies). The cache only grows with the
/// pages actually read. 8 MiB since the footprint work: at 100k notes 16 MiB held 9 MB more
/// (the server 155–156 MB against 146–147 MB) for no `toolAfter` time the rounds could tell
/// apart (docs/benchmarks.md, "The goals at 100,000 notes"). 4 MiB since the search thread
/// reads notes too: 8 MiB held 5 MB more, again for no time the rounds could tell apart (the
/// notes a large skill's load reads are scattered over the file either way; docs/benchmarks.md,
/// "Notes read on the search thread, paid for by a smaller page cache"). 2 MiB again since a
/// large skill's loads read only the notes their block shows (its pieces are held): 4 MiB held
/// 5–8 MB more (the sidecar 146/145 MB against 141/137 after the rounds), and the large skill's
/// p50 was 1.51/1.40 against 1.43/1.31 ms, small skills' 0.64/0.57 against 0.58/0.59 ms
/// (docs/benchmarks.md, "A large skill's pieces held instead of its notes").
pub const CACHE_KIB: i64 = 2 * 1024;

/// Starts a write transaction that takes the write lock up front (`BEGIN IMMEDIATE`).
pub fn write_tx(conn: &mut Connection) -> Result<Transaction<'_>> {
    Ok(conn.transaction_with_behavior(TransactionBehavior::Immediate)?)
}

/// Applies every migration past `PRAGMA user_version`, each in its own transaction. A
/// database newer than this binary is refused.
pub fn migrate(conn: &mut Connection, migrations: &[(&str, &str)]) -> Result<()> {
    let known = migrations.len() as i64;
    let current: i64 = conn.pragma_query_value(None, "user_version", |r| r.get(0))?;
    if current > known {
        return Err(Error::storage(format!(
            "the database was written by a newer skillmem (schema version {current}, this binary knows {known}); upgrade skillmem or point --data-dir elsewhere"
        )));
    }
    for (i, (name, sql)) in migrations.iter().enumerate().skip(current as usize) {
        // Foreign keys cannot be switched inside a transaction: off around a rebuild only.
        let rebuild = sql.starts_with(REBUILD_NOTES);
        if rebuild {
            conn.pragma_update(None, "foreign_keys", "OFF")?;
        }
        let done = migrate_one(conn, i, name, sql);
        if rebuild {
            conn.pragma_update(None, "foreign_keys", "ON")?;
        }
        done?;
    }
    Ok(())
}

/// Applies migration `i` (`name`, `sql`) in its own transaction, unless another process did.
fn migrate_one(conn: &mut Connection, i: usize, name: &str, sql: &str) -> Result<()> {
    let tx = write_tx(conn)?;
    // Re-read inside the write lock: another process may have migrated meanwhile.
    let now: i64 = tx.pragma_query_value(None, "user_version", |r| r.get(0))?;
    if now > i as i64 {
        tx.commit()?;
        return Ok(());
    }
    let applied = match sql.strip_prefix(REBUILD_NOTES) {
        Some(rest) => rebuild_notes(&tx, rest),
        None => tx.execute_batch(sql).map_err(Error::from),
    };
    applied.map_err(|e| Error::storage(format!("migration {name} failed: {e}")))?;
    tx.pragma_update(None, "user_version", (i + 1) as i64)?;
    tx.commit()?;
    tracing::info!(migration = name, "applied migration");
    Ok(())
}

/// The first line of a migration that rebuilds table `notes` (SQLite changes no CHECK
/// constraint in place). Its SQL above [`SWAP`] creates `notes_new`; see [`rebuild_notes`].
const REBUILD_NOTES: &str = "-- skillmem: rebuild notes\n";
/// The line between a rebuild's new table and what runs after the swap.
const SWAP: &str = "-- skillmem: swap\n";

/// Rebuilds `notes` inside the migration's transaction, as SQLite's documentation says
/// ("Making Other Kinds Of Table Schema Changes"): `notes_new` is created, every column of
/// `notes` copied into it (a column it lacks is an error: nothing may be dropped on the way),
/// `notes` dropped, `notes_new` renamed, every index and trigger `notes` had created again as
/// it was, then the SQL after [`SWAP`] runs. Foreign keys are off meanwhile (dropping `notes`
/// with them on would cascade to the notes' word pieces and conflicting pairs): the caller
/// turned them off, and a foreign-key check must come out clean before the commit.
fn rebuild_notes(tx: &Transaction<'_>, sql: &str) -> Result<()> {
    let (create, after) =
        sql.split_once(SWAP).ok_or_else(|| Error::storage("a notes rebuild has no `-- skillmem: swap` line"))?;
    let saved: Vec<String> = {
        let mut stmt = tx.prepare(
            "SELECT sql FROM sqlite_schema WHERE tbl_name = 'notes' AND type IN ('index', 'trigger') AND sql IS NOT NULL
             ORDER BY rowid",
        )?;
        let rows = stmt.query_map([], |r| r.get(0))?;
        rows.collect::<rusqlite::Result<_>>()?
    };
    tx.execute_batch(create)?;
    // Stored columns only (`hidden` 2 and 3 are generated columns).
    let columns = |table: &str| -> Result<Vec<String>> {
        let mut stmt = tx.prepare(&format!("SELECT name FROM pragma_table_xinfo('{table}') WHERE hidden = 0"))?;
        let rows = stmt.query_map([], |r| r.get(0))?;
        Ok(rows.collect::<rusqlite::Result<_>>()?)
    };
    let (old, new) = (columns("notes")?, columns("notes_new")?);
    let lost: Vec<&String> = old.iter().filter(|c| !new.contains(c)).collect();
    if !lost.is_empty() {
        return Err(Error::storage(format!("the rebuilt notes table would lose column(s) {lost:?}")));
    }
    let list = old.join(", ");
    tx.execute(&format!("INSERT INTO notes_new ({list}) SELECT {list} FROM notes"), [])?;
    tx.execute_batch("DROP TABLE notes; ALTER TABLE notes_new RENAME TO notes;")?;
    for s in &saved {
        tx.execute_batch(s)?;
    }
    tx.execute_batch(after)?;
    let broken: i64 = tx.query_row("SELECT count(*) FROM pragma_foreign_key_check", [], |r| r.get(0))?;
    if broken > 0 {
        return Err(Error::storage(format!("{broken} row(s) point at notes that the rebuild did not keep")));
    }
    Ok(())
}

/// Rebuilds the notes' full-text index when it does not hold one row per note.
///
/// Both counts come from one snapshot: counted apart, a note another process (a running
/// sidecar) wrote between them looked like a missing row, and every such open rebuilt the
/// whole index (seen in `skillmem eval recall`, whose store a child server writes). A gap is
/// counted again under the write lock before the rebuild.
fn heal_fts(conn: &mut Connection) -> Result<()> {
    let counts = |c: &Connection| -> Result<(i64, i64)> {
        let notes: i64 = c.query_row("SELECT count(*) FROM notes", [], |r| r.get(0))?;
        let indexed: i64 = c.query_row("SELECT count(*) FROM notes_fts_docsize", [], |r| r.get(0))?;
        Ok((notes, indexed))
    };
    let (notes, indexed) = {
        let snapshot = conn.transaction()?;
        let n = counts(&snapshot)?;
        snapshot.commit()?;
        n
    };
    if notes == indexed {
        return Ok(());
    }
    let tx = write_tx(conn)?;
    let (notes, indexed) = counts(&tx)?;
    if notes != indexed {
        tracing::warn!(notes, indexed, "full-text index out of step; rebuilding");
        tx.execute("INSERT INTO notes_fts(notes_fts) VALUES('rebuild')", [])?;
    }
    tx.commit()?;
    Ok(())
}

/// `YYYY-MM-DD` (UTC) of a time in ms since the epoch.
pub fn day_of(ms: i64) -> String {
    // Days since 1970-01-01 to a civil date (Howard Hinnant's algorithm).
    let z = ms.div_euclid(86_400_000) + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = doy - (153 * mp + 2) / 5 + 1;
    let m = if mp < 10 { mp + 3 } else { mp - 9 };
    let y = yoe + era * 400 + i64::from(m <= 2);
    format!("{y:04}-{m:02}-{d:02}")
}

/// Milliseconds since the Unix epoch of an RFC 3339 time as hosts write it in their
/// transcripts (`2026-12-01T22:15:28.389Z`, `2026-12-01T23:15:28+01:00`, fraction optional).
pub fn ms_of_rfc3339(s: &str) -> Option<i64> {
    let s = s.trim();
    let num = |a: usize, b: usize| -> Option<i64> {
        let t = s.get(a..b)?;
        t.bytes().all(|c| c.is_ascii_digit()).then(|| t.parse().ok()).flatten()
    };
    let (y, m, d) = (num(0, 4)?, num(5, 7)?, num(8, 10)?);
    let (hh, mm, ss) = (num(11, 13)?, num(14, 16)?, num(17, 19)?);
    if s.get(4..5)? != "-" || s.get(7..8)? != "-" || !matches!(s.get(10..11)?, "T" | "t" | " ") {
        return None;
    }
    if !(1..=12).contains(&m) || !(1..=31).contains(&d) || hh > 23 || mm > 59 || ss > 60 {
        return None;
    }
    let mut rest = &s[19..];
    let mut ms = 0;
    if let Some(frac) = rest.strip_prefix('.') {
        let n = frac.bytes().take_while(u8::is_ascii_digit).count();
        if n == 0 {
            return None;
        }
        let digits = &frac[..n];
        ms = format!("{:0<3}", &digits[..n.min(3)]).parse::<i64>().ok()?;
        rest = &frac[n..];
    }
    let offset = match rest {
        "Z" | "z" => 0,
        o if o.len() == 6 && (o.starts_with('+') || o.starts_with('-')) && &o[3..4] == ":" => {
            let h: i64 = o[1..3].parse().ok()?;
            let mi: i64 = o[4..6].parse().ok()?;
            let v = (h * 60 + mi) * 60_000;
            if o.starts_with('-') {
                -v
            } else {
                v
            }
        }
        _ => return None,
    };
    // Days from a civil date (Howard Hinnant's algorithm), the inverse of `day_of`.
    let (y, m) = if m <= 2 { (y - 1, m + 9) } else { (y, m - 3) };
    let era = y.div_euclid(400);
    let yoe = y - era * 400;
    let doy = (153 * m + 2) / 5 + d - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    let days = era * 146_097 + doe - 719_468;
    Some(((days * 24 + hh) * 60 + mm) * 60_000 + ss * 1000 + ms - offset)
}

/// Milliseconds since the Unix epoch.
pub fn now_ms() -> i64 {
    std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map(|d| d.as_millis() as i64).unwrap_or(0)
}

#[cfg(test)]
mod tests {
    #[test]
    fn rfc3339_table() {
        for (s, want) in [
            ("1970-01-01T00:00:00Z", Some(0)),
            ("2025-12-01T00:00:00Z", Some(1_764_547_200_000)),
            ("2026-12-01T22:15:28.389Z", Some(1_796_163_328_389)),
            ("2026-12-01T23:15:28.389+01:00", Some(1_796_163_328_389)),
            ("2026-12-01T22:15:28.3Z", Some(1_796_163_328_300)),
            ("2026-12-01T22:15:28.389123456Z", Some(1_796_163_328_389)),
            ("2026-12-01T21:15:28-01:00", Some(1_796_163_328_000)),
            ("2024-02-29T12:00:00Z", Some(1_709_208_000_000)),
            ("2026-12-01", None),
            ("2026-13-01T00:00:00Z", None),
            ("2026-12-01T22:15:28", None),
            ("2026-12-01T22:15:28.Z", None),
            ("not a time", None),
            ("", None),
        ] {
            assert_eq!(super::ms_of_rfc3339(s), want, "{s}");
            if let Some(ms) = want {
                assert_eq!(super::day_of(ms), s[..10], "{s}");
            }
        }
    }

    use super::*;

    #[test]
    fn fresh_database_gets_every_migration() {
        let dir = tempfile::tempdir().unwrap();
        let conn = open(dir.path()).unwrap();
        let v: i64 = conn.pragma_query_value(None, "user_version", |r| r.get(0)).unwrap();
        assert_eq!(v, MIGRATIONS.len() as i64);
    }

    #[test]
    fn rerun_is_a_no_op_and_keeps_data() {
        let dir = tempfile::tempdir().unwrap();
        {
            let conn = open(dir.path()).unwrap();
            conn.execute(
                "INSERT INTO notes(skill, scope, project_id, origin_project, source, kind, intent, delta, norm_hash, created_at, updated_at)
                 VALUES('s','project','p','p','agent','gotcha','i','d','h',1,1)",
                [],
            )
            .unwrap();
        }
        let conn = open(dir.path()).unwrap();
        let n: i64 = conn.query_row("SELECT count(*) FROM notes", [], |r| r.get(0)).unwrap();
        assert_eq!(n, 1);
    }

    #[test]
    fn notes_written_before_the_skill_token_are_found_after_it() {
        let dir = tempfile::tempdir().unwrap();
        let mut conn = Connection::open(dir.path().join(DB_FILE)).unwrap();
        migrate(&mut conn, &MIGRATIONS[..3]).unwrap();
        conn.execute(
            "INSERT INTO notes(skill, scope, project_id, origin_project, source, kind, intent, delta, norm_hash, created_at, updated_at)
             VALUES('jq','global','','p','agent','gotcha','zebra crossing','d','h',1,1)",
            [],
        )
        .unwrap();
        drop(conn);
        let conn = open(dir.path()).unwrap();
        let q = format!("{} AND \"zebra\"", crate::memory::store::skill_token("jq"));
        let n: i64 =
            conn.query_row("SELECT count(*) FROM notes_fts WHERE notes_fts MATCH ?1", [q], |r| r.get(0)).unwrap();
        assert_eq!(n, 1);
    }

    /// Migration 0009 (a note's versions) keeps every note current, and lets history repeat a
    /// current note's text while two current notes still may not.
    #[test]
    fn notes_written_before_versions_stay_current_after_them() {
        let dir = tempfile::tempdir().unwrap();
        let mut conn = Connection::open(dir.path().join(DB_FILE)).unwrap();
        migrate(&mut conn, &MIGRATIONS[..8]).unwrap();
        for (skill, delta) in [("jq", "use -r"), ("jq", "use -s"), ("git", "rebase -i")] {
            conn.execute(
                "INSERT INTO notes(skill, scope, project_id, origin_project, source, kind, intent, delta, norm_hash, created_at, updated_at)
                 VALUES(?1,'global','','p','agent','gotcha','',?2,?2,1,1)",
                [skill, delta],
            )
            .unwrap();
        }
        drop(conn);
        let conn = open(dir.path()).unwrap();
        let current: i64 =
            conn.query_row("SELECT count(*) FROM notes WHERE retired_at IS NULL", [], |r| r.get(0)).unwrap();
        assert_eq!(current, 3);
        let insert = "INSERT INTO notes(skill, scope, project_id, origin_project, source, kind, intent, delta, norm_hash, created_at, updated_at, retired_at)
                      VALUES('jq','global','','p','agent','gotcha','','use -r','use -r',2,2,?1)";
        conn.execute(insert, [Some(5i64)]).unwrap();
        assert!(conn.execute(insert, [None::<i64>]).is_err(), "two current notes may not say exactly the same");
    }

    /// Migration 0011 (provenance, review) rebuilds `notes`: every note keeps its id, its
    /// full-text rows, its word pieces, its conflicting pairs and its team rows; the triggers
    /// keep working; the source takes `import` and `team`; a note waiting for review stays
    /// off the team's outbox until it is accepted.
    #[test]
    fn notes_written_before_provenance_keep_everything_after_it() {
        let dir = tempfile::tempdir().unwrap();
        let mut conn = Connection::open(dir.path().join(DB_FILE)).unwrap();
        conn.pragma_update(None, "foreign_keys", "ON").unwrap();
        let before = MIGRATIONS.iter().position(|(n, _)| *n == "0011_provenance").unwrap();
        migrate(&mut conn, &MIGRATIONS[..before]).unwrap();
        conn.execute("INSERT INTO team_state (id, machine, target) VALUES (1, 'm', 't')", []).unwrap();
        let insert =
            "INSERT INTO notes(skill, scope, project_id, origin_project, source, kind, intent, delta, norm_hash,
                      session_id, created_at, updated_at, vector, vector_model, retired_at)
                      VALUES(?1,'global','','p',?2,'gotcha','zebra crossing',?3,?3,?4,1,1,x'0000803f','m',?5)";
        conn.execute(insert, rusqlite::params!["jq", "agent", "use -r", "s1", None::<i64>]).unwrap();
        conn.execute(insert, rusqlite::params!["jq", "historian", "use -s", None::<String>, None::<i64>]).unwrap();
        conn.execute(insert, rusqlite::params!["jq", "agent", "use -c", "s1", Some(5i64)]).unwrap();
        conn.execute("INSERT INTO note_conflicts (older, newer, created_at) VALUES (1, 2, 1)", []).unwrap();
        conn.execute("INSERT INTO note_pieces (note_id, model, pieces) VALUES (1, 'm', x'00')", []).unwrap();
        conn.execute("INSERT INTO team_notes (note_id, uid) VALUES (1, 'u1')", []).unwrap();
        let count = |c: &Connection, sql: &str| -> i64 { c.query_row(sql, [], |r| r.get(0)).unwrap() };
        let outbox = count(&conn, "SELECT count(*) FROM team_outbox");
        assert_eq!(outbox, 2, "the two current notes were queued for the team");
        drop(conn);

        let conn = open(dir.path()).unwrap();
        assert_eq!(count(&conn, "SELECT count(*) FROM notes"), 3);
        assert_eq!(count(&conn, "SELECT count(*) FROM notes WHERE retired_at IS NOT NULL"), 1);
        assert_eq!(count(&conn, "SELECT count(*) FROM notes WHERE session_id = 's1'"), 2);
        assert_eq!(count(&conn, "SELECT count(*) FROM notes WHERE vector IS NOT NULL AND vector_model = 'm'"), 3);
        assert_eq!(count(&conn, "SELECT count(*) FROM notes WHERE source = 'historian' AND host IS NULL"), 1);
        assert_eq!(count(&conn, "SELECT count(*) FROM note_conflicts"), 1);
        assert_eq!(count(&conn, "SELECT count(*) FROM note_pieces"), 1);
        assert_eq!(count(&conn, "SELECT count(*) FROM team_notes"), 1);
        assert_eq!(count(&conn, "SELECT count(*) FROM team_outbox"), outbox);
        assert_eq!(count(&conn, "SELECT count(*) FROM pragma_foreign_key_check"), 0);
        assert_eq!(count(&conn, "PRAGMA foreign_keys"), 1, "foreign keys are on again");
        conn.execute("INSERT INTO notes_fts (notes_fts, rank) VALUES ('integrity-check', 1)", []).unwrap();
        let q = format!("{} AND \"zebra\"", crate::memory::store::skill_token("jq"));
        let n: i64 =
            conn.query_row("SELECT count(*) FROM notes_fts WHERE notes_fts MATCH ?1", [q], |r| r.get(0)).unwrap();
        assert_eq!(n, 3);
        // The triggers of every earlier migration are back: the full-text index, the team's
        // outbox, the word pieces.
        conn.execute("UPDATE notes SET delta = 'use --raw-output' WHERE id = 1", []).unwrap();
        assert_eq!(count(&conn, "SELECT count(*) FROM note_pieces"), 0);
        assert_eq!(count(&conn, "SELECT count(*) FROM team_outbox WHERE kind = 'edit'"), 1);
        let n: i64 =
            conn.query_row("SELECT count(*) FROM notes_fts WHERE notes_fts MATCH 'output'", [], |r| r.get(0)).unwrap();
        assert_eq!(n, 1);
        // Deleting a note still cascades to its pairs.
        conn.execute("DELETE FROM notes WHERE id = 2", []).unwrap();
        assert_eq!(count(&conn, "SELECT count(*) FROM note_conflicts"), 0);
        // The new sources, and nothing else.
        let add = "INSERT INTO notes(skill, scope, project_id, origin_project, source, kind, delta, norm_hash, created_at, updated_at, review)
                   VALUES('jq','global','','p',?1,'fix',?2,?2,1,1,?3)";
        for s in ["import", "team"] {
            conn.execute(add, rusqlite::params![s, format!("from {s}"), None::<String>]).unwrap();
        }
        assert!(conn.execute(add, rusqlite::params!["robot", "x", None::<String>]).is_err());
        // A note waiting for review is not queued for the team; accepted, it is.
        let queued = count(&conn, "SELECT count(*) FROM team_outbox");
        conn.execute(add, rusqlite::params!["historian", "pending one", Some("pending")]).unwrap();
        let id = conn.last_insert_rowid();
        conn.execute("UPDATE notes SET hits = hits + 1 WHERE id = ?1", [id]).unwrap();
        assert_eq!(count(&conn, "SELECT count(*) FROM team_outbox"), queued);
        conn.execute("UPDATE notes SET review = NULL WHERE id = ?1", [id]).unwrap();
        let kinds: i64 = conn
            .query_row("SELECT count(*) FROM team_outbox WHERE note_id = ?1 AND kind = 'note'", [id], |r| r.get(0))
            .unwrap();
        assert_eq!(kinds, 1);
    }

    /// Migration 0010 (a note's life on the team) makes the outbox again: pending events stay
    /// in order, and the event counter goes on from where it was even with the outbox empty
    /// (the server skips every number it has applied from this machine).
    #[test]
    fn the_outbox_made_again_keeps_its_events_and_its_counter() {
        let dir = tempfile::tempdir().unwrap();
        let mut conn = Connection::open(dir.path().join(DB_FILE)).unwrap();
        migrate(&mut conn, &MIGRATIONS[..9]).unwrap();
        conn.execute("INSERT INTO team_state (id, machine, target) VALUES (1, 'm', 't')", []).unwrap();
        for delta in ["use -r", "use -s", "use -c"] {
            conn.execute(
                "INSERT INTO notes(skill, scope, project_id, origin_project, source, kind, intent, delta, norm_hash, created_at, updated_at)
                 VALUES('jq','global','','p','agent','gotcha','',?1,?1,1,1)",
                [delta],
            )
            .unwrap();
        }
        conn.execute("INSERT INTO team_notes (note_id, uid) VALUES (1, 'u1')", []).unwrap();
        // Events 1-3 were pushed; only the third is still pending.
        conn.execute("DELETE FROM team_outbox WHERE id < 3", []).unwrap();
        drop(conn);
        let conn = open(dir.path()).unwrap();
        let pending: Vec<(i64, String)> = conn
            .prepare("SELECT id, kind FROM team_outbox ORDER BY id")
            .unwrap()
            .query_map([], |r| Ok((r.get(0)?, r.get(1)?)))
            .unwrap()
            .collect::<rusqlite::Result<_>>()
            .unwrap();
        assert_eq!(pending, vec![(3, "note".to_string())]);
        conn.execute("DELETE FROM team_outbox", []).unwrap();
        conn.execute("UPDATE notes SET retired_at = 5, reason = 'wrong' WHERE id = 1", []).unwrap();
        let (id, kind): (i64, String) =
            conn.query_row("SELECT id, kind FROM team_outbox", [], |r| Ok((r.get(0)?, r.get(1)?))).unwrap();
        assert_eq!((id, kind.as_str()), (4, "retire"), "the counter goes on after 3; a retirement is an event");
        let uid: String = conn.query_row("SELECT uid FROM team_notes WHERE note_id = 1", [], |r| r.get(0)).unwrap();
        assert_eq!(uid, "u1", "a retired note keeps its team id");
        conn.execute("UPDATE notes SET retired_at = NULL, reason = NULL WHERE id = 1", []).unwrap();
        let kind: String = conn.query_row("SELECT kind FROM team_outbox WHERE id = 5", [], |r| r.get(0)).unwrap();
        assert_eq!(kind, "restore");
    }

    #[test]
    fn newer_database_is_refused() {
        let dir = tempfile::tempdir().unwrap();
        {
            let conn = open(dir.path()).unwrap();
            conn.pragma_update(None, "user_version", 999).unwrap();
        }
        let err = open(dir.path()).unwrap_err();
        assert!(err.to_string().contains("newer skillmem"), "{err}");
    }

    #[test]
    fn lost_fts_rows_are_rebuilt_at_open() {
        let dir = tempfile::tempdir().unwrap();
        {
            let conn = open(dir.path()).unwrap();
            conn.execute(
                "INSERT INTO notes(skill, scope, project_id, origin_project, source, kind, intent, delta, norm_hash, created_at, updated_at)
                 VALUES('s','project','p','p','agent','gotcha','zebra crossing','d','h',1,1)",
                [],
            )
            .unwrap();
            conn.execute("INSERT INTO notes_fts(notes_fts) VALUES('delete-all')", []).unwrap();
            let n: i64 = conn
                .query_row("SELECT count(*) FROM notes_fts WHERE notes_fts MATCH 'zebra'", [], |r| r.get(0))
                .unwrap();
            assert_eq!(n, 0);
        }
        let conn = open(dir.path()).unwrap();
        let n: i64 =
            conn.query_row("SELECT count(*) FROM notes_fts WHERE notes_fts MATCH 'zebra'", [], |r| r.get(0)).unwrap();
        assert_eq!(n, 1);
    }

    #[test]
    fn unwritable_data_dir_says_what_to_fix() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("a-file");
        std::fs::write(&file, "x").unwrap();
        let err = open(&file.join("sub")).unwrap_err();
        assert!(err.to_string().contains("data directory"), "{err}");
    }
}
