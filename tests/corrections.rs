//! A note's life through the protocol, the way a host uses it: what a write merges and what it
//! keeps, conflicting pairs in the block, replacement, retirement, restore, purge, the
//! historian's correction lines, and the CLI over the same store. Real `skillmem serve`
//! children, real frames, a real SQLite file; the default static embedder.

mod common;

use common::{err, load, note, ok, World};
use serde_json::{json, Value};

fn block_of(r: &Value) -> String {
    r["append"].as_str().unwrap_or_else(|| panic!("no block in {r}")).to_string()
}

fn replace(c: &mut skillmem::client::Client, skill: &str, id: i64, delta: &str) -> Value {
    c.request("skillmem/note", json!({ "skill": skill, "kind": "gotcha", "delta": delta, "replaces": id })).unwrap()
}

/// The corrections a new user tried: every one is kept (none answered "duplicate"), and a
/// plain restatement is still one note.
#[test]
fn a_correction_is_never_answered_duplicate() {
    let w = World::new();
    let dir = w.enabled_skill("release");
    // Every note in the block, trusted or not: the test counts what was kept.
    let mut c = w.spawn_with(json!({ "memory": { "unverifiedShare": 1.0 } }));
    let pairs = [
        ("Always pass --no-verify when pushing release tags.", "Never pass --no-verify when pushing release tags."),
        (
            "In CI run yarn install --frozen-lockfile so the lockfile is never rewritten.",
            "In CI run yarn install --immutable (yarn 4 removed --frozen-lockfile) so the lockfile is never rewritten.",
        ),
        (
            "Lesson about partition 21: vacuum it after the migration.",
            "Lesson about partition 35: vacuum it after the migration.",
        ),
        (
            "Pin serde_yaml to 0.8; 0.9 breaks the parser.",
            "Pin serde_yaml to 0.9; 0.8 is unmaintained and 0.9 fixed the parser.",
        ),
    ];
    for (old, new) in pairs {
        let a = note(&mut c, "release", "gotcha", "", old);
        let b = note(&mut c, "release", "gotcha", "", new);
        assert_eq!(a["status"], "inserted", "{old}");
        assert_eq!(b["status"], "inserted", "{new} must be kept: {b}");
        assert_ne!(a["id"], b["id"]);
    }
    // The same words but another sign: not the same lesson, though punctuation is dropped.
    let a = note(&mut c, "release", "gotcha", "", "Set the retry offset to -1 for the release job.");
    let b = note(&mut c, "release", "gotcha", "", "Set the retry offset to 1 for the release job.");
    assert_eq!(b["status"], "inserted", "{b}");
    assert_ne!(a["id"], b["id"]);
    // A restatement (case, punctuation) is the same lesson.
    let again = note(&mut c, "release", "gotcha", "", "always pass --no-verify when pushing release tags");
    assert_eq!(again["status"], "duplicate", "{again}");
    let r = load(&mut c, "c1", "release", &dir, None);
    assert_eq!(r["noteIds"].as_array().unwrap().len(), 10, "{r}");
    assert_eq!(c.shutdown().unwrap(), 0);
}

