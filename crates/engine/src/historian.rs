//! The historian path joined to the store: enablement per skill, promotion through the
//! same write path as `skillmem/note`.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::Engine;
use skillmem_error::{Error, Result};
use skillmem_historian::{filter, observations, transcript, Format};
use skillmem_store::memory::{store, NewNote, Origin, Scope, Source, WriteStatus};

/// What the chunks rendered for one session showed.
#[derive(Debug, Clone, Default)]
struct SessionChunks {
    /// The skills they used, in first-use order.
    pub skills: Vec<String>,
    /// Their text, as rendered (the newest [`SESSION_TEXT_MAX`] bytes).
    pub text: String,
}

/// How much of a session's chunks' text is kept for grounding: 512 KiB, about 130k tokens,
/// more than a summariser reads at once.
pub const SESSION_TEXT_MAX: usize = 512 * 1024;

/// A transcript chunk rendered for the historian.
#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct RenderedChunk {
    /// The chunk as text, with a `TC: skill(<name>)` marker line per skill use.
    pub rendered: String,
    /// Skills used in the chunk, in first-use order.
    pub skills: Vec<String>,
    /// Instructions for the historian's prompt; empty when no used skill has memory.
    pub instructions: String,
    /// What was left out, with counts (e.g. "unknown record type (3)").
    pub skipped: Vec<String>,
}

/// One observation stored as a note.
#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct PromotedNote {
    pub id: i64,
    pub skill: String,
    pub kind: String,
    pub delta: String,
    pub status: WriteStatus,
    pub scope: Scope,
    pub origin_project: String,
    /// The note it replaced (`| replaces #<id>`), now kept as history.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub replaced: Option<i64>,
    /// Stored waiting for review (`historian.review`): not recalled until a person accepts it
    /// (`skillmem/reviewDecide`); a pending correction names the note it is to replace.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub pending: bool,
    /// The note a pending correction takes the place of once accepted.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub replaces: Option<i64>,
    /// The line of the session's transcript that shows an error the lesson names.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub evidence: Option<String>,
}

/// A note an `outdated` line retired.
#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct RetiredNote {
    pub id: i64,
    pub skill: String,
    pub reason: String,
}

/// A line of the block that was not promoted, and why.
#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct RejectedObservation {
    pub line: String,
    pub reason: String,
}

/// What a historian's output promoted.
#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct Promotion {
    pub promoted: Vec<PromotedNote>,
    /// Notes retired by `* <skill> | outdated | #<id> <why>` lines.
    #[serde(default)]
    pub retired: Vec<RetiredNote>,
    pub rejected: Vec<RejectedObservation>,
    /// Whether the session's transcript chunks were known, so that every lesson naming
    /// specifics was checked against them (false: `observe FILE`, a session with no chunk).
    #[serde(default)]
    pub grounded: bool,
}

/// The engine's part that holds what the transcript chunks rendered for each session showed:
/// the skills they used and their text (what the promotion filter checks a session's
/// observations against), and the transcript the last one came from (the provenance of what
/// the historian promotes for that session).
#[derive(Default)]
pub(super) struct ChunkSessions {
    chunks: std::sync::Mutex<std::collections::HashMap<String, SessionChunks>>,
    origins: std::sync::Mutex<std::collections::HashMap<String, Origin>>,
}

impl ChunkSessions {
    /// Records what a chunk rendered for `session` showed (`transcriptChunk`, or a hook that
    /// read the session's transcript): the skills it used, so that the promotion filter
    /// refuses observations about skills the session did not use, and its text, so that it
    /// refuses lessons whose specifics the session never saw (`filter::grounded`). Kept in
    /// memory for the last 64 sessions, the newest [`SESSION_TEXT_MAX`] bytes of text each.
    fn rendered(&self, session: &str, skills: &[String], text: &str) {
        let mut m = super::lock(&self.chunks);
        if !m.contains_key(session) && m.len() >= 64 {
            m.clear(); // a cap, not a cache policy: an unknown session only skips two rules
        }
        let known = m.entry(session.to_string()).or_default();
        for s in skills {
            if !known.skills.contains(s) {
                known.skills.push(s.clone());
            }
        }
        if !text.trim().is_empty() {
            known.text.push_str(text);
            known.text.push('\n');
            if known.text.len() > SESSION_TEXT_MAX {
                let mut cut = known.text.len() - SESSION_TEXT_MAX;
                while !known.text.is_char_boundary(cut) {
                    cut += 1;
                }
                known.text.drain(..cut);
            }
        }
    }

