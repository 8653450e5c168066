//! The one room behind both doors: the operations the server's methods and the CLI's
//! commands call, over one data directory. Every method is synchronous and blocking; none
//! knows JSON-RPC.
//!
//! An [`Engine`] is a few parts, each owning its state and the methods over it alone:
//! [`store::Store`] (the SQLite connection behind a mutex, callers run it in
//! `spawn_blocking`; the catalog; recall counts not written yet), [`embedder::Embedding`]
//! (the embedder and its vector index), [`caches::RecallCaches`], the skill folders and
//! warnings (`skill_folders.rs`), the open sessions (`calls.rs`), the historian's chunks per
//! session (`historian.rs`) and the team hook (`team.rs`); plus the resolved configuration
//! and the project identity.
//!
//! The operations are grouped by family, one file each: [`memory`] (skill loads, notes,
//! recall, stats), [`calls`] (a session's calls and its end, feedback), [`historian`],
//! [`distill`], [`review`], [`skills`] (session skills), [`team`], [`editor`] and [`curate`]
//! (listing, scope moves, merges, preview, export, import, doctor).

mod caches;
mod calls;
mod checkpoint;
mod curate;
mod distill;
mod editor;
pub mod embedder;
mod historian;
mod memory;
mod review;
mod skill_folders;
mod skills;
mod store;
mod team;

pub use calls::{Decayed, Feedback, FeedbackResult, ToolCall, Verdict, OWN_SESSION_PREFIX};
pub use curate::{
    DayActivity, EmbeddingHealth, ExportedNote, Health, Imported, IndexHealth, ListedNote, MoveResult, MoveStatus,
    NoteFilter, NotePage, NoteSort, Preview, PreviewNote,
};
pub use distill::{CorpusReport, Distilled, DuplicatePair, Pace, SecretNote};
pub use editor::SkillOverview;
pub use historian::{chunk_span, PromotedNote, Promotion, RejectedObservation, RenderedChunk};
pub use memory::{
    DayUses, EmbeddingStats, LoadRecall, Recalled, RecalledNote, SkillLoad, SkillStats, Stats, Written,
    INTENT_DESCRIPTION,
};
pub use review::{Decided, Decision};
pub use skills::{
    Audited, Installed, LockFile, Locked, LockedInstall, LockedSkill, LockedSource, Pruned, Removed, Resolved, Seeded,
    SkillUsage, SourceInfo, Sources, Verified, LOCK_FILE,
};
pub use team::{HeldNote, SupportedLesson, SyncReport, TeamStatus, TeamSupport, PULL_BATCH, PUSH_BATCH};

pub use skill_folders::SkillContext;
pub use store::{RECALL_COUNTS_EVERY, RECALL_COUNTS_HELD};

use std::path::PathBuf;
use std::sync::{Arc, Mutex, MutexGuard};

use rusqlite::Connection;

use skillmem_config::Config;
use skillmem_embed::Embedder;
use skillmem_error::Result;
use skillmem_index::VectorIndex;
use skillmem_store::db;

/// Skill memory over one data directory, for one project: a few parts, each owning its
/// state (ARCHITECTURE.md, "engine/"), and the operations over them in the files of each
/// family.
pub struct Engine {
    /// The SQLite connection, the catalog, the recall counts not written yet (`store.rs`).
    store: store::Store,
    /// The embedder, its vector index, and recall's second opinions (`embedder.rs`).
    embedding: embedder::Embedding,
    /// What recall keeps between calls besides the catalog (`caches.rs`).
    caches: caches::RecallCaches,
    /// Where skills live and whether memory is on for them (`skill_folders.rs`).
    skill_folders: skill_folders::SkillFolders,
    /// Warnings for a person, each said once (`skill_folders.rs`).
    warnings: skill_folders::Warnings,
    /// The sessions this process serves: intents, calls' positions, calls not written yet
    /// (`calls.rs`).
    sessions: calls::OpenSessions,
    /// What the historian's chunks showed, per session (`historian.rs`).
    historian: historian::ChunkSessions,
    /// Called after each local write when the server syncs with a team (`team.rs`).
    team: team::TeamHook,
    config: Config,
    project_id: String,
}

