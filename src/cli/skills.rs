//! `skillmem skills ...` and `skillmem seed`: the session-skill commands, calling the same
//! engine methods as the server's `skillmem/skills/*`.

use std::io::{IsTerminal, Write};
use std::path::{Path, PathBuf};

use anyhow::{Context, Result};
use clap::{Args, Subcommand};

use skillmem::skills::Progress;
use skillmem::skills::{Choice, SeedOp, SkillInfo};

use super::{emit, engine, Global};

#[derive(Debug, Subcommand)]
pub enum SkillsCommand {
    /// Install (or reinstall) the skills of a git repository, pinned to a commit.
    #[command(after_help = super::help::SKILLS_INSTALL)]
    Install {
        /// https, ssh, file:// URL or local path of the repository.
        #[arg(required_unless_present = "locked")]
        url: Option<String>,
        /// Branch, tag or commit (default: HEAD).
        #[arg(long = "ref", value_name = "R")]
        r#ref: Option<String>,
        /// Only the skills in this folder of the repository.
        #[arg(long, value_name = "SUBDIR")]
        path: Option<String>,
        /// Only these skills: names, or a subpath to pick one of two skills of one name (comma separated or repeated).
        #[arg(long = "skill", value_name = "NAME[,NAME]")]
        skill: Vec<String>,
        /// Install the one chosen skill under this name.
        #[arg(long = "as", value_name = "NEW-NAME")]
        r#as: Option<String>,
        /// Show what the repository offers (name, plugin, subpath, description); install nothing.
        #[arg(long)]
        list: bool,
        /// Install a skill the audit blocks on these rules anyway, and record that (comma separated or repeated).
        #[arg(long = "accept-risk", value_name = "RULE[,RULE]")]
        accept_risk: Vec<String>,
        /// Install exactly what the workspace's skillmem.lock says (no URL); exits 1 on any mismatch.
        #[arg(long, conflicts_with_all = ["url", "ref", "path", "skill", "as", "list", "accept_risk"])]
        locked: bool,
    },
    /// Write skillmem.lock in the workspace: every source, its ref and commit, and per skill its
    /// digests and audit verdict.
    Lock,
    /// Re-fetch an installed source and re-pin it.
    Update {
        /// The source as installed (its URL or path; `skillmem skills list` shows them).
        source: String,
        /// Re-pin to this ref instead of the one installed with.
        #[arg(long = "ref", value_name = "R")]
        r#ref: Option<String>,
        /// Apply without asking (otherwise: shown, then asked on a terminal; not applied elsewhere).
        #[arg(long, short = 'y')]
        yes: bool,
    },
    /// Remove an installed source and its skills.
    Remove {
        /// The source as installed (its URL or path; `skillmem skills list` shows them).
        source: String,
    },
    /// The installed sources and their skills, with the loads skillmem saw of each.
    List,
    /// List the installed skills unused for DAYS days; remove (with --yes) the sources whose
    /// skills are all unused.
    Prune {
        /// Days without a load (and since install).
        #[arg(long, value_name = "DAYS")]
        unused: u32,
        /// Remove them; without it only the candidates are listed.
        #[arg(long, short = 'y')]
        yes: bool,
    },
    /// Check the stored skills against their digests (and, with --cwd, the copies seeded
    /// there against the store). Exits 1 when anything drifted, naming each skill and file.
    Verify {
        /// Also check the copies seeded in this folder.
        #[arg(long, value_name = "DIR")]
        cwd: Option<PathBuf>,
        /// Seed target under DIR to look in (repeat; default every known one).
        #[arg(long, value_name = "T")]
        target: Vec<String>,
    },
    /// Audit skill folders: a static, offline reading of their files into findings and a
    /// verdict (block, warn, ok). Exits 1 when a folder is blocked.
    #[command(after_help = super::help::SKILLS_AUDIT)]
    Audit {
        /// Installed skill names or skill folders (a SKILL.md stands for its folder); none: every installed skill.
        #[arg(value_name = "NAME|PATH")]
        targets: Vec<String>,
        /// Also write the findings as SARIF 2.1.0 for code-scanning tools.
        #[arg(long, value_name = "FILE")]
        sarif: Option<PathBuf>,
    },
    /// global ∪ list ∪ task, without duplicates; names not installed are dropped.
    Resolve {
        /// Skills every session gets (repeat for several).
        #[arg(long, value_name = "NAME")]
        global: Vec<String>,
        /// Skills of the session's list (repeat for several).
        #[arg(long, value_name = "NAME")]
        list: Vec<String>,
        /// Skills the task asks for (repeat for several).
        #[arg(long, value_name = "NAME")]
        task: Vec<String>,
    },
}

