//! The shape ARCHITECTURE.md promises that Cargo cannot see. The layering itself is Cargo's:
//! every layer below the doors is a crate under `crates/`, and a crate cannot name a crate it
//! does not depend on (the domains cannot reach the engine, the engine cannot reach the method
//! table or a door, the method table cannot reach a door: the doors live in the root package,
//! which no crate depends on). What is checked here: that the crates' edges are the ones
//! ARCHITECTURE.md draws, that the engine stays a struct of the parts it lists, and that every
//! statement over a local table is written in the one file that owns that table.

use std::path::Path;

/// The engine is a struct of a few parts (ARCHITECTURE.md, "engine/"): its fields stay few,
/// and each is in the document's table of parts, so that a newcomer finds what owns a piece of
/// state there.
#[test]
fn the_engine_is_a_few_parts_each_in_the_architecture() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let src = std::fs::read_to_string(root.join("crates/engine/src/lib.rs")).unwrap();
    let start = src.find("pub struct Engine {").expect("crates/engine/src/lib.rs defines `pub struct Engine`");
    let body = &src[start..start + src[start..].find("\n}").unwrap()];
    let fields: Vec<&str> = body
        .lines()
        .skip(1)
        .map(str::trim)
        .filter(|l| !l.starts_with("//"))
        .filter_map(|l| l.split_once(':').map(|(name, _)| name.trim()))
        .collect();
    assert!(!fields.is_empty(), "no field of Engine read");
    assert!(fields.len() <= 12, "Engine has {} fields ({fields:?}): group state into a part", fields.len());
    let doc = std::fs::read_to_string(root.join("ARCHITECTURE.md")).unwrap();
    let engine = &doc[doc.find("### `engine/`").expect("ARCHITECTURE.md has an engine/ section")..];
    let engine = &engine[..engine[4..].find("\n### ").map_or(engine.len(), |i| i + 4)];
    for f in fields {
        let named = engine.contains(&format!("`{f}:")) || engine.contains(&format!("`{f}`"));
        assert!(named, "Engine's field {f} is not in ARCHITECTURE.md's table of parts");
    }
}

/// Each crate under `crates/` and the workspace crates it may depend on (ARCHITECTURE.md,
/// "Crates"): an edge added to a manifest without adding it here, and to the document, fails.
const CRATE_EDGES: &[(&str, &[&str])] = &[
    ("text", &[]),
    ("skillmd", &[]),
    ("audit", &["skillmd", "text"]),
    ("error", &[]),
    ("config", &["error"]),
    ("embed", &["error", "text"]),
    ("index", &["embed", "error"]),
    ("store", &["config", "embed", "error", "index", "skillmd", "text"]),
    ("historian", &["embed", "skillmd", "store", "text"]),
    ("skills", &["audit", "error", "skillmd", "store"]),
    ("team", &["config", "error", "store"]),
    (
        "engine",
        &["audit", "config", "embed", "error", "historian", "index", "skillmd", "skills", "store", "team", "text"],
    ),
    ("protocol", &["engine", "error", "historian", "skills", "store"]),
];

#[test]
fn the_crates_depend_only_on_the_crates_below_them() {
    let crates = Path::new(env!("CARGO_MANIFEST_DIR")).join("crates");
    let mut seen = vec![];
    for e in std::fs::read_dir(&crates).unwrap().flatten() {
        let name = e.file_name().to_string_lossy().into_owned();
        let manifest = std::fs::read_to_string(e.path().join("Cargo.toml")).unwrap();
        let edges: Vec<&str> = manifest
            .lines()
            .filter_map(|l| l.trim_start().strip_prefix("skillmem-"))
            .filter_map(|l| l.split(['.', ' ', '=']).next())
            .collect();
        let allowed = CRATE_EDGES.iter().find(|(c, _)| *c == name).map(|(_, d)| *d);
        let allowed = allowed.unwrap_or_else(|| panic!("crates/{name} is not in CRATE_EDGES (and ARCHITECTURE.md)"));
        let upward: Vec<&&str> = edges.iter().filter(|d| !allowed.contains(d)).collect();
        assert!(upward.is_empty(), "crates/{name} depends on skillmem-{upward:?}, not below it in ARCHITECTURE.md");
        seen.push(name);
    }
    for (c, _) in CRATE_EDGES {
        assert!(seen.iter().any(|s| s == c), "crates/{c} is gone: update CRATE_EDGES and ARCHITECTURE.md");
    }
}

/// What Cargo cannot see: every statement over a table lives in its store module, wherever in
/// the workspace it is written: the notes (and their full-text index) in `memory/store/`, the
/// skill uses in `memory/usage.rs`, a session's calls, the use counts and a mined lesson's
/// support (here and the team's) in `memory/store/calls.rs` (all in `crates/store`), the hook's
/// sessions in `hosts/hooks/store.rs`.
/// Test modules are left out (schema tests write rows of older schemas by hand), and so are the
/// full-text self-heal at open and the table rebuild of a migration in `db/` (schema-level).
#[test]
fn every_statement_over_a_table_lives_in_its_store() {
    let rules: &[(&[&str], &str)] = &[
        (
            &["from notes", "into notes", "update notes", "delete from notes", "notes_fts"],
            "crates/store/src/memory/store/",
        ),
        (&["skill_uses"], "crates/store/src/memory/usage.rs"),
        (&["host_sessions"], "src/hosts/hooks/store.rs"),
        (
            &[
                "tool_sessions",
                "call_log",
                "note_sessions",
                "note_evidence",
                "mined_pairs",
                "from mined_support",
                "into mined_support",
                "update mined_support",
                "join mined_support",
                "mined_support_remote",
                "mined_support_sent",
            ],
            "crates/store/src/memory/store/calls.rs",
        ),
    ];
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR"));
    let mut files = vec![];
    let mut dirs = vec![root.join("src")];
    dirs.extend(std::fs::read_dir(root.join("crates")).unwrap().flatten().map(|e| e.path().join("src")));
    while let Some(d) = dirs.pop() {
        for e in std::fs::read_dir(&d).unwrap() {
            let p = e.unwrap().path();
            if p.is_dir() {
                dirs.push(p);
            } else if p.extension().is_some_and(|x| x == "rs") {
                files.push(p);
            }
        }
    }
    assert!(files.len() > 20, "the source tree is where it was expected: {}", root.display());
    let mut wrong = vec![];
    for file in files {
        let rel = file.strip_prefix(root).unwrap().to_string_lossy().replace('\\', "/");
        let text = std::fs::read_to_string(&file).unwrap();
        let mut code = match text.find("#[cfg(test)]\nmod ") {
            Some(i) => text[..i].to_string(),
            None => text,
        };
        if rel == "crates/store/src/db/mod.rs" {
            for schema_level in ["fn heal_fts(", "fn rebuild_notes("] {
                if let Some(a) = code.find(schema_level) {
                    let b = code[a..].find("\n}\n").map_or(code.len(), |b| a + b);
                    code.replace_range(a..b, "");
                }
            }
        }
        for (n, line) in code.lines().enumerate() {
            let lower = line.to_lowercase();
            if lower.trim_start().starts_with("//") {
                continue;
            }
            for (patterns, home) in rules {
                if !rel.starts_with(home) && patterns.iter().any(|p| lower.contains(p)) {
                    wrong.push(format!("{rel}:{}: {} (belongs in {home})", n + 1, line.trim()));
                }
            }
        }
    }
    assert!(wrong.is_empty(), "statements outside their store module:\n{}", wrong.join("\n"));
}