/// A new version of a lesson is recorded as a conflicting pair: in the block the newer leads
/// and the older names it; every note says the day it was written.
#[test]
fn the_newer_version_leads_and_the_older_names_it() {
    let w = World::new();
    let dir = w.enabled_skill("release");
    let mut c = w.spawn();
    let old = note(&mut c, "release", "gotcha", "push tags", "Always pass --no-verify when pushing release tags.");
    let other =
        note(&mut c, "release", "fix", "push tags", "Push release tags one at a time; the hook times out on many.");
    let new = note(&mut c, "release", "gotcha", "push tags", "Never pass --no-verify when pushing release tags.");
    assert_eq!(new["status"], "inserted");
    assert_eq!(new["conflictsWith"], old["id"], "{new}");
    let (old, new) = (old["id"].as_i64().unwrap(), new["id"].as_i64().unwrap());
    let b = block_of(&load(&mut c, "c1", "release", &dir, Some("push release tags")));
    let at = |id: i64| b.find(&format!("<note id=\"{id}\"")).unwrap_or_else(|| panic!("{id} not in {b}"));
    assert!(at(new) < at(old), "the newer leads: {b}");
    assert!(b.contains(&format!("newer=\"{new}\"")), "{b}");
    let today = skillmem::db::day_of(skillmem::db::now_ms());
    assert_eq!(b.matches(&format!("written=\"{today}\"")).count(), 3, "{b}");
    assert!(b.contains("replaces=<its id>"), "the guidance says how to correct: {b}");
    // Deterministic for identical state, input and day.
    let again = block_of(&load(&mut c, "c2", "release", &dir, Some("push release tags")));
    let strip_hits = |s: &str| s.split("hits=").map(|p| p.split_once('"').map_or(p, |x| x.1)).collect::<String>();
    assert_eq!(strip_hits(&b), strip_hits(&again));
    let _ = other;
    assert_eq!(c.shutdown().unwrap(), 0);
}

/// `replaces` takes the old note's place: hits and pin carry over, the old one leaves recall
/// and is kept as history; bad ids write nothing.
#[test]
fn replaces_takes_the_old_notes_place_and_keeps_it_as_history() {
    let w = World::new();
    let dir = w.enabled_skill("ci");
    w.enabled_skill("other");
    let mut c = w.spawn();
    let old = note(&mut c, "ci", "fix", "install", "In CI run yarn install --frozen-lockfile.");
    let old_id = old["id"].as_i64().unwrap();
    ok(c.request("skillmem/pin", json!({ "id": old_id })).unwrap());
    note(&mut c, "ci", "fix", "install", "In CI run yarn install --frozen-lockfile."); // a hit
    let r = ok(replace(&mut c, "ci", old_id, "In CI run yarn install --immutable; yarn 4 removed --frozen-lockfile."));
    assert_eq!(r["status"], "replaced");
    assert_eq!(r["replaced"], old_id);
    let new_id = r["id"].as_i64().unwrap();
    let b = block_of(&load(&mut c, "c1", "ci", &dir, Some("yarn install in CI")));
    assert!(b.contains("--immutable") && !b.contains(&format!("<note id=\"{old_id}\"")), "{b}");
    assert!(
        b.contains(&format!("<note id=\"{new_id}\" kind=\"gotcha\" intent=\"\" used=\"0\" pinned=\"true\"")),
        "{b}"
    );
    // History: the default listing has the new one only; includeSuperseded shows both.
    let page = ok(c.request("skillmem/notes", json!({ "skill": "ci" })).unwrap());
    assert_eq!(page["total"], 1, "{page}");
    let page = ok(c.request("skillmem/notes", json!({ "skill": "ci", "includeSuperseded": true })).unwrap());
    let old_row = page["notes"].as_array().unwrap().iter().find(|n| n["id"] == old_id).unwrap().clone();
    assert_eq!(old_row["supersededBy"], new_id, "{page}");
    assert!(old_row["retiredAt"].is_i64(), "{page}");
    // Errors write nothing.
    let before = ok(c.request("skillmem/notes", json!({ "includeSuperseded": true })).unwrap())["total"].clone();
    for (id, skill, code, says) in [
        (999_999, "ci", -32002, "no note with id 999999"),
        (new_id, "other", -32602, "not \"other\""),
        (old_id, "ci", -32602, "already replaced"),
    ] {
        let e = err(replace(&mut c, skill, id, "Something else entirely about yarn 5."));
        assert_eq!(e["code"], code, "{e}");
        assert!(e["message"].as_str().unwrap().contains(says), "{e}");
    }
    let after = ok(c.request("skillmem/notes", json!({ "includeSuperseded": true })).unwrap())["total"].clone();
    assert_eq!(before, after);
    // skillmem/versions, from either end: the old one first, replaced by the new one.
    for id in [old_id, new_id] {
        let v = ok(c.request("skillmem/versions", json!({ "id": id })).unwrap());
        assert_eq!(v["skill"], "ci", "{v}");
        let got: Vec<(i64, Value)> = v["versions"]
            .as_array()
            .unwrap()
            .iter()
            .map(|n| (n["id"].as_i64().unwrap(), n["supersededBy"].clone()))
            .collect();
        assert_eq!(got, vec![(old_id, json!(new_id)), (new_id, Value::Null)], "{v}");
    }
    assert_eq!(c.shutdown().unwrap(), 0);
}

