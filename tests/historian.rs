//! End to end over a real `skillmem serve`: transcript chunks, historian promotion, scopes,
//! skill versions, distill after switching embedders, stats, and the CLI doors to them.

mod common;

use std::path::Path;

use common::*;
use serde_json::{json, Value};
use skillmem::client::Client;
use skillmem::historian::transcript::records_from_jsonl;

fn fixture(name: &str) -> String {
    std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures").join(name)).unwrap()
}

fn chunk(c: &mut Client, params: Value) -> Value {
    ok(c.request("skillmem/transcriptChunk", params).unwrap())
}

fn promote(c: &mut Client, output: &str) -> Value {
    ok(c.request("skillmem/historianResult", json!({ "sessionId": "s1", "output": output })).unwrap())
}

fn strs(v: &Value) -> Vec<String> {
    v.as_array().unwrap().iter().map(|x| x.as_str().unwrap().to_string()).collect()
}

fn recall(c: &mut Client, skill: &str, intent: &str) -> Value {
    ok(c.request("skillmem/recall", json!({ "skill": skill, "intent": intent })).unwrap())
}

fn recalled_ids(r: &Value) -> Vec<i64> {
    r["notes"].as_array().unwrap().iter().map(|n| n["id"].as_i64().unwrap()).collect()
}

#[test]
fn claude_code_fixture_renders_markers_errors_and_instructions() {
    let w = World::new();
    w.enabled_skill("jq");
    w.skill("pdf", "---\nname: pdf\ndescription: no memory\n---\n# pdf\n");
    let mut c = w.spawn();
    let records = records_from_jsonl(&fixture("claude-code-session.jsonl"));
    let r = chunk(&mut c, json!({ "sessionId": "s1", "format": "claude-code", "messages": records }));
    assert_eq!(r["rendered"].as_str().unwrap(), fixture("claude-code-session.rendered.txt"));
    let rendered = r["rendered"].as_str().unwrap();
    for want in [
        "TC: skill(jq)\n",
        "TC: skill(pdf)\n",
        "E: Exit code 5: jq: error (at users.json:12): Cannot iterate over null (null)\n",
        "U: No, the ids must be printed as raw strings",
        "U: /pdf report.pdf\n",
    ] {
        assert!(rendered.contains(want), "{want:?} missing from\n{rendered}");
    }
    assert!(!rendered.contains("Use jq to query JSON"), "the skill body is not rendered");
    assert_eq!(strs(&r["skills"]), vec!["jq", "pdf"]);
    let instructions = r["instructions"].as_str().unwrap();
    assert!(instructions.contains("future sessions: jq."), "{instructions}");
    assert!(instructions.contains("* <skill> | <kind> | <lesson>"));
    let skipped = strs(&r["skipped"]).join("\n");
    assert!(skipped.contains("record 17: not valid JSON"), "{skipped}");
    assert!(skipped.contains("unknown type \"telemetry-blob\""), "{skipped}");

    // The same chunk as raw JSONL text renders the same.
    let raw = chunk(
        &mut c,
        json!({ "sessionId": "s1", "format": "claude-code", "text": fixture("claude-code-session.jsonl") }),
    );
    assert_eq!(raw["rendered"], r["rendered"]);
}

#[test]
fn opencode_fixture_and_text_format() {
    let w = World::new();
    w.enabled_skill("dates");
    let mut c = w.spawn();
    let messages: Value = serde_json::from_str(&fixture("opencode-messages.json")).unwrap();
    let r = chunk(&mut c, json!({ "sessionId": "s1", "format": "opencode", "messages": messages }));
    assert_eq!(r["rendered"].as_str().unwrap(), fixture("opencode-messages.rendered.txt"));
    assert_eq!(strs(&r["skills"]), vec!["dates"]);
    assert!(r["rendered"].as_str().unwrap().contains("E: date: invalid date '@1759312800000'\n"));
    assert!(r["instructions"].as_str().unwrap().contains("dates"));
    assert!(strs(&r["skipped"]).iter().any(|s| s.contains("hologram")));

    // Text: markers are detected, not added.
    let text = "U: convert\nTC: skill(dates)\nA: done\nTC: skill(unknown-skill)\n";
    let r = chunk(&mut c, json!({ "sessionId": "s1", "format": "text", "text": text }));
    assert_eq!(r["rendered"], text);
    assert_eq!(strs(&r["skills"]), vec!["dates", "unknown-skill"]);
    assert!(r["instructions"].as_str().unwrap().contains("future sessions: dates."));

    // No skill with memory enabled: no instructions.
    let r = chunk(&mut c, json!({ "sessionId": "s1", "format": "text", "text": "TC: skill(unknown-skill)\n" }));
    assert_eq!(r["instructions"], "");
    let r = chunk(&mut c, json!({ "sessionId": "s1", "format": "text", "text": "U: hello\n" }));
    assert_eq!(r["instructions"], "");
    assert_eq!(r["skills"], json!([]));
}

