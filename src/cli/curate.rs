//! `skillmem notes`, `export`, `import`, `doctor`: the whole memory from the command line,
//! through the same engine operations as `skillmem/notes` and the dashboard.

use std::io::Read;
use std::path::{Path, PathBuf};

use anyhow::{Context, Result};

use skillmem::doctor::{self, CheckStatus, Doctor};
use skillmem::engine::{Engine, Imported, ListedNote, NoteFilter, NotePage, NoteSort};
use skillmem::export::{parse_export, to_jsonl, to_markdown, ExportFormat};
use skillmem::memory::{Kind, Scope, Source};
use skillmem::protocol::curate::Notes;

use super::{call, day_of, emit, out, Global};

/// `skillmem notes` options.
#[derive(Debug, clap::Args)]
pub struct NotesArgs {
    /// One skill's notes (default: every skill's).
    pub skill: Option<String>,
    /// Only notes of this kind.
    #[arg(long, value_parser = super::values::typed::<super::values::Kind, Kind>(), ignore_case = true)]
    pub kind: Option<Kind>,
    /// Only notes of this scope.
    #[arg(long, value_parser = super::values::typed::<super::values::Scope, Scope>())]
    pub scope: Option<Scope>,
    /// Only notes of this source.
    #[arg(long, value_parser = super::values::typed::<super::values::Source, Source>())]
    pub source: Option<Source>,
    /// Only pinned notes.
    #[arg(long)]
    pub pinned: bool,
    /// Full-text search (every word must match).
    #[arg(long, value_name = "WORDS")]
    pub search: Option<String>,
    /// The order of the list.
    #[arg(long, default_value = "recent", value_parser = super::values::wire::<super::values::Sort>())]
    pub sort: String,
    /// Every project's notes, not only those visible from this one.
    #[arg(long)]
    pub all_projects: bool,
    /// Also the notes replaced or retired (history), with what replaced them and why.
    #[arg(long)]
    pub all_versions: bool,
    /// At most this many notes (default: all).
    #[arg(long, value_name = "N")]
    pub limit: Option<usize>,
    /// Skip this many notes first (with --limit: pages).
    #[arg(long, value_name = "N")]
    pub offset: Option<usize>,
    /// Only the notes written in this host session (its id, as `--json` shows it).
    #[arg(long, value_name = "ID")]
    pub session: Option<String>,
    /// Only trusted or only unverified notes.
    #[arg(long, value_parser = ["trusted", "unverified"])]
    pub trust: Option<String>,
}

/// The filter the options say.
pub fn filter_of(a: &NotesArgs) -> Result<NoteFilter> {
    let sort = match a.sort.as_str() {
        "recent" => NoteSort::Recent,
        "hits" => NoteSort::Hits,
        "recalls" => NoteSort::Recalls,
        "used" => NoteSort::Used,
        s => anyhow::bail!("sort {s:?}: use recent, used, hits or recalls"),
    };
    Ok(NoteFilter {
        skill: a.skill.clone(),
        project_id: None,
        all_projects: a.all_projects,
        kind: a.kind,
        scope: a.scope,
        source: a.source,
        pinned: a.pinned.then_some(true),
        search: a.search.clone(),
        sort,
        offset: a.offset,
        limit: a.limit,
        include_superseded: a.all_versions,
        pending: false,
        session_id: a.session.clone(),
        trust: a.trust.as_deref().and_then(skillmem::memory::evidence::Trust::parse),
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
            "{:>6}  {:<16} {:<9} {:<7} {}{} {}  used {}/{}{} hits {} recalls {}  {}\n        {}\n",
            n.id,
            n.skill,
            n.kind,
            n.scope.as_str(),
            if n.pinned { "pinned " } else { "" },
            n.source,
            n.evidence.trust.as_str(),
            n.evidence.used,
            n.evidence.shown,
            if n.evidence.withheld > 0 {
                format!(
                    " withheld {} (appeared {}) lift {:+.2}",
                    n.evidence.withheld, n.evidence.appeared, n.evidence.lift
                )
            } else {
                String::new()
            },
            n.hits,
            n.recalls,
            day_of(n.created_at),
            n.delta.replace('\n', "\n        ")
        ));
        let from = provenance_line(n);
        if !from.is_empty() {
            t.push_str(&format!("        from {from}\n"));
        }
        if n.pending && n.retired_at.is_none() {
            t.push_str(&format!("        waiting for review (skillmem review accept {})\n", n.id));
        }
        if let Some(at) = n.retired_at {
            let why = n.reason.as_deref().map(|r| format!(": {r}")).unwrap_or_default();
            match n.superseded_by {
                Some(by) => t.push_str(&format!("        replaced by note {by} on {}{why}\n", day_of(at))),
                None => t.push_str(&format!("        retired on {}{why} (skillmem restore {})\n", day_of(at), n.id)),
            }
        }
    }
    t.push_str(&format!("{} of {} notes", p.notes.len(), p.total));
    t
}

