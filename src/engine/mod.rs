//! The one room behind both doors: the operations the server's methods and the CLI's
//! commands call, over one data directory.
//!
//! An [`Engine`] owns the SQLite connection (behind a mutex: callers run it in
//! `spawn_blocking`), the embedder, the vector index, the resolved configuration and the
//! project identity. Every method is synchronous and blocking; none knows JSON-RPC.
//!
//! The operations are grouped by domain: [`memory`] (tool events, notes, recall, stats),
//! [`historian`], [`distill`], [`skills`] (session skills) and [`curate`] (listing, scope
//! moves, merges, preview, export, import, doctor).

mod calls;
mod checkpoint;
mod curate;
mod distill;
mod editor;
pub mod embedder;
mod historian;
mod memory;
mod review;
mod skills;
mod team;

pub use calls::{Decayed, Feedback, FeedbackResult, ToolCall, Verdict, OWN_SESSION_PREFIX};
pub use curate::{
    parse_export, to_jsonl, to_markdown, Check, CheckStatus, DayActivity, Doctor, ExportFormat, ExportedNote, Imported,
    ListedNote, MoveResult, MoveStatus, NoteFilter, NotePage, NoteSort, Preview, PreviewNote,
};
pub use distill::{CorpusReport, Distilled, DuplicatePair, Pace, SecretNote};
pub use editor::SkillOverview;
pub use historian::{chunk_span, PromotedNote, Promotion, RejectedObservation, RenderedChunk};
pub use memory::{
    DayUses, EmbeddingStats, LoadRecall, Recalled, RecalledNote, SkillLoad, SkillStats, Stats, Written,
    INTENT_DESCRIPTION,
};
pub use review::{Decided, Decision};
pub use skills::{Installed, Removed, Resolved, Seeded, SourceInfo, Sources};
pub use team::{HeldNote, SyncReport, TeamStatus, PULL_BATCH, PUSH_BATCH};

use std::collections::{HashMap, HashSet};
use std::path::PathBuf;
use std::sync::{Arc, Mutex, MutexGuard};

use globset::{Glob, GlobSet, GlobSetBuilder};
use rusqlite::Connection;

use crate::config::Config;
use crate::db;
use crate::embed::{self, Embedder};
use crate::error::{Error, Result};
use crate::index::{ExactIndex, HnswIndex, VectorIndex};
use crate::memory::catalog::Catalog;
use crate::memory::recall;
use crate::memory::stash::IntentStash;
use crate::memory::store;
use crate::memory::{provenance, version};
use crate::skillmd::frontmatter::{self, MemorySettings};

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
    /// The static table when `embedder` is another semantic embedder: recall's second
    /// opinion (see [`recall::SECOND_WEIGHT`]).
    second: Option<Arc<dyn Embedder>>,
    /// Token matching, when `embedder` is the static table (see [`recall::TOKEN_WEIGHT`]).
    tokens: Option<Arc<embed::tokens::TokenMatch>>,
    /// Set once the notes without the model's pieces were counted (see
    /// [`Engine::other_model_count`]); cleared by the doors that store notes without them
    /// (import, team sync), so that the next count looks again.
    pieces_counted: std::sync::atomic::AtomicBool,
    /// The catalog's generation plus one when [`Engine::other_model_count`] last found no
    /// note to re-embed (0: never): while no note has changed since, there is none to count.
    /// The server asks after every request, and the count holds the connection.
    none_to_reembed_at: std::sync::atomic::AtomicU64,
    /// Notes' pieces read for recall, kept by model and text (with a local model).
    held_pieces: recall::HeldPieces,
    index: Option<Arc<dyn VectorIndex>>,
    /// The same index when it is the HNSW one (readiness, flushing).
    hnsw: Option<Arc<HnswIndex>>,
    /// What recall ranks by, in memory (see [`crate::memory::catalog`]).
    catalog: Catalog,
    /// The head of each skill's recency × hits order (see [`recall::RestCache`]).
    rest_cache: recall::RestCache,
    /// Small skills' bm25 rung in memory.
    lexicons: crate::memory::lexicon::LexiconCache,
    /// The connection their indexes are built through, kept so that its page cache holds
    /// the skills' rows the next time (see [`Engine::build_lexicons`]).
    lexicon_conn: Mutex<Option<Connection>>,
    config: Config,
    project_id: String,
    workspace: Option<PathBuf>,
    enabled_globs: GlobSet,
    stash: Mutex<IntentStash>,
    /// What the chunks rendered for each session showed: the skills they used and their text
    /// (see `historian.rs`).
    chunk_skills: Mutex<HashMap<String, historian::SessionChunks>>,
    /// The transcript each session's last rendered chunk came from (provenance of what the
    /// historian promotes for that session; see `historian.rs`).
    chunk_origins: Mutex<HashMap<String, crate::memory::Origin>>,
    skill_dirs: Mutex<HashMap<String, PathBuf>>,
    /// Skill folders' content hashes, kept while their files are unchanged.
    skill_hashes: version::HashCache,
    warned: Mutex<HashSet<String>>,
    warnings: Mutex<Vec<String>>,
    /// Called after each local write when the server syncs with a team (see `team.rs`).
    team_poke: Mutex<Option<Box<dyn Fn() + Send + Sync>>>,
    /// Checkpoints the write-ahead log off the write path (see `checkpoint.rs`).
    _checkpointer: Option<checkpoint::Checkpointer>,
    /// Notes recalls surfaced whose counts are not written yet (see [`Engine::conn`]).
    pending_recalls: Mutex<Vec<i64>>,
    /// When recall counts were last written (see [`RECALL_COUNTS_EVERY`]).
    counts_written: Mutex<std::time::Instant>,
    /// A delayed write of the recall counts is scheduled ([`Engine::schedule_recall_counts`]).
    counts_scheduled: std::sync::atomic::AtomicBool,
    /// The sessions this process has seen calls of and not ended (see `calls.rs`).
    sessions: Mutex<crate::memory::calls::Sessions>,
    /// Calls reported and not written yet (written after the answer; see `calls.rs`).
    pending_calls: Mutex<Vec<crate::memory::calls::Call>>,
}

