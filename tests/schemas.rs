//! `schemas/*.json` are generated from the wire types; this test fails when they drift.
//! `UPDATE_SCHEMAS=1 cargo test --test schemas` rewrites them.

use std::path::Path;

#[test]
fn committed_schemas_match_the_types() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("schemas");
    let update = std::env::var_os("UPDATE_SCHEMAS").is_some();
    let mut drift = vec![];
    let mut expected = std::collections::BTreeSet::new();
    for (name, schema) in skillmem::protocol::all_schemas() {
        let file = dir.join(format!("{name}.json"));
        expected.insert(file.clone());
        let text = serde_json::to_string_pretty(&schema).unwrap() + "\n";
        if update {
            std::fs::create_dir_all(&dir).unwrap();
            std::fs::write(&file, &text).unwrap();
        } else if std::fs::read_to_string(&file).ok().as_deref() != Some(text.as_str()) {
            drift.push(name.to_string());
        }
    }
    for entry in std::fs::read_dir(&dir).unwrap().flatten() {
        let p = entry.path();
        if p.extension().is_some_and(|e| e == "json") && !expected.contains(&p) {
            if update {
                std::fs::remove_file(&p).unwrap();
            } else {
                drift.push(format!("stale file {}", p.display()));
            }
        }
    }
    assert!(
        drift.is_empty(),
        "schemas drifted from the types: {drift:?}; run UPDATE_SCHEMAS=1 cargo test --test schemas"
    );
}

/// docs/protocol.md is the contract a host author reads: every method of the table has a
/// section of its own, every generated schema is linked, every error kind is explained, and
/// every schema link points at a file that exists.
#[test]
fn protocol_doc_covers_the_method_table() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let doc = std::fs::read_to_string(root.join("docs/protocol.md")).expect("docs/protocol.md");
    let mut missing = vec![];
    for m in skillmem::protocol::METHODS {
        let code = format!("`{m}`");
        if !doc.lines().any(|l| l.starts_with('#') && l.contains(&code)) {
            missing.push(format!("a heading for the method {code}"));
        }
    }
    for (stem, _) in skillmem::protocol::all_schemas() {
        let link = format!("](../schemas/{stem}.json)");
        if !doc.contains(&link) {
            missing.push(format!("a link to schemas/{stem}.json"));
        }
    }
    for kind in skillmem::Error::KINDS.iter().chain(&["internal"]) {
        if !doc.contains(&format!("`{kind}`")) {
            missing.push(format!("the error kind `{kind}`"));
        }
    }
    for (i, _) in doc.match_indices("](../schemas/") {
        let rest = &doc[i + 2..];
        let target = &rest[..rest.find(')').unwrap_or(rest.len())];
        if !target.ends_with('/') && !root.join("docs").join(target).is_file() {
            missing.push(format!("the file of the link {target}"));
        }
    }
    assert!(missing.is_empty(), "docs/protocol.md lacks: {missing:#?}");
}
