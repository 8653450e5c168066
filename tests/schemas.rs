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
