//! The historian's promotion filter (crates/historian/src/filter/).
//!
//! Arbitrary lessons, SKILL.md texts, notes and chunk skills: nothing panics; every refusal
//! has a reason; what passes holds no secret, is not empty and is no longer than a lesson,
//! and is about a skill the chunk used (when a chunk is known). Lessons copied from a note or
//! from the SKILL.md are generated too, to reach the near-duplicate paths.

use proptest::collection::vec;
use proptest::prelude::*;
use serde::{Deserialize, Serialize};
use skillmem::historian::filter::{check, Context, MAX_LESSON_CHARS};
use skillmem_text::redact::find_secret;

use super::{ensure, gen, Target};

pub const TARGET: Target = Target {
    name: "filter",
    ci_cases: 600,
    run: |cases, seed| super::run(cases, seed, input(), property),
    replay: |t| super::replay(t, property),
};

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Input {
    pub skill: String,
    pub lesson: String,
    pub skill_md: Option<String>,
    pub notes: Vec<String>,
    pub used: Option<Vec<String>>,
    /// 0: the lesson as generated; 1: a note's text; 2: a line of the SKILL.md.
    pub copy: u8,
}

const TOKENS: &[&str] = &[
    "`",
    "-r",
    "--arg",
    " jq ",
    " the ",
    "Ran ",
    "Successfully ",
    "all tests passed",
    "/home/dana/",
    "~/",
    "~/.aws/",
    "/work/app/x/y",
    "48,213 rows",
    "2026-11-28",
    "#123",
    "INV-2093",
    "3f9a2c1",
    "github.com/a/b",
    "the user wants",
    "probably ",
    "might be caused",
    "seems to ",
    "?",
    "our ",
    "this ticket",
    "all 42 clips",
    "at 03:10 UTC",
    "Planned and applied ",
    "I squashed ",
    "TODO: ",
    "COPY ... FROM ",
    " is a ",
    " faster",
    "ghp_0123456789abcdefghijABCDEFGHIJ0123456789",
    "password=hunter2hunter2",
    ". ",
    "; ",
    ": ",
    ", so ",
    "\n",
    "---\n",
    "because",
    "instead",
    " use ",
    "null",
    "@csv",
    "Drained ",
    ", upgraded ",
    "Hit ",
    "namespace shop-prod",
    "node-7",
    "orders_2024_q3 ",
    "Dana's laptop",
    "a 404 leaves",
    "20 jobs a page",
    "/api/v1/x/y",
    "could fail because ",
    "Apparently-idle",
    "watch out",
    " gives ",
    "cio9Fk2LmQ8vR3nZ7pW4cY6xT1bH5jK0sD",
    "@bob",
    "é",
    "İ",
    "…",
    "s3://b/k",
    "C:\\Users\\x",
];

pub fn input() -> impl Strategy<Value = Input> {
    (
        gen::skill_name(),
        gen::text(TOKENS),
        proptest::option::of(gen::text(TOKENS)),
        vec(gen::line(TOKENS), 0..4),
        proptest::option::of(vec(gen::skill_name(), 0..3)),
        0..3u8,
    )
        .prop_map(|(skill, lesson, skill_md, notes, used, copy)| Input {
            skill,
            lesson,
            skill_md,
            notes,
            used,
            copy,
        })
}

fn property(i: &Input) -> Result<(), String> {
    let lesson = match i.copy {
        1 if !i.notes.is_empty() => i.notes[0].clone(),
        2 => i.skill_md.as_deref().and_then(|m| m.lines().last()).unwrap_or(&i.lesson).to_string(),
        _ => i.lesson.clone(),
    };
    let notes: Vec<(i64, String)> = i.notes.iter().enumerate().map(|(k, n)| (k as i64 + 1, n.clone())).collect();
    // The built-in table, as the engine's historian uses it.
    let table = skillmem::embed::static_table::StaticEmbedder::builtin().map_err(|e| e.to_string())?;
    let cosine = skillmem::historian::filter::cosine_by(table);
    let similarity = Some(skillmem::historian::filter::Similarity(&cosine));
    // The SKILL.md text stands in for the session's chunks too: grounding over any text.
    let chunks = i.skill_md.as_deref().map(skillmem::historian::filter::grounded::searchable);
    let _ = i.skill_md.as_deref().map(|t| skillmem::historian::filter::grounded::evidence(&lesson, t));
    let ctx = Context {
        skill_md: i.skill_md.as_deref(),
        notes: &notes,
        chunk_skills: i.used.as_deref(),
        similarity,
        chunk_text: chunks.as_deref(),
    };
    match check(&i.skill, &lesson, &ctx) {
        Err(r) => ensure(!r.reason(&i.skill).is_empty() && !r.category().is_empty(), || format!("{r:?} has no reason")),
        Ok(()) => {
            ensure(find_secret(&lesson).is_none(), || format!("{lesson:?} passed with a secret"))?;
            ensure(!lesson.trim().is_empty(), || "an empty lesson passed".into())?;
            ensure(lesson.trim().chars().count() <= MAX_LESSON_CHARS, || {
                format!("{} characters passed", lesson.len())
            })?;
            if let Some(chunks) = &chunks {
                let g = skillmem::historian::filter::grounded::ground(&lesson, chunks);
                ensure(!matches!(g, skillmem::historian::filter::grounded::Grounding::Ungrounded(_)), || {
                    format!("{lesson:?} passed, ungrounded in {chunks:?}")
                })?;
            }
            if let Some(used) = &i.used {
                ensure(used.contains(&i.skill), || format!("{:?} passed, not in the chunk's {used:?}", i.skill))?;
            }
            Ok(())
        }
    }
}
