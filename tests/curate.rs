//! Curation through the protocol (`skillmem/notes`, `preview`, `move`, `merge`) and the
//! command line (`skillmem notes`, `export`, `import`, `doctor`), against the real binary.

mod common;

use common::{err, note, ok, World};
use serde_json::{json, Value};

fn seed(w: &World) -> (skillmem::client::Client, Vec<i64>) {
    w.enabled_skill("jq");
    w.enabled_skill("git");
    let mut c = w.spawn();
    let mut ids = vec![];
    for (skill, kind, delta) in [
        ("jq", "gotcha", "jq -r prints raw strings without quotes"),
        ("jq", "fix", "Cannot iterate over null: guard with .[]? before iterating"),
        ("jq", "workflow", "always validate the JSON with jq empty before a long pipeline"),
        ("git", "gotcha", "git rebase --onto needs the old base as its second argument"),
    ] {
        ids.push(note(&mut c, skill, kind, "", delta)["id"].as_i64().unwrap());
    }
    (c, ids)
}

fn listed_ids(r: &Value) -> Vec<i64> {
    r["notes"].as_array().unwrap().iter().map(|n| n["id"].as_i64().unwrap()).collect()
}

#[test]
fn notes_lists_filters_searches_sorts_and_pages() {
    let w = World::new();
    let (mut c, ids) = seed(&w);
    let all = ok(c.request("skillmem/notes", json!(null)).unwrap());
    assert_eq!(all["total"], 4);
    // Newest first.
    assert_eq!(listed_ids(&all), ids.iter().rev().copied().collect::<Vec<_>>());
    let jq = ok(c.request("skillmem/notes", json!({ "skill": "jq" })).unwrap());
    assert_eq!(jq["total"], 3);
    let fixes = ok(c.request("skillmem/notes", json!({ "skill": "jq", "kind": "fix" })).unwrap());
    assert_eq!(listed_ids(&fixes), vec![ids[1]]);
    let found = ok(c.request("skillmem/notes", json!({ "search": "valid" })).unwrap());
    assert_eq!(listed_ids(&found), vec![ids[2]], "prefix search");
    let page = ok(c.request("skillmem/notes", json!({ "limit": 2, "offset": 2 })).unwrap());
    assert_eq!(page["total"], 4);
    assert_eq!(listed_ids(&page), vec![ids[1], ids[0]]);
    ok(c.request("skillmem/pin", json!({ "id": ids[0] })).unwrap());
    let pinned = ok(c.request("skillmem/notes", json!({ "pinned": true })).unwrap());
    assert_eq!(listed_ids(&pinned), vec![ids[0]]);
    // A duplicate write bumps hits: sorting by hits puts it first.
    note(&mut c, "jq", "gotcha", "", "jq -r prints raw strings without quotes");
    let by_hits = ok(c.request("skillmem/notes", json!({ "sort": "hits" })).unwrap());
    assert_eq!(listed_ids(&by_hits)[0], ids[0]);
    assert_eq!(by_hits["notes"][0]["currentVector"], true);
    let e = err(c.request("skillmem/notes", json!({ "kind": "tip" })).unwrap());
    assert_eq!(e["code"], -32602, "{e}");
    assert_eq!(c.shutdown().unwrap(), 0);
}