    /// Records where the chunk rendered for `session` came from (the transcript, where in it):
    /// what `historianResult` for that session records on the notes it promotes, unless it
    /// names a transcript itself. Kept in memory for the last 256 sessions.
    fn origin(&self, session: &str, origin: Origin) {
        if origin.transcript.is_none() && origin.transcript_at.is_none() {
            return;
        }
        let mut m = super::lock(&self.origins);
        if !m.contains_key(session) && m.len() >= 256 {
            m.clear();
        }
        m.insert(session.to_string(), origin);
    }

    fn origin_of(&self, session: &str) -> Option<Origin> {
        super::lock(&self.origins).get(session).cloned()
    }

    fn chunks_of(&self, session: &str) -> Option<SessionChunks> {
        super::lock(&self.chunks).get(session).cloned()
    }
}

impl Engine {
    /// Renders a transcript chunk, lists the skills used and, when one of them has memory
    /// enabled, the instructions for the historian. An empty chunk (no messages, no text)
    /// renders as empty text: not an error.
    pub fn transcript_chunk(&self, format: Format, messages: &[Value], text: Option<&str>) -> Result<RenderedChunk> {
        let (r, dirs) = transcript::render_full(format, messages, text);
        let mut enabled = vec![];
        for name in &r.skills {
            let dir =
                dirs.iter().find(|(s, _)| s == name).map(|(_, d)| d.clone()).filter(|d| d.join("SKILL.md").is_file());
            match self.skill_context(name, dir) {
                Ok(ctx) if ctx.enabled => {
                    // The notes a load would show (no intent: recency × hits), not counted as a
                    // recall: the historian may correct them.
                    let (block, _, ranked, _) = self.recall_block(&ctx, None, None, None, false)?;
                    let shown = block.map(|b| b.note_ids).unwrap_or_default();
                    let notes = shown
                        .iter()
                        .filter_map(|id| ranked.iter().find(|r| r.note.id == *id))
                        .map(|r| observations::CurrentNote {
                            id: r.note.id,
                            kind: r.note.kind,
                            delta: r.note.delta.clone(),
                        })
                        .collect();
                    enabled.push((name.clone(), notes));
                }
                Ok(_) => {}
                Err(e) => tracing::debug!(skill = name, "transcriptChunk: skill not resolved: {e}"),
            }
        }
        Ok(RenderedChunk {
            rendered: r.rendered,
            skills: r.skills,
            instructions: observations::instructions_with(&enabled),
            skipped: r.skipped,
        })
    }

    /// Records what a chunk rendered for `session` showed (`transcriptChunk`, or a hook that
    /// read the session's transcript): see [`ChunkSessions::rendered`].
    pub fn chunk_rendered(&self, session: &str, skills: &[String], text: &str) {
        self.historian.rendered(session, skills, text);
    }

    /// Records where the chunk rendered for `session` came from: see
    /// [`ChunkSessions::origin`].
    pub fn chunk_origin(&self, session: &str, origin: Origin) {
        self.historian.origin(session, origin);
    }

    /// What the promotion filter knows of a skill: its SKILL.md and its current notes (the
    /// most hit first, at most 200: those a block shows), then those waiting for review.
    fn filter_facts(&self, ctx: &super::SkillContext) -> (Option<String>, Vec<super::ListedNote>) {
        let md = ctx.dir.as_ref().and_then(|d| std::fs::read_to_string(d.join("SKILL.md")).ok());
        let f = super::NoteFilter {
            skill: Some(ctx.name.clone()),
            sort: super::NoteSort::Hits,
            limit: Some(200),
            ..Default::default()
        };
        let mut notes = match self.list_notes(&f) {
            Ok(page) => page.notes,
            Err(e) => {
                tracing::debug!(skill = ctx.name, "historian filter: notes not read: {e}");
                vec![]
            }
        };
        // And those waiting for review: a restatement of one is a hit on it, not a second
        // entry in the queue.
        if let Ok(page) = self.list_notes(&super::NoteFilter { pending: true, ..f }) {
            notes.extend(page.notes);
        }
        (md, notes)
    }