#[test]
fn bad_input_is_reported_never_fatal() {
    let w = World::new();
    w.enabled_skill("jq");
    let mut c = w.spawn();
    let e = err(c
        .request("skillmem/transcriptChunk", json!({ "sessionId": "s1", "format": "markdown", "text": "x" }))
        .unwrap());
    assert_eq!(e["code"], -32602);
    assert_eq!(e["data"]["kind"], "invalidParams");
    assert!(e["message"].as_str().unwrap().contains("markdown"));
    let e = err(c.request("skillmem/transcriptChunk", json!({ "sessionId": "s1" })).unwrap());
    assert_eq!(e["code"], -32602);

    let garbage = json!([null, 1, "{\"type\":", [], {"type": "user", "message": {"content": {"weird": true}}},
        {"type": "assistant", "message": {"content": [{"type": "tool_use", "name": "Skill", "input": {"skill": "../../etc"}}]}},
        {"type": "user", "isMeta": true, "sourceToolUseID": 5, "message": {"content": "Base directory for this skill: \u{0}"}},
        {"info": {"role": "assistant"}, "parts": [{"type": "tool", "tool": "skill", "state": "broken"}, {"type": "tool", "state": {"status": "error", "error": {"deep": [1]}}}]},
        {"type": "user", "message": {"content": "x".repeat(100_000)}}]);
    for format in ["claude-code", "opencode", "text"] {
        let r = chunk(&mut c, json!({ "sessionId": "s1", "format": format, "messages": garbage }));
        assert!(r["rendered"].is_string(), "{format}: {r}");
        assert!(!strs(&r["skipped"]).is_empty(), "{format}: {r}");
        assert!(r["rendered"].as_str().unwrap().len() < 10_000, "{format}: long texts are cut");
    }

    // An output without a block promotes nothing; garbage outputs neither.
    for output in [
        "",
        "Summary: the agent fixed the jq filter.\n* jq | fix | not in a block",
        "<skill_observations",
        "\u{0}<<>>&&&;",
    ] {
        let r = promote(&mut c, output);
        assert_eq!(r["promoted"], json!([]), "{output:?}");
        assert_eq!(r["rejected"], json!([]), "{output:?}");
    }
    // Still serving.
    assert_eq!(c.shutdown().unwrap(), 0);
}

const OUTPUT: &str = "Summary: the agent extracted ids with jq and hit a null array.

<skill_observations>
* jq | fix | When jq says Cannot iterate over null, guard the array with `.users[]?` instead of `.users[]`.
* jq | gotcha | Numbers print as JSON; use -r with tostring when raw strings are wanted | even for ids.

* jq | tip | kinds are checked
* jq | workflow |
* Not A Skill | gotcha | names are checked
* pdf | gotcha | memory must be enabled for the skill
* nowhere | gotcha | the skill must exist
just prose, not an observation
* jq | discovery | entities &lt;are&gt; unescaped &amp; kept
</skill_observations>

<skill_observations>
* jq | fix | a second block is ignored
</skill_observations>";

#[test]
fn promotion_scopes_duplicates_and_vector_recall() {
    let w = World::new();
    w.enabled_skill("jq");
    w.skill("pdf", "---\nname: pdf\ndescription: no memory\n---\n# pdf\n");
    let mut a = w.spawn_with(json!({ "projectId": "proj-a" }));
    let r = promote(&mut a, OUTPUT);
    let promoted = r["promoted"].as_array().unwrap();
    assert_eq!(promoted.len(), 3, "{r}");
    for p in promoted {
        assert_eq!(p["status"], "inserted");
        assert_eq!(p["scope"], "global");
        assert_eq!(p["originProject"], "proj-a");
        assert_eq!(p["skill"], "jq");
    }
    assert_eq!(
        promoted[1]["delta"],
        "Numbers print as JSON; use -r with tostring when raw strings are wanted | even for ids."
    );
    assert_eq!(promoted[2]["delta"], "entities <are> unescaped & kept");
    let rejected = r["rejected"].as_array().unwrap();
    let reasons: Vec<(&str, &str)> =
        rejected.iter().map(|x| (x["line"].as_str().unwrap(), x["reason"].as_str().unwrap())).collect();
    assert_eq!(reasons.len(), 6, "{reasons:#?}");
    assert!(reasons[0].1.contains("kind \"tip\""), "{reasons:?}");
    assert!(reasons[1].1.contains("lesson is empty") || reasons[1].1.contains("does not match"), "{reasons:?}");
    assert!(reasons[2].1.contains("not a valid skill name"), "{reasons:?}");
    assert!(reasons[3].1.contains("does not match"), "{reasons:?}");
    assert!(reasons.iter().any(|(l, why)| l.contains("pdf") && why.contains("memory is not enabled")), "{reasons:?}");
    assert!(reasons.iter().any(|(l, why)| l.contains("nowhere") && why.contains("no SKILL.md")), "{reasons:?}");

    // The same output again: duplicates, same ids.
    let again = promote(&mut a, OUTPUT);
    for (p, q) in promoted.iter().zip(again["promoted"].as_array().unwrap()) {
        assert_eq!(q["status"], "duplicate");
        assert_eq!(q["id"], p["id"]);
    }
    // A near-duplicate (one word more) is found by its vector, in the same partition.
    let near = promote(
        &mut a,
        "<skill_observations>\n* jq | fix | When jq says Cannot iterate over null, guard the array with `.users[]?` instead of `.users[]` please.\n</skill_observations>",
    );
    assert_eq!(near["promoted"][0]["status"], "duplicate", "{near}");
    assert_eq!(near["promoted"][0]["id"], promoted[0]["id"]);
    // Embedded at write: a paraphrased intent sharing a few words finds it by vector.
    let r = recall(&mut a, "jq", "iterate over a null array");
    assert_eq!(r["mode"], "vector", "{r}");
    assert_eq!(recalled_ids(&r)[0], promoted[0]["id"].as_i64().unwrap());

    // A project note in A, and the same lesson as a global note: one scope, one partition each.
    let lesson = "Pipe through sort -u to drop repeated ids.";
    let pn = ok(a.request("skillmem/note", json!({ "skill": "jq", "kind": "discovery", "delta": lesson })).unwrap());
    let gn = ok(a
        .request("skillmem/note", json!({ "skill": "jq", "kind": "discovery", "delta": lesson, "scope": "global" }))
        .unwrap());
    assert_eq!(pn["status"], "inserted");
    assert_eq!(gn["status"], "inserted");
    assert_ne!(pn["id"], gn["id"]);
    a.shutdown().unwrap();

    // Another project on the same data directory sees the global notes, not A's project note.
    let mut b = w.spawn_with(json!({ "projectId": "proj-b" }));
    let r = recall(&mut b, "jq", "drop repeated ids with sort");
    let ids = recalled_ids(&r);
    assert!(ids.contains(&gn["id"].as_i64().unwrap()), "{r}");
    assert!(!ids.contains(&pn["id"].as_i64().unwrap()), "{r}");
    let r = recall(&mut b, "jq", "iterate over a null array");
    assert!(recalled_ids(&r).contains(&promoted[0]["id"].as_i64().unwrap()), "{r}");
    // Promoting the same lesson from B finds A's global note and keeps its origin.
    let r = promote(&mut b, OUTPUT);
    assert_eq!(r["promoted"][0]["status"], "duplicate");
    assert_eq!(r["promoted"][0]["originProject"], "proj-a");
    let stats = ok(b.request("skillmem/stats", json!({})).unwrap());
    assert_eq!(stats["notes"], 4, "{stats}");
    b.shutdown().unwrap();

    // The origin is stored for global notes.
    let conn = rusqlite::Connection::open(w.data.join("skillmem.db")).unwrap();
    let origin: String = conn
        .query_row("SELECT origin_project FROM notes WHERE id = ?1", [promoted[0]["id"].as_i64().unwrap()], |r| {
            r.get(0)
        })
        .unwrap();
    assert_eq!(origin, "proj-a");
}