/// A note of another project cannot be replaced, retired, restored or shown from this one.
#[test]
fn a_note_of_another_project_is_not_found_from_this_one() {
    let w = World::new();
    w.enabled_skill("ci");
    let mut a = w.spawn_with(json!({ "projectId": "project-a" }));
    let id = note(&mut a, "ci", "fix", "", "Run make -j2 on the CI runners.")["id"].as_i64().unwrap();
    assert_eq!(a.shutdown().unwrap(), 0);
    let mut b = w.spawn_with(json!({ "projectId": "project-b" }));
    let e = err(replace(&mut b, "ci", id, "Run make -j4 on the CI runners."));
    assert_eq!(e["code"], -32002, "{e}");
    assert!(e["message"].as_str().unwrap().contains("another project"), "{e}");
    for method in ["skillmem/forget", "skillmem/versions"] {
        let e = err(b.request(method, json!({ "id": id })).unwrap());
        assert_eq!(e["code"], -32002, "{method}: {e}");
    }
    assert_eq!(b.shutdown().unwrap(), 0);
}

/// forget retires (restorable), restore brings it back, purge removes a note and its history.
#[test]
fn forget_retires_restore_undoes_and_purge_deletes_for_good() {
    let w = World::new();
    let dir = w.enabled_skill("db");
    let mut c = w.spawn();
    let id =
        note(&mut c, "db", "gotcha", "", "VACUUM needs twice the table's size free on disk.")["id"].as_i64().unwrap();
    ok(c.request("skillmem/forget", json!({ "id": id, "reason": "we moved to a bigger disk" })).unwrap());
    assert!(load(&mut c, "c1", "db", &dir, None)["append"].is_null());
    let page = ok(c.request("skillmem/notes", json!({ "skill": "db", "includeSuperseded": true })).unwrap());
    assert_eq!(page["notes"][0]["reason"], "we moved to a bigger disk", "{page}");
    let e = err(c.request("skillmem/forget", json!({ "id": id })).unwrap());
    assert!(e["message"].as_str().unwrap().contains("already retired"), "{e}");
    ok(c.request("skillmem/restore", json!({ "id": id })).unwrap());
    let b = block_of(&load(&mut c, "c2", "db", &dir, None));
    assert!(b.contains("VACUUM"), "{b}");
    let e = err(c.request("skillmem/restore", json!({ "id": id })).unwrap());
    assert!(e["message"].as_str().unwrap().contains("nothing to restore"), "{e}");
    // A replacement, then a purge of the replacement takes its history with it.
    let new = ok(replace(&mut c, "db", id, "VACUUM INTO a new file needs the new file's size free on disk."));
    let new_id = new["id"].as_i64().unwrap();
    let p = ok(c.request("skillmem/purge", json!({ "id": new_id })).unwrap());
    assert_eq!(p["purged"], json!([id, new_id]), "{p}");
    let page = ok(c.request("skillmem/notes", json!({ "skill": "db", "includeSuperseded": true })).unwrap());
    assert_eq!(page["total"], 0, "{page}");
    let e = err(c.request("skillmem/restore", json!({ "id": id })).unwrap());
    assert_eq!(e["code"], -32002, "{e}");
    assert_eq!(c.shutdown().unwrap(), 0);
}

