//! SKILL.md frontmatter (crates/skillmd/src/frontmatter.rs).
//!
//! Arbitrary texts and YAML soups: `parse` returns settings within their ranges or an error
//! that names the key or the frontmatter; a text that does not start with `---` has none.
//! Generated SKILL.md files in every documented spelling (BOM, CRLF, comments, block and flow
//! mappings, `metadata`): `parse` reads back the name, description and enablement written.
//! The editor's view of the same texts: `diagnose` and the quick fixes never panic, every range
//! lies in the text, and a frontmatter `parse` refuses draws at least one error diagnostic.

use proptest::collection::vec;
use proptest::prelude::*;
use proptest::sample::select;
use serde::{Deserialize, Serialize};
use skillmem::skillmd::actions;
use skillmem::skillmd::diagnostics::{diagnose, Position, Severity};
use skillmem::skillmd::frontmatter::{parse, split};

use super::{ensure, gen, Target};

pub const TARGET: Target = Target {
    name: "frontmatter",
    ci_cases: 1200,
    run: |cases, seed| super::run(cases, seed, input(), property),
    replay: |t| super::replay(t, property),
};

#[derive(Debug, Clone, Serialize, Deserialize)]
pub enum Input {
    /// Any text.
    Text(String),
    /// A SKILL.md written from known values.
    Known(Known),
}

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Known {
    pub name: String,
    pub description: String,
    pub enabled: bool,
    /// How enablement is spelled.
    pub form: u8,
    pub crlf: bool,
    pub bom: bool,
    /// Comment and blank lines inserted before line `i` (index, text).
    pub noise: Vec<(usize, String)>,
    pub name_first: bool,
    pub body: String,
    /// A description with an unquoted ": " (not YAML): read line by line, as hosts read it.
    #[serde(default)]
    pub lenient: Option<String>,
}

const TOKENS: &[&str] = &[
    "---\n",
    "---\r\n",
    "\u{feff}",
    "name: ",
    "description: ",
    "skill-memory:",
    "skill-memory: ",
    "  enabled: ",
    "enabled",
    "disabled",
    "true",
    "false",
    "yes",
    "null",
    "~",
    "{ enabled: true }",
    "metadata:",
    "\n  skill-memory: ",
    "  max_tokens: ",
    "  max_pinned_tokens: ",
    "  dedup_threshold: ",
    "  ranking_relevance: ",
    "  ranking_recency: ",
    "  ranking_use: ",
    "  ranking_hit: ",
    "0",
    "1",
    "-3",
    "0.5",
    "1e300",
    "-1e300",
    ".inf",
    "-.inf",
    ".nan",
    "18446744073709551616",
    "0x1f",
    "\n",
    "\r\n",
    "\t",
    "  ",
    "# c",
    " # c",
    "[",
    "]",
    "{",
    "}",
    "- ",
    "&a ",
    "*a",
    "!!binary ",
    "!!str ",
    "? ",
    ": ",
    "'",
    "\"",
    "|\n",
    ">\n",
    "<<: ",
    "%YAML 1.2\n",
    "...\n",
];

/// YAML keywords and number-like words: a plain scalar spelled so is not a string.
const NOT_STRINGS: &[&str] = &["null", "true", "false", "yes", "no", "on", "off", "y", "n", "nan", "inf", "e"];

