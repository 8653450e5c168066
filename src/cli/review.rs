//! `skillmem review`: the review queue (`historian.review`) from the command line, through
//! the same protocol methods as the dashboard (`skillmem/review`, `skillmem/reviewDecide`).

use anyhow::Result;
use clap::Subcommand;

use skillmem::engine::{Decided, Decision, Engine, NotePage};
use skillmem::protocol::curate::{Review, ReviewDecide, ReviewDecideParams, ReviewParams};

use super::{call, day_of, emit, Global};

#[derive(Debug, Subcommand)]
pub enum ReviewCommand {
    /// List the notes waiting for review (the default), with where each came from.
    List {
        /// One skill's queue (default: every skill's).
        skill: Option<String>,
        /// Every project's queue, not only the one visible from this project.
        #[arg(long)]
        all_projects: bool,
        /// Also the notes rejected in review (restorable into the queue with `skillmem restore ID`).
        #[arg(long)]
        rejected: bool,
    },
    /// Accept a note: it enters recall (with --delta, as you wrote it; the historian's text stays as an older version).
    Accept {
        /// The note's id (`skillmem review` lists them).
        id: i64,
        /// The lesson as it should read (edit, then accept).
        #[arg(long, value_name = "TEXT")]
        delta: Option<String>,
    },
    /// Reject a note: out of the queue, kept as a retired note with the reason (`skillmem restore ID` undoes it).
    Reject {
        /// The note's id (`skillmem review` lists them).
        id: i64,
        /// Why it is not a lesson (kept with it).
        #[arg(long, value_name = "TEXT")]
        reason: Option<String>,
    },
}

/// `skillmem review [list|accept|reject]`.
pub fn run(g: &Global, engine: &Engine, what: Option<ReviewCommand>) -> Result<()> {
    match what.unwrap_or(ReviewCommand::List { skill: None, all_projects: false, rejected: false }) {
        ReviewCommand::List { skill, all_projects, rejected } => {
            let p = ReviewParams {
                skill,
                all_projects,
                include_rejected: rejected,
                limit: Some(1_000),
                ..Default::default()
            };
            let page = call::<Review>(engine, p)?;
            let support = engine.config().memory.mined_support;
            emit(g, &page, |p| human_queue(p, engine.config().historian.review, support))
        }
        ReviewCommand::Accept { id, delta } => {
            let p = ReviewDecideParams { id, decision: Decision::Accept, delta, reason: None };
            emit(g, &call::<ReviewDecide>(engine, p)?, human_decided)
        }
        ReviewCommand::Reject { id, reason } => {
            let p = ReviewDecideParams { id, decision: Decision::Reject, delta: None, reason };
            emit(g, &call::<ReviewDecide>(engine, p)?, human_decided)
        }
    }
}

fn human_queue(p: &NotePage, on: bool, support: u32) -> String {
    let mut t = String::new();
    if p.notes.is_empty() {
        t.push_str("nothing waits for review");
        if !on {
            t.push_str(" (historian.review is off: promoted observations go straight into recall)");
        }
        return t;
    }
    for n in &p.notes {
        let state = match (n.retired_at, &n.reason) {
            (Some(at), r) => format!(
                "  rejected on {}{} (skillmem restore {} puts it back)",
                day_of(at),
                r.as_deref().map(|r| format!(": {r}")).unwrap_or_default(),
                n.id
            ),
            (None, _) => String::new(),
        };
        t.push_str(&format!(
            "{:>6}  {:<16} {:<9} {:<7} {}{}\n        {}\n",
            n.id,
            n.skill,
            n.kind,
            n.scope.as_str(),
            day_of(n.created_at),
            state,
            n.delta.replace('\n', "\n        ")
        ));
        if let Some(r) = n.review_replaces {
            t.push_str(&format!("        corrects note {r} (replaces it once accepted)\n"));
        }
        if let Some(seen) = n.backing.as_ref().filter(|b| b.key.is_some()).and_then(|b| b.sessions) {
            t.push_str(&format!(
                "        held: a mined lesson, mined in {seen} of the {support} sessions it needs (memory.minedSupport); shown once another session mines it, or accept it\n"
            ));
        }
        let from = super::curate::provenance_line(n);
        if !from.is_empty() {
            t.push_str(&format!("        from {from}\n"));
        }
    }
    t.push_str(&format!(
        "{} of {} waiting · skillmem review accept ID [--delta TEXT] · skillmem review reject ID [--reason TEXT]",
        p.notes.len(),
        p.total
    ));
    t
}

fn human_decided(d: &Decided) -> String {
    let mut t = match d.decision {
        Decision::Accept => format!("accepted note {}{}", d.id, if d.edited { " (edited)" } else { "" }),
        Decision::Reject => format!("rejected note {} (skillmem restore {} puts it back in the queue)", d.id, d.id),
    };
    if let Some(r) = d.replaced {
        t.push_str(&format!("; it replaced note {r}, kept as history"));
    }
    for w in &d.warnings {
        t.push_str(&format!("\nwarning: {w}"));
    }
    t
}