impl Drop for Engine {
    fn drop(&mut self) {
        self.flush_recall_counts();
        self.write_pending_calls();
    }
}

/// While recalls keep coming, their counts are written at most this often (or once
/// [`RECALL_COUNTS_HELD`] wait), in one transaction: each recall's own write of the 20 to 50
/// notes it surfaced was a transaction of as many scattered pages, which the next recall
/// waited for. A read that shows counts writes them first ([`Engine::conn`]).
pub const RECALL_COUNTS_EVERY: std::time::Duration = std::time::Duration::from_secs(1);
/// See [`RECALL_COUNTS_EVERY`].
pub const RECALL_COUNTS_HELD: usize = 16_384;

/// The note tool of the sidecar's own protocol, when neither the host nor the configuration
/// names one.
pub const DEFAULT_NOTE_TOOL: &str = "the skill-note tool (skillmem/note)";

/// The feedback tool of the sidecar's own protocol, when neither the host nor the
/// configuration names one.
pub const DEFAULT_FEEDBACK_TOOL: &str = "the skill-feedback tool (skillmem/feedback)";

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}

impl Engine {
    /// The database connection, for the engine's own modules (callers outside the engine go
    /// through its operations, never through SQL), with the recall counts still pending
    /// written first, so that every read
    /// sees them. A recall does not write its count itself: it leaves the ids here, and the
    /// server writes them right after it answers ([`Engine::flush_recall_counts`]), so that no
    /// recall waits for a write transaction (another sidecar of the data directory may hold
    /// the write lock) or its commit.
    fn conn(&self) -> MutexGuard<'_, rusqlite::Connection> {
        let mut c = lock(&self.conn);
        self.write_recall_counts(&mut c);
        c
    }

    /// The connection for a recall: the counts still pending are left for later (a ranking
    /// reads no count), unless too many wait ([`RECALL_COUNTS_HELD`]).
    fn conn_for_recall(&self) -> MutexGuard<'_, rusqlite::Connection> {
        let mut c = lock(&self.conn);
        if lock(&self.pending_recalls).len() >= RECALL_COUNTS_HELD {
            self.write_recall_counts(&mut c);
        }
        c
    }

    fn write_recall_counts(&self, conn: &mut rusqlite::Connection) {
        let ids = std::mem::take(&mut *lock(&self.pending_recalls));
        if ids.is_empty() {
            return;
        }
        *lock(&self.counts_written) = std::time::Instant::now();
        let before = self.catalog.before_write(conn);
        let written = store::mark_recalled(conn, &ids);
        self.catalog.after_write(conn, before, &[]);
        match written {
            Ok(()) => self.catalog.recalled(&ids),
            Err(e) => tracing::warn!("the recall counts of {} notes were not written: {e}", ids.len()),
        }
    }

    /// Whether recalls left counts to write ([`Engine::flush_recall_counts`]).
    pub fn recall_counts_pending(&self) -> bool {
        !lock(&self.pending_recalls).is_empty()
    }

    /// Whether the recall counts are due: some wait, and they were last written
    /// [`RECALL_COUNTS_EVERY`] ago or more.
    fn recall_counts_due(&self) -> bool {
        self.recall_counts_pending() && lock(&self.counts_written).elapsed() >= RECALL_COUNTS_EVERY
    }

    /// Whether a request left work for after its answer ([`Engine::after_answer`]).
    pub fn after_answer_pending(&self) -> bool {
        self.recall_counts_due() || self.lexicons.any_wanted() || self.calls_pending()
    }

    /// Claims the one delayed write of the recall counts: true when counts wait and no write
    /// is scheduled yet; the caller then calls [`Engine::write_scheduled_recall_counts`] after
    /// [`RECALL_COUNTS_EVERY`], so that the counts of the last recalls of a burst are written
    /// too.
    pub fn schedule_recall_counts(&self) -> bool {
        self.recall_counts_pending() && !self.counts_scheduled.swap(true, std::sync::atomic::Ordering::AcqRel)
    }

    /// The delayed write [`Engine::schedule_recall_counts`] claimed.
    pub fn write_scheduled_recall_counts(&self) {
        self.counts_scheduled.store(false, std::sync::atomic::Ordering::Release);
        self.flush_recall_counts();
    }

    /// What a request leaves for after its answer, which the server and the MCP door call
    /// right after they answer: the tool calls reported (the sessions' logs), the recall
    /// counts when due ([`RECALL_COUNTS_EVERY`]), then the bm25 indexes recalls found missing
    /// ([`Engine::build_lexicons`]).
    pub fn after_answer(&self) {
        if self.calls_pending() {
            self.write_pending_calls();
        }
        if self.recall_counts_due() {
            self.flush_recall_counts();
        }
        if let Err(e) = self.build_lexicons(false) {
            tracing::debug!("recall: bm25 indexes not built ({e}); FTS5 answers meanwhile");
        }
    }

    /// Writes the recall counts left by recalls (see [`Engine::conn`]); at once when none is
    /// pending.
    pub fn flush_recall_counts(&self) {
        if !lock(&self.pending_recalls).is_empty() {
            drop(self.conn());
        }
    }

    /// Opens the store of `config.data_dir` for the project of `workspace`.
    pub fn open(config: Config, workspace: Option<PathBuf>) -> Result<Engine> {
        let conn = db::open(&config.data_dir)?;
        let embedder = embedder::from_config(&config.embedding)?;
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
        let second = second_opinion_for(embedder.as_deref());
        let tokens = token_match_for(embedder.as_deref());
        let checkpointer = checkpoint::Checkpointer::start(&conn);
        Ok(Engine {
            conn: Mutex::new(conn),
            embedder,
            second,
            tokens,
            pieces_counted: Default::default(),
            none_to_reembed_at: Default::default(),
            held_pieces: recall::HeldPieces::new(recall::PIECES_HELD),
            index,
            hnsw,
            catalog: Catalog::default(),
            rest_cache: recall::RestCache::default(),
            lexicons: Default::default(),
            lexicon_conn: Mutex::new(None),
            config,
            project_id,
            workspace,
            enabled_globs,
            stash: Mutex::new(IntentStash::default()),
            chunk_skills: Mutex::new(HashMap::new()),
            chunk_origins: Mutex::new(HashMap::new()),
            skill_dirs: Mutex::new(HashMap::new()),
            skill_hashes: version::HashCache::default(),
            warned: Mutex::new(HashSet::new()),
            warnings: Mutex::new(vec![]),
            team_poke: Mutex::new(None),
            _checkpointer: checkpointer,
            pending_recalls: Mutex::new(vec![]),
            counts_written: Mutex::new(std::time::Instant::now()),
            counts_scheduled: Default::default(),
            sessions: Default::default(),
            pending_calls: Default::default(),
        })
    }

    /// The name of the note tool the guidance line tells the agent to call: `memory.noteTool`,
    /// which each door sets to its own tool's name unless the configuration names one.
    pub fn note_tool(&self) -> &str {
        self.config.memory.note_tool.as_deref().unwrap_or(DEFAULT_NOTE_TOOL)
    }

    /// The name of the feedback tool the guidance line names: `memory.feedbackTool`, which each
    /// door sets to its own tool's name unless the configuration names one.
    /// When none is configured, the note tool's sibling: every door names its tools alike
    /// (`mcp__skillmem__skill_note` and `mcp__skillmem__skill_feedback`, `ctx_skill_note` and
    /// `ctx_skill_feedback`).
    pub fn feedback_tool(&self) -> std::borrow::Cow<'_, str> {
        if let Some(t) = self.config.memory.feedback_tool.as_deref() {
            return t.into();
        }
        match self.config.memory.note_tool.as_deref().and_then(|n| n.strip_suffix("skill_note")) {
            Some(prefix) => format!("{prefix}skill_feedback").into(),
            None => DEFAULT_FEEDBACK_TOOL.into(),
        }
    }

    /// The workspace this engine serves, if any.
    pub fn workspace(&self) -> Option<&std::path::Path> {
        self.workspace.as_deref()
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
        let version = if settings.enabled { self.skill_hashes.content_hash(&dir) } else { None };
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
            let file = match &ctx.dir {
                Some(d) => d.join("SKILL.md").display().to_string(),
                None => "its SKILL.md".into(),
            };
            return Err(Error::MemoryDisabled(format!(
                "memory is not enabled for skill {skill:?}: add the line `skill-memory: {{ enabled: true }}` to the frontmatter of {file} (between its --- lines), or add {skill:?} to memory.enabledSkills in skillmem.toml; then call again"
            )));
        }
        Ok(ctx)
    }

    /// The vector index of the current embedder, if any (distill teaches it new vectors).
    pub fn vector_index(&self) -> Option<&Arc<dyn VectorIndex>> {
        self.index.as_ref()
    }

    /// Asks the index to write its files when it has unsaved inserts, and checkpoints the
    /// database's write-ahead log (at `shutdown`).
    pub fn flush(&self) {
        if let Some(h) = &self.hnsw {
            h.flush(std::time::Duration::from_secs(5));
        }
        let _ = self.conn().execute_batch("PRAGMA wal_checkpoint(PASSIVE);");
    }
}