#[test]
fn project_promote_scope_stays_in_the_project() {
    let w = World::new();
    w.enabled_skill("jq");
    let mut a = w.spawn_with(json!({ "projectId": "proj-a", "historian": { "promoteScope": "project" } }));
    let r = promote(
        &mut a,
        "<skill_observations>\n* jq | fix | Guard null arrays with .[]? in jq filters.\n</skill_observations>",
    );
    assert_eq!(r["promoted"][0]["scope"], "project");
    let id = r["promoted"][0]["id"].as_i64().unwrap();
    assert_eq!(recalled_ids(&recall(&mut a, "jq", "null arrays")), vec![id]);
    a.shutdown().unwrap();
    let mut b = w.spawn_with(json!({ "projectId": "proj-b" }));
    let r = recall(&mut b, "jq", "null arrays");
    assert_eq!(r["notes"], json!([]), "{r}");
    b.shutdown().unwrap();
}

#[test]
fn a_changed_skill_marks_older_notes_until_revalidated() {
    let w = World::new();
    let dir = w.enabled_skill("jq");
    let mut c = w.spawn();
    let lesson = "Use -r to print raw strings instead of JSON-quoted ones.";
    let first = note(&mut c, "jq", "gotcha", "print raw strings", lesson);
    let r = load(&mut c, "c1", "jq", &dir, Some("raw strings"));
    let block = r["append"].as_str().unwrap();
    assert!(!block.contains("skill_version"), "{block}");

    // The skill changes: the note is marked and one line says so.
    std::fs::write(dir.join("SKILL.md"), format!("{}\nNew section.\n", ENABLED.replace("NAME", "jq"))).unwrap();
    let r = load(&mut c, "c2", "jq", &dir, Some("raw strings"));
    let block = r["append"].as_str().unwrap();
    assert!(block.contains("skill_version=\"older\""), "{block}");
    assert!(block.contains("written for an earlier version of this skill"), "{block}");

    // A file beside SKILL.md counts too; a dotfile does not.
    std::fs::write(dir.join(".cache"), "x").unwrap();
    // A duplicate write re-validates the note against the current version.
    let again = note(&mut c, "jq", "gotcha", "print raw strings", lesson);
    assert_eq!(again["status"], "duplicate");
    assert_eq!(again["id"], first["id"]);
    let r = load(&mut c, "c3", "jq", &dir, Some("raw strings"));
    assert!(!r["append"].as_str().unwrap().contains("skill_version"), "{r}");

    std::fs::create_dir_all(dir.join("scripts")).unwrap();
    std::fs::write(dir.join("scripts/run.sh"), "echo").unwrap();
    let r = load(&mut c, "c4", "jq", &dir, Some("raw strings"));
    assert!(r["append"].as_str().unwrap().contains("skill_version=\"older\""), "{r}");
    // And a historian promotion of the same lesson re-validates it too: promotion is global by
    // default and the note is a project note, but a restatement of a note the session can be
    // shown is a hit on that note, in its own scope, not a second note.
    let r = promote(&mut c, &format!("<skill_observations>\n* jq | gotcha | {lesson}\n</skill_observations>"));
    assert_eq!(r["promoted"].as_array().unwrap().len(), 1, "{r}");
    assert_eq!(r["promoted"][0]["status"], "duplicate");
    assert_eq!(r["promoted"][0]["id"], first["id"]);
    assert_eq!(r["promoted"][0]["scope"], "project");
    let distill = ok(c.request("skillmem/distill", json!({})).unwrap());
    assert_eq!(distill["report"]["olderVersion"], 0, "{distill}");
    c.shutdown().unwrap();
}

