//! The review queue (`historian.review`) through the protocol, the way a host and a person
//! use it: promoted observations wait out of recall, the agent's own notes do not; accept,
//! edit then accept, reject (kept, restorable into the queue), a correction replacing its note
//! only once accepted; the CLI over the same store; a team sync that leaves pending notes
//! home. Real `skillmem serve` children, real frames, a real SQLite file.

mod common;

use common::{err, load, note, ok, World};
use serde_json::{json, Value};
use skillmem::client::Client;

const LESSONS: &str = "Summary of the work.\n<skill_observations>\n\
* jq | gotcha | jq -r prints raw strings; without it every string keeps its JSON quotes.\n\
* jq | fix | jq --slurp reads a stream of objects into one array; without it `length` counts each object.\n\
</skill_observations>";

fn review_on(w: &World) -> Client {
    w.spawn_with(json!({ "historian": { "review": true } }))
}

fn promote(c: &mut Client, output: &str) -> Value {
    ok(c.request(
        "skillmem/transcriptChunk",
        json!({ "sessionId": "s1", "format": "text", "text": "U: parse the logs\nTC: skill(jq)\nT: bash jq -r .name a.json\nT: bash jq --slurp length objs.json\nT: bash jq '.[]?' mixed.json\nT: bash jq-1.7 --stream big.json\nA: done\n" }),
    )
    .unwrap());
    ok(c.request("skillmem/historianResult", json!({ "sessionId": "s1", "output": output })).unwrap())
}

fn block(c: &mut Client, call: &str, dir: &std::path::Path) -> String {
    load(c, call, "jq", dir, None)["append"].as_str().unwrap_or("").to_string()
}

fn queue(c: &mut Client) -> Value {
    ok(c.request("skillmem/review", json!({})).unwrap())
}

fn decide(c: &mut Client, params: Value) -> Value {
    c.request("skillmem/reviewDecide", params).unwrap()
}

/// Promoted observations wait: not in a load's block, not in the default listing, not in
/// stats; the queue lists them; the agent's own note goes straight in.
#[test]
fn promoted_observations_wait_and_the_agents_notes_do_not() {
    let w = World::new();
    let dir = w.enabled_skill("jq");
    let mut c = review_on(&w);
    let r = promote(&mut c, LESSONS);
    let promoted = r["promoted"].as_array().unwrap();
    assert_eq!(promoted.len(), 2, "{r}");
    assert!(promoted.iter().all(|p| p["pending"] == true && p["status"] == "inserted"), "{r}");
    assert_eq!(block(&mut c, "c1", &dir), "", "nothing is recalled before review");
    let listed = ok(c.request("skillmem/notes", json!({ "skill": "jq" })).unwrap());
    assert_eq!(listed["total"], 0, "the default listing leaves the queue out: {listed}");
    let asked = ok(c.request("skillmem/notes", json!({ "skill": "jq", "pending": true })).unwrap());
    assert_eq!(asked["total"], 2, "listed when asked: {asked}");
    let q = queue(&mut c);
    assert_eq!(q["total"], 2, "{q}");
    assert!(q["notes"].as_array().unwrap().iter().all(|n| n["pending"] == true && n["source"] == "historian"), "{q}");
    let stats = ok(c.request("skillmem/stats", json!({})).unwrap());
    assert_eq!(stats["notes"], 0, "{stats}");
    // A repeat of a pending lesson is a hit on it, not a second note in the queue.
    let again = promote(&mut c, LESSONS);
    assert!(again["promoted"].as_array().unwrap().iter().all(|p| p["status"] == "duplicate"), "{again}");
    assert_eq!(queue(&mut c)["total"], 2);
    // So is a restatement in other words.
    let reworded = promote(
        &mut c,
        "<skill_observations>\n* jq | gotcha | Without jq -r every string keeps its JSON quotes; -r prints raw strings.\n</skill_observations>",
    );
    assert_eq!(reworded["promoted"][0]["status"], "duplicate", "{reworded}");
    assert_eq!(queue(&mut c)["total"], 2);

    let mine =
        note(&mut c, "jq", "workflow", "", "Run jq with --arg for shell values; never splice them into the filter.");
    assert!(mine.get("pending").is_none(), "{mine}");
    let b = block(&mut c, "c2", &dir);
    assert!(b.contains("--arg for shell values") && !b.contains("raw strings"), "{b}");
    assert_eq!(queue(&mut c)["total"], 2);
    assert_eq!(c.shutdown().unwrap(), 0);
}