/// The index in use, and the same index when it is the HNSW one.
type OpenedIndex = (Option<Arc<dyn VectorIndex>>, Option<Arc<HnswIndex>>);

/// The static table, as recall's second opinion, for a semantic embedder other than itself.
fn second_opinion_for(embedder: Option<&dyn Embedder>) -> Option<Arc<dyn Embedder>> {
    let e = embedder?;
    if e.lexical() || e.model_id().starts_with("static:") {
        return None;
    }
    match embed::static_table::StaticEmbedder::builtin() {
        // Kept by text: the same notes come back recall after recall of a skill.
        Ok(s) => {
            Some(Arc::new(embed::cache::Cached::new(s, embed::cache::SECOND_OPINION_ENTRIES)) as Arc<dyn Embedder>)
        }
        Err(why) => {
            tracing::warn!("{why}; recall ranks by {} alone", e.model_id());
            None
        }
    }
}

/// Token matching over the static table, when `embedder` is the built-in table.
fn token_match_for(embedder: Option<&dyn Embedder>) -> Option<Arc<embed::tokens::TokenMatch>> {
    let table = embed::static_table::StaticEmbedder::builtin().ok()?;
    (embedder?.model_id() == table.model_id()).then(|| Arc::new(embed::tokens::TokenMatch::new(table)))
}

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