#[test]
fn distill_after_switching_embedders_with_progress() {
    let w = World::new();
    w.enabled_skill("jq");
    let mut off = w.spawn_with(json!({ "embedding": { "provider": "off" } }));
    note(&mut off, "jq", "gotcha", "raw output", "Use -r to print raw strings instead of JSON-quoted ones.");
    note(&mut off, "jq", "gotcha", "raw output", "Use -r to print raw strings instead of JSON quoted ones please.");
    note(&mut off, "jq", "fix", "null arrays", "Guard arrays that may be null with .[]? in filters.");
    promote(&mut off, "<skill_observations>\n* jq | workflow | Validate the input with jq empty before a long filter.\n</skill_observations>");
    let pin = ok(off.request("skillmem/pin", json!({ "id": 1, "pinned": true })).unwrap());
    assert_eq!(pin["id"], 1);
    // Two notes surface (a block holds every note it has room for, so the limit keeps two).
    let r = ok(off
        .request("skillmem/recall", json!({ "skill": "jq", "intent": "print raw strings", "limit": 2 }))
        .unwrap());
    assert_ne!(r["mode"], "vector");
    assert_eq!(r["notes"].as_array().unwrap().len(), 2, "{r}");
    off.shutdown().unwrap();

    let mut c = w.spawn();
    let stats = ok(c.request("skillmem/stats", json!({})).unwrap());
    assert_eq!(stats["embedding"]["stale"], 4, "{stats}");
    assert!(stats["embedding"]["model"].as_str().unwrap().starts_with("static:minilm-l6-v2#256-"), "{stats}");
    assert_eq!(stats["embedding"]["dim"], 256);

    let r = ok(c.request("skillmem/distill", json!({ "workDoneToken": "tok-1", "batchSize": 3 })).unwrap());
    assert_eq!(r["reembedded"], 4, "{r}");
    let report = &r["report"];
    assert_eq!(report["staleVectors"], 0);
    assert_eq!(report["notes"], 4);
    assert_eq!(report["bySkill"], json!({ "jq": 4 }));
    assert_eq!(report["byScope"], json!({ "global": 1, "project": 3 }));
    assert_eq!(report["bySource"], json!({ "agent": 3, "historian": 1 }));
    assert_eq!(report["byKind"], json!({ "fix": 1, "gotcha": 2, "workflow": 1 }));
    assert_eq!(report["pinned"], 1);
    // The recall with embedding off surfaced notes 1 and 2.
    assert_eq!(report["neverRecalled"], 2);
    let dups = report["duplicates"].as_array().unwrap();
    assert_eq!(dups.len(), 1, "{report}");
    assert_eq!((dups[0]["a"].as_i64(), dups[0]["b"].as_i64()), (Some(1), Some(2)));

    // The index learnt the new vectors: recall is by vector now, without a restart.
    let r = recall(&mut c, "jq", "print raw strings");
    assert_eq!(r["mode"], "vector", "{r}");
    let stats = ok(c.request("skillmem/stats", json!({})).unwrap());
    assert_eq!(stats["embedding"]["stale"], 0);

    let progress: Vec<&Value> =
        c.notifications.iter().filter(|n| n["method"] == "$/progress" && n["params"]["token"] == "tok-1").collect();
    let kinds: Vec<&str> = progress.iter().map(|n| n["params"]["value"]["kind"].as_str().unwrap()).collect();
    assert_eq!(kinds.first(), Some(&"begin"), "{progress:?}");
    assert_eq!(kinds.last(), Some(&"end"), "{progress:?}");
    assert!(kinds.iter().filter(|k| **k == "report").count() >= 2, "{progress:?}");
    let last_report = progress.iter().rev().find(|n| n["params"]["value"]["kind"] == "report").unwrap();
    assert_eq!(last_report["params"]["value"]["message"], "4/4 notes");
    assert_eq!(last_report["params"]["value"]["percentage"], 100);
    // Nothing left: a second distill re-embeds nothing; without a token, no progress.
    let before = c.notifications.len();
    let r = ok(c.request("skillmem/distill", Value::Null).unwrap());
    assert_eq!(r["reembedded"], 0);
    assert!(c.notifications[before..].iter().all(|n| n["method"] != "$/progress"));
    let e = err(c.request("skillmem/distill", json!({ "workDoneToken": { "no": 1 } })).unwrap());
    assert_eq!(e["code"], -32602);
    c.shutdown().unwrap();
}

#[test]
fn stats_counts_what_the_project_sees() {
    let w = World::new();
    w.enabled_skill("jq");
    w.enabled_skill("pdf");
    let mut a = w.spawn_with(json!({ "projectId": "proj-a" }));
    let n1 = note(&mut a, "jq", "gotcha", "raw", "Use -r for raw strings.");
    note(&mut a, "jq", "fix", "null", "Guard null arrays with .[]? in filters.");
    note(&mut a, "pdf", "discovery", "text", "pdftotext -layout keeps table columns aligned.");
    promote(&mut a, "<skill_observations>\n* pdf | gotcha | Scanned PDFs have no text layer; OCR them first.\n</skill_observations>");
    ok(a.request("skillmem/pin", json!({ "id": n1["id"], "pinned": true })).unwrap());
    recall(&mut a, "jq", "raw strings");
    let s = ok(a.request("skillmem/stats", json!({})).unwrap());
    assert_eq!(s["projectId"], "proj-a");
    assert_eq!(s["notes"], 4);
    assert_eq!(s["pinned"], 1);
    let jq = s["skills"].as_array().unwrap().iter().find(|k| k["skill"] == "jq").unwrap().clone();
    assert_eq!(jq["notes"], 2);
    assert_eq!(jq["pinned"], 1);
    assert!(jq["recalls"].as_i64().unwrap() >= 1, "{s}");
    assert_eq!(s["embedding"]["stale"], 0);
    // Another project's view, asked from A: only the global note.
    let other = ok(a.request("skillmem/stats", json!({ "projectId": "proj-b" })).unwrap());
    assert_eq!(other["notes"], 1, "{other}");
    a.shutdown().unwrap();
}