/// `skillmem seed --cwd DIR NAME...`.
#[derive(Debug, Args)]
pub struct SeedArgs {
    /// The session's working folder.
    #[arg(long, value_name = "DIR")]
    pub cwd: PathBuf,
    /// The skills to seed (installed names).
    pub names: Vec<String>,
    /// Folder under cwd (default .claude/skills; .opencode/skills, .agents/skills (Codex), .gemini/skills, .github/skills (Copilot), .pi/skills work too).
    #[arg(long, value_name = "T")]
    pub target: Option<String>,
    /// Print the actions without writing anything.
    #[arg(long)]
    pub dry_run: bool,
}

/// A progress bar on stderr when it is a terminal; nothing otherwise.
struct Bar {
    on: bool,
}

impl Bar {
    fn new() -> Bar {
        Bar { on: std::io::stderr().is_terminal() }
    }

    fn show(&self, p: Progress) {
        if !self.on {
            return;
        }
        let pct = p.percent.unwrap_or(0).min(100) as usize;
        let filled = pct * 30 / 100;
        let mut e = std::io::stderr().lock();
        let msg: String = p.message.chars().take(60).collect();
        let _ = write!(e, "\r\x1b[2K[{}{}] {pct:>3}% {msg}", "#".repeat(filled), ".".repeat(30 - filled));
        let _ = e.flush();
    }

    fn done(&self) {
        if self.on {
            let _ = writeln!(std::io::stderr());
        }
    }
}

fn absolute(p: &Path) -> Result<PathBuf> {
    std::path::absolute(p).with_context(|| format!("cannot resolve {}", p.display()))
}

/// A URL argument: a relative local path that exists is made absolute.
fn url_arg(url: &str) -> Result<String> {
    if !url.contains("://") && !url.starts_with('-') && Path::new(url).exists() {
        return Ok(absolute(Path::new(url))?.display().to_string());
    }
    Ok(url.to_string())
}

fn human_skills(skills: &[SkillInfo], removed: &[String]) -> String {
    let mut t = String::new();
    for s in skills {
        let desc: String = s.description.chars().take(70).collect();
        t.push_str(&format!("  {:<28} {}  {}\n", s.name, &s.pinned_ref[..s.pinned_ref.len().min(12)], desc));
        if let Some(p) = &s.plugin {
            t.push_str(&format!("      plugin {p} · {}\n", s.subpath));
        }
        for w in &s.warnings {
            t.push_str(&format!("      warning: {w}\n"));
        }
    }
    for r in removed {
        t.push_str(&format!("  removed {r}\n"));
    }
    t.trim_end().to_string()
}

/// The loads of each installed skill: how many, which hosts, and when last.
fn human_usage(r: &skillmem::engine::Sources) -> String {
    let names: Vec<&str> = r.sources.iter().flat_map(|s| s.skills.iter().map(|k| k.name.as_str())).collect();
    let mut t = String::from("\nloads:");
    for n in names {
        match r.usage.iter().find(|u| u.skill == n) {
            Some(u) => t.push_str(&format!(
                "\n  {:<28} {:>5}  last {}  ({})",
                n,
                u.loads,
                super::day_of(u.last_used),
                u.hosts.join(", ")
            )),
            None => t.push_str(&format!("\n  {n:<28}     0  never seen loaded")),
        }
    }
    t
}

