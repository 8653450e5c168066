//! `<skill_observations>` parsing (crates/historian/src/observations.rs).
//!
//! Arbitrary outputs: every line of the first block is either a valid observation or rejected
//! with a reason, nothing outside it counts, and no observation carries an invalid skill
//! name, an unknown kind or an empty lesson. Generated observations, escaped as a historian
//! writes them and surrounded by prose: they parse back exactly. XML escaping round-trips
//! through `unescape`.

use proptest::collection::vec;
use proptest::prelude::*;
use serde::{Deserialize, Serialize};
use skillmem::historian::observations::{first_block, parse, unescape};
use skillmem::memory::block::escape;
use skillmem::memory::Kind;
use skillmem::skillmd::name::check_lenient;

use super::{ensure, gen, Target};

pub const TARGET: Target = Target {
    name: "observations",
    ci_cases: 800,
    run: |cases, seed| super::run(cases, seed, input(), property),
    replay: |t| super::replay(t, property),
};

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Obs {
    pub skill: String,
    pub kind: u8,
    pub lesson: String,
    /// Bullet, spacing and quoting variant.
    pub style: u8,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Input {
    pub raw: String,
    pub before: String,
    pub obs: Vec<Obs>,
    pub after: String,
}

const TOKENS: &[&str] = &[
    "<skill_observations>",
    "</skill_observations>",
    "<skill_observations/>",
    "<skill_observations ",
    "<skill_observationsx>",
    "<skill_observations version=\"1\">",
    "* ",
    "- ",
    "• ",
    " | ",
    "|",
    "jq",
    "pdf",
    "plug:pdf",
    "gotcha",
    "fix",
    "workflow",
    "discovery",
    "tip",
    "&amp;",
    "&lt;",
    "&#124;",
    "&#x41;",
    "&#0;",
    "&#xD800;",
    "&#99999999;",
    "&",
    ";",
    "`",
    "\n",
    "\r\n",
    "  ",
];

fn prose() -> BoxedStrategy<String> {
    gen::text(TOKENS).prop_map(|s| s.replace("<skill_observations", "<skill_obs")).boxed()
}

pub fn input() -> impl Strategy<Value = Input> {
    let obs = (
        gen::skill_name(),
        0..4u8,
        gen::line(TOKENS).prop_filter("a lesson", |l| !xml_kept(l).trim().is_empty()),
        any::<u8>(),
    )
        .prop_map(|(skill, kind, lesson, style)| Obs { skill, kind, lesson, style });
    (gen::text(TOKENS), prose(), vec(obs, 0..6), prose()).prop_map(|(raw, before, obs, after)| Input {
        raw,
        before,
        obs,
        after,
    })
}

fn xml_kept(s: &str) -> String {
    s.chars().filter(|c| !xml_dropped(*c)).collect()
}

/// Characters `escape` drops (not allowed in XML 1.0).
fn xml_dropped(c: char) -> bool {
    ((c as u32) < 0x20 && !matches!(c, '\t' | '\n' | '\r')) || c == '\u{fffe}' || c == '\u{ffff}'
}

fn render(o: &Obs) -> String {
    let kind = Kind::ALL[o.kind as usize % Kind::ALL.len()].as_str();
    let bullet = ["*", "-", "•"][o.style as usize % 3];
    let skill = match (o.style / 3) % 4 {
        0 => o.skill.clone(),
        1 => format!("`{}`", o.skill),
        2 => format!("plugin:{}", o.skill),
        _ => format!("  {}  ", o.skill),
    };
    let kind = if (o.style / 12).is_multiple_of(2) { kind.to_string() } else { kind.to_ascii_uppercase() };
    format!("{bullet} {skill} | {kind} | {}", escape(&o.lesson))
}

fn check_parsed(output: &str) -> Result<(), String> {
    let p = parse(output);
    let block = first_block(output);
    ensure(p.block_found == block.is_some(), || "block_found disagrees with first_block".into())?;
    let Some(block) = block else {
        return ensure(p.observations.is_empty() && p.rejected.is_empty(), || "lines read outside any block".into());
    };
    let lines = block.lines().filter(|l| !l.trim().is_empty()).count();
    ensure(p.observations.len() + p.rejected.len() == lines, || {
        format!("{} lines, {} observations, {} rejected", lines, p.observations.len(), p.rejected.len())
    })?;
    for o in &p.observations {
        ensure(check_lenient(&o.skill).is_ok(), || format!("invalid skill name accepted: {:?}", o.skill))?;
        ensure(!o.lesson.is_empty() && o.lesson.trim() == o.lesson, || format!("lesson {:?}", o.lesson))?;
    }
    for r in &p.rejected {
        ensure(!r.reason.trim().is_empty(), || format!("rejected without a reason: {r:?}"))?;
        ensure(!r.line.trim().is_empty(), || format!("a blank line rejected: {r:?}"))?;
    }
    Ok(())
}

pub fn property(input: &Input) -> Result<(), String> {
    check_parsed(&input.raw)?;
    // unescape(escape(s)) is s without the characters XML cannot carry.
    let kept: String = input.raw.chars().filter(|c| !xml_dropped(*c)).collect();
    ensure(unescape(&escape(&input.raw)) == kept, || "unescape(escape(s)) != s".into())?;
    // Observations as a historian writes them come back exactly.
    let mut out = input.before.clone();
    out.push_str("\n<skill_observations>\n");
    for o in &input.obs {
        out.push_str(&render(o));
        out.push('\n');
    }
    out.push_str("</skill_observations>\n");
    out.push_str(&input.after);
    check_parsed(&out)?;
    let p = parse(&out);
    ensure(p.rejected.is_empty(), || format!("well-formed lines rejected: {:?}", p.rejected))?;
    ensure(p.observations.len() == input.obs.len(), || {
        format!("{} of {} observations", p.observations.len(), input.obs.len())
    })?;
    for (got, want) in p.observations.iter().zip(&input.obs) {
        let lesson: String = want.lesson.chars().filter(|c| !xml_dropped(*c)).collect();
        let kind = Kind::ALL[want.kind as usize % Kind::ALL.len()];
        ensure(got.skill == want.skill && got.kind == kind && got.lesson == lesson.trim(), || {
            format!("parsed {got:?}, want {want:?}")
        })?;
    }
    Ok(())
}