/// An edit keeps the old text as a version; `skillmem versions` and `--all-versions` show it.
#[test]
fn an_edit_keeps_the_old_text_as_a_version_and_the_cli_shows_the_history() {
    let w = World::new();
    w.enabled_skill("db");
    let mut c = w.spawn();
    let id = note(&mut c, "db", "gotcha", "", "Set statement_timeout to 30s for reports.")["id"].as_i64().unwrap();
    ok(c.request("skillmem/edit", json!({ "id": id, "delta": "Set statement_timeout to 60s for reports." })).unwrap());
    assert_eq!(c.shutdown().unwrap(), 0);
    let (code, out, err_) = w.cli(&["versions", &id.to_string(), "--json"]);
    assert_eq!(code, 0, "{err_}");
    let v: Value = serde_json::from_str(&out).unwrap();
    let texts: Vec<&str> = v.as_array().unwrap().iter().map(|n| n["delta"].as_str().unwrap()).collect();
    assert_eq!(texts, ["Set statement_timeout to 30s for reports.", "Set statement_timeout to 60s for reports."]);
    // The CLI's own correction path.
    let (code, out, err_) = w.cli(&[
        "note",
        "db",
        "--kind",
        "gotcha",
        "--delta",
        "Set statement_timeout to 90s.",
        "--replaces",
        &id.to_string(),
        "--json",
    ]);
    assert_eq!(code, 0, "{err_}");
    let r: Value = serde_json::from_str(&out).unwrap();
    assert_eq!(r["status"], "replaced");
    let (_, out, _) = w.cli(&["notes", "db", "--all-versions"]);
    assert!(out.contains(&format!("replaced by note {}", r["id"])), "{out}");
    let (code, _, e) = w.cli(&["note", "db", "--kind", "gotcha", "--delta", "x y z", "--replaces", "424242"]);
    assert_ne!(code, 0);
    assert!(e.contains("no note with id 424242") && e.contains("skillmem notes"), "{e}");
    let (code, out, _) = w.cli(&["forget", &r["id"].to_string()]);
    assert_eq!(code, 0);
    assert!(out.contains("skillmem restore"), "{out}");
    let (code, _, _) = w.cli(&["restore", &r["id"].to_string()]);
    assert_eq!(code, 0);
}

/// The historian sees the notes it could correct, and its two correction lines take effect;
/// one about another skill's note is rejected with its reason.
#[test]
fn the_historian_sees_current_notes_and_can_replace_or_retire_them() {
    let w = World::new();
    let dir = w.enabled_skill("jq");
    w.enabled_skill("pdf");
    let mut c = w.spawn();
    let a = note(&mut c, "jq", "gotcha", "", "jq -r prints raw strings; without it strings keep their quotes.")["id"]
        .as_i64()
        .unwrap();
    let b = note(&mut c, "jq", "gotcha", "", "jq 1.6 crashes on --stream with large files.")["id"].as_i64().unwrap();
    let p = note(&mut c, "pdf", "gotcha", "", "pdftotext -layout keeps the columns.")["id"].as_i64().unwrap();
    let chunk = ok(c
        .request(
            "skillmem/transcriptChunk",
            json!({ "sessionId": "s1", "format": "text", "text": "U: fix the stream\nTC: skill(jq)\nT: bash jq-1.6 --stream big.json\nE: jq 1.6: Segmentation fault\nT: bash jq-1.7 --stream big.json\nA: done\n" }),
        )
        .unwrap());
    let ins = chunk["instructions"].as_str().unwrap();
    assert!(ins.contains(&format!("#{a} (gotcha)")) && ins.contains(&format!("#{b} (gotcha)")), "{ins}");
    assert!(ins.contains("replaces #<id>") && ins.contains("outdated"), "{ins}");
    let out = format!(
        "Summary.\n<skill_observations>\n* jq | gotcha | jq 1.7 fixed --stream on large files; only 1.6 crashes. | replaces #{b}\n* jq | outdated | #{a} jq now prints raw strings by default in our wrapper\n* jq | outdated | #{p} not a jq note\n</skill_observations>"
    );
    let r = ok(c.request("skillmem/historianResult", json!({ "sessionId": "s1", "output": out })).unwrap());
    assert_eq!(r["promoted"][0]["status"], "replaced", "{r}");
    assert_eq!(r["promoted"][0]["replaced"], b, "{r}");
    assert_eq!(r["retired"][0]["id"], a, "{r}");
    let rej = r["rejected"].as_array().unwrap();
    assert_eq!(rej.len(), 1, "{r}");
    assert!(rej[0]["reason"].as_str().unwrap().contains("skill \"pdf\""), "{r}");
    let blk = block_of(&load(&mut c, "c1", "jq", &dir, None));
    assert!(
        blk.contains("jq 1.7 fixed")
            && !blk.contains("crashes on --stream with large")
            && !blk.contains("keep their quotes"),
        "{blk}"
    );
    assert_eq!(c.shutdown().unwrap(), 0);
}