#[test]
fn preview_shows_the_block_with_rungs_and_counts_no_recall() {
    let w = World::new();
    let (mut c, ids) = seed(&w);
    let p = ok(c.request("skillmem/preview", json!({ "skill": "jq", "intent": "iterate over null values" })).unwrap());
    let block = p["block"].as_str().unwrap();
    assert!(block.contains("<skill-memory"), "{block}");
    let notes = p["notes"].as_array().unwrap();
    assert_eq!(notes.len(), 3);
    let rung_of = |id: i64| notes.iter().find(|n| n["id"] == id).unwrap()["rung"].as_str().unwrap().to_string();
    assert_ne!(rung_of(ids[1]), "recent", "the matching note was found by a rung: {p}");
    assert!(notes.iter().all(|n| n["score"].is_number()));
    let after = ok(c.request("skillmem/notes", json!({ "skill": "jq" })).unwrap());
    assert!(after["notes"].as_array().unwrap().iter().all(|n| n["recalls"] == 0), "preview counted: {after}");
    // recall, by contrast, counts.
    let r = ok(c.request("skillmem/recall", json!({ "skill": "jq", "intent": "iterate over null values" })).unwrap());
    assert_eq!(r["block"], p["block"], "preview and recall show the same block");
    let after = ok(c.request("skillmem/notes", json!({ "skill": "jq" })).unwrap());
    assert!(after["notes"].as_array().unwrap().iter().all(|n| n["recalls"] == 1), "{after}");
    // Two recalls in a row, then a listing: both counted (a recall leaves its count for the
    // next use of the store, or writes it right after answering).
    for _ in 0..2 {
        ok(c.request("skillmem/recall", json!({ "skill": "jq", "intent": "iterate over null values" })).unwrap());
    }
    let after = ok(c.request("skillmem/notes", json!({ "skill": "jq" })).unwrap());
    assert!(after["notes"].as_array().unwrap().iter().all(|n| n["recalls"] == 3), "{after}");
    assert_eq!(c.shutdown().unwrap(), 0);
    // The command line's recall counts too, though its process ends right after it.
    let (code, _, err) = w.cli(&["recall", "jq", "--intent", "iterate over null values"]);
    assert_eq!(code, 0, "{err}");
    let (code, out, err) = w.cli(&["--json", "notes", "jq"]);
    assert_eq!(code, 0, "{err}");
    let listed: Value = serde_json::from_str(&out).unwrap();
    let notes = listed["notes"].as_array().unwrap_or_else(|| listed.as_array().unwrap());
    assert!(!notes.is_empty() && notes.iter().all(|n| n["recalls"] == 4), "{listed}");
}

#[test]
fn move_between_scopes_and_merge_pairs() {
    let w = World::new();
    let (mut c, ids) = seed(&w);
    let m = ok(c.request("skillmem/move", json!({ "id": ids[0], "scope": "global" })).unwrap());
    assert_eq!(m, json!({ "id": ids[0], "status": "moved" }));
    let g = ok(c.request("skillmem/notes", json!({ "scope": "global" })).unwrap());
    assert_eq!(listed_ids(&g), vec![ids[0]]);
    assert_eq!(g["notes"][0]["projectId"], "");
    // Another project sees it now.
    let other = ok(c.request("skillmem/notes", json!({ "projectId": "elsewhere" })).unwrap());
    assert_eq!(listed_ids(&other), vec![ids[0]]);
    let m = ok(c.request("skillmem/move", json!({ "id": ids[0], "scope": "global" })).unwrap());
    assert_eq!(m["status"], "unchanged");
    // The same lesson written again in project scope, then moved to global: merged.
    let again = note(&mut c, "jq", "gotcha", "", "jq -r prints raw strings without quotes")["id"].as_i64().unwrap();
    assert_ne!(again, ids[0]);
    let m = ok(c.request("skillmem/move", json!({ "id": again, "scope": "global" })).unwrap());
    assert_eq!(m, json!({ "id": ids[0], "status": "merged" }));
    let m = ok(c.request("skillmem/move", json!({ "id": ids[0], "scope": "project" })).unwrap());
    assert_eq!(m["status"], "moved");
    let jq = ok(c.request("skillmem/notes", json!({ "skill": "jq", "scope": "project" })).unwrap());
    assert_eq!(jq["total"], 3);

    // Merge: the kept note takes the other's hits (plus one) and pin; the other is gone.
    ok(c.request("skillmem/pin", json!({ "id": ids[2] })).unwrap());
    let before = ok(c.request("skillmem/notes", json!({ "skill": "jq" })).unwrap());
    let hits_of = |r: &Value, id: i64| {
        r["notes"].as_array().unwrap().iter().find(|n| n["id"] == id).map(|n| n["hits"].as_i64().unwrap())
    };
    let (h1, h2) = (hits_of(&before, ids[1]).unwrap(), hits_of(&before, ids[2]).unwrap());
    let r = ok(c.request("skillmem/merge", json!({ "keep": ids[1], "drop": ids[2] })).unwrap());
    assert_eq!(r, json!({ "id": ids[1] }));
    let after = ok(c.request("skillmem/notes", json!({ "skill": "jq" })).unwrap());
    assert_eq!(hits_of(&after, ids[1]), Some(h1 + h2 + 1));
    assert_eq!(hits_of(&after, ids[2]), None);
    let kept = after["notes"].as_array().unwrap().iter().find(|n| n["id"] == ids[1]).unwrap().clone();
    assert_eq!(kept["pinned"], true);
    let e = err(c.request("skillmem/merge", json!({ "keep": ids[1], "drop": ids[3] })).unwrap());
    assert!(e["message"].as_str().unwrap().contains("only notes of one skill"), "{e}");
    let e = err(c.request("skillmem/merge", json!({ "keep": ids[1], "drop": 999 })).unwrap());
    assert!(e["message"].as_str().unwrap().contains("999"), "{e}");
    let e = err(c.request("skillmem/move", json!({ "id": 999, "scope": "global" })).unwrap());
    assert!(e["message"].as_str().unwrap().contains("999"), "{e}");
    assert_eq!(c.shutdown().unwrap(), 0);
}

