//! Skill memory operations: skill loads, notes, recall, stats. Takes and returns domain types;
//! the wire shapes of the tool events (which argument names the skill, where a host puts the
//! skill's folder) are read by the doors (`protocol/`, `hosts/`).

use std::path::PathBuf;
use std::time::Instant;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use super::{Engine, SkillContext};
use skillmem_embed::{embed_notes_with_pieces, Pieces};
use skillmem_error::{Error, Result};
use skillmem_store::db;
use skillmem_store::memory::block::{self, Budget};
use skillmem_store::memory::evidence::holdout;
use skillmem_store::memory::recall::{self, Query, Rungs};

/// What [`Engine::rank_head`] ranks: the intent, the block's budget, whether the vector rung
/// runs, how many notes of the head to load at first (see [`LOAD_FIRST`]), and the intent's
/// vector when it was embedded before the database lock.
struct HeadAsk<'a> {
    intent: Option<&'a str>,
    max_tokens: usize,
    use_vectors: bool,
    load_first: usize,
    query: Option<&'a [f32]>,
    /// The intent's pieces, by an embedder that has them (see [`Rungs::query_pieces`]).
    query_pieces: Option<&'a Pieces>,
}

/// The notes of a ranked head loaded before the block is rendered (see
/// [`Engine::recall_block`]).
const LOAD_FIRST: usize = 48;

/// A skill of at most this many candidates whose notes the catalog holds loads its whole head
/// at once (see [`Engine::rank_head`]). Three in this crate's tests, whose skills then render
/// in two steps as a large skill does.
#[cfg(not(test))]
const WHOLE_HEAD_MAX: usize = skillmem_store::memory::catalog::HOLD_SKILL_MAX;
#[cfg(test)]
const WHOLE_HEAD_MAX: usize = 3;
use skillmem_skillmd::frontmatter::Ranking;
use skillmem_store::memory::sameness::Thresholds;
use skillmem_store::memory::store::{self, Embedded};
use skillmem_store::memory::usage;
use skillmem_store::memory::write::NoteWrite;
use skillmem_store::memory::{NewNote, RecallMode, Scope, WriteStatus};

/// Notes the warm-up reads ahead at a time ([`Engine::build_lexicons`]).
const READ_AHEAD_CHUNK: usize = 32;

/// A skill the agent just loaded: what the doors know of it.
#[derive(Debug, Clone, Default)]
pub struct SkillLoad {
    /// The skill's name, without a plugin prefix.
    pub skill: String,
    /// Where the skill lives, when the host says so (otherwise it is looked up by name).
    pub dir: Option<PathBuf>,
    /// What the agent is about to do with it, when known.
    pub intent: Option<String>,
    /// The host's session, when known: the load and the notes its block shows are recorded
    /// as the session's call (see `calls.rs`).
    pub session: Option<String>,
    /// The load's place among the session's calls ([`Engine::call_arrived`]); taken at the
    /// load when absent.
    pub position: Option<i64>,
    /// The host's id of the call.
    pub call_id: Option<String>,
}

/// What a skill load recalls: the block to append to the tool result, if any.
#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct LoadRecall {
    /// Text to append to the tool output (starts with a blank line), or null.
    pub append: Option<String>,
    /// The skill named by the call, or null when the tool is not a skill tool.
    pub skill: Option<String>,
    pub mode: RecallMode,
    /// Ids of the notes in the block, in block order.
    pub note_ids: Vec<i64>,
}

impl LoadRecall {
    /// Nothing recalled, for `skill` (or for a tool that is not a skill tool).
    pub fn nothing(skill: Option<String>) -> Self {
        LoadRecall { append: None, skill, mode: RecallMode::None, note_ids: vec![] }
    }
}

/// A note written (or found to say what an existing one says).
#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct Written {
    /// The note written; for `duplicate`, the existing note that says the same thing.
    pub id: i64,
    /// inserted (a new note), duplicate (an existing note says the same thing: its hits went
    /// up) or replaced (the new note took the place of `replaced`).
    pub status: WriteStatus,
    /// The note this write replaced (`status: "replaced"`), now kept as history.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub replaced: Option<i64>,
    /// An existing note that this one reads as a new version of (the same subject, other
    /// specifics or the other polarity): both are kept, this one leads when both are recalled.
    /// Replace the older one (`replaces`) or retire it (`skillmem/forget`) if it no longer holds.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub conflicts_with: Option<i64>,
    /// What was redacted from the lesson and intent before they were stored (e.g. "a GitHub
    /// token"); absent when nothing was.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub redacted: Vec<String>,
}

/// One note of a recall, with its score.
#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct RecalledNote {
    pub id: i64,
    pub kind: String,
    pub intent: String,
    pub delta: String,
    pub scope: Scope,
    pub pinned: bool,
    pub hits: i64,
    pub score: f32,
    /// Milliseconds since the Unix epoch.
    pub created_at: i64,
    /// Sessions shown it, that used it, that ignored it; when it was last used.
    #[serde(flatten)]
    pub evidence: skillmem_store::memory::evidence::Evidence,
    /// What backs the note (a mined lesson's failed call, error lines, the call that worked
    /// and their positions; a historian lesson's error line); absent when nothing does.
    #[serde(rename = "evidence", default, skip_serializing_if = "Option::is_none")]
    pub backing: Option<skillmem_store::memory::Backing>,
}

/// What a recall found: the block a skill load would append, and its notes.
#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct Recalled {
    /// The `<skill-memory>` block, or null when the skill has no notes.
    pub block: Option<String>,
    pub mode: RecallMode,
    /// The notes in the block, in block order.
    pub notes: Vec<RecalledNote>,
}

/// Counts of one skill.
#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct SkillStats {
    pub skill: String,
    pub notes: i64,
    pub pinned: i64,
    pub recalls: i64,
    /// Sessions that used the skill, as hosts recorded them (the Claude Code hook).
    #[serde(default)]
    pub sessions: i64,
    /// When the skill was last used (ms since the epoch), if recorded.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub last_used: Option<i64>,
}

/// Sessions that used a skill on one day.
#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct DayUses {
    /// `YYYY-MM-DD` (UTC).
    pub day: String,
    pub skill: String,
    pub sessions: i64,
}

/// The embedder, and the notes whose vector it did not make.
#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct EmbeddingStats {
    pub model: Option<String>,
    pub dim: Option<usize>,
    /// Notes without a vector of the current model.
    pub stale: i64,
}

/// Counts per skill for one project.
#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct Stats {
    pub project_id: String,
    pub notes: i64,
    pub pinned: i64,
    pub skills: Vec<SkillStats>,
    pub embedding: EmbeddingStats,
    /// Skills used per day, newest first.
    #[serde(default)]
    pub uses_by_day: Vec<DayUses>,
}

