//! `skillmem notes`, `export`, `import`, `doctor`: the whole memory from the command line,
//! through the same engine operations as `skillmem/notes` and the dashboard.

use std::io::Read;
use std::path::{Path, PathBuf};

use anyhow::{Context, Result};

use skillmem::engine::{
    to_jsonl, to_markdown, CheckStatus, Doctor, Engine, ExportFormat, Imported, NoteFilter, NotePage, NoteSort,
};
use skillmem::memory::{Kind, Scope, Source};
use skillmem::protocol::curate::Notes;

use super::{call, day_of, emit, out, Global};

/// `skillmem notes` options.
#[derive(Debug, clap::Args)]
pub struct NotesArgs {
    /// One skill's notes (default: every skill's).
    pub skill: Option<String>,
    /// gotcha, discovery, fix or workflow.
    #[arg(long)]
    pub kind: Option<String>,
    /// project or global.
    #[arg(long)]
    pub scope: Option<String>,
    /// agent or historian.
    #[arg(long)]
    pub source: Option<String>,
    /// Only pinned notes.
    #[arg(long)]
    pub pinned: bool,
    /// Full-text search (every word must match).
    #[arg(long)]
    pub search: Option<String>,
    /// recent (default), hits or recalls.
    #[arg(long, default_value = "recent")]
    pub sort: String,
    /// Every project's notes, not only those visible from this one.
    #[arg(long)]
    pub all_projects: bool,
    /// At most this many notes (default: all).
    #[arg(long)]
    pub limit: Option<usize>,
    #[arg(long)]
    pub offset: Option<usize>,
}

fn parse_scope(s: &str) -> Result<Scope> {
    Scope::parse(s).with_context(|| format!("scope {s:?} is not a scope; use project or global"))
}

/// The filter the options say.
pub fn filter_of(a: &NotesArgs) -> Result<NoteFilter> {
    let kind = match &a.kind {
        Some(k) => Some(
            Kind::parse(k)
                .with_context(|| format!("kind {k:?} is not a note kind; use gotcha, discovery, fix or workflow"))?,
        ),
        None => None,
    };
    let source = match a.source.as_deref() {
        None => None,
        Some("agent") => Some(Source::Agent),
        Some("historian") => Some(Source::Historian),
        Some(s) => anyhow::bail!("source {s:?} is not a source; use agent or historian"),
    };
    let sort = match a.sort.as_str() {
        "recent" => NoteSort::Recent,
        "hits" => NoteSort::Hits,
        "recalls" => NoteSort::Recalls,
        s => anyhow::bail!("sort {s:?}: use recent, hits or recalls"),
    };
    Ok(NoteFilter {
        skill: a.skill.clone(),
        project_id: None,
        all_projects: a.all_projects,
        kind,
        scope: a.scope.as_deref().map(parse_scope).transpose()?,
        source,
        pinned: a.pinned.then_some(true),
        search: a.search.clone(),
        sort,
        offset: a.offset,
        limit: a.limit,
    })
}

/// `skillmem notes`.
pub fn notes(g: &Global, engine: &Engine, a: NotesArgs) -> Result<()> {
    let f = filter_of(&a)?;
    let page = if f.limit.is_some() { call::<Notes>(engine, f)? } else { engine.all_notes(&f)? };
    emit(g, &page, human_notes)
}

fn human_notes(p: &NotePage) -> String {
    if p.notes.is_empty() {
        return format!("no notes ({} match)", p.total);
    }
    let mut t = String::new();
    for n in &p.notes {
        t.push_str(&format!(
            "{:>6}  {:<16} {:<9} {:<7} {}{}  hits {} recalls {}  {}\n        {}\n",
            n.id,
            n.skill,
            n.kind,
            n.scope.as_str(),
            if n.pinned { "pinned " } else { "" },
            n.source,
            n.hits,
            n.recalls,
            day_of(n.created_at),
            n.delta.replace('\n', "\n        ")
        ));
    }
    t.push_str(&format!("{} of {} notes", p.notes.len(), p.total));
    t
}

/// `skillmem export`.
pub fn export(
    g: &Global,
    engine: &Engine,
    skill: Option<String>,
    scope: Option<String>,
    format: ExportFormat,
    output: Option<PathBuf>,
) -> Result<()> {
    let scope = scope.as_deref().map(parse_scope).transpose()?;
    let notes = engine.export_notes(skill.as_deref(), scope)?;
    let text = match format {
        ExportFormat::Jsonl => to_jsonl(&notes),
        ExportFormat::Md => to_markdown(&notes),
    };
    match output {
        Some(p) => {
            std::fs::write(&p, &text).with_context(|| format!("cannot write {}", p.display()))?;
            if !g.json {
                eprintln!("skillmem: exported {} notes to {}", notes.len(), p.display());
            }
        }
        None => out(text.trim_end_matches('\n')),
    }
    Ok(())
}

/// `skillmem import FILE`.
pub fn import(g: &Global, engine: &Engine, file: &Path) -> Result<()> {
    let text = if file == Path::new("-") {
        let mut s = String::new();
        std::io::stdin().read_to_string(&mut s).context("cannot read stdin")?;
        s
    } else {
        std::fs::read_to_string(file).with_context(|| format!("cannot read {}", file.display()))?
    };
    let r = engine.import_notes(&text)?;
    emit(g, &r, human_import)
}

fn human_import(r: &Imported) -> String {
    let mut t = format!(
        "read {} notes: {} inserted, {} duplicates (hits bumped), {} embedded by this embedder",
        r.read, r.inserted, r.duplicates, r.reembedded
    );
    for w in &r.warnings {
        t.push_str(&format!("\nwarning: {w}"));
    }
    t
}

/// `skillmem doctor`: exit code 1 when a check failed.
pub fn doctor(g: &Global, engine: &Engine, fix: bool) -> Result<u8> {
    let mut d = engine.doctor(dirs::home_dir().as_deref());
    if fix && d.checks.iter().any(|c| c.name == "full-text index" && c.status == CheckStatus::Fail) {
        engine.rebuild_fts()?;
        eprintln!("skillmem: rebuilt the full-text index");
        d = engine.doctor(dirs::home_dir().as_deref());
    }
    emit(g, &d, human_doctor)?;
    Ok(if d.failed() { 1 } else { 0 })
}

fn human_doctor(d: &Doctor) -> String {
    let mut t = String::new();
    for c in &d.checks {
        let mark = match c.status {
            CheckStatus::Ok => "ok  ",
            CheckStatus::Warn => "warn",
            CheckStatus::Fail => "FAIL",
        };
        t.push_str(&format!("{mark}  {:<16} {}\n", c.name, c.detail));
        if let Some(f) = &c.fix {
            t.push_str(&format!("      {:<16} → {f}\n", ""));
        }
    }
    t.trim_end().to_string()
}