/// A correction is held to every rule but "restates a note": narration or a secret written
/// as `| replaces #id` is refused, and the note it named stays as it was.
#[test]
fn a_historian_correction_is_still_filtered() {
    let w = World::new();
    let dir = w.enabled_skill("jq");
    let mut c = w.spawn();
    let b = note(&mut c, "jq", "gotcha", "", "jq 1.6 crashes on --stream with large files.")["id"].as_i64().unwrap();
    ok(c.request(
        "skillmem/transcriptChunk",
        json!({ "sessionId": "s1", "format": "text", "text": "U: fix the stream\nTC: skill(jq)\nT: bash jq-1.6 --stream big.json\nE: jq 1.6: Segmentation fault\nT: bash jq-1.7 --stream big.json\nA: done\n" }),
    )
    .unwrap());
    let out = format!(
        "<skill_observations>\n* jq | gotcha | Hit the jq 1.6 crash on --stream with large files again and restarted the job. | replaces #{b}\n* jq | gotcha | jq 1.7 reads the feed with --stream once GITHUB_TOKEN=ghp_R8mKq2Lx9Vt4Wn7Pz3Yc6Bd1Fh5Js0Ga2Ue is set. | replaces #{b}\n</skill_observations>"
    );
    let r = ok(c.request("skillmem/historianResult", json!({ "sessionId": "s1", "output": out })).unwrap());
    assert_eq!(r["promoted"].as_array().unwrap().len(), 0, "{r}");
    let rej = r["rejected"].as_array().unwrap();
    assert_eq!(rej.len(), 2, "{r}");
    assert!(!r.to_string().contains("ghp_R8mKq2"), "{r}");
    let blk = block_of(&load(&mut c, "c1", "jq", &dir, None));
    assert!(blk.contains("crashes on --stream with large"), "{blk}");
    assert_eq!(c.shutdown().unwrap(), 0);
}