/// The description of the `intent` argument the doors add to a host's skill tool.
pub const INTENT_DESCRIPTION: &str = "Optional: in a few words, what you are about to do with this skill (e.g. \"parse a CSV export\"). Used to recall this skill's most relevant past lessons.";

/// A rendered block (if any), the rung that answered, the ranking, and the rung that found
/// each matched note.
pub(super) type BlockOut =
    (Option<block::Block>, RecallMode, Vec<recall::Ranked>, std::collections::HashMap<i64, RecallMode>);

impl Engine {
    // ---- skill loads -------------------------------------------------------------------

    /// Stashes the intent of a skill tool call until its result arrives. Synchronous and
    /// quick: the server calls it before its first `.await`.
    pub fn stash_intent(&self, session_id: &str, call_id: &str, intent: &str) {
        if !intent.trim().is_empty() {
            self.sessions.stash_intent(session_id, call_id, intent);
        }
    }

    /// Takes the stashed intent of a call (synchronous, for the server's handler prologue).
    pub fn take_stashed_intent(&self, session_id: &str, call_id: &str) -> Option<String> {
        self.sessions.take_intent(session_id, call_id)
    }

    /// A skill was loaded: the `<skill-memory>` block to append to the tool result, ranked for
    /// the load's intent. Counts as a recall of the notes shown; with the host's session, the
    /// load and the notes it shows join the session's log (written after the answer).
    pub fn skill_loaded(&self, load: SkillLoad) -> Result<LoadRecall> {
        let t = Instant::now();
        let ctx = self.skill_context(&load.skill, load.dir)?;
        tracing::trace!("load {}: skill context {:?}", load.skill, t.elapsed());
        let mut withheld: Vec<i64> = vec![];
        let r = if ctx.enabled {
            let intent = load.intent.filter(|s| !s.trim().is_empty());
            let holdout = load.session.as_deref().filter(|s| !s.trim().is_empty());
            let (out, held) = self.recall_block_withholding(&ctx, intent.as_deref(), None, None, true, holdout)?;
            withheld = held.into_iter().collect();
            LoadRecall {
                append: out.0.as_ref().map(|b| format!("\n\n{}", b.text)),
                skill: Some(load.skill),
                mode: if out.0.is_some() { out.1 } else { RecallMode::None },
                note_ids: out.0.map(|b| b.note_ids).unwrap_or_default(),
            }
        } else {
            LoadRecall::nothing(Some(load.skill))
        };
        if let (Some(session), Some(skill)) = (&load.session, &r.skill) {
            let call = load.call_id.as_deref().unwrap_or_default();
            self.skill_load_called(session, load.position, call, skill, &r.note_ids, &withheld);
        }
        Ok(r)
    }

    // ---- writes ------------------------------------------------------------------------

    /// The note's vector, and its pieces when the embedder has them.
    fn embed_note(&self, intent: &str, delta: &str) -> Result<(Option<Vec<f32>>, Option<Pieces>)> {
        match &self.embedding.embedder {
            // A failing embedder never loses a note: it is stored without a vector, found by
            // its words, and embedded by `distill` later.
            Some(e) => match embed_notes_with_pieces(e.as_ref(), &[(intent, delta)]).map(|mut v| v.pop()) {
                Ok(Some((v, p))) if v.len() == e.dim() => Ok((Some(v), p)),
                Ok(None) => Ok((None, None)),
                Ok(Some((v, _))) => {
                    tracing::warn!(
                        "embedder {} returned {} numbers, not {}; note stored without a vector",
                        e.model_id(),
                        v.len(),
                        e.dim()
                    );
                    Ok((None, None))
                }
                Err(why) => {
                    tracing::warn!("{why}; note stored without a vector");
                    Ok((None, None))
                }
            },
            None => Ok((None, None)),
        }
    }

    /// The note text's pieces for token matching, stored with it (see
    /// [`skillmem_embed::tokens::TokenMatch::stored`]): when the static table is the embedder.
    fn match_pieces(&self, intent: &str, delta: &str) -> Option<Vec<u8>> {
        self.embedding.tokens.as_ref()?.stored(&skillmem_embed::note_text(intent, delta))
    }

    /// Writes a note with duplicate detection. Used by `note` and by historian promotion.
    /// Secrets in the lesson or the intent are redacted before anything is stored or
    /// embedded (`text::redact`), and the result says what was; a lesson that would be left
    /// with nothing but a marker is refused.
    pub fn write_note(&self, new: NewNote) -> Result<Written> {
        let ctx = self.require_enabled(&new.skill)?;
        self.write_note_redacted(&ctx, new, None)
    }

    /// [`Engine::write_note_in`] after the lesson and intent are redacted (the note tool's
    /// and a replacement's write): what was redacted is said in the result.
    fn write_note_redacted(&self, ctx: &SkillContext, mut new: NewNote, replaces: Option<i64>) -> Result<Written> {
        let (delta, mut redacted) = skillmem_text::redact::redact_lesson(&new.delta).map_err(Error::invalid)?;
        let (intent, in_intent) = skillmem_text::redact::redact(&new.intent);
        redacted.extend(in_intent.into_iter().filter(|w| !redacted.contains(w)).collect::<Vec<_>>());
        (new.delta, new.intent) = (delta, intent);
        let mut w = self.write_note_in(ctx, new, replaces)?;
        w.redacted = redacted.into_iter().map(str::to_string).collect();
        Ok(w)
    }

    /// Writes `new` in the place of note `replaces` (see [`store::write_among`]); with
    /// `scope: None`, the replacement keeps the old note's scope.
    pub fn replace_note(&self, mut new: NewNote, replaces: i64, scope: Option<Scope>) -> Result<Written> {
        let ctx = self.require_enabled(&new.skill)?;
        new.scope = match scope {
            Some(s) => s,
            None => {
                let conn = self.conn();
                store::get(&conn, replaces)?.map(|n| n.scope).ok_or_else(|| store::not_found(replaces))?
            }
        };
        self.write_note_redacted(&ctx, new, Some(replaces))
    }

