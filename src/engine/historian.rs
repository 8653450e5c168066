//! The historian path joined to the store: enablement per skill, promotion through the
//! same write path as `skillmem/note`.

use super::Engine;
use crate::error::{Error, Result};
use crate::historian::{observations, transcript, Format};
use crate::memory::{store, NewNote, Source};
use crate::protocol::historian::*;

impl Engine {
    /// `skillmem/transcriptChunk`: renders a chunk, lists the skills used and, when one of
    /// them has memory enabled, the instructions for the historian.
    pub fn transcript_chunk(&self, p: TranscriptChunkParams) -> Result<TranscriptChunkResult> {
        let format = Format::parse(&p.format).ok_or_else(|| {
            Error::invalid(format!(
                "format {:?} is not a transcript format; use opencode, claude-code or text",
                p.format
            ))
        })?;
        // An empty chunk (no messages, no text) renders as empty text: not an error.
        let messages = p.messages.unwrap_or_default();
        let (r, dirs) = transcript::render_full(format, &messages, p.text.as_deref());
        let mut enabled = vec![];
        for name in &r.skills {
            let dir =
                dirs.iter().find(|(s, _)| s == name).map(|(_, d)| d.clone()).filter(|d| d.join("SKILL.md").is_file());
            match self.skill_context(name, dir) {
                Ok(ctx) if ctx.enabled => enabled.push(name.clone()),
                Ok(_) => {}
                Err(e) => tracing::debug!(skill = name, "transcriptChunk: skill not resolved: {e}"),
            }
        }
        Ok(TranscriptChunkResult {
            rendered: r.rendered,
            skills: r.skills,
            instructions: observations::instructions(&enabled),
            skipped: r.skipped,
        })
    }

    /// `skillmem/historianResult`: promotes the observations of the first
    /// `<skill_observations>` block; every other line is rejected with a reason.
    pub fn historian_result(&self, p: HistorianResultParams) -> Result<HistorianResultResult> {
        let parsed = observations::parse(&p.output);
        let mut rejected: Vec<RejectedObservation> =
            parsed.rejected.into_iter().map(|r| RejectedObservation { line: r.line, reason: r.reason }).collect();
        let mut promoted = vec![];
        let scope = self.config().historian.promote_scope;
        let mut seen = std::collections::HashSet::new();
        for o in parsed.observations {
            let line = format!("* {} | {} | {}", o.skill, o.kind.as_str(), o.lesson);
            // The same lesson twice in one output is one observation, not two hits.
            if !seen.insert((o.skill.clone(), crate::memory::norm_hash(&o.lesson))) {
                rejected.push(RejectedObservation { line, reason: "repeats an earlier line of this block".into() });
                continue;
            }
            let ctx = match self.skill_context(&o.skill, None) {
                Ok(ctx) if ctx.enabled => ctx,
                Ok(ctx) => {
                    let reason = match &ctx.problem {
                        Some(p) => format!("memory is off for skill {:?} because {p}", o.skill),
                        None => format!("memory is not enabled for skill {:?}", o.skill),
                    };
                    rejected.push(RejectedObservation { line, reason });
                    continue;
                }
                Err(e) => {
                    rejected.push(RejectedObservation { line, reason: e.to_string() });
                    continue;
                }
            };
            let new = NewNote {
                skill: o.skill.clone(),
                kind: o.kind,
                intent: String::new(),
                delta: o.lesson.clone(),
                tags: vec![],
                scope,
                source: Source::Historian,
                session_id: p.session_id.clone(),
                skill_hash: None,
            };
            match self.write_note_in(&ctx, new) {
                Ok(w) => {
                    let stored = store::get(&self.conn(), w.id)?;
                    let (scope, origin_project) = match stored {
                        Some(n) => (n.scope, n.origin_project),
                        None => (scope, self.project_id().to_string()),
                    };
                    promoted.push(PromotedNote {
                        id: w.id,
                        skill: o.skill,
                        kind: o.kind.as_str().to_string(),
                        delta: o.lesson,
                        status: w.status,
                        scope,
                        origin_project,
                    });
                }
                // Storage failures are the caller's problem, not the line's.
                Err(e @ Error::Storage(_)) => return Err(e),
                Err(e) => rejected.push(RejectedObservation { line, reason: e.to_string() }),
            }
        }
        Ok(HistorianResultResult { promoted, rejected })
    }
}
