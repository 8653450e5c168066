//! Provenance lines (crates/store/src/memory/provenance.rs).
//!
//! Tool outputs with `Base directory for this skill:` and `**Base directory**:` lines among
//! noise: the directory found is the last one written (new spelling first), `file://` URLs
//! percent-decode back to the path written, arbitrary text never panics, and a skill looked up
//! by any name is only ever found directly inside one of the search folders.

use std::path::{Path, PathBuf};
use std::sync::OnceLock;

use proptest::collection::vec;
use proptest::prelude::*;
use serde::{Deserialize, Serialize};
use skillmem::memory::provenance::{dir_from_output, find_by_name, percent_decode, search_dirs};

use super::{ensure, gen, Target};

pub const TARGET: Target = Target {
    name: "provenance",
    ci_cases: 1000,
    run: |cases, seed| super::run(cases, seed, input(), property),
    replay: |t| super::replay(t, property),
};

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Line {
    /// 0: new spelling, 1: old spelling, 2: noise.
    pub kind: u8,
    pub path: String,
    /// 0 plain, 1 `file://` percent-encoded, 2 `file://localhost`, 3 backticks.
    pub style: u8,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Input {
    pub lines: Vec<Line>,
    /// Any text, parsed on its own.
    pub raw: String,
    /// A name looked up on disk.
    pub name: String,
}

const TOKENS: &[&str] = &[
    "Base directory for this skill:",
    "**Base directory**:",
    "file://",
    "file://localhost",
    "%",
    "%2",
    "%20",
    "%2F",
    "%zz",
    "%C3%A9",
    "%FF",
    "`",
    "/",
    "..",
    " ",
    "\n",
    "\r\n",
];

fn path() -> impl Strategy<Value = String> {
    prop_oneof![
        vec(prop_oneof![3 => "[a-zA-Z0-9 ._-]{1,8}", 1 => gen::chars(4)], 1..5)
            .prop_map(|v| format!("/{}", v.join("/"))),
        gen::chars(20),
    ]
    .prop_map(|p| p.replace(['\n', '\r'], ""))
}

pub fn input() -> impl Strategy<Value = Input> {
    (
        vec((0..3u8, path(), 0..4u8).prop_map(|(kind, path, style)| Line { kind, path, style }), 0..6),
        gen::text(TOKENS),
        gen::skill_ref(),
    )
        .prop_map(|(lines, raw, name)| Input { lines, raw, name })
}

fn encode(s: &str) -> String {
    s.bytes()
        .map(|b| {
            if b.is_ascii_alphanumeric() || b"/-._".contains(&b) {
                (b as char).to_string()
            } else {
                format!("%{b:02X}")
            }
        })
        .collect()
}

/// The path a line must yield, if the line yields one.
fn expected(l: &Line) -> Option<PathBuf> {
    let p = l.path.as_str();
    let as_written = |t: &str| {
        let t = t.trim().trim_matches('`').trim();
        (!t.is_empty() && !t.starts_with("file://")).then(|| PathBuf::from(t))
    };
    match l.style % 4 {
        // `file://localhost/x` is ambiguous with a path that starts with "localhost".
        1 if p.starts_with("localhost") => None,
        1 | 2 => Some(PathBuf::from(p)),
        3 => as_written(&format!("`{p}`")),
        _ => as_written(p),
    }
}

fn render(l: &Line) -> String {
    let head = match l.kind % 3 {
        0 => "Base directory for this skill: ",
        1 => "**Base directory**: ",
        _ => "Some other line: ",
    };
    let p = &l.path;
    let val = match l.style % 4 {
        1 => format!("file://{}", encode(p)),
        2 => format!("file://localhost{}", encode(p)),
        3 => format!("`{p}`"),
        _ => p.clone(),
    };
    format!("{head}{val}")
}

/// A workspace (a repository with a skill) and a home (with another), made once.
fn folders() -> (&'static Path, &'static Path) {
    static T: OnceLock<(tempfile::TempDir, PathBuf, PathBuf)> = OnceLock::new();
    let (_, ws, home) = T.get_or_init(|| {
        let t = tempfile::tempdir().unwrap();
        let ws = t.path().join("ws");
        let home = t.path().join("home");
        for d in [ws.join(".git"), ws.join(".claude/skills/pdf"), home.join(".agents/skills/jq")] {
            std::fs::create_dir_all(&d).unwrap();
        }
        std::fs::write(ws.join(".claude/skills/pdf/SKILL.md"), "x").unwrap();
        std::fs::write(home.join(".agents/skills/jq/SKILL.md"), "x").unwrap();
        std::fs::write(t.path().join("SKILL.md"), "outside").unwrap();
        (t, ws, home)
    });
    (ws, home)
}

pub fn property(input: &Input) -> Result<(), String> {
    // Arbitrary text: no panic, and percent-decoding keeps anything without a '%'.
    let _ = dir_from_output(&input.raw);
    if !input.raw.contains('%') {
        ensure(percent_decode(&input.raw) == input.raw, || "percent_decode changed a text without %".into())?;
    }
    for l in &input.lines {
        ensure(percent_decode(&encode(&l.path)) == l.path, || {
            format!("percent-decoding does not round-trip {:?}", l.path)
        })?;
    }
    // Lines in noise: the last new-spelling line wins, else the last old-spelling line.
    let text = input.lines.iter().map(render).collect::<Vec<_>>().join("\n");
    let last = |kind: u8| input.lines.iter().filter(|l| l.kind % 3 == kind).filter_map(expected).next_back();
    let relevant = |kind: u8| input.lines.iter().filter(|l| l.kind % 3 == kind).all(|l| expected(l).is_some());
    // A path whose line is skipped (blank, or a `file://` written plainly) does not count.
    if relevant(0) && relevant(1) {
        let want = last(0).or_else(|| last(1));
        let got = dir_from_output(&text);
        ensure(got == want, || format!("dir_from_output gave {got:?}, want {want:?} for\n{text}"))?;
    }
    // A skill found by name sits directly in one of the search folders.
    let (ws, home) = folders();
    let dirs = search_dirs(Some(ws), Some(home));
    if let Some(found) = find_by_name(&input.name, Some(ws), Some(home)) {
        ensure(found.parent().is_some_and(|p| dirs.iter().any(|d| d == p)), || {
            format!("{:?} was found at {} outside the search folders", input.name, found.display())
        })?;
        ensure(found.file_name().and_then(|f| f.to_str()) == Some(input.name.as_str()), || {
            format!("{:?} was found under another name: {}", input.name, found.display())
        })?;
    }
    Ok(())
}