    /// Writes a note for a skill whose context is known (in the place of `replaces`).
    pub fn write_note_in(&self, ctx: &SkillContext, mut new: NewNote, replaces: Option<i64>) -> Result<Written> {
        if new.delta.trim().is_empty() {
            return Err(Error::invalid("delta is empty; say the lesson in one or two sentences"));
        }
        new.delta = new.delta.trim().to_string();
        new.intent = new.intent.trim().to_string();
        // Provenance: the door's host unless the write names one.
        if new.origin.host.is_none() {
            new.origin.host = self.config.host.clone();
        }
        new.session_id = new.session_id.filter(|s| !s.trim().is_empty());
        if new.skill_hash.is_none() {
            new.skill_hash = ctx.version.clone();
        }
        let t0 = Instant::now();
        let (vector, pieces) = self.embed_note(&new.intent, &new.delta)?;
        let matched = self.match_pieces(&new.intent, &new.delta);
        let t_embed = t0.elapsed();
        let thresholds = Thresholds {
            merge: ctx.settings.dedup_threshold.unwrap_or(self.config.memory.dedup_threshold),
            subject: self.config.memory.conflict_threshold,
        };
        let model = self.embedding.model_id();
        let embedded = match (&vector, &model) {
            (Some(v), Some(m)) => Some(Embedded { vector: v, model: m, matched: matched.as_deref() }),
            _ => None,
        };
        let mut conn = self.conn();
        let t_lock = t0.elapsed();
        let w =
            NoteWrite { project: &self.project_id, new: &new, embedded, pieces: pieces.as_ref(), thresholds, replaces };
        let o = skillmem_store::memory::write::write_note(
            &mut conn,
            &self.store.catalog,
            self.embedding.index.as_deref(),
            w,
        )?;
        drop(conn);
        let (id, status) = (o.id, o.status);
        tracing::trace!("write {id}: embed {:?}, lock {:?}", t_embed, t_lock - t_embed);
        self.poke_team();
        Ok(Written { id, status, replaced: o.replaced, conflicts_with: o.conflicts_with, redacted: vec![] })
    }

    /// Pins a note (every load shows it) or unpins it.
    pub fn pin(&self, id: i64, pinned: bool) -> Result<()> {
        let mut conn = self.conn();
        self.store.catalog.write(&mut conn, |c| store::set_pinned(c, id, pinned), |_| vec![id])?;
        drop(conn);
        self.poke_team();
        Ok(())
    }

    /// Retires a note (out of recall, kept as history, restorable), with why.
    pub fn forget(&self, id: i64, reason: Option<&str>) -> Result<()> {
        let mut conn = self.conn();
        let index = self.embedding.index.as_deref();
        self.store.catalog.write(&mut conn, |c| store::retire(c, id, &self.project_id, reason, index), |_| vec![id])?;
        drop(conn);
        self.poke_team();
        Ok(())
    }

    /// Brings a retired or replaced note back into recall.
    pub fn restore(&self, id: i64) -> Result<()> {
        let mut conn = self.conn();
        let index = self.embedding.index.as_deref();
        self.store.catalog.write(&mut conn, |c| store::restore(c, id, &self.project_id, index), |_| vec![id])?;
        drop(conn);
        self.poke_team();
        Ok(())
    }

    /// Deletes a note and the older versions it replaced, for good. Returns their ids.
    pub fn purge(&self, id: i64) -> Result<Vec<i64>> {
        let mut conn = self.conn();
        let index = self.embedding.index.as_deref();
        let ids = self.store.catalog.write(&mut conn, |c| store::purge(c, id, &self.project_id, index), Vec::clone)?;
        drop(conn);
        self.poke_team();
        Ok(ids)
    }

    /// A note's versions, oldest first (the note itself among them); the note must be visible
    /// from this project.
    pub fn versions(&self, id: i64) -> Result<Vec<skillmem_store::memory::Note>> {
        store::versions(&self.conn(), id, &self.project_id)
    }

    /// Replaces a note's lesson and re-embeds it.
    pub fn edit(&self, id: i64, delta: &str) -> Result<()> {
        if delta.trim().is_empty() {
            return Err(Error::invalid("delta is empty; to retire a note use skillmem/forget"));
        }
        let intent = {
            let conn = self.conn();
            store::get(&conn, id)?.ok_or_else(|| store::not_found(id))?.intent
        };
        // A person's edit is redacted like a note (the dashboard, `skillmem/edit`).
        let (delta, _) = skillmem_text::redact::redact_lesson(delta.trim()).map_err(Error::invalid)?;
        let delta = delta.as_str();
        let (vector, pieces) = self.embed_note(&intent, delta)?;
        let matched = self.match_pieces(&intent, delta);
        let model = self.embedding.model_id();
        let embedded = match (&vector, &model) {
            (Some(v), Some(m)) => Some(Embedded { vector: v, model: m, matched: matched.as_deref() }),
            _ => None,
        };
        let mut conn = self.conn();
        let index = self.embedding.index.as_deref();
        skillmem_store::memory::write::edit_note(
            &mut conn,
            &self.store.catalog,
            index,
            id,
            (&intent, delta),
            embedded,
            pieces.as_ref(),
        )?;
        drop(conn);
        self.poke_team();
        Ok(())
    }

    // ---- reads -------------------------------------------------------------------------

    /// Builds the in-memory bm25 rung ([`skillmem_store::memory::lexicon`]) of the skills recalls
    /// found without one (every skill with notes visible from this project when `all`: the
    /// server does so after start), reading through a connection of its own, so that recalls
    /// do not wait for it: meanwhile they ask FTS5, which ranks the same. A candidate list a
    /// write has replaced since is not built (the next recall asks for the new one). Returns
    /// how many were built; 0 at once while another call builds (it takes what is wanted).
    pub fn build_lexicons(&self, all: bool) -> Result<usize> {
        let Some(_building) = self.caches.lexicons.begin_building() else { return Ok(0) };
        let before = self.caches.lexicons.builds();
        let own = self.caches.lexicon_conn(|| self.conn_for_recall().path().map(str::to_string))?;
        let Some(own) = own else { return Ok(0) };
        let own = own.as_ref().expect("opened above");
        let mut todo: Vec<String> = if all { self.store.catalog.skills(&self.conn_for_recall())? } else { vec![] };
        // The skills recalls asked for come first, taken from the end of the list.
        loop {
            todo.extend(self.caches.lexicons.take_wanted().into_iter().map(|(skill, _)| skill));
            let Some(skill) = todo.pop() else { break };
            let cands = {
                let conn = self.conn_for_recall();
                self.store.catalog.candidates(&conn, &skill, &self.project_id)?.candidates
            };
            if cands.is_empty() {
                continue;
            }
            self.caches.lexicons.warm(own, (&skill, &self.project_id), &cands)?;
            // A large skill's token-matching pieces instead (its notes are not held), and
            // the full-text rows' lengths its bm25 rung reads.
            if cands.len() > skillmem_store::memory::lexicon::LEXICON_MAX {
                self.caches.lexicons.warm_lengths(own)?;
                if let Some(t) = self.embedding.tokens.as_deref().filter(|t| t.stores()) {
                    self.caches.lexicons.warm_pieces(own, &skill, t.tag(), cands.len())?;
                }
            }
            // And the notes themselves, as the catalog holds them for a small skill's loads,
            // of the skills this workspace (or the user) has a folder of: a sidecar whose
            // workspace loads a few of a team store's skills does not hold the others' notes. A
            // few at a time, so that a load waits for the connection a fraction of a
            // millisecond at most.
            let here = self.skill_folders.find(&skill).is_some();
            for ids in cands.chunks(READ_AHEAD_CHUNK).take_while(|_| here) {
                let ids: Vec<i64> = ids.iter().map(|c| c.id).collect();
                let conn = self.conn_for_recall();
                if self.store.catalog.read_ahead(&conn, &ids)? == 0 {
                    break;
                }
            }
        }
        // Then the store's frequent words' counts, which the indexes' bm25 weighs words by
        // (not asked again while the catalog's generation stays; as last seen: asking the
        // store here could reload the catalog after every answer while another process writes).
        self.caches.lexicons.warm_frequent(own, Some(self.store.catalog.seen_generation()))?;
        Ok(self.caches.lexicons.builds() - before)
    }