/// Where a note came from, in one line: `historian via claude-code, session S, transcript T
/// (bytes A-B)`; empty when nothing but the source is known.
pub fn provenance_line(n: &ListedNote) -> String {
    let mut parts = vec![];
    if let Some(h) = &n.origin.host {
        parts.push(format!("host {h}"));
    }
    if let Some(s) = &n.session_id {
        parts.push(format!("session {s}"));
    }
    if let Some(t) = &n.origin.transcript {
        match &n.origin.transcript_at {
            Some(at) => parts.push(format!("transcript {t} ({at})")),
            None => parts.push(format!("transcript {t}")),
        }
    }
    if let Some(o) = n.origin_source {
        parts.push(format!("first written by the {}", o.as_str()));
    }
    parts.join(", ")
}

/// `skillmem versions ID`.
pub fn versions(g: &Global, engine: &Engine, id: i64) -> Result<()> {
    use skillmem::protocol::memory::{IdParams, VersionsOf};
    let got = call::<VersionsOf>(engine, IdParams { id })?;
    emit(g, &got.versions, |vs| {
        let mut t = String::new();
        for n in vs {
            let state = match (n.retired_at, n.superseded_by) {
                (None, _) => "current".to_string(),
                (Some(_), Some(by)) => format!("replaced by {by}"),
                (Some(_), None) => "retired".to_string(),
            };
            t.push_str(&format!("{:>6}  {}  {:<16} {}\n", n.id, day_of(n.created_at), state, n.delta));
        }
        t.trim_end().to_string()
    })
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
    let scope = scope.as_deref().map(str::parse::<Scope>).transpose()?;
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
    let r = engine.import_notes(parse_export(&text)?)?;
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
    let mut d = doctor::doctor(engine);
    if fix && d.checks.iter().any(|c| c.name == "full-text index" && c.status == CheckStatus::Fail) {
        engine.rebuild_fts()?;
        eprintln!("skillmem: rebuilt the full-text index");
        d = doctor::doctor(engine);
    }
    if fix && d.checks.iter().any(|c| c.name == "secrets" && c.status == CheckStatus::Fail) {
        let (done, left) = engine.redact_notes()?;
        eprintln!("skillmem: redacted the secrets of {} note(s)", done.len());
        if !left.is_empty() {
            let ids: Vec<String> = left.iter().map(|i| format!("#{i}")).collect();
            eprintln!("skillmem: {} are little but a secret: edit or forget them", ids.join(", "));
        }
        d = doctor::doctor(engine);
    }
    d.checks.extend(host_wiring());
    emit(g, &d, human_doctor)?;
    Ok(if d.failed() { 1 } else { 0 })
}

/// Each agent host's wiring (`skillmem setup`'s entries present, binaries there, Codex's hook
/// trust current); a host that cannot be looked at is no check.
fn host_wiring() -> Vec<doctor::Check> {
    match super::setup::here(None, None, None) {
        Ok(w) => skillmem::hosts::setup::wiring_checks(&w),
        Err(e) => {
            eprintln!("skillmem: the hosts' wiring was not checked: {e}");
            vec![]
        }
    }
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

/// `skillmem ui`: binds 127.0.0.1, prints the URL with its token, opens it unless told not
/// to, and serves until the process ends.
pub fn ui(g: &Global, port: u16, no_open: bool) -> Result<()> {
    let engine = std::sync::Arc::new(super::engine_as(g, "ui")?);
    let rt = tokio::runtime::Builder::new_multi_thread().enable_all().build()?;
    rt.block_on(async {
        let bound = skillmem::ui::bind(engine, port).await.context("cannot listen on 127.0.0.1")?;
        let url = bound.url();
        if g.json {
            out(&serde_json::json!({ "url": url, "port": bound.port() }).to_string());
        } else {
            out(&format!("skillmem ui: {url}"));
            out("(only this machine can reach it; the token in the URL is the key: do not share it)");
        }
        if !no_open {
            open_browser(&url);
        }
        bound.serve().await.context("the dashboard stopped")
    })
}

fn open_browser(url: &str) {
    let opener = if cfg!(target_os = "macos") { "open" } else { "xdg-open" };
    let spawned = std::process::Command::new(opener)
        .arg(url)
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn();
    if spawned.is_err() {
        eprintln!("skillmem: could not start {opener}; open the URL above in a browser");
    }
}