impl Drop for Engine {
    fn drop(&mut self) {
        self.flush_recall_counts();
        self.write_pending_calls();
    }
}

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
    /// The database connection, with the recall counts still pending written first
    /// ([`store::Store::conn`]).
    fn conn(&self) -> MutexGuard<'_, rusqlite::Connection> {
        self.store.conn()
    }

    /// The connection for a recall ([`store::Store::conn_for_recall`]).
    fn conn_for_recall(&self) -> MutexGuard<'_, rusqlite::Connection> {
        self.store.conn_for_recall()
    }

    /// Whether recalls left counts to write ([`Engine::flush_recall_counts`]).
    pub fn recall_counts_pending(&self) -> bool {
        self.store.recall_counts_pending()
    }

    /// Whether a request left work for after its answer ([`Engine::after_answer`]).
    pub fn after_answer_pending(&self) -> bool {
        self.store.recall_counts_due() || self.caches.lexicons.any_wanted() || self.calls_pending()
    }

    /// Claims the one delayed write of the recall counts: true when counts wait and no write
    /// is scheduled yet; the caller then calls [`Engine::write_scheduled_recall_counts`] after
    /// [`RECALL_COUNTS_EVERY`], so that the counts of the last recalls of a burst are written
    /// too.
    pub fn schedule_recall_counts(&self) -> bool {
        self.store.schedule_recall_counts()
    }

    /// The delayed write [`Engine::schedule_recall_counts`] claimed.
    pub fn write_scheduled_recall_counts(&self) {
        self.store.write_scheduled_recall_counts();
    }

    /// What a request leaves for after its answer, which the server and the MCP door call
    /// right after they answer: the tool calls reported (the sessions' logs), the recall
    /// counts when due ([`RECALL_COUNTS_EVERY`]), then the bm25 indexes recalls found missing
    /// ([`Engine::build_lexicons`]).
    pub fn after_answer(&self) {
        if self.calls_pending() {
            self.write_pending_calls();
        }
        if self.store.recall_counts_due() {
            self.flush_recall_counts();
        }
        if let Err(e) = self.build_lexicons(false) {
            tracing::debug!("recall: bm25 indexes not built ({e}); FTS5 answers meanwhile");
        }
    }

    /// Writes the recall counts left by recalls; at once when none is pending. A recall does
    /// not write its counts itself (see `store.rs`).
    pub fn flush_recall_counts(&self) {
        self.store.flush_recall_counts();
    }

    /// Opens the store of `config.data_dir` for the project of `workspace`.
    pub fn open(config: Config, workspace: Option<PathBuf>) -> Result<Engine> {
        // The database opens while the embedder is made on a thread of its own (the static
        // table parsed, a model loaded): at 100,000 notes each took 6 to 10 ms in turn.
        let t = std::time::Instant::now();
        let (conn, embedder) = std::thread::scope(|s| {
            let made = s.spawn(|| {
                let e = embedder::from_config(&config.embedding);
                (e, t.elapsed())
            });
            let conn = db::open(&config.data_dir).map(|c| (c, t.elapsed()));
            // A panic there goes on as it did on this thread.
            let made = made.join().unwrap_or_else(|p| std::panic::resume_unwind(p));
            (conn, made)
        });
        let (conn, db) = conn?;
        let (embedder, made) = (embedder.0?, embedder.1);
        tracing::debug!("engine open: database {db:?}, embedder {made:?} (side by side), both {:?}", t.elapsed());
        Self::with_embedder(conn, config, workspace, embedder)
    }

    /// Opens with an explicit embedder (tests, eval).
    pub fn with_embedder(
        conn: Connection,
        config: Config,
        workspace: Option<PathBuf>,
        embedder: Option<Arc<dyn Embedder>>,
    ) -> Result<Engine> {
        let t = std::time::Instant::now();
        let project_id = match &config.project_id {
            Some(p) => p.clone(),
            None => {
                let dir =
                    workspace.clone().or_else(|| std::env::current_dir().ok()).unwrap_or_else(|| PathBuf::from("/"));
                // Kept under the data directory: a hook process would read the repository
                // at every skill load.
                skillmem_skills::project::identity_cached(&dir, &config.data_dir.join("cache"))
            }
        };
        let project = t.elapsed();
        let skill_folders =
            skill_folders::SkillFolders::new(workspace, &config.memory.enabled_skills, config.data_dir.join("cache"))?;
        let folders = t.elapsed() - project;
        let embedding = embedder::Embedding::open(&conn, &config, embedder)?;
        tracing::debug!(
            "engine open: project identity {project:?}, skill folders {folders:?}, the index opened {:?}",
            t.elapsed() - project - folders
        );
        Ok(Engine {
            store: store::Store::new(conn),
            embedding,
            caches: Default::default(),
            skill_folders,
            warnings: Default::default(),
            sessions: Default::default(),
            historian: Default::default(),
            team: Default::default(),
            config,
            project_id,
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
        self.skill_folders.workspace()
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
        self.embedding.embedder.as_ref()
    }

    /// The vector index of the current embedder, if any (distill teaches it new vectors).
    pub fn vector_index(&self) -> Option<&Arc<dyn VectorIndex>> {
        self.embedding.index.as_ref()
    }

    /// Asks the index to write its files when it has unsaved inserts (a build under way saves
    /// its progress instead, for the next start to resume), and checkpoints the database's
    /// write-ahead log (at `shutdown`: the index builds nothing after this).
    pub fn flush(&self) {
        if let Some(h) = &self.embedding.hnsw {
            h.finish(std::time::Duration::from_secs(5));
        }
        let _ = self.conn().execute_batch("PRAGMA wal_checkpoint(PASSIVE);");
    }
}