    fn ranking_of(&self, ctx: &SkillContext) -> Ranking {
        ctx.settings.ranking.unwrap_or_default()
    }

    /// Ranks the notes of `ctx`'s skill for `intent` as a skill load does: the catalog's
    /// candidates, the index, the skill's weights; only the head a block of `max_tokens` can
    /// hold is kept. Returns the ranking and the time the catalog took.
    fn rank_head(
        &self,
        conn: &rusqlite::Connection,
        ctx: &SkillContext,
        ask: HeadAsk<'_>,
    ) -> Result<(recall::Outcome, std::time::Duration)> {
        let HeadAsk { intent, max_tokens, use_vectors, load_first, query, query_pieces } = ask;
        let q = Query {
            skill: &ctx.name,
            project: &self.project_id,
            intent,
            ranking: self.ranking_of(ctx),
            now_ms: db::now_ms(),
        };
        let rungs = Rungs {
            embedder: self.embedding.embedder.as_deref(),
            index: self.embedding.index.as_deref(),
            second: self.embedding.second.as_deref(),
            tokens: self.embedding.tokens.as_deref(),
            query_pieces,
            held_pieces: Some(&self.caches.held_pieces),
            beside: self.embedding.index.clone().map(|index| recall::Beside {
                thread: &self.caches.search,
                index,
                db: conn.path().filter(|p| !p.is_empty()).map(std::path::PathBuf::from),
                tokens: self.embedding.tokens.clone(),
            }),
            use_vectors,
            use_fts: true,
            query,
        };
        let t0 = Instant::now();
        let read = self.store.catalog.candidates(conn, &ctx.name, &self.project_id)?;
        let t_catalog = t0.elapsed();
        // A skill whose notes the catalog holds loads its whole head at once: each note is a
        // shared pointer, and such loads took the rest anyway in 97 of 100 cases (a small
        // skill's block has room for more than the first notes), rendering the block twice.
        let whole = read.held && read.candidates.len() <= WHOLE_HEAD_MAX;
        let load_first = if whole { usize::MAX } else { load_first };
        let warming = self.embedding.index.as_ref().is_some_and(|ix| ix.warming());
        let prepared = recall::Prepared {
            candidates: read.candidates,
            vectors_checked: read.vectors_checked,
            // A block never holds more notes than this (each note's markup alone is more than
            // 16 tokens), so only the head of the ranking is loaded.
            keep: max_tokens / 16 + 32,
            load_first,
            corpus: read.corpus,
            rest_cache: Some(&self.caches.rest),
            held: Some(&self.store.catalog),
            lexicons: Some(&self.caches.lexicons),
        };
        let out = recall::rank_prepared(conn, &q, &rungs, prepared)?;
        if !read.vectors_checked && !warming {
            self.store.catalog.mark_checked(&ctx.name);
        }
        Ok((out, t_catalog))
    }

    /// Ranks the notes of a skill whose context is known for `intent` exactly as a skill load
    /// does (see [`Engine::tool_after`]), without rendering a block or counting a recall:
    /// the recall eval's entry point. `vectors: false` leaves the vector rung out (the bm25
    /// rung alone). The head a block of the configured budget holds is ranked.
    pub fn rank_in(&self, ctx: &SkillContext, intent: Option<&str>, vectors: bool) -> Result<recall::Outcome> {
        let query = if vectors { self.query_vector(ctx, intent)? } else { None };
        let conn = self.conn();
        let max_tokens = ctx.settings.max_tokens.unwrap_or(self.config.memory.max_tokens);
        let ask = HeadAsk {
            intent,
            max_tokens,
            use_vectors: vectors,
            load_first: usize::MAX,
            query: query.as_ref().map(|q| q.0.as_slice()),
            query_pieces: query.as_ref().and_then(|q| q.1.as_ref()),
        };
        Ok(self.rank_head(&conn, ctx, ask)?.0)
    }

    /// The vector of a recall's intent, embedded before the database lock is taken: a model
    /// takes milliseconds a text (an endpoint, a round trip), and writes and the recalls of
    /// other skills wait for that lock. `None` when the vector rung would not run (no intent,
    /// no embedder, an index of another model that is being rebuilt, or a skill without
    /// notes: the catalog, cached, is asked under a moment's lock); the ranking then embeds
    /// the intent itself if it needs it after all.
    /// With an embedder that has pieces ([`skillmem_embed::Embedder::has_pieces`]), the intent's
    /// pieces come from the same run.
    fn query_vector(&self, ctx: &SkillContext, intent: Option<&str>) -> Result<Option<(Vec<f32>, Option<Pieces>)>> {
        let Some(intent) = intent.map(str::trim).filter(|s| !s.is_empty()) else { return Ok(None) };
        let (Some(e), Some(ix)) = (self.embedding.embedder.as_deref(), self.embedding.index.as_deref()) else {
            return Ok(None);
        };
        if e.model_id() != ix.model_id() {
            return Ok(None);
        }
        let empty = {
            let conn = self.conn_for_recall();
            self.store.catalog.candidates(&conn, &ctx.name, &self.project_id)?.candidates.is_empty()
        };
        if empty {
            return Ok(None);
        }
        let t = Instant::now();
        let v = if e.has_pieces() {
            match e.embed_with_pieces(&[intent], &[true]) {
                Ok((mut v, mut p)) if v.len() == 1 => (v.pop().unwrap_or_default(), p.pop().flatten()),
                Ok(_) => (vec![], None),
                Err(why) => {
                    tracing::warn!("{why}; recall uses the lexical rungs");
                    (vec![], None)
                }
            }
        } else {
            (recall::query_vector(e, intent), None)
        };
        tracing::trace!("recall {}: query embedded in {:?}", ctx.name, t.elapsed());
        Ok(Some(v))
    }

