//! The one room behind both doors: the operations the server's methods and the CLI's
//! commands call, over one data directory.
//!
//! An [`Engine`] owns the SQLite connection (behind a mutex: callers run it in
//! `spawn_blocking`), the embedder, the vector index, the resolved configuration and the
//! project identity. Every method is synchronous and blocking; none knows JSON-RPC.

use std::collections::{HashMap, HashSet};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Instant;

use globset::{Glob, GlobSet, GlobSetBuilder};
use rusqlite::Connection;
use serde_json::Value;

use crate::config::Config;
use crate::db;
use crate::embed::{self, Embedder};
use crate::error::{Error, Result};
use crate::index::catalog::Catalog;
use crate::index::{ExactIndex, HnswIndex, VectorIndex};
use crate::memory::block::{self, Budget};
use crate::memory::recall::{self, Query, Rungs};
use crate::memory::stash::{self, IntentStash};
use crate::memory::store::{self, Embedded};
use crate::memory::{provenance, version, Kind, NewNote, RecallMode, Scope, Source};
use crate::protocol::memory::*;
use crate::skillmd::frontmatter::{self, MemorySettings, Ranking};

/// What the engine knows about one skill at the moment of a call.
#[derive(Debug, Clone)]
pub struct SkillContext {
    pub name: String,
    pub dir: Option<PathBuf>,
    pub enabled: bool,
    pub settings: MemorySettings,
    pub version: Option<String>,
    /// Why memory is off although the skill may ask for it: its SKILL.md's frontmatter cannot
    /// be read (the line, and what to fix).
    pub problem: Option<String>,
}

/// Skill memory over one data directory, for one project.
pub struct Engine {
    conn: Mutex<Connection>,
    embedder: Option<Arc<dyn Embedder>>,
    index: Option<Arc<dyn VectorIndex>>,
    /// The same index when it is the HNSW one (readiness, flushing).
    hnsw: Option<Arc<HnswIndex>>,
    /// What recall ranks by, in memory (see [`crate::index::catalog`]).
    catalog: Catalog,
    /// The head of each skill's recency × hits order (see [`recall::RestCache`]).
    rest_cache: recall::RestCache,
    config: Config,
    project_id: String,
    workspace: Option<PathBuf>,
    enabled_globs: GlobSet,
    stash: Mutex<IntentStash>,
    skill_dirs: Mutex<HashMap<String, PathBuf>>,
    warned: Mutex<HashSet<String>>,
    warnings: Mutex<Vec<String>>,
    note_tool: String,
}

/// The name hosts know the note tool by, used in the guidance line.
pub const DEFAULT_NOTE_TOOL: &str = "the skill-note tool (skillmem/note)";

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}

impl Engine {
    /// Opens the store of `config.data_dir` for the project of `workspace`.
    pub fn open(config: Config, workspace: Option<PathBuf>) -> Result<Engine> {
        let conn = db::open(&config.data_dir)?;
        let embedder = embed::from_config(&config.embedding)?;
        Self::with_embedder(conn, config, workspace, embedder)
    }

    /// Opens with an explicit embedder (tests, eval).
    pub fn with_embedder(
        conn: Connection,
        config: Config,
        workspace: Option<PathBuf>,
        embedder: Option<Arc<dyn Embedder>>,
    ) -> Result<Engine> {
        let project_id = match &config.project_id {
            Some(p) => p.clone(),
            None => {
                let dir =
                    workspace.clone().or_else(|| std::env::current_dir().ok()).unwrap_or_else(|| PathBuf::from("/"));
                crate::project::identity(&dir)
            }
        };
        let mut b = GlobSetBuilder::new();
        for g in &config.memory.enabled_skills {
            let glob =
                Glob::new(g).map_err(|e| Error::invalid(format!("memory.enabledSkills: bad glob {g:?}: {e}")))?;
            b.add(glob);
        }
        let enabled_globs = b.build().map_err(|e| Error::invalid(format!("memory.enabledSkills: {e}")))?;
        let (index, hnsw) = open_index(&conn, &config, embedder.as_deref())?;
        Ok(Engine {
            conn: Mutex::new(conn),
            embedder,
            index,
            hnsw,
            catalog: Catalog::default(),
            rest_cache: recall::RestCache::default(),
            config,
            project_id,
            workspace,
            enabled_globs,
            stash: Mutex::new(IntentStash::default()),
            skill_dirs: Mutex::new(HashMap::new()),
            warned: Mutex::new(HashSet::new()),
            warnings: Mutex::new(vec![]),
            note_tool: DEFAULT_NOTE_TOOL.into(),
        })
    }