#[test]
fn cli_chunk_observe_distill() {
    let w = World::new();
    w.enabled_skill("jq");
    let fx = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures");
    let file = fx.join("claude-code-session.jsonl");
    let (code, out, errs) = w.cli(&["chunk", "--format", "claude-code", file.to_str().unwrap()]);
    assert_eq!(code, 0, "{errs}");
    assert!(out.contains("TC: skill(jq)\n"), "{out}");
    assert!(out.contains("--- instructions for the historian"), "{out}");
    assert!(errs.contains("skipped: record 17"), "{errs}");
    let (code, out, _) =
        w.cli(&["chunk", "--json", "--format", "opencode", fx.join("opencode-messages.json").to_str().unwrap()]);
    assert_eq!(code, 0);
    let v: Value = serde_json::from_str(&out).unwrap();
    assert_eq!(v["skills"], json!(["dates"]));
    assert_eq!(v["instructions"], "");
    let (code, _, errs) = w.cli(&["chunk", "--format", "yaml", file.to_str().unwrap()]);
    assert_ne!(code, 0);
    assert!(errs.contains("possible values: claude-code, opencode, text"), "{errs}");

    // stdin
    let mut child = std::process::Command::new(env!("CARGO_BIN_EXE_skillmem"))
        .args(["chunk", "--json", "--format", "text", "-"])
        .current_dir(&w.ws)
        .envs(w.envs())
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    use std::io::Write;
    child.stdin.take().unwrap().write_all(b"U: hi\nTC: skill(jq)\n").unwrap();
    let out = child.wait_with_output().unwrap();
    let v: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(v["skills"], json!(["jq"]));

    let obs = w.tmp.path().join("historian.txt");
    std::fs::write(&obs, OUTPUT).unwrap();
    let (code, out, errs) = w.cli(&["observe", obs.to_str().unwrap()]);
    assert_eq!(code, 0, "{errs}");
    assert!(out.starts_with("promoted 3"), "{out}");
    assert!(out.contains("rejected 6"), "{out}");
    let (code, out, _) = w.cli(&["observe", "--json", obs.to_str().unwrap()]);
    assert_eq!(code, 0);
    let v: Value = serde_json::from_str(&out).unwrap();
    assert_eq!(v["promoted"][0]["status"], "duplicate");

    let (code, out, errs) = w.cli(&["distill"]);
    assert_eq!(code, 0, "{errs}");
    assert!(out.contains("re-embedded 0 notes"), "{out}");
    assert!(out.contains("by source  historian 3"), "{out}");
    let (code, out, _) = w.cli(&["distill", "--json"]);
    assert_eq!(code, 0);
    let v: Value = serde_json::from_str(&out).unwrap();
    assert_eq!(v["report"]["notes"], 3);
    let (code, out, _) = w.cli(&["stats", "--json"]);
    assert_eq!(code, 0);
    let v: Value = serde_json::from_str(&out).unwrap();
    assert_eq!(v["notes"], 3);
    assert_eq!(v["embedding"]["stale"], 0);
}

#[test]
fn a_skill_outside_the_usual_folders_is_learnt_from_the_transcript() {
    let w = World::new();
    let dir = w.tmp.path().join("plugins/cache/tools/skills/csv");
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(dir.join("SKILL.md"), ENABLED.replace("NAME", "csv")).unwrap();
    let mut c = w.spawn();
    let before =
        promote(&mut c, "<skill_observations>\n* csv | gotcha | Quote fields that hold commas.\n</skill_observations>");
    assert_eq!(before["promoted"], json!([]), "unknown until a transcript names its folder: {before}");
    let records = json!([
        {"type": "assistant", "message": {"content": [{"type": "tool_use", "id": "t1", "name": "Skill", "input": {"skill": "tools:csv"}}]}},
        {"type": "user", "isMeta": true, "sourceToolUseID": "t1",
         "message": {"content": [{"type": "text", "text": format!("Base directory for this skill: {}\n\n# csv", dir.display())}]}}
    ]);
    let r = chunk(&mut c, json!({ "sessionId": "s1", "format": "claude-code", "messages": records }));
    assert_eq!(strs(&r["skills"]), vec!["csv"]);
    assert!(r["instructions"].as_str().unwrap().contains("csv"), "{r}");
    let after = promote(
        &mut c,
        "<skill_observations>\n* csv | gotcha | Quote fields that hold commas.\n* csv | gotcha | quote fields that hold commas\n</skill_observations>",
    );
    assert_eq!(after["promoted"][0]["status"], "inserted", "{after}");
    assert_eq!(after["promoted"].as_array().unwrap().len(), 1, "{after}");
    assert_eq!(after["rejected"][0]["reason"], "repeats an earlier line of this block");
    c.shutdown().unwrap();
}

const JQ_SKILL: &str = "---\nname: jq\ndescription: JSON on the command line\nskill-memory:\n  enabled: true\n---\n# jq\n\n- Use `-r` to print raw strings without JSON quotes.\n- Run `jq empty file.json` to check that a file is valid JSON before filtering it.\n";