fn cli_json(w: &World, args: &[&str]) -> Value {
    let mut a = args.to_vec();
    a.push("--json");
    let (code, out, errs) = w.cli(&a);
    assert_eq!(code, 0, "{args:?}: {errs}");
    serde_json::from_str(&out).unwrap_or_else(|e| panic!("{args:?}: {e}: {out}"))
}

/// The notes of a store as export lines without the fields a store assigns.
fn comparable(export: &str) -> Vec<Value> {
    let mut v: Vec<Value> = export
        .lines()
        .map(|l| {
            let mut n: Value = serde_json::from_str(l).unwrap();
            n.as_object_mut().unwrap().remove("id");
            n
        })
        .collect();
    v.sort_by_key(|n| n["delta"].as_str().unwrap().to_string());
    v
}

#[test]
fn cli_notes_export_import_round_trip_and_a_broken_line_changes_nothing() {
    let w = World::new();
    let (mut c, ids) = seed(&w);
    ok(c.request("skillmem/pin", json!({ "id": ids[1] })).unwrap());
    ok(c.request("skillmem/move", json!({ "id": ids[3], "scope": "global" })).unwrap());
    assert_eq!(c.shutdown().unwrap(), 0);

    let listed = cli_json(&w, &["notes", "jq"]);
    assert_eq!(listed["total"], 3);
    let (code, human, _) = w.cli(&["notes", "jq", "--kind", "fix"]);
    assert_eq!(code, 0);
    assert!(human.contains("Cannot iterate over null") && human.contains("1 of 1 notes"), "{human}");
    let (code, _, e) = w.cli(&["notes", "--kind", "tip"]);
    assert_ne!(code, 0);
    assert!(e.contains("possible values: gotcha, discovery, fix, workflow"), "{e}");

    let (code, export, e) = w.cli(&["export"]);
    assert_eq!(code, 0, "{e}");
    assert_eq!(export.lines().count(), 4);
    assert!(!export.contains("vector\""), "no vectors in an export");
    let first: Value = serde_json::from_str(export.lines().next().unwrap()).unwrap();
    assert!(first["contentHash"].is_string() && first["embedder"].is_string(), "{first}");
    let (code, md, _) = w.cli(&["export", "--format", "md", "--skill", "jq"]);
    assert_eq!(code, 0);
    assert!(md.contains("## jq") && !md.contains("## git") && md.contains("pinned"), "{md}");
    let (_, global_only, _) = w.cli(&["export", "--scope", "global"]);
    assert_eq!(global_only.lines().count(), 1);

    // Into an empty data directory: the same notes.
    let file = w.tmp.path().join("notes.jsonl");
    std::fs::write(&file, &export).unwrap();
    let w2 = World::new();
    let r = cli_json(&w2, &["--workspace", w.ws.to_str().unwrap(), "import", file.to_str().unwrap()]);
    assert_eq!(r["read"], 4);
    assert_eq!(r["inserted"], 4);
    assert_eq!(r["duplicates"], 0);
    let (_, export2, _) = w2.cli(&["--workspace", w.ws.to_str().unwrap(), "export"]);
    // The same notes, which came by import: who first wrote them is kept beside.
    let mut imported = comparable(&export2);
    for n in &mut imported {
        assert_eq!(n["source"], "import", "{n}");
        let o = n.as_object_mut().unwrap();
        let first = o.remove("originSource").unwrap();
        o.insert("source".into(), first);
    }
    assert_eq!(comparable(&export), imported);
    // Importing again: all duplicates, hits bumped, nothing new.
    let r = cli_json(&w2, &["--workspace", w.ws.to_str().unwrap(), "import", file.to_str().unwrap()]);
    assert_eq!((r["inserted"].as_i64(), r["duplicates"].as_i64()), (Some(0), Some(4)));

    // A broken line: an error naming it, and nothing written.
    let w3 = World::new();
    let mut lines: Vec<&str> = export.lines().collect();
    lines.insert(2, "{\"skill\": \"jq\", \"kind\": ");
    let bad = w.tmp.path().join("bad.jsonl");
    std::fs::write(&bad, lines.join("\n")).unwrap();
    let (code, _, e) = w3.cli(&["import", bad.to_str().unwrap()]);
    assert_ne!(code, 0);
    assert!(e.contains("line 3") && e.contains("nothing was imported"), "{e}");
    let (_, export3, _) = w3.cli(&["export"]);
    assert_eq!(export3.trim(), "", "a failed import wrote notes");
}