    /// Sets the name of the note tool shown in the guidance line.
    pub fn set_note_tool(&mut self, name: impl Into<String>) {
        self.note_tool = name.into();
    }

    /// The project identity notes are written and read under.
    pub fn project_id(&self) -> &str {
        &self.project_id
    }

    /// The resolved configuration.
    pub fn config(&self) -> &Config {
        &self.config
    }

    /// The embedder, if any.
    pub fn embedder(&self) -> Option<&Arc<dyn Embedder>> {
        self.embedder.as_ref()
    }

    /// The database connection (for the domains that share it).
    pub fn conn(&self) -> MutexGuard<'_, Connection> {
        lock(&self.conn)
    }

    /// Warnings gathered since the last call (malformed frontmatter, once per skill).
    pub fn take_warnings(&self) -> Vec<String> {
        std::mem::take(&mut *lock(&self.warnings))
    }

    fn warn_once(&self, key: &str, msg: String) {
        if lock(&self.warned).insert(key.to_string()) {
            tracing::warn!("{msg}");
            lock(&self.warnings).push(msg);
        }
    }

    // ---- tool events -------------------------------------------------------------------

    /// `skillmem/toolDefinition`: adds an optional `intent` string to the skill tool.
    pub fn tool_definition(&self, p: ToolDefinitionParams) -> Result<ToolDefinitionResult> {
        let mut parameters = p.parameters;
        if is_skill_tool(&p.tool) {
            let obj =
                parameters.as_object_mut().ok_or_else(|| Error::invalid("parameters must be a JSON Schema object"))?;
            let props = obj.entry("properties").or_insert_with(|| Value::Object(Default::default()));
            if let Some(props) = props.as_object_mut() {
                props.entry("intent").or_insert_with(|| {
                    serde_json::json!({
                        "type": "string",
                        "description": "Optional: in a few words, what you are about to do with this skill (e.g. \"parse a CSV export\"). Used to recall this skill's most relevant past lessons."
                    })
                });
            }
        }
        Ok(ToolDefinitionResult { parameters })
    }

    /// `skillmem/toolBefore`: stashes `args.intent`. Synchronous and quick: the server calls
    /// it before its first `.await`.
    pub fn tool_before(&self, p: &ToolBeforeParams) {
        if !is_skill_tool(&p.tool) {
            return;
        }
        if let Some(intent) = p.args.get("intent").and_then(Value::as_str).filter(|s| !s.trim().is_empty()) {
            lock(&self.stash).put(stash::key(&p.session_id, &p.call_id), intent.to_string(), Instant::now());
        }
    }

    /// Takes the stashed intent of a call (synchronous, for the server's handler prologue).
    pub fn take_stashed_intent(&self, session_id: &str, call_id: &str) -> Option<String> {
        lock(&self.stash).take(&stash::key(session_id, call_id), Instant::now())
    }

    /// `skillmem/toolAfter`: the `<skill-memory>` block for a skill load.
    pub fn tool_after(&self, p: &ToolAfterParams, stashed_intent: Option<String>) -> Result<ToolAfterResult> {
        let none =
            |skill: Option<String>| ToolAfterResult { append: None, skill, mode: RecallMode::None, note_ids: vec![] };
        if !is_skill_tool(&p.tool) {
            return Ok(none(None));
        }
        let Some(name) = skill_name_of(&p.args) else {
            return Err(Error::invalid(
                "args.name (OpenCode) or args.skill (Claude Code) must name the skill that was loaded",
            ));
        };
        let intent = p
            .args
            .get("intent")
            .and_then(Value::as_str)
            .map(str::to_string)
            .filter(|s| !s.trim().is_empty())
            .or(stashed_intent);
        let dir = p
            .metadata
            .as_ref()
            .and_then(|m| m.get("dir"))
            .and_then(Value::as_str)
            .filter(|s| !s.is_empty())
            .map(PathBuf::from)
            .or_else(|| provenance::dir_from_output(&p.output));
        let ctx = self.skill_context(&name, dir)?;
        if !ctx.enabled {
            return Ok(none(Some(name)));
        }
        let out = self.recall_block(&ctx, intent.as_deref(), None, None)?;
        Ok(ToolAfterResult {
            append: out.0.as_ref().map(|b| format!("\n\n{}", b.text)),
            skill: Some(name),
            mode: if out.0.is_some() { out.1 } else { RecallMode::None },
            note_ids: out.0.map(|b| b.note_ids).unwrap_or_default(),
        })
    }

    // ---- skills ------------------------------------------------------------------------

    /// Works out where a skill lives and whether it has memory. `dir` is the host's word for
    /// where it lives; without it the skill is looked up by name.
    pub fn skill_context(&self, name: &str, dir: Option<PathBuf>) -> Result<SkillContext> {
        let home = dirs::home_dir();
        let dir = match dir {
            Some(d) => Some(d),
            None => lock(&self.skill_dirs)
                .get(name)
                .cloned()
                .filter(|d| d.join("SKILL.md").is_file())
                .or_else(|| provenance::find_by_name(name, self.workspace.as_deref(), home.as_deref()))
                .or_else(|| {
                    let stored = self.skills().store_dir(name)?;
                    stored.join("SKILL.md").is_file().then_some(stored)
                }),
        };
        let by_glob = self.enabled_globs.is_match(name);
        let Some(dir) = dir else {
            if by_glob {
                return Ok(SkillContext {
                    name: name.into(),
                    dir: None,
                    enabled: true,
                    settings: MemorySettings::default(),
                    version: None,
                    problem: None,
                });
            }
            return Err(Error::NotFound(format!(
                "skill {name:?}: no SKILL.md found in the workspace's or the user's skill folders (.opencode/skills, .claude/skills, .agents/skills, .pi/skills, ~/.pi/agent/skills); load the skill once, or add it to memory.enabledSkills"
            )));
        };
        let file = dir.join("SKILL.md");
        let bytes = std::fs::read(&file)
            .map_err(|e| Error::NotFound(format!("skill {name:?}: cannot read {}: {e}", file.display())))?;
        let text = String::from_utf8(bytes).map_err(|_| {
            Error::InvalidSkillRepo(format!("skill {name:?}: {} is not UTF-8 text; save it as UTF-8", file.display()))
        })?;
        lock(&self.skill_dirs).insert(name.to_string(), dir.clone());
        let (mut settings, problem) = match frontmatter::parse(&text) {
            Ok(f) => {
                if let Some(why) = &f.lenient {
                    // Hosts read such a frontmatter too; nothing for a person to act on.
                    tracing::debug!("skill {name:?}: {} read line by line: {why}", file.display());
                }
                (f.memory, None)
            }
            Err(why) => {
                let problem = format!("{} has a malformed frontmatter that cannot be read: {why}", file.display());
                let what = if by_glob { "memory on by memory.enabledSkills, but" } else { "memory disabled because" };
                self.warn_once(&format!("frontmatter:{}", file.display()), format!("skill {name:?}: {what} {problem}"));
                (MemorySettings::default(), Some(problem))
            }
        };
        settings.enabled |= by_glob;
        let version = if settings.enabled { version::content_hash(&dir) } else { None };
        Ok(SkillContext { name: name.into(), dir: Some(dir), enabled: settings.enabled, settings, version, problem })
    }

    fn require_enabled(&self, skill: &str) -> Result<SkillContext> {
        if skill.trim().is_empty() {
            return Err(Error::invalid("skill must name a skill"));
        }
        let ctx = self.skill_context(skill, None)?;
        if let (false, Some(problem)) = (ctx.enabled, &ctx.problem) {
            return Err(Error::MemoryDisabled(format!(
                "memory is off for skill {skill:?} because {problem}; fix that line (quote a value that holds \": \" or #), then call again"
            )));
        }
        if !ctx.enabled {
            return Err(Error::MemoryDisabled(format!(
                "memory is not enabled for skill {skill:?}; enable it in its SKILL.md frontmatter (skill-memory: {{ enabled: true }}) or add it to memory.enabledSkills"
            )));
        }
        Ok(ctx)
    }

    // ---- writes ------------------------------------------------------------------------

    fn embed_note(&self, intent: &str, delta: &str) -> Result<Option<Vec<f32>>> {
        match &self.embedder {
            // A failing embedder never loses a note: it is stored without a vector, found by
            // its words, and embedded by `distill` later.
            Some(e) => match e.embed_one(&embed_text(e.as_ref(), intent, delta)) {
                Ok(v) if v.len() == e.dim() => Ok(Some(v)),
                Ok(v) => {
                    tracing::warn!(
                        "embedder {} returned {} numbers, not {}; note stored without a vector",
                        e.model_id(),
                        v.len(),
                        e.dim()
                    );
                    Ok(None)
                }
                Err(why) => {
                    tracing::warn!("{why}; note stored without a vector");
                    Ok(None)
                }
            },
            None => Ok(None),
        }
    }

    /// Writes a note with duplicate detection. Used by `note` and by historian promotion.
    pub fn write_note(&self, new: NewNote) -> Result<NoteResult> {
        let ctx = self.require_enabled(&new.skill)?;
        self.write_note_in(&ctx, new)
    }

    /// Writes a note for a skill whose context is known.
    pub fn write_note_in(&self, ctx: &SkillContext, mut new: NewNote) -> Result<NoteResult> {
        if new.delta.trim().is_empty() {
            return Err(Error::invalid("delta is empty; say the lesson in one or two sentences"));
        }
        new.delta = new.delta.trim().to_string();
        new.intent = new.intent.trim().to_string();
        if new.skill_hash.is_none() {
            new.skill_hash = ctx.version.clone();
        }
        let vector = self.embed_note(&new.intent, &new.delta)?;
        let threshold = ctx.settings.dedup_threshold.unwrap_or(self.config.memory.dedup_threshold);
        let model = self.embedder.as_ref().map(|e| e.model_id().to_string());
        let embedded = match (&vector, &model) {
            (Some(v), Some(m)) => Some(Embedded { vector: v, model: m }),
            _ => None,
        };
        let mut conn = lock(&self.conn);
        // Near duplicates are looked for among the partition's notes the catalog knows, once
        // the index is known to hold their vectors; otherwise the store asks SQLite.
        let pkey = store::partition(new.scope, &self.project_id).to_string();
        let part = self.catalog.partition_ids(&conn, &new.skill, new.scope, &pkey)?;
        // Check the skill's vectors against the index once, as a recall does: otherwise every
        // write until the first recall asks SQLite for the partition's rows (every row of a
        // 90k-note partition, per write: writes into a fresh store slowed as it filled).
        let ready = self.index.as_deref().filter(|ix| !ix.warming());
        if let (Some(ix), false) = (ready, part.vectors_checked) {
            let all = self.catalog.candidates(&conn, &new.skill, &self.project_id)?;
            let all: Vec<i64> = all.candidates.iter().map(|c| c.id).collect();
            store::ensure_vectors(&conn, ix, &all)?;
            self.catalog.mark_checked(&new.skill);
        }
        let ids: Option<Vec<i64>> = ready.map(|_| part.candidates.iter().map(|c| c.id).collect());
        let before = self.catalog.before_write(&conn);
        let (id, status) = store::write_among(
            &mut conn,
            &self.project_id,
            &new,
            embedded,
            threshold,
            self.index.as_deref(),
            ids.as_deref(),
        )?;
        self.catalog.after_write(&conn, before, &[id]);
        Ok(NoteResult { id, status })
    }

    /// `skillmem/note`.
    pub fn note(&self, p: NoteParams) -> Result<NoteResult> {
        let kind = Kind::parse(&p.kind).ok_or_else(|| {
            Error::invalid(format!("kind {:?} is not a note kind; use one of gotcha, discovery, fix, workflow", p.kind))
        })?;
        if p.delta.trim().is_empty() {
            return Err(Error::invalid("delta is empty; say the lesson in one or two sentences"));
        }
        let scope = match p.scope.as_deref() {
            None => Scope::Project,
            Some(s) => Scope::parse(s)
                .ok_or_else(|| Error::invalid(format!("scope {s:?} is not a scope; use project or global")))?,
        };
        self.write_note(NewNote {
            skill: p.skill,
            kind,
            intent: p.intent.unwrap_or_default(),
            delta: p.delta,
            tags: p.tags.unwrap_or_default(),
            scope,
            source: Source::Agent,
            session_id: p.session_id,
            skill_hash: None,
        })
    }

    /// `skillmem/pin`.
    pub fn pin(&self, p: PinParams) -> Result<IdResult> {
        let mut conn = lock(&self.conn);
        let before = self.catalog.before_write(&conn);
        store::set_pinned(&mut conn, p.id, p.pinned)?;
        self.catalog.after_write(&conn, before, &[p.id]);
        Ok(IdResult { id: p.id })
    }

    /// `skillmem/forget`.
    pub fn forget(&self, p: ForgetParams) -> Result<IdResult> {
        let mut conn = lock(&self.conn);
        let before = self.catalog.before_write(&conn);
        store::forget(&mut conn, p.id, self.index.as_deref())?;
        self.catalog.after_write(&conn, before, &[p.id]);
        Ok(IdResult { id: p.id })
    }

    /// `skillmem/edit`: replaces the delta and re-embeds.
    pub fn edit(&self, p: EditParams) -> Result<IdResult> {
        if p.delta.trim().is_empty() {
            return Err(Error::invalid("delta is empty; to delete a note use skillmem/forget"));
        }
        let intent = {
            let conn = lock(&self.conn);
            store::get(&conn, p.id)?.ok_or_else(|| Error::NotFound(format!("no note with id {}", p.id)))?.intent
        };
        let delta = p.delta.trim();
        let vector = self.embed_note(&intent, delta)?;
        let model = self.embedder.as_ref().map(|e| e.model_id().to_string());
        let embedded = match (&vector, &model) {
            (Some(v), Some(m)) => Some(Embedded { vector: v, model: m }),
            _ => None,
        };
        let mut conn = lock(&self.conn);
        let before = self.catalog.before_write(&conn);
        store::edit(&mut conn, p.id, delta, embedded, self.index.as_deref())?;
        self.catalog.after_write(&conn, before, &[p.id]);
        Ok(IdResult { id: p.id })
    }

    // ---- reads -------------------------------------------------------------------------

    fn ranking_of(&self, ctx: &SkillContext) -> Ranking {
        ctx.settings.ranking.unwrap_or_default()
    }

    /// Ranks and renders; marks the surfaced notes as recalled.
    fn recall_block(
        &self,
        ctx: &SkillContext,
        intent: Option<&str>,
        max_tokens: Option<usize>,
        limit: Option<usize>,
    ) -> Result<(Option<block::Block>, RecallMode, Vec<recall::Ranked>)> {
        let mut conn = lock(&self.conn);
        let q = Query {
            skill: &ctx.name,
            project: &self.project_id,
            intent,
            ranking: self.ranking_of(ctx),
            now_ms: db::now_ms(),
        };
        let rungs = Rungs {
            embedder: self.embedder.as_deref(),
            index: self.index.as_deref(),
            use_vectors: true,
            use_fts: true,
        };
        let budget = Budget {
            max_tokens: max_tokens.or(ctx.settings.max_tokens).unwrap_or(self.config.memory.max_tokens),
            max_pinned_tokens: ctx.settings.max_pinned_tokens.unwrap_or(self.config.memory.max_pinned_tokens),
            limit,
        };
        let t0 = Instant::now();
        let read = self.catalog.candidates(&conn, &ctx.name, &self.project_id)?;
        let t_catalog = t0.elapsed();
        let warming = self.index.as_ref().is_some_and(|ix| ix.warming());
        let prepared = recall::Prepared {
            candidates: read.candidates,
            vectors_checked: read.vectors_checked,
            // A block never holds more notes than this (each note's markup alone is more than
            // 16 tokens), so only the head of the ranking is loaded.
            keep: budget.max_tokens / 16 + 32,
            corpus: read.corpus,
            rest_cache: Some(&self.rest_cache),
        };
        let out = recall::rank_prepared(&conn, &q, &rungs, prepared)?;
        let t_rank = t0.elapsed();
        if !read.vectors_checked && !warming {
            self.catalog.mark_checked(&ctx.name);
        }
        let b = block::render(&ctx.name, out.mode, &out.notes, budget, &self.note_tool, ctx.version.as_deref());
        let t_render = t0.elapsed();
        if let Some(b) = &b {
            let before = self.catalog.before_write(&conn);
            store::mark_recalled(&mut conn, &b.note_ids)?;
            self.catalog.after_write(&conn, before, &[]);
        }
        tracing::debug!(
            "recall {}: catalog {:?}, rank {:?}, render {:?}, total {:?}",
            ctx.name,
            t_catalog,
            t_rank - t_catalog,
            t_render - t_rank,
            t0.elapsed()
        );
        Ok((b, out.mode, out.notes))
    }

    /// `skillmem/recall`.
    pub fn recall(&self, p: RecallParams) -> Result<RecallResult> {
        let ctx = self.require_enabled(&p.skill)?;
        let (b, mode, ranked) = self.recall_block(&ctx, p.intent.as_deref(), p.max_tokens, p.limit)?;
        let Some(b) = b else { return Ok(RecallResult { block: None, mode: RecallMode::None, notes: vec![] }) };
        let notes = b
            .note_ids
            .iter()
            .filter_map(|id| ranked.iter().find(|r| r.note.id == *id))
            .map(|r| RecalledNote {
                id: r.note.id,
                kind: r.note.kind.clone(),
                intent: r.note.intent.clone(),
                delta: r.note.delta.clone(),
                scope: r.note.scope,
                pinned: r.note.pinned,
                hits: r.note.hits,
                score: r.score,
                created_at: r.note.created_at,
            })
            .collect();
        Ok(RecallResult { block: Some(b.text), mode, notes })
    }

    /// `skillmem/stats`.
    pub fn stats(&self, p: StatsParams) -> Result<StatsResult> {
        let project = p.project_id.unwrap_or_else(|| self.project_id.clone());
        let conn = lock(&self.conn);
        let counts = store::counts(&conn, &project)?;
        let model = self.embedder.as_ref().map(|e| e.model_id().to_string());
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
        let mut st = conn.prepare(
            "SELECT skill, count(DISTINCT host || ' ' || session_id), max(used_at) FROM skill_uses
             WHERE project_id = ?1 GROUP BY skill",
        )?;
        let used =
            st.query_map([&project], |r| Ok((r.get::<_, String>(0)?, r.get::<_, i64>(1)?, r.get::<_, i64>(2)?)))?;
        for u in used {
            let (skill, sessions, last) = u?;
            match skills.iter_mut().find(|s| s.skill == skill) {
                Some(s) => (s.sessions, s.last_used) = (sessions, Some(last)),
                None => {
                    skills.push(SkillStats { skill, notes: 0, pinned: 0, recalls: 0, sessions, last_used: Some(last) })
                }
            }
        }
        skills.sort_by(|a, b| a.skill.cmp(&b.skill));
        let days = i64::from(p.days.unwrap_or(14).min(366));
        let mut uses_by_day = vec![];
        if days > 0 {
            let since = db::now_ms() - days * 86_400_000;
            let mut st = conn.prepare(
                "SELECT date(used_at / 1000, 'unixepoch') AS day, skill, count(DISTINCT host || ' ' || session_id)
                 FROM skill_uses WHERE project_id = ?1 AND used_at >= ?2
                 GROUP BY day, skill ORDER BY day DESC, skill",
            )?;
            let rows = st.query_map(rusqlite::params![&project, since], |r| {
                Ok(DayUses { day: r.get(0)?, skill: r.get(1)?, sessions: r.get(2)? })
            })?;
            uses_by_day = rows.collect::<std::result::Result<_, _>>()?;
        }
        Ok(StatsResult {
            project_id: project,
            notes: skills.iter().map(|c| c.notes).sum(),
            pinned: skills.iter().map(|c| c.pinned).sum(),
            skills,
            embedding: EmbeddingStats { model, dim: self.embedder.as_ref().map(|e| e.dim()), stale },
            uses_by_day,
        })
    }

    /// The workspace this engine serves, if any.
    pub fn workspace(&self) -> Option<&Path> {
        self.workspace.as_deref()
    }

    /// The vector index of the current embedder, if any (distill teaches it new vectors).
    pub fn vector_index(&self) -> Option<&Arc<dyn VectorIndex>> {
        self.index.as_ref()
    }

    /// The HNSW index, when that is the one in use.
    pub fn hnsw(&self) -> Option<&Arc<HnswIndex>> {
        self.hnsw.as_ref()
    }

    /// Asks the index to write its files when it has unsaved inserts (at `shutdown`).
    pub fn flush_index(&self) {
        if let Some(h) = &self.hnsw {
            h.flush(std::time::Duration::from_secs(5));
        }
    }
}