    /// Sets the facts recall ranks a note by (hits, when it was written, its pin): for
    /// fixtures such as the recall eval's ages and hits. The protocol changes them only by
    /// duplicate writes and `pin`.
    pub fn set_note_facts(&self, id: i64, hits: i64, created_at: i64, pinned: bool) -> Result<()> {
        let mut conn = self.conn();
        self.store.catalog.write(&mut conn, |c| store::set_facts(c, id, hits, created_at, pinned), |_| vec![id])
    }

    /// Ranks and renders; marks the surfaced notes as recalled when `count` (a preview does
    /// not count). Only the first [`LOAD_FIRST`] notes of the ranked head are loaded unless
    /// the block has room for more (loading the 125 notes a 1500-token block could hold cost
    /// 0.6 ms at 100k notes; a block shows 20 to 40).
    pub(super) fn recall_block(
        &self,
        ctx: &SkillContext,
        intent: Option<&str>,
        max_tokens: Option<usize>,
        limit: Option<usize>,
        count: bool,
    ) -> Result<BlockOut> {
        Ok(self.recall_block_withholding(ctx, intent, max_tokens, limit, count, None)?.0)
    }

    /// [`Engine::recall_block`] for a load of `session` (`holdout`): with probability
    /// `memory.holdout` (a draw seeded by `memory.holdoutSeed`, the session and the skill) one
    /// eligible unverified note of the block is withheld from it ([`holdout::pick`]) and
    /// returned, for the session's log.
    pub(super) fn recall_block_withholding(
        &self,
        ctx: &SkillContext,
        intent: Option<&str>,
        max_tokens: Option<usize>,
        limit: Option<usize>,
        count: bool,
        holdout: Option<&str>,
    ) -> Result<(BlockOut, Option<i64>)> {
        let query = self.query_vector(ctx, intent)?;
        let conn = self.conn_for_recall();
        let budget = Budget {
            max_tokens: max_tokens.or(ctx.settings.max_tokens).unwrap_or(self.config.memory.max_tokens),
            max_pinned_tokens: ctx.settings.max_pinned_tokens.unwrap_or(self.config.memory.max_pinned_tokens),
            limit,
            max_unverified_tokens: 0,
        };
        let budget = Budget {
            max_unverified_tokens: Budget::unverified_cap(budget.max_tokens, self.config.memory.unverified_share),
            ..budget
        };
        let feedback_tool = self.feedback_tool();
        let tools = block::Tools { note: self.note_tool(), feedback: &feedback_tool };
        let t0 = Instant::now();
        let ask = HeadAsk {
            intent,
            max_tokens: budget.max_tokens,
            use_vectors: true,
            load_first: LOAD_FIRST,
            query: query.as_ref().map(|q| q.0.as_slice()),
            query_pieces: query.as_ref().and_then(|q| q.1.as_ref()),
        };
        let (mut out, t_catalog) = self.rank_head(&conn, ctx, ask)?;
        let t_rank = t0.elapsed();
        // The newer note of a conflicting pair leads, and the older names it: the pairs among
        // the whole head, loaded or not, asked once (a pair whose other note is not loaded
        // waits for it).
        let head: Vec<i64> = out.notes.iter().map(|r| r.note.id).chain(out.unloaded.iter().map(|u| u.id)).collect();
        let pairs = self.store.catalog.conflicts_among(&conn, &head)?;
        let lead = |out: &mut recall::Outcome| block::lead_newer(&mut out.notes, &pairs);
        let mut newer_of = lead(&mut out);
        let t_lead = t0.elapsed();
        let mut b = block::render(&ctx.name, out.mode, &out.notes, budget, tools, ctx.version.as_deref(), &newer_of);
        // Room left for another note, and notes not loaded: load them and render again (the
        // same block as rendering them all at once; a note costs more than NOTE_TOKENS_MIN).
        // Not when none of them could go in: each is unverified and not pinned, the unverified
        // notes' share has less room than the least any of them could cost (its markup, id,
        // uses, day and, when known, text: see `block::note_tokens_at_least`), and no
        // conflicting pair would reorder the loaded ones; when the load withholds a note (which
        // frees its room), the block without it is full too. A large skill whose notes were not
        // read for scoring loads a few at a time (`recall::HEAD_CHUNK`).
        let (p, seed) = (self.config.memory.holdout, self.config.memory.holdout_seed);
        let draws = holdout.is_some_and(|session| holdout::draws(seed, session, &ctx.name, p));
        let is_full = |b: &Option<block::Block>, out: &recall::Outcome| {
            b.as_ref().is_some_and(|b| {
                let unverified_room = budget.max_unverified_tokens.saturating_sub(b.unverified_tokens);
                b.tokens + block::NOTE_TOKENS_MIN > budget.max_tokens
                    || limit.is_some_and(|l| b.note_ids.len() >= l)
                    || (out
                        .unloaded
                        .iter()
                        .all(|u| !u.pinned && !u.uses.trusted && block::note_tokens_at_least(u) > unverified_room)
                        && !pairs.iter().any(|(a, c)| out.unloaded.iter().any(|u| u.id == *a || u.id == *c)))
            })
        };
        // The note a load that draws withholds: one of those the block shows.
        let withheld_of = |b: &Option<block::Block>, out: &recall::Outcome| {
            let (Some(session), Some(shown), true) = (holdout, b, draws) else { return None };
            let eligible: Vec<(i64, bool, _)> = out
                .notes
                .iter()
                .filter(|r| shown.note_ids.contains(&r.note.id))
                .map(|r| (r.note.id, r.note.pinned, r.uses))
                .collect();
            holdout::pick(seed, session, &eligible)
        };
        let t_first = t0.elapsed();
        loop {
            let mut full = is_full(&b, &out);
            if let (true, Some(id)) = (full, withheld_of(&b, &out)) {
                // Withholding a note frees its room: the block without it must be full too.
                let left: Vec<recall::Ranked> = out.notes.iter().filter(|r| r.note.id != id).cloned().collect();
                let without =
                    block::render(&ctx.name, out.mode, &left, budget, tools, ctx.version.as_deref(), &newer_of);
                full = is_full(&without, &out);
            }
            if full || out.unloaded.is_empty() {
                break;
            }
            out.load_next(&conn, Some(&self.store.catalog), &budget)?;
            tracing::trace!(
                "recall {}: pairs {:?}, render {:?}, the rest loaded {:?} ({} left)",
                ctx.name,
                t_lead - t_rank,
                t_first - t_lead,
                t0.elapsed() - t_first,
                out.unloaded.len()
            );
            newer_of = lead(&mut out);
            b = block::render(&ctx.name, out.mode, &out.notes, budget, tools, ctx.version.as_deref(), &newer_of);
        }
        let withheld = withheld_of(&b, &out);
        if let Some(id) = withheld {
            out.notes.retain(|r| r.note.id != id);
            b = block::render(&ctx.name, out.mode, &out.notes, budget, tools, ctx.version.as_deref(), &newer_of);
        }
        let t_render = t0.elapsed();
        if let (Some(b), true) = (&b, count) {
            // Written by the next user of the connection, or right after the answer.
            self.store.recalled(&b.note_ids);
        }
        tracing::debug!(
            "recall {}: catalog {:?}, rank {:?}, render {:?}, rest {:?}, total {:?}",
            ctx.name,
            t_catalog,
            t_rank - t_catalog,
            t_render - t_rank,
            t0.elapsed() - t_render,
            t0.elapsed()
        );
        Ok(((b, out.mode, out.notes, out.found_by), withheld))
    }