fn known() -> impl Strategy<Value = Known> {
    (
        "[a-z][a-z0-9]{0,7}(-[a-z0-9]{1,5}){0,2}".prop_filter("a YAML keyword", |s| !NOT_STRINGS.contains(&s.as_str())),
        "[A-Za-z][A-Za-z0-9 ,.()'-]{0,50}"
            .prop_filter("a YAML keyword", |s| !NOT_STRINGS.contains(&s.trim().to_ascii_lowercase().as_str())),
        any::<bool>(),
        0..8u8,
        any::<bool>(),
        any::<bool>(),
        vec(
            (
                0..6usize,
                select(&["# a comment", "", "#", "   ", "#---", "  # indented comment"][..]).prop_map(str::to_string),
            ),
            0..4,
        ),
        any::<bool>(),
        (gen::text(TOKENS), proptest::option::of("[A-Za-z][A-Za-z0-9 ,.()'-]{0,20}")),
    )
        .prop_map(|(name, description, enabled, form, crlf, bom, noise, name_first, (body, lenient))| Known {
            name,
            description,
            enabled,
            form,
            crlf,
            bom,
            noise,
            name_first,
            body,
            lenient,
        })
}

const SETTINGS: &[&str] = &[
    "enabled",
    "max_tokens",
    "max_pinned_tokens",
    "dedup_threshold",
    "ranking_relevance",
    "ranking_recency",
    "ranking_use",
    "ranking_hit",
    "other",
];

const VALUES: &[&str] = &[
    "true",
    "false",
    "\"true\"",
    "maybe",
    "0",
    "1",
    "2",
    "-3",
    "0.5",
    "1.5",
    "1e300",
    "-1e300",
    "3.4e38",
    "1e-45",
    ".inf",
    "-.inf",
    ".nan",
    "18446744073709551615",
    "18446744073709551616",
    "0x10",
    "null",
    "~",
    "[]",
    "{}",
    "[1, 2]",
    "\"\"",
];

/// A `skill-memory` mapping with any of its keys set to values of every type and size.
fn settings_md() -> impl Strategy<Value = String> {
    vec((select(SETTINGS), select(VALUES)), 0..6).prop_map(|kv| {
        let body: String = kv.iter().map(|(k, v)| format!("  {k}: {v}\n")).collect();
        format!("---\nname: a\nskill-memory:\n{body}---\n")
    })
}

pub fn input() -> impl Strategy<Value = Input> {
    prop_oneof![
        2 => gen::text(TOKENS).prop_map(Input::Text),
        2 => settings_md().prop_map(Input::Text),
        3 => gen::soup(TOKENS, 30).prop_map(|s| Input::Text(format!("---\n{s}\n---\n"))),
        2 => known().prop_map(Input::Known),
    ]
}

/// The description as written: with a second `: ` part when the file is to be read leniently.
fn description(k: &Known) -> String {
    match &k.lenient {
        Some(more) => format!("{}: {more}", k.description.trim_end()),
        None => k.description.clone(),
    }
}

fn render(k: &Known) -> String {
    let on = k.enabled;
    let word = if on { "enabled" } else { "disabled" };
    let memory: Vec<String> = match k.form % 8 {
        0 => vec!["skill-memory:".into(), format!("  enabled: {on}")],
        1 => vec![format!("skill-memory: {{ enabled: {on} }}")],
        2 => vec![format!("skill-memory: {on}")],
        3 => vec!["metadata:".into(), format!("  skill-memory: {word}")],
        4 => vec![format!("metadata: {{ skill-memory: {word} }}")],
        5 => vec![format!("skill-memory: {word}")],
        6 => vec!["skill-memory:".into(), format!("  enabled: \"{on}\""), "  max_tokens: 800".into()],
        _ => vec!["metadata:".into(), "  skill-memory:".into(), format!("    enabled: {on}")],
    };
    let name = format!("name: {}", k.name);
    let desc = format!("description: {}", description(k));
    let mut lines: Vec<String> = if k.name_first { vec![name, desc] } else { vec![desc, name] };
    lines.extend(memory);
    for (at, text) in k.noise.iter().rev() {
        // Only between top-level entries, never inside a nested mapping.
        let mut at = (*at).min(lines.len());
        while at < lines.len() && lines[at].starts_with(' ') {
            at += 1;
        }
        lines.insert(at, text.clone());
    }
    let nl = if k.crlf { "\r\n" } else { "\n" };
    let mut out = String::new();
    if k.bom {
        out.push('\u{feff}');
    }
    out.push_str("---");
    out.push_str(nl);
    for l in lines {
        out.push_str(&l);
        out.push_str(nl);
    }
    out.push_str("---");
    out.push_str(nl);
    out.push_str(&k.body);
    out
}