/// What a repository offers, one skill a line: name, plugin, subpath, description.
fn human_offered(offered: &[skillmem::skills::Offered]) -> String {
    if offered.is_empty() {
        return "no skills offered".into();
    }
    let mut t = format!("{} skill(s) offered (nothing installed):\n", offered.len());
    for o in offered {
        let desc: String = o.description.chars().take(60).collect();
        let plugin = o.plugin.as_deref().unwrap_or("-");
        t.push_str(&format!("  {:<28} {:<20} {:<40} {desc}\n", o.name, plugin, o.subpath));
        if let Some(p) = &o.problem {
            t.push_str(&format!("      problem: {p}\n"));
        }
    }
    t.trim_end().to_string()
}

/// The human form of an update's plan: the commits, then each skill's change.
fn human_plan(p: &skillmem::skills::UpdatePlan) -> String {
    let short = |c: &str| c[..c.len().min(12)].to_string();
    let mut t = format!("{}: {} -> {}\n", p.source, short(&p.from), short(&p.to));
    if p.from == p.to {
        t.push_str("  no new commit\n");
    }
    for l in &p.log {
        t.push_str(&format!("  {l}\n"));
    }
    if let Some(n) = &p.log_note {
        t.push_str(&format!("  ({n})\n"));
    }
    for s in &p.skills {
        let verdict = s.verdict.map(|v| format!(" [audit: {}]", v.as_str())).unwrap_or_default();
        t.push_str(&format!("{:<9} {}{verdict}\n", s.status, s.name));
        for (what, list) in [("+", &s.files.added), ("~", &s.files.changed), ("-", &s.files.removed)] {
            for f in list.iter().take(20) {
                t.push_str(&format!("    {what} {f}\n"));
            }
        }
        for f in &s.new_findings {
            let at = if f.line > 0 { format!("{}:{}", f.file, f.line) } else { f.file.clone() };
            t.push_str(&format!("    new finding: {} {} at {at}: {}\n", f.severity.as_str(), f.rule, f.why));
        }
        if let Some(p) = &s.problem {
            t.push_str(&format!("    would not install: {p}\n"));
        }
    }
    t.trim_end().to_string()
}

/// A target of `skills audit`: a path that exists is made absolute, anything else is a name.
fn audit_target(t: &str) -> Result<String> {
    if Path::new(t).exists() {
        return Ok(absolute(Path::new(t))?.display().to_string());
    }
    Ok(t.to_string())
}

/// The human form of audit reports: one line per folder, its findings under it.
pub(crate) fn human_audit(reports: &[skillmem::audit::Report]) -> String {
    let mut t = String::new();
    for r in reports {
        t.push_str(&format!("{:<5} {}  ({})\n", r.verdict.as_str(), r.skill, r.path));
        for f in &r.findings {
            let at = if f.line > 0 { format!("{}:{}", f.file, f.line) } else { f.file.clone() };
            t.push_str(&format!("  {:<8} {:<26} {at}\n", f.severity.as_str(), f.rule));
            t.push_str(&format!("           {}\n", f.why));
            if !f.excerpt.is_empty() {
                t.push_str(&format!("           | {}\n", f.excerpt));
            }
            if let Some(reason) = &f.allowed {
                t.push_str(&format!("           allowed: {reason}\n"));
            }
        }
    }
    let blocked = reports.iter().filter(|r| r.verdict == skillmem::audit::Verdict::Block).count();
    let warned = reports.iter().filter(|r| r.verdict == skillmem::audit::Verdict::Warn).count();
    t.push_str(&format!("{} folder(s): {blocked} blocked, {warned} warned", reports.len()));
    t
}