/// Export and import carry a note's versions: the history stays history, with its successor.
#[test]
fn export_and_import_carry_the_history() {
    let w = World::new();
    w.enabled_skill("db");
    let mut c = w.spawn();
    let old = note(&mut c, "db", "gotcha", "", "Set work_mem to 64MB for the reports.")["id"].as_i64().unwrap();
    let new = ok(replace(&mut c, "db", old, "Set work_mem to 256MB for the reports; 64MB spills to disk."));
    let gone = note(&mut c, "db", "fix", "", "Reindex after pg_upgrade or the planner picks seq scans.")["id"]
        .as_i64()
        .unwrap();
    ok(c.request("skillmem/forget", json!({ "id": gone, "reason": "pg_upgrade does it now" })).unwrap());
    assert_eq!(c.shutdown().unwrap(), 0);
    let file = w.tmp.path().join("export.jsonl");
    let (code, _, e) = w.cli(&["export", "--output", &file.display().to_string()]);
    assert_eq!(code, 0, "{e}");

    let v = World::new();
    v.enabled_skill("db");
    let (code, out, e) = v.cli(&["import", &file.display().to_string(), "--json"]);
    assert_eq!(code, 0, "{e}");
    let imported: Value = serde_json::from_str(&out).unwrap();
    assert_eq!(imported["inserted"], 3, "{imported}");
    // The notes belong to the exporting project: listed across projects.
    let (_, out, _) = v.cli(&["notes", "db", "--all-versions", "--all-projects", "--json"]);
    let page: Value = serde_json::from_str(&out).unwrap();
    let notes = page["notes"].as_array().unwrap();
    let by_text = |s: &str| notes.iter().find(|n| n["delta"].as_str().unwrap().contains(s)).unwrap().clone();
    let (old2, new2, gone2) = (by_text("64MB for"), by_text("256MB"), by_text("Reindex"));
    assert_eq!(old2["supersededBy"], new2["id"], "{page}");
    assert!(new2["retiredAt"].is_null() && old2["retiredAt"].is_i64(), "{page}");
    assert_eq!(gone2["reason"], "pg_upgrade does it now", "{page}");
    let (_, out, _) = v.cli(&["notes", "db", "--all-projects", "--json"]);
    let current: Value = serde_json::from_str(&out).unwrap();
    assert_eq!(current["total"], 1, "only the replacement is current: {current}");
    assert_eq!(
        current["notes"][0]["delta"],
        new["id"].as_i64().map(|_| "Set work_mem to 256MB for the reports; 64MB spills to disk.").unwrap()
    );
    let _ = new;
}

/// The demo (README's first command) plays a whole session, a correction included.
#[test]
fn the_demo_plays_a_session_with_a_duplicate_and_a_correction() {
    let w = World::new();
    let (code, out, e) = w.cli(&["demo"]);
    assert_eq!(code, 0, "{e}");
    for want in
        ["\"status\": \"duplicate\"", "\"status\": \"replaced\"", "<skill-memory", "written=", "exited with code 0"]
    {
        assert!(out.contains(want), "{want} missing from the demo's output");
    }
}

/// A restatement in other capitals and spacing is the same lesson: answered `duplicate` with
/// the first note's id, never a conflicting pair; another flag's case is another lesson.
#[test]
fn a_restatement_in_other_capitals_and_spacing_is_a_duplicate() {
    let w = World::new();
    let dir = w.enabled_skill("shell");
    let mut c = w.spawn();
    let first = note(&mut c, "shell", "gotcha", "", "Use jq -r for raw strings when assigning to shell variables.");
    let again = note(&mut c, "shell", "gotcha", "", "Use JQ  -r for raw strings when assigning to  shell variables.");
    assert_eq!(again["status"], "duplicate", "{again}");
    assert_eq!(again["id"], first["id"], "{again}");
    assert!(again.get("conflictsWith").is_none_or(Value::is_null), "{again}");
    let a = note(&mut c, "shell", "gotcha", "", "List the tree with ls -R before copying it.");
    let b = note(&mut c, "shell", "gotcha", "", "List the tree with ls -r before copying it.");
    assert_eq!(b["status"], "inserted", "ls -R is not ls -r: {b}");
    assert_ne!(a["id"], b["id"]);
    let r = load(&mut c, "c1", "shell", &dir, None);
    assert_eq!(r["noteIds"].as_array().unwrap().len(), 3, "{r}");
    assert_eq!(c.shutdown().unwrap(), 0);
}

/// Pinned notes come first, always: a pinned note that is the older of a conflicting pair
/// keeps first place, and names the newer one.
#[test]
fn a_pinned_older_version_keeps_first_place() {
    let w = World::new();
    let dir = w.enabled_skill("release");
    let mut c = w.spawn();
    let old = note(&mut c, "release", "gotcha", "push tags", "Always pass --no-verify when pushing release tags.");
    let old = old["id"].as_i64().unwrap();
    ok(c.request("skillmem/pin", json!({ "id": old })).unwrap());
    let new = note(&mut c, "release", "gotcha", "push tags", "Never pass --no-verify when pushing release tags.");
    assert_eq!(new["conflictsWith"], old, "{new}");
    let new = new["id"].as_i64().unwrap();
    let r = load(&mut c, "c1", "release", &dir, Some("push release tags"));
    assert_eq!(r["noteIds"], json!([old, new]), "{r}");
    let b = block_of(&r);
    assert!(b.contains("pinned=\"true\" written=") && b.contains(&format!("newer=\"{new}\"")), "{b}");
    assert_eq!(c.shutdown().unwrap(), 0);
}