/// Issue 25's first scenario: a block after a chunk that used one skill, with three lessons
/// and the six kinds of junk summarisers write; and a restatement of a note counted as a hit.
#[test]
fn the_promotion_filter_keeps_lessons_and_refuses_junk_with_reasons() {
    let w = World::new();
    w.skill("jq", JQ_SKILL);
    w.enabled_skill("pdf");
    let mut c = w.spawn();
    let rendered = chunk(
        &mut c,
        json!({ "sessionId": "s1", "format": "text", "text": "U: ids please\nTC: skill(jq)\nT: bash jq '.users[] | .id' in.json\nE: jq: error: Cannot iterate over null\nT: bash jq '.users[]? | .id' in.json\nT: bash jq --arg id 7 'select(.id == $id)' in.json\nT: bash jq '.n = 1' file > file\nA: fixed\n" }),
    );
    assert_eq!(strs(&rendered["skills"]), vec!["jq"]);
    let long = format!("* jq | gotcha | {}", "When the input varies, check its type before counting, because length counts keys of objects and characters of strings. ".repeat(10));
    let output = format!(
        "<summary>Extracted the ids.</summary>\n<skill_observations>\n\
* jq | fix | When jq says Cannot iterate over null, guard the array with `.users[]?` instead of `.users[]`.\n\
* jq | gotcha | `--arg` always passes a string, so `select(.id == $id)` never matches a number; use `--argjson`.\n\
* jq | workflow | Write the result to a temporary file and move it: `jq ... file > file` truncates the file first.\n\
* jq | workflow | Ran the test suite, all tests passed.\n\
* jq | discovery | The export at /home/dana/work/export.json has 48,213 rows under `.data.rows[]`.\n\
* jq | discovery | Use `-r` to print raw strings without JSON quotes.\n\
* jq | gotcha | export GITHUB_TOKEN=ghp_4f9Kq2LmZ8xR1vT7bN3cW6yH0pJ5sD2eA9uQ before calling the API.\n\
* pdf | gotcha | `pdftotext -layout` keeps the columns of a two-column page apart.\n\
{long}\n</skill_observations>\n"
    );
    let r = promote(&mut c, &output);
    let promoted = r["promoted"].as_array().unwrap();
    assert_eq!(promoted.len(), 3, "{r:#}");
    assert!(promoted.iter().all(|p| p["status"] == "inserted" && p["skill"] == "jq"), "{r:#}");
    let rejected = r["rejected"].as_array().unwrap();
    let reasons: Vec<&str> = rejected.iter().map(|x| x["reason"].as_str().unwrap()).collect();
    assert_eq!(reasons.len(), 6, "{reasons:#?}");
    for (want, i) in [
        ("routine progress", 0),
        ("bound to this task (a home folder (/home/dana/work/export.json))", 1),
        ("restates the skill's own SKILL.md", 2),
        ("holds a secret (a GitHub token)", 3),
        ("the session's chunk did not use skill \"pdf\"", 4),
        ("longer than a lesson (400 at most", 5),
    ] {
        assert!(reasons[i].contains(want), "{i}: {want:?} not in {:?}", reasons[i]);
    }
    // The secret is reported redacted, and is nowhere in the store.
    let secret_line = rejected[3]["line"].as_str().unwrap();
    assert!(secret_line.contains("[redacted: a GitHub token]") && !secret_line.contains("ghp_4f9K"), "{secret_line}");
    let all = ok(c.request("skillmem/notes", json!({})).unwrap());
    assert!(!all.to_string().contains("ghp_4f9K"), "{all}");
    assert_eq!(all["total"], 3, "{all}");

    // A paraphrase of a note the session can be shown is a hit on that note, not a new one.
    let again = promote(
        &mut c,
        "<skill_observations>\n* jq | fix | When jq reports Cannot iterate over null, guard the array with `.users[]?` rather than `.users[]`.\n</skill_observations>",
    );
    assert_eq!(again["promoted"][0]["status"], "duplicate", "{again}");
    assert_eq!(again["promoted"][0]["id"], promoted[0]["id"]);
    let all = ok(c.request("skillmem/notes", json!({})).unwrap());
    assert_eq!(all["total"], 3, "{all}");

    // A sentence of SKILL.md said again in other words, naming nothing it does not name, is
    // refused as one said in the same words; one that adds a flag is a lesson.
    let reworded = promote(
        &mut c,
        "<skill_observations>\n* jq | workflow | Validate a JSON file first by running `jq empty file.json` on it.\n\
* jq | workflow | Validate a JSON file first by running `jq empty file.json` on it; add --seq for record streams.\n</skill_observations>",
    );
    assert!(
        reworded["rejected"][0]["reason"].as_str().unwrap_or("").contains("restates the skill's own SKILL.md"),
        "{reworded}"
    );
    assert_eq!(reworded["promoted"].as_array().map(Vec::len), Some(1), "{reworded}");

    // Without a chunk rendered for the session, the unused-skill rule does not apply.
    let other = ok(c
        .request(
            "skillmem/historianResult",
            json!({ "sessionId": "s2", "output": "<skill_observations>\n* pdf | gotcha | `pdftotext -layout` keeps the columns of a two-column page apart.\n</skill_observations>" }),
        )
        .unwrap());
    assert_eq!(other["promoted"].as_array().unwrap().len(), 1, "{other}");
    c.shutdown().unwrap();
}

