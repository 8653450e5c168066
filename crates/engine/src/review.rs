//! The review queue (`historian.review`, docs/historian.md "Review"): the notes the historian
//! promoted that wait for a person, and the person's decision on each: accept, edit then
//! accept, reject. Statements over `notes` are `memory/store/review.rs`'s.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use super::{Engine, NoteFilter, NotePage};
use skillmem_error::{Error, Result};
use skillmem_store::memory::store;

/// A person's decision on a note waiting for review.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub enum Decision {
    /// Into recall (with `delta`: the lesson as the person wrote it; the historian's text is
    /// kept as an older version).
    Accept,
    /// Out of the queue, kept as a retired note with the reason (`restore` puts it back).
    Reject,
}

/// What a decision did.
#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct Decided {
    pub id: i64,
    pub decision: Decision,
    /// The lesson was edited before it was accepted.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub edited: bool,
    /// The note an accepted correction took the place of (now history).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub replaced: Option<i64>,
    /// What else happened, in words (a correction whose note was already gone, ...).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub warnings: Vec<String>,
}

impl Engine {
    /// The notes waiting for review that `f` selects (its `pending` is implied), newest first.
    pub fn review_queue(&self, f: &NoteFilter) -> Result<NotePage> {
        let f = NoteFilter { pending: true, ..f.clone() };
        self.list_notes(&f)
    }

    /// How many notes visible from this project wait for review.
    pub fn review_pending(&self) -> Result<i64> {
        store::pending_count(&self.conn(), self.project_id())
    }

    /// Accepts (after replacing its lesson with `delta`, when given) or rejects (with
    /// `reason`) the note `id`, which must be waiting for review.
    pub fn review_decide(
        &self,
        id: i64,
        decision: Decision,
        delta: Option<&str>,
        reason: Option<&str>,
    ) -> Result<Decided> {
        let delta = delta.map(str::trim).filter(|d| !d.is_empty());
        let mut out = Decided { id, decision, edited: false, replaced: None, warnings: vec![] };
        match decision {
            Decision::Reject => {
                if delta.is_some() {
                    return Err(Error::invalid(
                        "delta goes with accept (edit then accept); a rejection takes a reason only",
                    ));
                }
                let mut conn = self.conn();
                let reject = |c: &mut rusqlite::Connection| store::reject(c, id, &self.project_id, reason);
                self.store.catalog.write(&mut conn, reject, |_| vec![id])?;
            }
            Decision::Accept => {
                if reason.is_some_and(|r| !r.trim().is_empty()) {
                    return Err(Error::invalid("reason goes with reject; to accept, leave it out"));
                }
                // Checked before the edit, so that a note out of the queue is not edited.
                self.check_pending(id)?;
                if let Some(d) = delta {
                    let current = store::get(&self.conn(), id)?.map(|n| n.delta).unwrap_or_default();
                    if current != d {
                        self.edit(id, d)?;
                        out.edited = true;
                    }
                }
                let mut conn = self.conn();
                let index = self.embedding.index.as_deref();
                let accept = |c: &mut rusqlite::Connection| store::accept(c, id, &self.project_id, index);
                let touched = |a: &store::Accepted| std::iter::once(id).chain(a.replaced).collect();
                let a = self.store.catalog.write(&mut conn, accept, touched)?;
                out.replaced = a.replaced;
                if let Some(gone) = a.replaces_gone {
                    out.warnings.push(format!(
                        "note {gone}, which this correction was to replace, is no longer current: accepted as a note of its own"
                    ));
                }
            }
        }
        self.poke_team();
        Ok(out)
    }

    /// `Ok` when note `id` waits for review and is visible from this project.
    fn check_pending(&self, id: i64) -> Result<()> {
        let n = store::get(&self.conn(), id)?.ok_or_else(|| store::not_found(id))?;
        if !n.pending {
            return Err(Error::invalid(format!(
                "note {id} is not waiting for review (only promoted observations are, with historian.review on); list the queue with skillmem review"
            )));
        }
        if n.retired_at.is_some() {
            return Err(Error::invalid(format!(
                "note {id} was rejected; skillmem restore {id} puts it back in the queue"
            )));
        }
        Ok(())
    }
}