/// The index in use, and the same index when it is the HNSW one.
type OpenedIndex = (Option<Arc<dyn VectorIndex>>, Option<Arc<HnswIndex>>);

/// Opens the vector index for `embedder`: the column-major exact index for the hash
/// embedder, the HNSW index persisted under the data dir for the others (vectors and graph
/// loaded in the background). `SKILLMEM_INDEX=exact|columns|hnsw` forces one.
/// `SKILLMEM_INDEX_BLOCKING=1` waits until the graph is ready (benchmarks, tests).
fn open_index(conn: &Connection, config: &Config, embedder: Option<&dyn Embedder>) -> Result<OpenedIndex> {
    let Some(e) = embedder else { return Ok((None, None)) };
    if std::env::var("SKILLMEM_INDEX").is_ok_and(|v| v == "exact") {
        let ix = ExactIndex::new(e.model_id());
        store::load_index(conn, &ix)?;
        return Ok((Some(Arc::new(ix)), None));
    }
    let data_dir = config.data_dir.clone();
    let model = e.model_id().to_string();
    let loader: crate::index::hnsw::Loader = Box::new(move |sink: &mut dyn FnMut(i64, Vec<f32>)| {
        let c = db::open(&data_dir)?;
        store::stream_vectors(&c, &model, sink)
    });
    let choice = std::env::var("SKILLMEM_INDEX").unwrap_or_default();
    // The hash embedder's vectors are hashed words: nearly orthogonal, no neighbourhoods for
    // a graph to walk, and sparse queries; they get the column-major exact index.
    if choice == "columns" || (choice != "hnsw" && e.lexical()) {
        let ix = Arc::new(crate::index::ColumnIndex::new(e.model_id(), e.dim()));
        ix.start(Some(loader));
        if std::env::var("SKILLMEM_INDEX_BLOCKING").is_ok_and(|v| v == "1") {
            ix.wait_ready();
        }
        return Ok((Some(ix), None));
    }
    let dir = crate::index::hnsw::index_dir(&config.data_dir, e.model_id());
    let mut params = crate::index::HnswParams::default();
    if let Some(n) = std::env::var("SKILLMEM_INDEX_EXACT_MAX").ok().and_then(|v| v.parse().ok()) {
        // Tests set 0 to send every search through the graph.
        params.exact_max = n;
        params.min_selectivity = 0.0;
    }
    let ix = Arc::new(HnswIndex::new(e.model_id(), e.dim(), Some(dir), params));
    ix.start(Some(loader));
    if std::env::var("SKILLMEM_INDEX_BLOCKING").is_ok_and(|v| v == "1") {
        ix.wait_ready();
    }
    let dynix: Arc<dyn VectorIndex> = ix.clone();
    Ok((Some(dynix), Some(ix)))
}