/// The properties every text must have.
pub fn check_text(text: &str) -> Result<(), String> {
    let parsed = parse(text);
    let bare = text.strip_prefix('\u{feff}').unwrap_or(text);
    if !bare.starts_with("---") {
        ensure(parsed.as_ref().is_ok_and(|f| *f == Default::default()), || {
            format!("a text without frontmatter must read as no frontmatter, got {parsed:?}")
        })?;
    }
    if let Some((_yaml, body)) = split(text) {
        ensure(text.ends_with(body), || "split's body is not the end of the text".into())?;
    }
    check_editor(text, parsed.is_err())?;
    match parsed {
        Err(e) => ensure(!e.trim().is_empty() && (e.contains("frontmatter") || e.contains("skill-memory")), || {
            format!("the error does not say what to fix: {e:?}")
        }),
        Ok(f) => {
            let m = &f.memory;
            if let Some(d) = m.dedup_threshold {
                ensure((0.0..=1.0).contains(&d), || format!("dedup_threshold {d} outside 0..=1"))?;
            }
            if let Some(r) = m.ranking {
                let w = [r.relevance, r.recency, r.used];
                ensure(w.iter().all(|x| x.is_finite() && *x >= 0.0), || format!("ranking weights {w:?}"))?;
                let sum: f32 = w.iter().sum();
                ensure((sum - 1.0).abs() < 1e-3, || format!("ranking weights {w:?} do not sum to 1"))?;
            }
            if !m.enabled {
                // Overrides without enablement are allowed; nothing to check.
            }
            Ok(())
        }
    }
}

/// A position inside `text`: an existing line, a column within it (UTF-16 units).
fn in_text(text: &str, p: Position) -> bool {
    let lines: Vec<&str> = text.split('\n').collect();
    lines.get(p.line as usize).is_some_and(|l| p.character as usize <= l.encode_utf16().count())
}

/// The editor functions on the same text.
fn check_editor(text: &str, refused: bool) -> Result<(), String> {
    let d = diagnose(text, Some("a-skill"));
    for x in &d {
        ensure(in_text(text, x.range.start) && in_text(text, x.range.end) && x.range.start <= x.range.end, || {
            format!("a range outside the text: {x:?}")
        })?;
        ensure(!x.message.trim().is_empty(), || format!("an empty message: {x:?}"))?;
    }
    if refused {
        ensure(d.iter().any(|x| x.severity == Severity::Error), || {
            format!("parse refuses it ({:?}) but no diagnostic is an error: {d:?}", parse(text).err())
        })?;
    }
    for e in [actions::enable_memory(text), actions::name_to_folder(text, "a-skill")].into_iter().flatten() {
        ensure(in_text(text, e.range.start) && in_text(text, e.range.end), || {
            format!("an edit outside the text: {e:?}")
        })?;
    }
    Ok(())
}

pub fn property(input: &Input) -> Result<(), String> {
    match input {
        Input::Text(t) => check_text(t),
        Input::Known(k) => {
            let text = render(k);
            check_text(&text)?;
            let f = parse(&text).map_err(|e| format!("a well-formed SKILL.md was refused: {e}\n{text}"))?;
            ensure(f.name.as_deref() == Some(k.name.as_str()), || format!("name {:?}, want {:?}", f.name, k.name))?;
            let full = description(k);
            let want = full.trim_end();
            ensure(f.description.as_deref() == Some(want), || {
                format!("description {:?}, want {want:?}", f.description)
            })?;
            ensure(f.memory.enabled == k.enabled, || {
                format!("enabled {}, want {}\n{text}", f.memory.enabled, k.enabled)
            })
        }
    }
}