/// Accept, edit then accept, reject with a reason, and restore of a rejection back into the
/// queue; every text stays readable.
#[test]
fn a_person_accepts_edits_and_rejects() {
    let w = World::new();
    let dir = w.enabled_skill("jq");
    let mut c = review_on(&w);
    let r = promote(&mut c, LESSONS);
    let raw = r["promoted"][0]["id"].as_i64().unwrap();
    let slurp = r["promoted"][1]["id"].as_i64().unwrap();

    let a = ok(decide(&mut c, json!({ "id": raw, "decision": "accept" })));
    assert_eq!(a["decision"], "accept", "{a}");
    let b = block(&mut c, "c1", &dir);
    assert!(b.contains("raw strings") && !b.contains("--slurp"), "{b}");

    // Edit then accept: the person's words are recalled, the historian's are an older version.
    let edited = "jq --slurp (-s) reads a stream of JSON objects into one array.";
    let a = ok(decide(&mut c, json!({ "id": slurp, "decision": "accept", "delta": edited })));
    assert_eq!(a["edited"], true, "{a}");
    let b = block(&mut c, "c2", &dir);
    assert!(b.contains("reads a stream of JSON objects into one array") && !b.contains("counts each object"), "{b}");
    let (code, out, e) = w.cli(&["versions", &slurp.to_string(), "--json"]);
    assert_eq!(code, 0, "{e}");
    assert!(out.contains("counts each object"), "the historian's text is kept: {out}");
    assert_eq!(queue(&mut c)["total"], 0);

    // A decision on a note that no longer waits says what to do.
    let e = err(decide(&mut c, json!({ "id": raw, "decision": "accept" })));
    assert!(e["message"].as_str().unwrap().contains("not waiting for review"), "{e}");
    let e = err(decide(&mut c, json!({ "id": 9999, "decision": "reject" })));
    assert_eq!(e["data"]["kind"], "notFound", "{e}");
    let e = err(decide(&mut c, json!({ "id": raw, "decision": "maybe" })));
    assert_eq!(e["data"]["kind"], "invalidParams", "{e}");

    // Reject: out of the queue, kept with the reason; restore puts it back in the queue.
    let r = promote(
        &mut c,
        "<skill_observations>\n* jq | gotcha | jq `.[]?` skips values that are not arrays instead of failing on them.\n</skill_observations>",
    );
    let third = r["promoted"][0]["id"].as_i64().unwrap();
    let e = err(decide(&mut c, json!({ "id": third, "decision": "reject", "delta": "x" })));
    assert!(e["message"].as_str().unwrap().contains("delta goes with accept"), "{e}");
    ok(decide(&mut c, json!({ "id": third, "decision": "reject", "reason": "we never use .[]?" })));
    assert_eq!(queue(&mut c)["total"], 0);
    assert!(!block(&mut c, "c3", &dir).contains("skips values"));
    let hist = ok(c.request("skillmem/notes", json!({ "skill": "jq", "includeSuperseded": true })).unwrap());
    let kept = hist["notes"].as_array().unwrap().iter().find(|n| n["id"] == third).cloned().unwrap();
    assert_eq!(kept["reason"], "rejected in review: we never use .[]?", "{kept}");
    let with = ok(c.request("skillmem/review", json!({ "includeRejected": true })).unwrap());
    assert_eq!(with["total"], 1, "{with}");
    let e = err(decide(&mut c, json!({ "id": third, "decision": "accept" })));
    assert!(e["message"].as_str().unwrap().contains("skillmem restore"), "{e}");
    ok(c.request("skillmem/restore", json!({ "id": third })).unwrap());
    let q = queue(&mut c);
    assert_eq!(q["total"], 1, "the rejection is undone: {q}");
    assert!(q["notes"][0]["reason"].is_null(), "{q}");
    assert_eq!(c.shutdown().unwrap(), 0);
}