/// Two versions of one pin that name the same version numbers in swapped roles are a
/// conflicting pair, and the newer leads.
#[test]
fn a_pin_with_swapped_versions_is_a_new_version() {
    let w = World::new();
    let dir = w.enabled_skill("deps");
    let mut c = w.spawn();
    let cases = [
        (
            "Pin serde_yaml to 0.8; 0.9 breaks the parser.",
            "Pin serde_yaml to 0.9; 0.8 is unmaintained and 0.9 fixed the parser.",
        ),
        (
            "Upload artifacts with actions/upload-artifact@v4; v3 is deprecated.",
            "Upload artifacts with actions/upload-artifact@v3; v4 breaks our merge step.",
        ),
    ];
    for (i, (older, newer)) in cases.into_iter().enumerate() {
        let o = note(&mut c, "deps", "gotcha", "", older);
        let n = note(&mut c, "deps", "gotcha", "", newer);
        assert_eq!(n["status"], "inserted", "{n}");
        assert_eq!(n["conflictsWith"], o["id"], "{newer} updates {older}: {n}");
        let (o, n) = (o["id"].as_i64().unwrap(), n["id"].as_i64().unwrap());
        let r = load(&mut c, &format!("c{i}"), "deps", &dir, Some(older));
        let ids: Vec<i64> = r["noteIds"].as_array().unwrap().iter().map(|v| v.as_i64().unwrap()).collect();
        let at = |id: i64| ids.iter().position(|x| *x == id).unwrap_or_else(|| panic!("{id} not in {r}"));
        assert_eq!(at(n) + 1, at(o), "the newer leads, the older right after it: {r}");
    }
    assert_eq!(c.shutdown().unwrap(), 0);
}

/// Distinct lessons of one skill that share a tool or a flag are not versions of each other:
/// every note of the committed recall sets (all distinct lessons), written through the
/// protocol, is inserted with no conflicting pair.
#[test]
fn distinct_lessons_are_not_flagged_as_versions() {
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR"));
    for set in [
        "bench/recall-set-b.json",
        "bench/recall-set-c.json",
        "bench/recall-set-d.json",
        "tests/fixtures/recall-own.json",
    ] {
        let w = World::new();
        let data: Value = serde_json::from_str(&std::fs::read_to_string(root.join(set)).unwrap()).unwrap();
        let mut c = w.spawn();
        let mut flagged = vec![];
        let mut written = 0;
        for skill in data["skills"].as_array().unwrap() {
            let name = skill["name"].as_str().unwrap();
            w.enabled_skill(name);
            let mut deltas = std::collections::HashMap::new();
            for n in skill["notes"].as_array().unwrap() {
                let delta = n["delta"].as_str().unwrap();
                let r = note(&mut c, name, n["kind"].as_str().unwrap(), n["intent"].as_str().unwrap(), delta);
                assert_eq!(r["status"], "inserted", "{set}: {delta}: {r}");
                if let Some(old) = r["conflictsWith"].as_i64() {
                    flagged.push(format!("{:?}\n   after {:?}", delta, deltas[&old]));
                }
                deltas.insert(r["id"].as_i64().unwrap(), delta.to_string());
                written += 1;
            }
        }
        assert!(written >= 50, "{set}: {written}");
        assert!(
            flagged.is_empty(),
            "{set}: {} distinct lessons flagged as versions:\n{}",
            flagged.len(),
            flagged.join("\n")
        );
        assert_eq!(c.shutdown().unwrap(), 0);
    }
}