/// Secrets never reach the store through the note tool (redacted, and the result says what
/// was; refused when nothing else would be left); notes that already hold one are found by
/// `doctor` and `distill` and redacted by `doctor --fix`.
#[test]
fn secrets_are_redacted_on_write_found_by_doctor_and_distill_and_fixed() {
    let w = World::new();
    w.enabled_skill("curl");
    let mut c = w.spawn();
    let r = ok(c
        .request(
            "skillmem/note",
            json!({ "skill": "curl", "kind": "gotcha", "delta": "The API answers 401 unless the header is exactly `Authorization: Bearer sk-live-51HxT9kL2mQ8vR3nZ7pW4cY6`, with no quotes around the token." }),
        )
        .unwrap());
    assert_eq!(r["status"], "inserted");
    assert_eq!(r["redacted"], json!(["a live secret key (sk-live-…)"]), "{r}");
    let plain = ok(c.request("skillmem/note", json!({ "skill": "curl", "kind": "fix", "delta": "Pass --fail so that curl exits non-zero on HTTP errors." })).unwrap());
    assert!(plain.get("redacted").is_none(), "no field when nothing was redacted: {plain}");
    let e = err(c
        .request(
            "skillmem/note",
            json!({ "skill": "curl", "kind": "fix", "delta": "token ghp_4f9Kq2LmZ8xR1vT7bN3cW6yH0pJ5sD2eA9uQ" }),
        )
        .unwrap());
    assert_eq!(e["data"]["kind"], "invalidParams");
    assert!(e["message"].as_str().unwrap().contains("mostly a secret (a GitHub token)"), "{e}");
    let all = ok(c.request("skillmem/notes", json!({})).unwrap());
    assert_eq!(all["total"], 2, "{all}");
    let text = all.to_string();
    assert!(!text.contains("sk-live-51Hx") && text.contains("[redacted: a live secret key (sk-live-…)]"), "{text}");
    c.shutdown().unwrap();

    // A note written before redaction existed.
    let conn = rusqlite::Connection::open(w.data.join("skillmem.db")).unwrap();
    let id = plain["id"].as_i64().unwrap();
    conn.execute(
        "UPDATE notes SET delta = ?1 WHERE id = ?2",
        rusqlite::params!["Pass --fail; the staging URL is https://deploy:Hunter2Hunter2@staging.example.com/api.", id],
    )
    .unwrap();
    drop(conn);
    let (code, out, _) = w.cli(&["doctor", "--json"]);
    assert_eq!(code, 1, "{out}");
    let d: Value = serde_json::from_str(&out).unwrap();
    let check = d["checks"].as_array().unwrap().iter().find(|c| c["name"] == "secrets").cloned().unwrap();
    assert_eq!(check["status"], "fail", "{check}");
    assert!(check["detail"].as_str().unwrap().contains(&format!("#{id} (curl: a password in a URL)")), "{check}");
    let (_, out, _) = w.cli(&["distill", "--json"]);
    let dist: Value = serde_json::from_str(&out).unwrap();
    assert_eq!(
        dist["report"]["secrets"],
        json!([{ "id": id, "skill": "curl", "what": ["a password in a URL"] }]),
        "{dist}"
    );
    let (code, out, errs) = w.cli(&["doctor", "--fix"]);
    assert!(errs.contains("redacted the secrets of 1 note(s)"), "{errs}");
    assert!(out.contains("no note holds a secret"), "{out}");
    let _ = code; // other checks (the hosts' wiring) may warn on this machine
    let (_, out, _) = w.cli(&["notes", "curl", "--json"]);
    assert!(
        !out.contains("Hunter2Hunter2") && out.contains("https://deploy:[redacted: a password in a URL]@staging"),
        "{out}"
    );
}

/// `skillmem eval historian` on the labelled sets: the dev set keeps the goal the rules were
/// chosen for (precision ≥ 0.95 at recall ≥ 0.9); the held-out sets are reported, not held to it.
#[test]
fn eval_historian_prints_precision_recall_and_the_confusion_table() {
    let w = World::new();
    let bench = Path::new(env!("CARGO_MANIFEST_DIR")).join("bench/historian");
    let (dev, held, held3, held4, held5, held6, held7, held8) = (
        bench.join("dev.jsonl"),
        bench.join("held-out.jsonl"),
        bench.join("held-out-3.jsonl"),
        bench.join("held-out-4.jsonl"),
        bench.join("held-out-5.jsonl"),
        bench.join("held-out-6.jsonl"),
        bench.join("held-out-7.jsonl"),
        bench.join("held-out-8.jsonl"),
    );
    let (code, out, err) = w.cli(&[
        "eval",
        "historian",
        "--json",
        dev.to_str().unwrap(),
        held.to_str().unwrap(),
        held3.to_str().unwrap(),
        held4.to_str().unwrap(),
        held5.to_str().unwrap(),
        held6.to_str().unwrap(),
        held7.to_str().unwrap(),
        held8.to_str().unwrap(),
    ]);
    assert_eq!(code, 0, "{err}");
    let r: Value = serde_json::from_str(&out).unwrap();
    assert_eq!(r.as_array().unwrap().len(), 8);
    assert!(r[5]["observations"].as_u64().unwrap() >= 300);
    assert!(r[2]["observations"].as_u64().unwrap() >= 150);
    assert!(r[3]["observations"].as_u64().unwrap() >= 180);
    assert!(r[4]["observations"].as_u64().unwrap() >= 200);
    let (p, rc) = (r[0]["precision"].as_f64().unwrap(), r[0]["recall"].as_f64().unwrap());
    assert!(p >= 0.95 && rc >= 0.9, "dev set: precision {p}, recall {rc}");
    assert!(r[0]["observations"].as_u64().unwrap() >= 150);
    for set in r.as_array().unwrap() {
        let cats: Vec<&str> =
            set["byCategory"].as_array().unwrap().iter().map(|c| c["category"].as_str().unwrap()).collect();
        for c in [
            "lesson",
            "narration",
            "task-bound",
            "restates-skill",
            "restates-note",
            "unused-skill",
            "too-long",
            "vague",
            "secret",
        ] {
            assert!(cats.contains(&c), "{c} missing from {cats:?}");
        }
        // No credential of any set reaches the store.
        let secrets = set["byCategory"].as_array().unwrap().iter().find(|c| c["category"] == "secret").unwrap();
        assert_eq!(secrets["promoted"], 0, "{}: {secrets}", set["file"]);
    }
    let (code, text, _) = w.cli(&["eval", "historian", dev.to_str().unwrap()]);
    assert_eq!(code, 0);
    assert!(
        text.contains("promotion: precision ") && text.contains("category") && text.contains("refused by"),
        "{text}"
    );
    // A label that is neither, or a chunk that is not there, is an error naming the line.
    let bad = w.tmp.path().join("bad.jsonl");
    std::fs::write(&bad, "{\"type\":\"chunk\",\"id\":\"c\",\"skills\":null}\n{\"type\":\"observation\",\"chunk\":\"c\",\"line\":\"* a | fix | b\",\"label\":\"maybe\",\"category\":\"x\"}\n").unwrap();
    let (code, _, err) = w.cli(&["eval", "historian", bad.to_str().unwrap()]);
    assert_ne!(code, 0);
    assert!(err.contains("bad.jsonl:2") && err.contains("maybe"), "{err}");
}