/// A correction (`| replaces #id`) waits too: the old note stays recalled until the
/// correction is accepted, and then it is history.
#[test]
fn a_correction_replaces_its_note_only_once_accepted() {
    let w = World::new();
    let dir = w.enabled_skill("jq");
    let mut c = review_on(&w);
    let old = note(&mut c, "jq", "gotcha", "", "jq 1.6 crashes on --stream with large files.")["id"].as_i64().unwrap();
    let out = format!(
        "<skill_observations>\n* jq | gotcha | jq 1.7 fixed --stream on large files; only 1.6 crashes. | replaces #{old}\n</skill_observations>"
    );
    let r = promote(&mut c, &out);
    let p = &r["promoted"][0];
    assert_eq!(p["pending"], true, "{r}");
    assert_eq!(p["replaces"], old, "{r}");
    let new = p["id"].as_i64().unwrap();
    let b = block(&mut c, "c1", &dir);
    assert!(b.contains("1.6 crashes on --stream with large") && !b.contains("1.7 fixed"), "{b}");
    let a = ok(decide(&mut c, json!({ "id": new, "decision": "accept" })));
    assert_eq!(a["replaced"], old, "{a}");
    let b = block(&mut c, "c2", &dir);
    assert!(b.contains("1.7 fixed") && !b.contains("crashes on --stream with large files."), "{b}");
    assert_eq!(c.shutdown().unwrap(), 0);
}

/// Review is off by default: promoted observations are recalled at once.
#[test]
fn review_is_off_by_default() {
    let w = World::new();
    let dir = w.enabled_skill("jq");
    let mut c = w.spawn();
    let r = promote(&mut c, LESSONS);
    assert!(r["promoted"].as_array().unwrap().iter().all(|p| p.get("pending").is_none()), "{r}");
    assert!(block(&mut c, "c1", &dir).contains("raw strings"));
    assert_eq!(c.shutdown().unwrap(), 0);
}

/// `skillmem review` lists, accepts and rejects on the same store; the MCP door does not
/// offer review to agents.
#[test]
fn the_cli_reviews_the_same_queue() {
    let w = World::new();
    w.enabled_skill("jq");
    std::fs::write(w.ws.join("skillmem.toml"), "[historian]\nreview = true\n").unwrap();
    let mut c = w.spawn();
    let r = promote(&mut c, LESSONS);
    let (a, b) = (r["promoted"][0]["id"].as_i64().unwrap(), r["promoted"][1]["id"].as_i64().unwrap());
    assert_eq!(c.shutdown().unwrap(), 0);
    let (code, out, e) = w.cli(&["review"]);
    assert_eq!(code, 0, "{e}");
    assert!(out.contains("raw strings") && out.contains("2 of 2 waiting"), "{out}");
    assert!(out.contains("session s1"), "the provenance is shown: {out}");
    let (code, out, e) = w.cli(&["review", "accept", &a.to_string()]);
    assert_eq!(code, 0, "{e}");
    assert!(out.contains(&format!("accepted note {a}")), "{out}");
    let (code, out, e) = w.cli(&["review", "reject", &b.to_string(), "--reason", "too specific"]);
    assert_eq!(code, 0, "{e}");
    assert!(out.contains("skillmem restore"), "{out}");
    let (code, _, e) = w.cli(&["review", "reject", &b.to_string()]);
    assert_eq!(code, 2, "a second rejection is an error");
    assert!(e.contains("skillmem restore"), "{e}");
    let (_, out, _) = w.cli(&["review", "--json"]);
    let q: Value = serde_json::from_str(&out).unwrap();
    assert_eq!(q["total"], 0, "{q}");
    let (_, out, _) = w.cli(&["notes", "jq", "--json"]);
    let page: Value = serde_json::from_str(&out).unwrap();
    assert_eq!(page["total"], 1, "{page}");
    let tools: Vec<String> = skillmem::hosts::mcp::tools().iter().map(|t| t.name.to_string()).collect();
    assert!(tools.iter().all(|t| !t.contains("review")), "{tools:?}");
}