#[test]
fn doctor_checks_and_says_what_to_do() {
    let w = World::new();
    let (c, _) = seed(&w);
    drop(c);
    let d = cli_json(&w, &["doctor"]);
    let checks = d["checks"].as_array().unwrap();
    let status = |name: &str| {
        checks.iter().find(|c| c["name"] == name).unwrap_or_else(|| panic!("no check {name}: {d}"))["status"]
            .as_str()
            .unwrap()
            .to_string()
    };
    assert_eq!(status("data directory"), "ok");
    assert_eq!(status("schema"), "ok");
    assert_eq!(status("full-text index"), "ok");
    assert_eq!(status("embedder"), "ok");
    assert_eq!(status("Claude Code"), "ok", "not installed is fine");
    // Claude Code installed but not wired: a warning with what to do.
    std::fs::create_dir_all(w.home.join(".claude")).unwrap();
    std::fs::write(w.home.join(".claude/settings.json"), "{}").unwrap();
    let (code, out, _) = w.cli(&["doctor"]);
    assert_eq!(code, 0);
    assert!(out.contains("warn  Claude Code") && out.contains("/plugin install skillmem@skillmem"), "{out}");
    // Only some of skillmem's hooks: a warning naming what is missing.
    std::fs::write(
        w.home.join(".claude/settings.json"),
        r#"{"hooks":{"Stop":[{"hooks":[{"type":"command","command":"skillmem hook claude-code"}]}]}}"#,
    )
    .unwrap();
    let (_, out, _) = w.cli(&["doctor"]);
    assert!(out.contains("warn  Claude Code") && out.contains("no skillmem entry under hooks.PostToolUse"), "{out}");
    assert!(out.contains("skillmem setup claude-code"), "{out}");
    let (code, _, e) = w.cli(&["setup", "claude-code"]);
    assert_eq!(code, 0, "{e}");
    let d = cli_json(&w, &["doctor"]);
    let cc = d["checks"].as_array().unwrap().iter().find(|c| c["name"] == "Claude Code").unwrap().clone();
    assert_eq!(cc["status"], "ok");
    assert!(cc["detail"].as_str().unwrap().contains("wired"), "{cc}");
}