/// A lesson is grounded in what the session did: one that names specifics none of which the
/// session's chunks show is refused as ungrounded; one that names what the chunks show is
/// promoted, with the error line it names kept as evidence; with no chunk of the session
/// known, the rule does not apply and the result says so.
#[test]
fn grounding_refuses_an_invented_lesson_and_keeps_the_error_as_evidence() {
    let w = World::new();
    w.enabled_skill("npm");
    let mut c = w.spawn();
    let text = "U: install typescript globally\nTC: skill(npm)\nT: bash npm install -g typescript\n\
E: npm ERR! code EACCES\nE: npm ERR! Error: EACCES: permission denied, mkdir '/usr/lib/node_modules/typescript'\n\
T: bash npm config set prefix ~/.npm-global\nT: bash npm install -g typescript\nA: added 1 package\n";
    chunk(&mut c, json!({ "sessionId": "s1", "format": "text", "text": text }));
    let output = "<skill_observations>\n\
* npm | fix | `npm install -g` fails with EACCES when the prefix is root's; run `npm config set prefix ~/.npm-global` first.\n\
* npm | gotcha | Pass `--unsafe-perm` to `npm rebuild` when node-gyp fails under sudo.\n\
</skill_observations>";
    let r = promote(&mut c, output);
    assert_eq!(r["grounded"], true, "{r:#}");
    let promoted = r["promoted"].as_array().unwrap();
    assert_eq!(promoted.len(), 1, "{r:#}");
    assert!(promoted[0]["delta"].as_str().unwrap().contains("npm config set prefix"), "{r:#}");
    assert_eq!(promoted[0]["evidence"], "E: npm ERR! code EACCES", "{r:#}");
    // It stays with the note, as its evidence.
    let listed = ok(c.request("skillmem/notes", json!({ "skill": "npm" })).unwrap());
    assert_eq!(listed["notes"][0]["evidence"], json!({ "errorLines": ["E: npm ERR! code EACCES"] }), "{listed:#}");
    let reason = r["rejected"][0]["reason"].as_str().unwrap();
    assert!(reason.starts_with("ungrounded: names `--unsafe-perm`, `npm rebuild`"), "{reason}");
    // A session whose chunks are unknown: the invented lesson is judged by the other rules.
    let other = ok(c.request("skillmem/historianResult", json!({ "sessionId": "s9", "output": output })).unwrap());
    assert_eq!(other["grounded"], false, "{other:#}");
    assert_eq!(other["promoted"].as_array().unwrap().len(), 2, "{other:#}");
    c.shutdown().unwrap();
}

/// `eval historian` on a set whose chunks carry their text judges grounding, and prints what
/// it refused beside the figures without it.
#[test]
fn eval_historian_reports_what_grounding_refused() {
    let w = World::new();
    let set = Path::new(env!("CARGO_MANIFEST_DIR")).join("bench/historian/grounded-1.jsonl");
    let (code, out, err) = w.cli(&["eval", "historian", "--json", set.to_str().unwrap()]);
    assert_eq!(code, 0, "{err}");
    let r: Value = serde_json::from_str(&out).unwrap();
    let g = &r[0]["grounding"];
    assert_eq!(g["observationsWithChunkText"], r[0]["observations"], "{g}");
    assert_eq!(g["skipped"], 0, "{g}");
    assert!(g["refused"].as_u64().unwrap() >= 10, "{g}");
    let with = r[0]["precision"].as_f64().unwrap();
    let without = g["withoutGrounding"]["precision"].as_f64().unwrap();
    assert!(with > without, "grounding raises precision: {with} against {without}");
    let (code, out, _) = w.cli(&["eval", "historian", set.to_str().unwrap()]);
    assert_eq!(code, 0);
    assert!(out.contains("grounding: 46 of 46 observations had their chunk's text"), "{out}");
}