/// Runs `skillmem skills ...`; returns the exit code.
pub fn run(g: &Global, what: SkillsCommand) -> Result<u8> {
    let e = engine(g)?;
    match what {
        SkillsCommand::Lock => {
            let r = e.skills_lock(None)?;
            emit(g, &r, |r| {
                let n: usize = r.lock.sources.iter().map(|s| s.skills.len()).sum();
                format!("wrote {}: {} source(s), {n} skill(s)", r.path, r.lock.sources.len())
            })?;
        }
        SkillsCommand::Install { locked: true, .. } => {
            let bar = Bar::new();
            let r = e.skills_install_locked(None, &|p| bar.show(p));
            bar.done();
            let r = r?;
            emit(g, &r, |r| {
                let mut t = format!("installed {} skill(s) from {}", r.skills.len(), r.path);
                for m in &r.mismatches {
                    t.push_str(&format!("\nmismatch: {m}"));
                }
                t
            })?;
            if !r.mismatches.is_empty() {
                return Ok(1);
            }
        }
        SkillsCommand::Install { url, r#ref, path, skill, r#as, list, accept_risk, .. } => {
            let url = url.unwrap_or_default();
            let bar = Bar::new();
            let choice = Choice { path, skills: skill, rename: r#as };
            let r = e.skills_install(&url_arg(&url)?, r#ref.as_deref(), &choice, list, &accept_risk, &|p| bar.show(p));
            bar.done();
            let r = r?;
            emit(g, &r, |r| {
                if let Some(offered) = &r.offered {
                    return human_offered(offered);
                }
                let source = r.skills.first().map(|s| s.source.as_str()).unwrap_or("");
                let mut t = format!(
                    "installed {} skill(s) from {source}\n{}",
                    r.skills.len(),
                    human_skills(&r.skills, &r.removed)
                );
                if !r.refused.is_empty() {
                    t.push_str(&format!("\nnot installed: {}", r.refused.len()));
                    for x in &r.refused {
                        t.push_str(&format!("\n  {:<28} {}\n      {}", x.name, x.subpath, x.reason));
                        for f in x.findings.iter().take(10) {
                            let at = if f.line > 0 { format!("{}:{}", f.file, f.line) } else { f.file.clone() };
                            t.push_str(&format!(
                                "\n      {:<8} {:<26} {at}  | {}",
                                f.severity.as_str(),
                                f.rule,
                                f.excerpt
                            ));
                        }
                    }
                }
                t
            })?;
        }
        SkillsCommand::Update { source, r#ref, yes } => {
            let source = url_arg(&source)?;
            let bar = Bar::new();
            let preview = e.skills_update_preview(&source, r#ref.as_deref(), &|p| bar.show(p));
            bar.done();
            let preview = preview?;
            let plan = preview.plan.as_ref().expect("a preview has a plan");
            let interactive = std::io::stdin().is_terminal() && std::io::stderr().is_terminal() && !g.json;
            if !yes {
                emit(g, &preview, |_| human_plan(plan))?;
                if !interactive {
                    if !g.json {
                        super::out("(not applied: run again with --yes to re-pin)");
                    }
                    return Ok(0);
                }
                eprint!("apply this update? [y/N] ");
                let mut answer = String::new();
                std::io::stdin().read_line(&mut answer)?;
                if !matches!(answer.trim(), "y" | "Y" | "yes") {
                    super::out("not applied");
                    return Ok(0);
                }
            } else if !g.json {
                super::out(&human_plan(plan));
            }
            let bar = Bar::new();
            let r = e.skills_update(&source, r#ref.as_deref(), &|p| bar.show(p));
            bar.done();
            let mut r = r?;
            r.plan = preview.plan.clone();
            emit(g, &r, |r| format!("updated: {} skill(s)\n{}", r.skills.len(), human_skills(&r.skills, &r.removed)))?;
        }
        SkillsCommand::Remove { source } => {
            let r = e.skills_remove(&url_arg(&source)?)?;
            emit(g, &r, |r| {
                format!("removed {}", if r.removed.is_empty() { "-".into() } else { r.removed.join(", ") })
            })?;
        }
        SkillsCommand::List => {
            let r = e.skills_list()?;
            emit(g, &r, |r| {
                if r.sources.is_empty() {
                    return "no skills installed (skillmem skills install URL)".into();
                }
                r.sources
                    .iter()
                    .map(|s| {
                        let mut at = s.requested_ref.as_deref().map(|r| format!(" ({r})")).unwrap_or_default();
                        if !s.choices.is_empty() {
                            let picked: Vec<String> = s
                                .choices
                                .iter()
                                .map(|c| {
                                    if c.is_all() {
                                        "(every skill)".into()
                                    } else {
                                        serde_json::to_string(c).unwrap_or_default()
                                    }
                                })
                                .collect();
                            at.push_str(&format!(" chosen: {}", picked.join(" ")));
                        }
                        format!("{} @ {}{at}\n{}", s.source, s.pinned_ref, human_skills(&s.skills, &[]))
                    })
                    .collect::<Vec<_>>()
                    .join("\n")
                    + &human_usage(r)
            })?;
        }
        SkillsCommand::Prune { unused, yes } => {
            let r = e.skills_prune(unused, yes)?;
            emit(g, &r, |r| {
                if r.candidates.is_empty() {
                    return format!("no installed skill has gone unused for {unused} days");
                }
                let mut t = format!("unused for {unused} days: {}", r.candidates.join(", "));
                for k in &r.kept {
                    t.push_str(&format!("\nkept (a source is removed whole): {k}"));
                }
                if yes {
                    t.push_str(&format!(
                        "\nremoved: {}",
                        if r.removed.is_empty() { "-".into() } else { r.removed.join(", ") }
                    ));
                } else {
                    t.push_str(
                        "\n(nothing removed: run again with --yes to remove the sources whose skills are all unused)",
                    );
                }
                t
            })?;
        }
        SkillsCommand::Verify { cwd, target } => {
            let cwd = cwd.map(|c| absolute(&c)).transpose()?;
            let r = e.skills_verify(cwd.as_deref(), &target)?;
            emit(g, &r, |r| {
                if r.drift.is_empty() {
                    return format!("ok: {} installed skill(s) match their digests", r.checked);
                }
                let mut t = String::new();
                for d in &r.drift {
                    t.push_str(&format!("drift {:<6} {}  ({})\n  {}\n", d.place, d.skill, d.path, d.message));
                }
                t.push_str(&format!("{} drifted of {} checked", r.drift.len(), r.checked));
                t
            })?;
            if !r.drift.is_empty() {
                return Ok(1);
            }
        }
        SkillsCommand::Audit { targets, sarif } => {
            let targets = targets.iter().map(|t| audit_target(t)).collect::<Result<Vec<_>>>()?;
            let r = e.skills_audit(&targets)?;
            if let Some(file) = sarif {
                let log = skillmem::audit::sarif::sarif(&r.reports);
                std::fs::write(&file, serde_json::to_string_pretty(&log)? + "\n")
                    .with_context(|| format!("cannot write {}", file.display()))?;
            }
            if g.json {
                emit(g, &r.reports, |_| String::new())?;
            } else {
                emit(g, &r, |r| human_audit(&r.reports))?;
            }
            if r.reports.iter().any(|r| r.verdict == skillmem::audit::Verdict::Block) {
                return Ok(1);
            }
        }
        SkillsCommand::Resolve { global, list, task } => {
            let r = e.skills_resolve(&global, &list, &task)?;
            emit(g, &r, |r| {
                let mut t = r.skills.join("\n");
                if !r.dropped.is_empty() {
                    t.push_str(&format!("\n(dropped, not installed: {})", r.dropped.join(", ")));
                }
                t
            })?;
        }
    }
    Ok(0)
}

/// Runs `skillmem seed`.
pub fn seed(g: &Global, a: SeedArgs) -> Result<()> {
    let e = engine(g)?;
    let r = e.skills_seed(&absolute(&a.cwd)?, &a.names, a.target.as_deref(), a.dry_run)?;
    emit(g, &r, |r| {
        let mut t: Vec<String> = r
            .actions
            .iter()
            .map(|x| {
                let op =
                    serde_json::to_value(x.op).ok().and_then(|v| v.as_str().map(str::to_string)).unwrap_or_default();
                match &x.reason {
                    Some(why) if x.op == SeedOp::Skip => format!("{op:<6} {:<24} {}  ({why})", x.skill, x.path),
                    _ => format!("{op:<6} {:<24} {}", x.skill, x.path),
                }
            })
            .collect();
        t.extend(r.warnings.iter().map(|w| format!("warning: {w}")));
        if a.dry_run {
            t.push("(dry run: nothing written)".into());
        }
        t.join("\n")
    })?;
    Ok(())
}