/// The text a note is embedded by: its intent and its lesson.
pub fn note_text(intent: &str, delta: &str) -> String {
    if intent.is_empty() {
        delta.to_string()
    } else {
        format!("{intent}\n{delta}")
    }
}

/// The text `embedder` embeds a note by. A lexical embedder sees [`note_text`] (code words are
/// exactly what it matches on); a semantic one sees the intent and the lesson's prose, its
/// inline code spans left out ([`prose`]): a sentence model reads code as noise. Measured on
/// `recall-dev.json` with all-MiniLM-L6-v2, pure cosine: paraphrase MRR@10 0.680 → 0.715,
/// recall@5 0.872 → 0.962 (docs/index.md).
pub fn embed_text(embedder: &dyn Embedder, intent: &str, delta: &str) -> String {
    if embedder.lexical() {
        note_text(intent, delta)
    } else {
        note_text(intent, &prose(delta))
    }
}

/// `text` without its inline code spans (between backticks), whitespace collapsed. An
/// unclosed backtick keeps the rest of the text; a text that is all code is returned whole.
pub fn prose(text: &str) -> String {
    let parts: Vec<&str> = text.split('`').collect();
    let mut kept = String::with_capacity(text.len());
    for (i, part) in parts.iter().enumerate() {
        // Odd parts are inside a span, unless the last backtick is unclosed.
        let closed = i + 1 < parts.len() || parts.len() % 2 == 1;
        if i % 2 == 0 || !closed {
            kept.push_str(part);
        }
        kept.push(' ');
    }
    let mut out = String::with_capacity(kept.len());
    for w in kept.split_whitespace() {
        let glued = w.starts_with([',', ';', '.', ':', ')']) && !out.is_empty();
        if !out.is_empty() && !glued {
            out.push(' ');
        }
        out.push_str(w);
    }
    if out.chars().any(char::is_alphanumeric) {
        out
    } else {
        text.to_string()
    }
}

