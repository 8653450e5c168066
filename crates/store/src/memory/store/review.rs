//! The review queue (`historian.review`): promoted observations stored waiting for a person
//! (`review = 'pending'`), out of recall, the default listings and the team's outbox; a
//! decision accepts one (a pending correction then takes the place of the note it names) or
//! rejects it (kept as a retired note with the reason, restorable back into the queue).

use super::*;

/// What accepting a note did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Accepted {
    pub id: i64,
    /// The note a pending correction took the place of (now history).
    pub replaced: Option<i64>,
    /// A pending correction whose note was no longer current: accepted as a note of its own.
    pub replaces_gone: Option<i64>,
}

/// The note `id` when it waits for review and is visible from `project`.
fn pending_note(tx: &Connection, id: i64, project: &str) -> Result<Note> {
    let n = tx
        .query_row(
            &format!("SELECT {NOTE_COLUMNS} FROM notes WHERE id = ?1 AND {}", visible_with_history(2)),
            params![id, project],
            note_from_row,
        )
        .optional()?;
    let Some(n) = n else {
        return match get(tx, id)? {
            Some(_) => Err(Error::NotFound(format!(
                "note {id} belongs to another project and is not visible from this one; list the queue with skillmem review"
            ))),
            None => Err(not_found(id)),
        };
    };
    if !n.pending {
        return Err(Error::invalid(format!(
            "note {id} is not waiting for review (only promoted observations are, with historian.review on); list the queue with skillmem review"
        )));
    }
    if n.retired_at.is_some() {
        return Err(Error::invalid(format!(
            "note {id} was rejected{}; skillmem restore {id} puts it back in the queue",
            n.reason.as_deref().map(|r| format!(" ({r})")).unwrap_or_default()
        )));
    }
    Ok(n)
}

/// Accepts a note waiting for review: it enters recall (and the team's outbox). A pending
/// correction takes the place of the note it names when that one is still current (its hits
/// and pin carry over, it is kept as history).
pub fn accept(conn: &mut Connection, id: i64, project: &str, index: Option<&dyn VectorIndex>) -> Result<Accepted> {
    let tx = write_tx(conn)?;
    let n = pending_note(&tx, id, project)?;
    let now = now_ms();
    let mut out = Accepted { id, replaced: None, replaces_gone: None };
    // In the order a replacement is written (store::write_among): the old note's hits and pin
    // carried over while the new one still waits (no team event), the new note accepted (the
    // team's `note`, with those hits), then the old one out of recall (the team's retirement,
    // naming its successor).
    let mut supersede = None;
    if let Some(old) = n.review_replaces {
        let current: Option<(i64, i64)> = tx
            .query_row(
                &format!("SELECT hits, pinned FROM notes WHERE id = ?1 AND skill = ?3 AND {}", visible_from(2)),
                params![old, project, n.skill],
                |r| Ok((r.get(0)?, r.get(1)?)),
            )
            .optional()?;
        match current {
            Some((hits, pinned)) => {
                tx.execute(
                    "UPDATE notes SET hits = hits + ?2, pinned = max(pinned, ?3) WHERE id = ?1",
                    params![id, hits, pinned],
                )?;
                supersede = Some(old);
            }
            None => out.replaces_gone = Some(old),
        }
    }
    tx.execute(
        "UPDATE notes SET review = NULL, review_replaces = NULL, updated_at = ?2 WHERE id = ?1",
        params![id, now],
    )?;
    if let Some(old) = supersede {
        tx.execute(
            "UPDATE notes SET retired_at = ?3, superseded_by = ?2, updated_at = ?3 WHERE id = ?1",
            params![old, id, now],
        )?;
        out.replaced = Some(old);
    }
    tx.commit()?;
    if let (Some(ix), Some(old)) = (index, out.replaced) {
        ix.remove(old);
    }
    Ok(out)
}

/// Releases a held mined lesson into recall once enough sessions mined it: it stops waiting
/// (the team's trigger makes it a new note for the team), with no person's act recorded.
/// Returns whether it was held.
pub fn release(conn: &mut Connection, id: i64) -> Result<bool> {
    Ok(!release_all(conn, &[id])?.is_empty())
}

/// Releases held mined lessons in one transaction, as [`release`] does each; returns those
/// that were held.
pub fn release_all(conn: &mut Connection, ids: &[i64]) -> Result<Vec<i64>> {
    if ids.is_empty() {
        return Ok(vec![]);
    }
    let tx = write_tx(conn)?;
    let mut out = vec![];
    {
        let mut put = tx.prepare_cached(
            "UPDATE notes SET review = NULL, updated_at = ?2 WHERE id = ?1 AND review IS NOT NULL AND retired_at IS NULL",
        )?;
        let now = now_ms();
        for id in ids {
            if put.execute(params![id, now])? > 0 {
                out.push(*id);
            }
        }
    }
    tx.commit()?;
    Ok(out)
}

/// The reason a rejection in review gives (what the person said follows it): a pull tells a
/// lesson rejected here from one the team retired by it.
pub(super) const REJECTED: &str = "rejected in review";

/// Rejects a note waiting for review: it is retired with the reason (`rejected in review`,
/// and what the person said), still marked as reviewed-pending, so that `restore` puts it
/// back in the queue. Nothing written is lost; `purge` deletes it for good.
pub fn reject(conn: &mut Connection, id: i64, project: &str, reason: Option<&str>) -> Result<()> {
    let tx = write_tx(conn)?;
    pending_note(&tx, id, project)?;
    let why = match reason.map(str::trim).filter(|r| !r.is_empty()) {
        Some(r) => format!("{REJECTED}: {r}"),
        None => REJECTED.to_string(),
    };
    let now = now_ms();
    tx.execute("UPDATE notes SET retired_at = ?2, reason = ?3, updated_at = ?2 WHERE id = ?1", params![id, now, why])?;
    tx.commit()?;
    Ok(())
}

/// How many notes visible from `project` wait for review.
pub fn pending_count(conn: &Connection, project: &str) -> Result<i64> {
    Ok(conn.query_row(
        &format!(
            "SELECT count(*) FROM notes WHERE review IS NOT NULL AND retired_at IS NULL AND {}",
            visible_with_history(1)
        ),
        [project],
        |r| r.get(0),
    )?)
}