/// A note waiting for review stays on its machine through a team sync; accepted, it travels,
/// and the other machine records it as a note from the team, first written by the historian.
/// A real PostgreSQL server (as in tests/team.rs).
#[test]
fn a_pending_note_stays_off_the_team_until_accepted() {
    use skillmem_test_support::ScratchServer;
    let pg = ScratchServer::start().unwrap_or_else(|e| panic!("cannot start a scratch PostgreSQL server: {e}"));
    pg.admin_sql("postgres", "CREATE ROLE team_r LOGIN PASSWORD 'pw-review';").unwrap();
    pg.admin_sql("postgres", "CREATE DATABASE skillmem OWNER team_r").unwrap();
    let url = pg.url("team_r", "skillmem");
    let machine = |extra: &str| {
        let w = World::new();
        w.enabled_skill("deploy");
        std::fs::write(
            w.ws.join("skillmem.toml"),
            format!("project_id = \"proj-1\"\n{extra}\n[team]\nurl = \"{url}\"\nteam = \"core\"\npassword_env = \"SKILLMEM_TEAM_PW\"\n"),
        )
        .unwrap();
        w
    };
    let run = |w: &World, args: &[&str]| -> Value {
        let out = std::process::Command::new(env!("CARGO_BIN_EXE_skillmem"))
            .arg("--json")
            .args(args)
            .current_dir(&w.ws)
            .envs(w.envs())
            .env("SKILLMEM_TEAM_PW", "pw-review")
            .output()
            .unwrap();
        assert!(out.status.success(), "skillmem {args:?}: {}", String::from_utf8_lossy(&out.stderr));
        serde_json::from_slice(&out.stdout).unwrap()
    };
    let a = machine("[historian]\nreview = true");
    let b = machine("");
    let summary = a.tmp.path().join("summary.txt");
    std::fs::write(
        &summary,
        "<skill_observations>\n* deploy | gotcha | `deploy --dry-run` skips the migration step, so a dry run never shows schema errors.\n</skill_observations>\n",
    )
    .unwrap();
    let r = run(&a, &["observe", summary.to_str().unwrap(), "--session", "s1"]);
    let id = r["promoted"][0]["id"].as_i64().unwrap();
    assert_eq!(r["promoted"][0]["pending"], true, "{r}");
    let pushed = run(&a, &["sync"]);
    assert_eq!(pushed["pushed"], 0, "nothing leaves while it waits: {pushed}");
    run(&b, &["sync"]);
    assert_eq!(run(&b, &["notes", "--all-projects"])["total"], 0);

    run(&a, &["review", "accept", &id.to_string()]);
    let pushed = run(&a, &["sync"]);
    assert_eq!(pushed["pushed"], 1, "{pushed}");
    let pulled = run(&b, &["sync"]);
    assert_eq!(pulled["inserted"], 1, "{pulled}");
    let there = run(&b, &["notes", "--all-projects"]);
    let n = &there["notes"][0];
    assert!(n["delta"].as_str().unwrap().contains("dry run never shows"), "{there}");
    assert_eq!((n["source"].as_str(), n["originSource"].as_str()), (Some("team"), Some("historian")), "{there}");
}