    /// The block a load of `skill` would append for `intent`, with each note's score. Counts
    /// as a recall of the notes shown.
    pub fn recall(
        &self,
        skill: &str,
        intent: Option<&str>,
        max_tokens: Option<usize>,
        limit: Option<usize>,
    ) -> Result<Recalled> {
        let ctx = self.require_enabled(skill)?;
        let (b, mode, ranked, _) = self.recall_block(&ctx, intent, max_tokens, limit, true)?;
        let Some(b) = b else { return Ok(Recalled { block: None, mode: RecallMode::None, notes: vec![] }) };
        let evidence = self.evidence_of(&b.note_ids)?;
        let mut backing = super::historian::backing_of(&self.conn(), &b.note_ids)?;
        let notes = b
            .note_ids
            .iter()
            .filter_map(|id| ranked.iter().find(|r| r.note.id == *id))
            .map(|r| RecalledNote {
                id: r.note.id,
                kind: r.note.kind.as_str().to_string(),
                intent: r.note.intent.clone(),
                delta: r.note.delta.clone(),
                scope: r.note.scope,
                pinned: r.note.pinned,
                hits: r.note.hits,
                score: r.score,
                created_at: r.note.created_at,
                evidence: evidence.get(&r.note.id).copied().unwrap_or_default(),
                backing: backing.remove(&r.note.id),
            })
            .collect();
        Ok(Recalled { block: Some(b.text), mode, notes })
    }