/// True for the skill tool of the hosts we know (`skill` in OpenCode, `Skill` in Claude Code).
pub fn is_skill_tool(tool: &str) -> bool {
    tool.eq_ignore_ascii_case("skill")
}

/// The skill named by a skill tool call: `args.name` (OpenCode) or `args.skill` (Claude Code),
/// without a plugin prefix (`plugin:skill`).
pub fn skill_name_of(args: &Value) -> Option<String> {
    let raw = args.get("name").or_else(|| args.get("skill")).and_then(Value::as_str)?.trim();
    let name = raw.rsplit(':').next().unwrap_or(raw).trim();
    (!name.is_empty()).then(|| name.to_string())
}

// ---- session skills (skills/): the same calls for the server and the CLI ---------------

impl Engine {
    /// Session skills over this engine's data directory and connection.
    pub fn skills(&self) -> crate::skills::Skills<'_> {
        crate::skills::Skills { data_dir: &self.config.data_dir, conn: &self.conn, home: dirs::home_dir() }
    }

    /// `skillmem/skills/install`.
    pub fn skills_install(
        &self,
        p: crate::protocol::skills::InstallParams,
        progress: &dyn Fn(crate::skills::Progress),
    ) -> Result<crate::protocol::skills::InstallResult> {
        let (skills, removed) = self.skills().install(&p.url, p.r#ref.as_deref(), progress)?;
        Ok(crate::protocol::skills::InstallResult { skills, removed })
    }

    /// `skillmem/skills/update`.
    pub fn skills_update(
        &self,
        p: crate::protocol::skills::UpdateParams,
        progress: &dyn Fn(crate::skills::Progress),
    ) -> Result<crate::protocol::skills::UpdateResult> {
        let (skills, removed) = self.skills().update(&p.source, p.r#ref.as_deref(), progress)?;
        Ok(crate::protocol::skills::UpdateResult { skills, removed })
    }

    /// `skillmem/skills/remove`.
    pub fn skills_remove(
        &self,
        p: crate::protocol::skills::RemoveParams,
    ) -> Result<crate::protocol::skills::RemoveResult> {
        Ok(crate::protocol::skills::RemoveResult { removed: self.skills().remove(&p.source)? })
    }

    /// `skillmem/skills/list`.
    pub fn skills_list(&self) -> Result<crate::protocol::skills::ListResult> {
        let sources = self
            .skills()
            .list()?
            .into_iter()
            .map(|(row, skills)| crate::protocol::skills::SourceInfo {
                source: row.source,
                pinned_ref: row.pinned_ref,
                requested_ref: row.requested_ref,
                skills,
            })
            .collect();
        Ok(crate::protocol::skills::ListResult { sources })
    }

    /// `skillmem/skills/resolve`.
    pub fn skills_resolve(
        &self,
        p: crate::protocol::skills::ResolveParams,
    ) -> Result<crate::protocol::skills::ResolveResult> {
        let (skills, dropped) = self.skills().resolve(&p.global, &p.list, &p.task)?;
        Ok(crate::protocol::skills::ResolveResult { skills, dropped })
    }

    /// `skillmem/skills/seed`.
    pub fn skills_seed(&self, p: crate::protocol::skills::SeedParams) -> Result<crate::protocol::skills::SeedResult> {
        let (actions, warnings) = self.skills().seed(Path::new(&p.cwd), &p.skills, p.target.as_deref(), p.dry_run)?;
        Ok(crate::protocol::skills::SeedResult { actions, warnings })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn prose_table() {
        let cases: &[(&str, &str)] = &[
            ("use `jq -r` for raw output, not `jq`.", "use for raw output, not."),
            ("no code here", "no code here"),
            ("`a` and `b`; then `c`", "and; then"),
            ("unclosed `tick keeps the rest", "unclosed tick keeps the rest"),
            ("`all code`", "`all code`"),
            ("a\n `x`  b", "a b"),
        ];
        for (text, want) in cases {
            assert_eq!(prose(text), *want, "{text:?}");
        }
        let hash = crate::embed::hash::HashEmbedder::default();
        assert_eq!(embed_text(&hash, "i", "use `x`"), "i\nuse `x`");
    }

    #[test]
    fn skill_names() {
        let cases = [
            (json!({"name": "jq"}), Some("jq")),
            (json!({"skill": "pdf"}), Some("pdf")),
            (json!({"skill": "my-plugin:pdf"}), Some("pdf")),
            (json!({"name": "  "}), None),
            (json!({"name": 3}), None),
            (json!({}), None),
        ];
        for (args, want) in cases {
            assert_eq!(skill_name_of(&args).as_deref(), want, "{args}");
        }
    }
}