    /// Promotes the observations of the first `<skill_observations>` block of a historian's
    /// output; every other line is rejected with a reason, and so is every observation the
    /// promotion filter refuses (`historian::filter`: narration, task-bound facts, the skill's
    /// own text or notes restated, unused skills, paragraphs, vague lines, secrets).
    pub fn historian_result(&self, output: &str, session_id: Option<String>) -> Result<Promotion> {
        self.historian_result_from(output, session_id, Origin::default())
    }

    /// [`Engine::historian_result`], the notes recorded as read from `origin`'s transcript
    /// (where it says none: the one the session's last chunk came from, [`Engine::chunk_origin`]).
    pub fn historian_result_from(
        &self,
        output: &str,
        session_id: Option<String>,
        mut origin: Origin,
    ) -> Result<Promotion> {
        let session_id = session_id.filter(|s| !s.trim().is_empty());
        if origin.transcript.is_none() {
            if let Some(known) = session_id.as_ref().and_then(|s| self.historian.origin_of(s)) {
                origin.transcript = known.transcript;
                origin.transcript_at = origin.transcript_at.or(known.transcript_at);
            }
        }
        let parsed = observations::parse(output);
        let mut rejected: Vec<RejectedObservation> =
            parsed.rejected.into_iter().map(|r| RejectedObservation { line: r.line, reason: r.reason }).collect();
        let mut promoted = vec![];
        let scope = self.config().historian.promote_scope;
        let review = self.config().historian.review;
        let mut seen = std::collections::HashSet::new();
        // What the session's chunks showed: the skills they used and their text.
        let known = session_id.as_ref().and_then(|s| self.historian.chunks_of(s));
        let used = known.as_ref().map(|k| k.skills.clone());
        let chunk_text = known.as_ref().filter(|k| !k.text.is_empty()).map(|k| filter::grounded::searchable(&k.text));
        let grounded = chunk_text.is_some();
        if !grounded && !parsed.observations.is_empty() {
            tracing::info!(
                "historian: no transcript chunk of this session is known; lessons are not checked against it"
            );
        }
        let mut facts: std::collections::HashMap<String, (Option<String>, Vec<super::ListedNote>)> = Default::default();
        // Restatements in other words are judged by the built-in static table whatever the
        // embedder (its cosine is what the threshold was chosen on).
        let table = skillmem_embed::static_table::StaticEmbedder::builtin().ok();
        let cosine = table.map(|t| filter::cosine_by(t));
        let similarity = cosine.as_ref().map(|c| filter::Similarity(c));
        for o in parsed.observations {
            let line = format!("* {} | {} | {}", o.skill, o.kind.as_str(), o.lesson);
            // The same lesson twice in one output is one observation, not two hits.
            if !seen.insert((o.skill.clone(), skillmem_store::memory::norm_hash(&o.lesson))) {
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
            // Read once a skill per output, not once a line.
            let (md, listed) = facts.entry(o.skill.clone()).or_insert_with(|| self.filter_facts(&ctx));
            let (md, listed) = (&*md, &*listed);
            // A correction is meant to be close to the note it corrects, so it is not held to
            // "restates a note"; every other rule (secrets, narration, task facts, SKILL.md…)
            // judges it as it judges any lesson.
            let notes: Vec<(i64, String)> = if o.replaces.is_some() {
                Vec::new()
            } else {
                listed.iter().map(|n| (n.id, n.delta.clone())).collect()
            };
            let fctx = filter::Context {
                skill_md: md.as_deref(),
                notes: &notes,
                chunk_skills: used.as_deref(),
                similarity,
                chunk_text: chunk_text.as_deref(),
            };
            let mut hit_on = None;
            match filter::check(&o.skill, &o.lesson, &fctx) {
                Ok(()) => {}
                // A restatement of a note is a hit on that note: written as that note's own
                // lesson in its own scope, the write path finds it, raises its hits and
                // re-stamps its skill version (status `duplicate`), as for an exact repeat.
                Err(filter::Refusal::RestatesNote(id)) => {
                    hit_on = listed.iter().find(|n| n.id == id);
                    tracing::info!(skill = o.skill, "historian: {line:?} restates note #{id}: counted as a hit on it");
                }
                Err(refusal) => {
                    let reason = refusal.reason(&o.skill);
                    // The lesson is not logged when it holds a secret: the log would keep it.
                    let shown = if matches!(refusal, filter::Refusal::Secret(_)) {
                        skillmem_text::redact::redact(&line).0
                    } else {
                        line.clone()
                    };
                    tracing::info!(
                        skill = o.skill,
                        rule = refusal.category(),
                        "historian: refused {shown:?}: {reason}"
                    );
                    rejected.push(RejectedObservation { line: shown, reason });
                    continue;
                }
            }
            let mut new = NewNote {
                skill: o.skill.clone(),
                kind: o.kind,
                intent: String::new(),
                delta: hit_on.map(|n| n.delta.clone()).unwrap_or_else(|| o.lesson.clone()),
                tags: vec![],
                scope: hit_on.map(|n| n.scope).unwrap_or(scope),
                source: Source::Historian,
                session_id: session_id.clone(),
                skill_hash: None,
                origin: origin.clone(),
                // Held for a person (historian.review); the agent's own notes never are.
                pending: review,
            };
            if let Some(old) = o.replaces {
                // A correction keeps the scope of the note it corrects.
                if let Ok(Some(n)) = store::get(&self.conn(), old) {
                    new.scope = n.scope;
                }
            }
            let line = match o.replaces {
                Some(id) => format!("{line} | replaces #{id}"),
                None => line,
            };
            match self.write_note_in(&ctx, new, o.replaces) {
                Ok(w) => {
                    let stored = store::get(&self.conn(), w.id)?;
                    let (scope, origin_project, pending, replaces) = match stored {
                        Some(n) => (n.scope, n.origin_project, n.pending, n.review_replaces),
                        None => (scope, self.project_id().to_string(), false, None),
                    };
                    let evidence = known.as_ref().and_then(|k| filter::grounded::evidence(&o.lesson, &k.text));
                    if let Some(line) = &evidence {
                        // Kept with the note, as its evidence: the error line the lesson names.
                        let line = skillmem_text::redact::redact(line).0;
                        let b = skillmem_store::memory::Backing { error_lines: vec![line], ..Default::default() };
                        store::set_evidence(&mut self.conn(), w.id, &serde_json::to_string(&b).unwrap_or_default())?;
                    }
                    promoted.push(PromotedNote {
                        id: w.id,
                        skill: o.skill,
                        kind: o.kind.as_str().to_string(),
                        delta: o.lesson,
                        status: w.status,
                        scope,
                        origin_project,
                        replaced: w.replaced,
                        pending,
                        replaces,
                        evidence,
                    });
                }
                // Storage failures are the caller's problem, not the line's.
                Err(e @ Error::Storage(_)) => return Err(e),
                Err(e) => rejected.push(RejectedObservation { line, reason: e.to_string() }),
            }
        }
        let mut retired = vec![];
        for r in parsed.retirements {
            let line = format!("* {} | outdated | #{} {}", r.skill, r.id, r.reason);
            let own = match store::get(&self.conn(), r.id)? {
                None => Err(store::not_found(r.id).to_string()),
                Some(n) if n.skill != r.skill => {
                    Err(format!("note {} is a note of skill {:?}, not {:?}; nothing retired", r.id, n.skill, r.skill))
                }
                Some(_) => Ok(()),
            };
            let done = own.and_then(|()| match self.forget(r.id, Some(&r.reason)) {
                Ok(()) => Ok(()),
                Err(e @ Error::Storage(_)) => Err(format!("storage: {e}")),
                Err(e) => Err(e.to_string()),
            });
            match done {
                Ok(()) => retired.push(RetiredNote { id: r.id, skill: r.skill, reason: r.reason }),
                Err(reason) => rejected.push(RejectedObservation { line, reason }),
            }
        }
        Ok(Promotion { promoted, retired, rejected, grounded })
    }
}

/// Where in its transcript a chunk is, from the records' own ids: Claude Code's `uuid`,
/// OpenCode's message id (`info.id`, or a bare part's `messageID`): `message ID` for one,
/// `messages FIRST..LAST` for more; `None` when the records carry none (the `text` format).
pub fn chunk_span(format: Format, messages: &[Value], text: Option<&str>) -> Option<String> {
    let parsed;
    let records: &[Value] = if messages.is_empty() {
        match (format, text) {
            (Format::Text, _) | (_, None) => return None,
            (_, Some(t)) => {
                parsed = transcript::records_from_jsonl(t);
                &parsed
            }
        }
    } else {
        messages
    };
    let id_of = |v: &Value| -> Option<String> {
        let owned;
        let v = match v.as_str() {
            Some(line) => {
                owned = serde_json::from_str::<Value>(line).ok()?;
                &owned
            }
            None => v,
        };
        let id = match format {
            Format::ClaudeCode => v.get("uuid"),
            Format::OpenCode => v.pointer("/info/id").or_else(|| v.get("messageID")),
            Format::Text => None,
        };
        id.and_then(Value::as_str).filter(|s| !s.is_empty()).map(str::to_string)
    };
    let ids: Vec<String> = records.iter().filter_map(id_of).collect();
    match ids.as_slice() {
        [] => None,
        [one] => Some(format!("message {one}")),
        [first, .., last] if first == last => Some(format!("message {first}")),
        [first, .., last] => Some(format!("messages {first}..{last}")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn chunk_spans_table() {
        type Case<'a> = (Format, Vec<Value>, Option<&'a str>, Option<&'a str>);
        let cases: &[Case] = &[
            (Format::Text, vec![], Some("U: hi"), None),
            (Format::ClaudeCode, vec![], None, None),
            (Format::ClaudeCode, vec![json!({ "type": "user", "uuid": "u1" })], None, Some("message u1")),
            (
                Format::ClaudeCode,
                vec![json!({ "uuid": "u1" }), json!({ "type": "summary" }), json!("{\"uuid\":\"u3\"}")],
                None,
                Some("messages u1..u3"),
            ),
            (Format::ClaudeCode, vec![], Some("{\"uuid\":\"a\"}\n{\"uuid\":\"b\"}\n"), Some("messages a..b")),
            (
                Format::OpenCode,
                vec![
                    json!({ "info": { "id": "msg_1" }, "parts": [] }),
                    json!({ "messageID": "msg_2", "type": "text" }),
                ],
                None,
                Some("messages msg_1..msg_2"),
            ),
            (Format::OpenCode, vec![json!({ "parts": [] }), json!("not json")], None, None),
        ];
        for (format, messages, text, want) in cases {
            assert_eq!(chunk_span(*format, messages, *text).as_deref(), *want, "{format:?} {messages:?} {text:?}");
        }
    }
}

/// What mining a session's calls wrote and refused.
#[derive(Debug, Clone, Default, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct MinedLessons {
    /// The `fix` notes written (or met again: `status: duplicate`).
    pub written: Vec<PromotedNote>,
    /// Each pair that is no lesson, or whose skill has no memory: `program: reason`.
    pub refused: Vec<String>,
}

impl Engine {
    /// Mines a session's calls for error → fix lessons (`historian::mine`) and writes each
    /// one of a memory-enabled skill as an unverified `fix` note (source `transcript`, the
    /// historian's promote scope) with its evidence, through the write path every note takes.
    /// A lesson is **held** (stored waiting for review: listed, never in a block) until the
    /// same lesson (the miner's key: program, change, error signature) was mined in
    /// `memory.minedSupport` distinct sessions, or a person accepts it; another session's find
    /// of a lesson already stored counts toward its support (`status: duplicate`) and, at the
    /// threshold, releases it into recall. Refusals are
    /// logged with their reason. With the session known, a pair judged once in it (a lesson
    /// written or refused) is not judged again: a session that ends twice, a host's turn that
    /// ends again over the same transcript, or the session's log holding the calls a door
    /// mined from the transcript, writes nothing twice.
    pub fn mine_calls(
        &self,
        calls: &[skillmem_historian::mine::Call],
        session_id: Option<&str>,
        origin: Origin,
    ) -> Result<MinedLessons> {
        let mut outcome = skillmem_historian::mine::mine(calls);
        // A pair is the skill in use, the failed call and the call that worked, as evidence
        // quotes them: the same pair read from a transcript and from the session's log (or
        // from the transcript again) is one.
        let pair = |at: Option<&skillmem_historian::mine::Position>, failed: &str, fixed: &str| -> String {
            use sha2::{Digest, Sha256};
            let skill = at
                .and_then(|p| calls.iter().find(|c| &c.position == p))
                .and_then(|c| c.skill_in_use.as_deref())
                .unwrap_or_default();
            let red = |s: &str| skillmem_text::redact::redact(s).0;
            let text = format!("{skill}\u{1f}{}\u{1f}{}", red(failed), red(fixed));
            Sha256::digest(text.as_bytes()).iter().take(16).map(|b| format!("{b:02x}")).collect()
        };
        let mined_pair = |m: &skillmem_historian::mine::Mined| {
            pair(m.evidence.positions.first(), &m.evidence.failed_call, &m.evidence.fixed_call)
        };
        let refused_pair =
            |r: &skillmem_historian::mine::Refused| pair(r.positions.first(), &r.failed_call, &r.fixed_call);
        let judged: Vec<String> =
            outcome.mined.iter().map(mined_pair).chain(outcome.refused.iter().map(refused_pair)).collect();
        if let Some(session) = session_id {
            let before = store::mined_pairs(&self.conn(), session)?;
            outcome.mined.retain(|m| !before.contains(&mined_pair(m)));
            outcome.refused.retain(|r| !before.contains(&refused_pair(r)));
        }
        let mut out = MinedLessons::default();
        for r in &outcome.refused {
            tracing::info!(
                program = r.program,
                "miner: refused {:?} then {:?}: {}",
                r.failed_call,
                r.fixed_call,
                r.reason.words()
            );
            match r.rule {
                Some(rule) => out.refused.push(format!("{}: unsafe fix: {rule} ({})", r.program, r.reason.words())),
                None => out.refused.push(format!("{}: {}", r.program, r.reason.words())),
            }
        }
        let scope = self.config().historian.promote_scope;
        let needed = i64::from(self.config().memory.mined_support.max(1));
        for m in outcome.mined {
            let ctx = match self.skill_context(&m.skill, None) {
                Ok(ctx) if ctx.enabled => ctx,
                _ => {
                    out.refused.push(format!("{}: memory is not enabled for skill {:?}", m.program, m.skill));
                    continue;
                }
            };
            // The session this find counts for: the host's, else the pair itself (the same
            // pair mined again without a session counts once).
            let session = session_id.map(str::to_string).unwrap_or_else(|| format!("pair:{}", mined_pair(&m)));
            let known = store::lesson_note(&self.conn(), &m.skill, &m.key)?;
            let (id, status, evidence) = match known {
                Some(id) => {
                    let evidence = store::evidence_records(&self.conn(), &[id])?
                        .into_iter()
                        .next()
                        .map(|(_, e)| e)
                        .unwrap_or_default();
                    (id, skillmem_store::memory::WriteStatus::Duplicate, evidence)
                }
                None => {
                    let new = NewNote {
                        skill: m.skill.clone(),
                        kind: skillmem_store::memory::Kind::Fix,
                        intent: String::new(),
                        delta: m.delta.clone(),
                        tags: vec![],
                        scope,
                        source: Source::Transcript,
                        session_id: session_id.map(str::to_string),
                        skill_hash: None,
                        origin: origin.clone(),
                        pending: needed > 1,
                    };
                    let w = match self.write_note_in(&ctx, new, None) {
                        Ok(w) => w,
                        Err(e @ Error::Storage(_)) => return Err(e),
                        Err(e) => {
                            out.refused.push(format!("{}: {e}", m.program));
                            continue;
                        }
                    };
                    let mut backing = serde_json::to_value(&m.evidence).unwrap_or_default();
                    backing["key"] = serde_json::Value::String(m.key.clone());
                    let evidence = backing.to_string();
                    store::set_evidence(&mut self.conn(), w.id, &evidence)?;
                    (w.id, w.status, evidence)
                }
            };
            let support = store::record_support(&mut self.conn(), &m.skill, &m.key, &session, id)?;
            let released = if support >= needed {
                let mut conn = self.conn();
                self.store.catalog.write(&mut conn, |c| store::release(c, id), |_| vec![id])?
            } else {
                false
            };
            let held = store::get(&self.conn(), id)?.is_some_and(|n| n.pending && n.retired_at.is_none());
            tracing::info!(
                skill = m.skill,
                "miner: {:?} ({status:?}; mined in {support} of {needed} sessions{})",
                m.delta,
                if held {
                    ", held"
                } else if released {
                    ", released into recall"
                } else {
                    ""
                }
            );
            out.written.push(PromotedNote {
                id,
                skill: m.skill,
                kind: "fix".into(),
                delta: m.delta,
                status,
                scope,
                origin_project: self.project_id().to_string(),
                replaced: None,
                pending: held,
                replaces: None,
                evidence: Some(evidence),
            });
        }
        if let Some(session) = session_id {
            store::record_mined(&mut self.conn(), session, &judged)?;
        }
        Ok(out)
    }

    /// Mines the calls `session` reported (`skillmem/toolAfter`) for error → fix lessons, as
    /// the hosts' transcripts are mined: each call with the skill whose load last preceded it,
    /// its position its `callId` (its place in the session when the host gave none). Runs at
    /// the session's end, explicit or implicit.
    pub fn mine_session(&self, session: &str) -> Result<MinedLessons> {
        use skillmem_historian::mine::{Call, Position};
        self.write_pending_calls();
        let log = store::session_calls(&self.conn(), session)?;
        if !log.iter().any(|c| c.failed) {
            return Ok(MinedLessons::default());
        }
        let mut skill: Option<String> = None;
        let mut calls = Vec::with_capacity(log.len());
        for c in log {
            let command = match (&c.skill, c.command.is_empty()) {
                (Some(s), _) => format!("{} {s}", c.tool),
                // A log written before the command was kept: the arguments' first line.
                (None, true) => c.args.lines().next().unwrap_or_default().to_string(),
                (None, false) => c.command,
            };
            let id = if c.call_id.is_empty() { c.position.to_string() } else { c.call_id };
            calls.push(Call {
                position: Position::CallId(id),
                tool: c.tool,
                command,
                failed: c.failed,
                output: if c.key_lines.is_empty() { c.errors } else { c.key_lines },
                skill_in_use: skill.clone(),
            });
            if c.skill.is_some() {
                skill = c.skill;
            }
        }
        let r = self.mine_calls(&calls, Some(session), Origin::default())?;
        for w in &r.written {
            tracing::info!("session {session}: mined a fix lesson of {} ({:?}): {}", w.skill, w.status, w.delta);
        }
        Ok(r)
    }

    /// What backs the notes `ids` that have a record, by id.
    pub fn backing(&self, ids: &[i64]) -> Result<std::collections::HashMap<i64, skillmem_store::memory::Backing>> {
        backing_of(&self.conn(), ids)
    }

    /// [`Engine::mine_session`] at a session's end: a failure is logged, never the end's.
    pub(super) fn mine_ended(&self, session: &str) {
        if let Err(e) = self.mine_session(session) {
            tracing::warn!("session {session}: its calls were not mined: {e}");
        }
    }
}

/// What a session's log keeps of a call for the miner: its command (a shell tool's line, else
/// the tool and its arguments in one line) and, when it failed, the lines of its output the
/// error is read from; bounded and redacted.
pub(super) fn mined_call_text(tool: &str, args: &Value, failed: bool, output: &str) -> (String, String) {
    use skillmem_store::memory::calls::{bound, ARGS_MAX, ERRORS_MAX};
    use skillmem_text::redact::redact;
    // Secrets out, each marker one word of the line, so that the line parses as it ran.
    let command =
        bound(skillmem_historian::mine::redact_line(&skillmem_historian::tool_calls::command_of(tool, args)), ARGS_MAX);
    let key_lines = if failed {
        bound(redact(&skillmem_historian::mine::key_output(output)).0, 4 * ERRORS_MAX)
    } else {
        String::new()
    };
    (command, key_lines)
}

/// What backs the notes `ids` that have a record ([`skillmem_store::memory::Backing`]), by id.
pub(super) fn backing_of(
    conn: &rusqlite::Connection,
    ids: &[i64],
) -> Result<std::collections::HashMap<i64, skillmem_store::memory::Backing>> {
    let mut out: std::collections::HashMap<i64, skillmem_store::memory::Backing> = store::evidence_records(conn, ids)?
        .into_iter()
        .filter_map(|(id, e)| skillmem_store::memory::Backing::parse(&e).map(|b| (id, b)))
        .collect();
    let mined: Vec<i64> = out.iter().filter(|(_, b)| b.key.is_some()).map(|(id, _)| *id).collect();
    for (id, n) in store::support_of(conn, &mined)? {
        if let Some(b) = out.get_mut(&id) {
            b.sessions = Some(n);
        }
    }
    Ok(out)
}