    /// Counts per skill for `project` (default: this engine's), and skills used per day over
    /// the last `days` (default 14, at most 366).
    pub fn stats(&self, project: Option<String>, days: Option<u32>) -> Result<Stats> {
        let project = project.unwrap_or_else(|| self.project_id.clone());
        let conn = self.conn();
        let counts = store::counts(&conn, &project)?;
        let model = self.embedding.model_id();
        let stale = store::stale_vectors(&conn, &project, model.as_deref())?;
        let mut skills: Vec<SkillStats> = counts
            .into_iter()
            .map(|c| SkillStats {
                skill: c.skill,
                notes: c.notes,
                pinned: c.pinned,
                recalls: c.recalls,
                sessions: 0,
                last_used: None,
            })
            .collect();
        // Skills used, as hosts recorded them: the ones without notes are listed too, so that
        // a person sees which used skills learn nothing.
        for u in usage::by_skill(&conn, &project)? {
            let (skill, sessions, last) = (u.skill, u.sessions, u.last_used);
            match skills.iter_mut().find(|s| s.skill == skill) {
                Some(s) => (s.sessions, s.last_used) = (sessions, Some(last)),
                None => {
                    skills.push(SkillStats { skill, notes: 0, pinned: 0, recalls: 0, sessions, last_used: Some(last) })
                }
            }
        }
        skills.sort_by(|a, b| a.skill.cmp(&b.skill));
        let days = i64::from(days.unwrap_or(14).min(366));
        let mut uses_by_day = vec![];
        if days > 0 {
            let since = db::now_ms() - days * 86_400_000;
            uses_by_day = usage::by_day(&conn, &project, since)?
                .into_iter()
                .map(|u| DayUses { day: u.day, skill: u.skill, sessions: u.sessions })
                .collect();
        }
        Ok(Stats {
            project_id: project,
            notes: skills.iter().map(|c| c.notes).sum(),
            pinned: skills.iter().map(|c| c.pinned).sum(),
            skills,
            embedding: EmbeddingStats { model, dim: self.embedding.embedder.as_ref().map(|e| e.dim()), stale },
            uses_by_day,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use skillmem_config::Config;
    use skillmem_store::memory::NewNote;

    fn engine(dir: &std::path::Path) -> Engine {
        let conn = skillmem_store::db::open(dir).unwrap();
        let cfg = Config { data_dir: dir.to_path_buf(), project_id: Some("p".into()), ..Config::default() };
        Engine::with_embedder(conn, cfg, None, None).unwrap()
    }

    /// The warm-up reads ahead the notes of the skills the workspace has a folder of, so that
    /// their first load finds them held; a skill of the store that is not installed here is
    /// left to be read when it is loaded.
    #[test]
    fn the_warm_up_reads_ahead_the_notes_of_the_workspaces_skills() {
        let d = tempfile::tempdir().unwrap();
        let ws = tempfile::tempdir().unwrap();
        let folder = ws.path().join(".claude/skills/warm-here");
        std::fs::create_dir_all(&folder).unwrap();
        std::fs::write(folder.join("SKILL.md"), "---\nname: warm-here\ndescription: x\n---\nbody\n").unwrap();
        let conn = skillmem_store::db::open(d.path()).unwrap();
        let cfg = Config { data_dir: d.path().to_path_buf(), project_id: Some("p".into()), ..Config::default() };
        let e = Engine::with_embedder(conn, cfg, Some(ws.path().to_path_buf()), None).unwrap();
        write(&e, "warm-here", "quote the csv fields");
        write(&e, "warm-elsewhere", "pass the raw flag");
        let id = |skill: &str| e.store.catalog.candidates(&e.conn(), skill, "p").unwrap().candidates[0].id;
        let (here, elsewhere) = (id("warm-here"), id("warm-elsewhere"));
        assert!(!e.store.catalog.holds(here) && !e.store.catalog.holds(elsewhere));
        e.build_lexicons(true).unwrap();
        assert!(e.store.catalog.holds(here), "the workspace's skill");
        assert!(!e.store.catalog.holds(elsewhere), "a skill with no folder here");
    }

    /// The context of `skill` as a load finds it: enabled, no folder, default settings.
    fn enabled(skill: &str) -> SkillContext {
        SkillContext {
            name: skill.into(),
            dir: None,
            enabled: true,
            settings: Default::default(),
            version: None,
            problem: None,
        }
    }

    /// A project gotcha of `skill` with no intent.
    fn gotcha(skill: &str, delta: &str) -> NewNote {
        NewNote::gotcha(skill, "", delta)
    }

    fn write(e: &Engine, skill: &str, delta: &str) {
        let new = gotcha(skill, delta);
        let mut conn = e.conn();
        let write = |c: &mut rusqlite::Connection| store::write(c, "p", &new, None, 0.92, None);
        e.store.catalog.write(&mut conn, write, |(id, _)| vec![*id]).unwrap();
    }

    /// A load whose block has no room left for an unverified note does not read the rest of
    /// the head when it holds only unverified notes: the block is the one every note of the
    /// head loaded gives, whether the notes after the first ones are unverified or trusted
    /// (then they are read and go in).
    #[test]
    fn a_block_with_no_room_left_is_the_one_the_whole_head_gives() {
        let d = tempfile::tempdir().unwrap();
        // The static table ranks (as by default), so that an intent's rungs read the notes
        // they score.
        let table: std::sync::Arc<dyn skillmem_embed::Embedder> =
            skillmem_embed::static_table::StaticEmbedder::builtin().unwrap();
        let cfg = Config { data_dir: d.path().to_path_buf(), project_id: Some("p".into()), ..Config::default() };
        let e = Engine::with_embedder(skillmem_store::db::open(d.path()).unwrap(), cfg, None, Some(table)).unwrap();
        let ctx = enabled("jq");
        // Lessons of two lengths, and the oldest (ranked last, past the notes loaded first)
        // the shortest a lesson can be: the room a block has left decides whether they go
        // in. Few enough that the head holds them all.
        for i in 0..60 {
            let lesson = match i {
                0..=5 => format!("{}", i % 10),
                _ if i % 7 == 0 => {
                    format!("lesson {i}: quote every csv field {i} before piping it to jq -r, and test it")
                }
                _ => format!("lesson {i}: quote the csv field {i} before piping it to jq -r"),
            };
            e.write_note_in(&ctx, gotcha("jq", &lesson), None).unwrap();
        }
        let cands = e.store.catalog.candidates(&e.conn(), "jq", "p").unwrap().candidates;
        let ids: Vec<i64> = cands.iter().map(|c| c.id).collect();
        // The whole head loaded, as the block was rendered before.
        let whole = |e: &Engine, intent: Option<&str>, max_tokens: usize| {
            let conn = e.conn_for_recall();
            let budget = Budget {
                max_tokens,
                max_pinned_tokens: e.config.memory.max_pinned_tokens,
                limit: None,
                max_unverified_tokens: Budget::unverified_cap(max_tokens, e.config.memory.unverified_share),
            };
            let ask = HeadAsk {
                intent,
                max_tokens: budget.max_tokens,
                use_vectors: true,
                load_first: usize::MAX,
                query: None,
                query_pieces: None,
            };
            let (mut out, _) = e.rank_head(&conn, &ctx, ask).unwrap();
            let all: Vec<i64> = out.notes.iter().map(|r| r.note.id).collect();
            let pairs = e.store.catalog.conflicts_among(&conn, &all).unwrap();
            let newer_of = block::lead_newer(&mut out.notes, &pairs);
            let feedback = e.feedback_tool();
            let tools = block::Tools { note: e.note_tool(), feedback: &feedback };
            block::render("jq", out.mode, &out.notes, budget, tools, None, &newer_of).unwrap().text
        };
        let shown = |e: &Engine, intent: Option<&str>, max_tokens: usize| {
            e.recall_block(&ctx, intent, Some(max_tokens), None, false).unwrap().0.unwrap().text
        };
        // Budgets that leave the unverified share every room from none to a few notes'.
        let budgets: Vec<usize> = (0..40).map(|k| 600 + 37 * k).chain([e.config.memory.max_tokens]).collect();
        let mut took_short = false;
        for &max in &budgets {
            let got = shown(&e, None, max);
            assert_eq!(got, whole(&e, None, max), "every note unverified, {max} tokens");
            took_short |= (0..=5).any(|d| got.contains(&format!("<delta>{d}</delta>")));
            // With an intent the rungs read notes to score them, some ranked past the first
            // loaded: the rest of the head takes those as read.
            let intent = Some("quote every csv field and test it");
            assert_eq!(shown(&e, intent, max), whole(&e, intent, max), "with an intent, {max} tokens");
        }
        assert!(took_short, "some budget left room for one of the shortest, oldest notes");
        // Two notes trusted (a person vouched) though rarely used: they rank last, after the
        // first notes loaded, and still go in.
        let vouched = skillmem_store::memory::evidence::Evidence { shown: 40, vouched: true, ..Default::default() };
        store::add_evidence(&mut e.conn(), &[(ids[3], vouched), (ids[30], vouched)]).unwrap();
        let max = e.config.memory.max_tokens;
        let got = shown(&e, None, max);
        assert_eq!(got, whole(&e, None, max), "trusted notes after the first ones");
        assert!(got.contains("<delta>3</delta>") && got.contains("lesson 30:"), "{got}");
    }

    /// A large skill's block is the same whether its notes were read to score them or its
    /// pieces held in memory stood for them (then the head loads a few notes at a time, each
    /// known to cost at least its text): every budget from no room to many notes', loads that
    /// withhold a note and loads that do not, trusted notes ranked late.
    #[test]
    fn a_large_skills_block_is_the_same_with_its_pieces_held() {
        let d = tempfile::tempdir().unwrap();
        let table: std::sync::Arc<dyn skillmem_embed::Embedder> =
            skillmem_embed::static_table::StaticEmbedder::builtin().unwrap();
        let cfg = Config { data_dir: d.path().to_path_buf(), project_id: Some("p".into()), ..Config::default() };
        let e = Engine::with_embedder(skillmem_store::db::open(d.path()).unwrap(), cfg, None, Some(table)).unwrap();
        let ctx = enabled("big");
        let words = ["quote", "csv", "field", "pipe", "raw", "slurp", "null", "keys", "stream", "path", "tag", "merge"];
        let n = skillmem_store::memory::lexicon::LEXICON_MAX + 100;
        let texts: Vec<(String, String)> = (0..n)
            .map(|i| {
                let w = |k: usize| words[(i * k + i / 11) % words.len()];
                let delta = match i % 9 {
                    0 => format!("{} {i}", w(1)),
                    _ => format!("lesson {i}: {} the {} before the {} then {} it", w(1), w(3), w(5), w(7)),
                };
                (format!("{} {}", w(2), w(5)), delta)
            })
            .collect();
        let embedded: Vec<(Vec<f32>, Option<Vec<u8>>)> =
            texts.iter().map(|(i, d)| (e.embed_note(i, d).unwrap().0.unwrap(), e.match_pieces(i, d))).collect();
        let model = e.embedding.model_id().unwrap();
        let notes: Vec<store::Imported<'_>> = texts
            .iter()
            .zip(&embedded)
            .enumerate()
            .map(|(i, ((intent, delta), (v, m)))| store::Imported {
                new: NewNote { intent: intent.clone(), ..gotcha("big", delta) },
                created_at: (i as i64 % 50) * 86_400_000,
                embedded: Some(store::Embedded { vector: v, model: &model, matched: m.as_deref() }),
            })
            .collect();
        let ids = store::import(&mut e.conn(), "p", &notes).unwrap();
        // A few trusted (a person vouched), ranked anywhere.
        let vouched = skillmem_store::memory::evidence::Evidence { shown: 40, vouched: true, ..Default::default() };
        let trusted: Vec<_> = ids.iter().step_by(97).map(|id| (*id, vouched)).collect();
        store::add_evidence(&mut e.conn(), &trusted).unwrap();
        // Sessions whose loads withhold a note, and one whose loads do not.
        let (p, seed) = (e.config.memory.holdout, e.config.memory.holdout_seed);
        let sessions: Vec<String> = (0..200).map(|i| format!("s{i}")).collect();
        let draws = |s: &String| holdout::draws(seed, s, "big", p);
        let withholding = sessions.iter().find(|s| draws(s)).unwrap().clone();
        let not = sessions.iter().find(|s| !draws(s)).unwrap().clone();
        let block = |intent: &str, max: usize, session: &str| {
            let ((b, ..), withheld) =
                e.recall_block_withholding(&ctx, Some(intent), Some(max), None, false, Some(session)).unwrap();
            (b.map(|b| b.text), withheld)
        };
        let intents = ["quote the csv field", "slurp raw null keys", "merge the stream path then tag it", "pipe"];
        let budgets = [150, 300, 600, 900, 1500, 2400];
        let mut read = vec![];
        for intent in intents {
            for max in budgets {
                for session in [&withholding, &not] {
                    read.push(((intent, max, session.clone()), block(intent, max, session)));
                }
            }
        }
        assert!(read.iter().any(|(_, (_, w))| w.is_some()), "some load withheld a note");
        assert!(e.after_answer_pending(), "the large skill's pieces are wanted");
        e.after_answer();
        for ((intent, max, session), want) in &read {
            assert_eq!(&block(intent, *max, session), want, "{intent}, {max} tokens, session {session}");
        }
        let tag = e.embedding.tokens.as_ref().unwrap().tag();
        let held = e.caches.lexicons.pieces(&e.conn_for_recall(), ("big", "p"), tag).unwrap();
        assert_eq!(held.map(|h| h.len()), Some(n), "every note's pieces held");
        e.caches.lexicons.forget_pieces();
        let ((intent, max, session), want) = &read[5];
        assert_eq!(&block(intent, *max, session), want, "read again: the same");
    }

    /// A recall's counts wait (a ranking reads none): written by the delayed write claimed
    /// once, or by the next read that shows them, never lost.
    #[test]
    fn recall_counts_are_written_later_in_one_go() {
        let d = tempfile::tempdir().unwrap();
        let e = engine(d.path());
        write(&e, "jq", "quote the csv fields");
        let ctx = enabled("jq");
        let id = e.recall_block(&ctx, None, None, None, true).unwrap().0.unwrap().note_ids[0];
        let recalls = |e: &Engine| store::get(&e.store.conn_as_is(), id).unwrap().unwrap().recalls;
        assert_eq!(recalls(&e), 0, "not written on the recall's path");
        assert!(!e.after_answer_pending(), "not due yet");
        assert!(e.schedule_recall_counts());
        assert!(!e.schedule_recall_counts(), "one delayed write at a time");
        e.recall_block(&ctx, None, None, None, true).unwrap();
        e.write_scheduled_recall_counts();
        assert_eq!(recalls(&e), 2, "both recalls, in one write");
        assert!(!e.schedule_recall_counts(), "nothing waits");
        e.recall_block(&ctx, None, None, None, true).unwrap();
        assert_eq!(store::get(&e.conn(), id).unwrap().unwrap().recalls, 3, "a read writes them first");
    }

    /// A recall never builds a skill's bm25 index: it asks FTS5 and leaves the skill wanted;
    /// the index is built after the answer, and ranks exactly as FTS5 did, before and after a
    /// write to the skill (other skills' longer notes in the store weigh the words and lengths).
    #[test]
    fn a_small_skill_ranks_the_same_before_and_after_its_index_is_built() {
        let d = tempfile::tempdir().unwrap();
        let e = engine(d.path());
        let words = ["csv", "quote", "fields", "raw", "output", "null", "iterate", "filter", "slurp", "keys"];
        for i in 0..60usize {
            let w = |k: usize| words[k % words.len()];
            write(&e, "jq", &format!("{} {} {} lesson {i}", w(i), w(i * 3 + 1), w(i * 7 + 2)));
        }
        for i in 0..200usize {
            write(&e, "pdf", &format!("{} page {} of a longer lesson about output number {i}", words[i % 4], i % 9));
        }
        let ctx = enabled("jq");
        let intents = ["csv fields", "raw null output", "slurp slurp keys", "quoting filtered iterations"];
        let ranked = |e: &Engine| -> Vec<Vec<(i64, f32)>> {
            intents
                .iter()
                .map(|i| e.rank_in(&ctx, Some(i), false).unwrap().notes.iter().map(|r| (r.note.id, r.score)).collect())
                .collect()
        };
        let by_fts = ranked(&e);
        assert!(by_fts.iter().all(|r| !r.is_empty()));
        assert_eq!(e.caches.lexicons.builds(), 0, "a recall never builds");
        assert!(e.after_answer_pending());
        e.after_answer();
        assert_eq!(e.caches.lexicons.builds(), 1, "jq's index, the one wanted");
        assert!(!e.after_answer_pending());
        assert_eq!(ranked(&e), by_fts, "the index ranks as FTS5");
        assert_eq!(e.caches.lexicons.builds(), 1, "and is kept");
        // A write to the skill: FTS5 again until the new list's index is built, same ranking.
        write(&e, "jq", "csv fields again, one more lesson");
        let by_fts = ranked(&e);
        e.after_answer();
        assert_eq!(e.caches.lexicons.builds(), 2);
        assert_eq!(ranked(&e), by_fts);
    }
}
