//! A note's trust, over the real binary the way a host drives it (docs/protocol.md, "Trust"):
//! the agent's notes start unverified; a use in another session than the writer's, or a
//! person's act, makes them trusted; the block puts pinned, then trusted, then unverified
//! notes, the last within their share of the budget; `skillmem/feedback` counts a use or
//! retires; a note shown in enough sessions and never used decays, restorably.

mod common;

use std::path::Path;

use common::*;
use serde_json::{json, Value};
use skillmem::client::Client;

const AWS: &str = "aws s3 sync skips files whose size did not change; pass `--exact-timestamps` after a rebuild.";
const NPM: &str = "npm ci fails with ERESOLVE on the old peer deps; add `--legacy-peer-deps`.";
const PROSE: &str = "Ask the release owner before deploying on a Friday afternoon.";

fn load_in(c: &mut Client, session: &str, call: &str, name: &str, dir: &Path) -> Value {
    ok(c.request(
        "skillmem/toolAfter",
        json!({ "sessionId": session, "callId": call, "tool": "skill", "args": { "name": name },
                "output": format!("# {name}\n\nBase directory for this skill: {}\n", dir.display()) }),
    )
    .unwrap())
}

fn bash(c: &mut Client, session: &str, call: &str, command: &str) {
    ok(c.request(
        "skillmem/toolAfter",
        json!({ "sessionId": session, "callId": call, "tool": "bash", "args": { "command": command },
                "output": "ok", "metadata": { "exit": 0 } }),
    )
    .unwrap());
}

fn end(c: &mut Client, session: &str) {
    ok(c.request("skillmem/sessionEnd", json!({ "sessionId": session })).unwrap());
}

fn note_in(c: &mut Client, session: &str, skill: &str, delta: &str) -> i64 {
    let r = ok(c
        .request("skillmem/note", json!({ "sessionId": session, "skill": skill, "kind": "gotcha", "delta": delta }))
        .unwrap());
    r["id"].as_i64().unwrap()
}

fn by_id(c: &mut Client, skill: &str, id: i64) -> Value {
    let r = ok(c.request("skillmem/notes", json!({ "skill": skill, "includeSuperseded": true })).unwrap());
    r["notes"]
        .as_array()
        .unwrap()
        .iter()
        .find(|n| n["id"] == id)
        .cloned()
        .unwrap_or_else(|| panic!("no note {id}: {r}"))
}

fn trust(n: &Value) -> (i64, i64, &str) {
    (n["shown"].as_i64().unwrap(), n["used"].as_i64().unwrap(), n["trust"].as_str().unwrap())
}

#[test]
fn a_use_in_the_writers_own_session_is_counted_but_only_another_session_makes_it_trusted() {
    let w = World::new();
    let dir = w.enabled_skill("aws-deploy");
    let mut c = w.spawn_with(json!({ "memory": { "holdout": 0 } }));
    let id = note_in(&mut c, "s1", "aws-deploy", AWS);
    assert_eq!(trust(&by_id(&mut c, "aws-deploy", id)), (0, 0, "unverified"));
    let b = load_in(&mut c, "s1", "1", "aws-deploy", &dir);
    assert!(b["append"].as_str().unwrap().contains("trust=\"unverified\""), "{b}");
    bash(&mut c, "s1", "2", "aws s3 sync dist s3://site --exact-timestamps");
    end(&mut c, "s1");
    assert_eq!(trust(&by_id(&mut c, "aws-deploy", id)), (1, 1, "unverified"), "the writer's own session");
    load_in(&mut c, "s2", "1", "aws-deploy", &dir);
    bash(&mut c, "s2", "2", "aws s3 sync build s3://site --exact-timestamps --delete");
    end(&mut c, "s2");
    // Used in another session, but no session withheld it yet: no lift behind the use.
    assert_eq!(trust(&by_id(&mut c, "aws-deploy", id)), (2, 2, "unverified"));
    c.shutdown().unwrap();
    // Loads that withhold it (the holdout at every load): the flag does not appear anyway.
    let mut c = w.spawn_with(json!({ "memory": { "holdout": 1.0 } }));
    for s in ["s3", "s3b"] {
        let b = load_in(&mut c, s, "1", "aws-deploy", &dir);
        assert!(b["noteIds"].as_array().is_none_or(|ids| !ids.contains(&json!(id))), "withheld: {b}");
        bash(&mut c, s, "2", "aws s3 sync dist s3://site");
        end(&mut c, s);
        if s == "s3" {
            let n = by_id(&mut c, "aws-deploy", id);
            assert_eq!(trust(&n), (2, 2, "unverified"), "one withheld session is not enough: {n}");
        }
    }
    c.shutdown().unwrap();
    let mut c = w.spawn_with(json!({ "memory": { "holdout": 0 } }));
    let n = by_id(&mut c, "aws-deploy", id);
    assert_eq!((n["withheld"].as_i64(), n["appeared"].as_i64()), (Some(2), None), "{n}");
    // lift = (2 + 1) / (2 + 2) − (0 + 1) / (2 + 2)
    assert!((n["lift"].as_f64().unwrap() - 0.5).abs() < 1e-9, "{n}");
    assert_eq!(trust(&n), (2, 2, "trusted"));
    let b = load_in(&mut c, "s4", "1", "aws-deploy", &dir);
    let text = b["append"].as_str().unwrap();
    assert!(text.contains("used=\"2\"") && !text.contains("trust="), "{text}");
    let r = ok(c.request("skillmem/recall", json!({ "skill": "aws-deploy" })).unwrap());
    assert_eq!(r["notes"][0]["trust"], "trusted", "{r}");
    c.shutdown().unwrap();
}

#[test]
fn the_block_puts_pinned_then_trusted_then_unverified_notes_within_their_share() {
    let w = World::new();
    let dir = w.enabled_skill("ci");
    // A person's note (the CLI in a terminal) is trusted from the start.
    let (code, out, e) = w.cli(&["--json", "note", "ci", "--kind", "fix", "--delta", NPM]);
    assert_eq!(code, 0, "{e}");
    let person: i64 = serde_json::from_str::<Value>(&out).unwrap()["id"].as_i64().unwrap();
    let mut c = w.spawn();
    let agent = note_in(&mut c, "s0", "ci", AWS);
    let pinned = note_in(&mut c, "s0", "ci", PROSE);
    // The agent's pin is no person's act: pinned, still unverified, and first.
    ok(c.request("skillmem/pin", json!({ "id": pinned })).unwrap());
    let b = load_in(&mut c, "s1", "1", "ci", &dir);
    assert_eq!(b["noteIds"], json!([pinned, person, agent]), "{b}");
    let text = b["append"].as_str().unwrap();
    assert!(
        text.contains(&format!("<note id=\"{person}\" kind=\"fix\" intent=\"\" used=\"0\" pinned=\"false\" written=")),
        "{text}"
    );
    assert_eq!(text.matches(" trust=\"unverified\">").count(), 2, "{text}");
    assert!(text.contains("are unproven: check that each applies"), "{text}");
    assert!(text.contains("(verdict useful|wrong)"), "the guidance names the feedback tool: {text}");
    c.shutdown().unwrap();
    // A share of 0 hides the unverified notes that are not pinned.
    let mut c = w.spawn_with(json!({ "memory": { "unverifiedShare": 0.0 } }));
    let b = load_in(&mut c, "s2", "1", "ci", &dir);
    assert_eq!(b["noteIds"], json!([pinned, person]), "{b}");
    c.shutdown().unwrap();
}

#[test]
fn feedback_counts_a_use_or_retires_and_the_person_trusts_at_once() {
    let w = World::new();
    let dir = w.enabled_skill("aws-deploy");
    let mut c = w.spawn();
    let a = note_in(&mut c, "s0", "aws-deploy", AWS);
    let b = note_in(&mut c, "s0", "aws-deploy", NPM);
    // The agent must say which session the note helped in.
    let e = c.request("skillmem/feedback", json!({ "id": a, "verdict": "useful" })).unwrap();
    assert_eq!(e["error"]["code"], -32602, "{e}");
    assert!(e["error"]["message"].as_str().unwrap().contains("sessionId is required"), "{e}");
    let bad = c.request("skillmem/feedback", json!({ "sessionId": "s1", "id": a, "verdict": "great" })).unwrap();
    assert!(bad["error"]["message"].as_str().unwrap().contains("useful"), "{bad}");
    load_in(&mut c, "s1", "1", "aws-deploy", &dir);
    let r = ok(c.request("skillmem/feedback", json!({ "sessionId": "s1", "id": a, "verdict": "useful" })).unwrap());
    assert_eq!(r, json!({ "id": a, "used": 1, "trust": "trusted" }));
    // Once per session: the same verdict again, or the calls at the end, count nothing more.
    ok(c.request("skillmem/feedback", json!({ "sessionId": "s1", "id": a, "verdict": "useful" })).unwrap());
    bash(&mut c, "s1", "2", "aws s3 sync dist s3://site --exact-timestamps");
    end(&mut c, "s1");
    assert_eq!(trust(&by_id(&mut c, "aws-deploy", a)).1, 1);
    // Wrong retires with the reason; restore brings it back.
    let r = ok(c
        .request(
            "skillmem/feedback",
            json!({ "sessionId": "s1", "id": b, "verdict": "wrong", "reason": "npm 10 fixed it" }),
        )
        .unwrap());
    assert!(r["retiredAt"].as_i64().is_some(), "{r}");
    let n = by_id(&mut c, "aws-deploy", b);
    assert_eq!(n["reason"], "wrong: npm 10 fixed it", "{n}");
    let block = load_in(&mut c, "s2", "1", "aws-deploy", &dir);
    assert_eq!(block["noteIds"], json!([a]), "{block}");
    ok(c.request("skillmem/restore", json!({ "id": b })).unwrap());
    assert!(by_id(&mut c, "aws-deploy", b)["retiredAt"].is_null());
    c.shutdown().unwrap();
    // A person's feedback from the terminal trusts the note at once, with no session.
    let (code, out, e) = w.cli(&["feedback", &b.to_string(), "useful"]);
    assert_eq!(code, 0, "{e}");
    assert!(out.contains("trusted"), "{out}");
    let (code, _, e) = w.cli(&["feedback", &b.to_string(), "maybe"]);
    assert_ne!(code, 0);
    assert!(e.contains("useful"), "{e}");
    // From an agent's shell the CLI is the agent: a session is needed.
    let agent = std::process::Command::new(env!("CARGO_BIN_EXE_skillmem"))
        .args(["feedback", &a.to_string(), "useful"])
        .current_dir(&w.ws)
        .envs(w.envs())
        .env("CLAUDECODE", "1")
        .output()
        .unwrap();
    assert!(!agent.status.success());
    assert!(String::from_utf8_lossy(&agent.stderr).contains("sessionId is required"));
}

#[test]
fn a_note_shown_in_enough_sessions_and_never_used_decays_restorably() {
    let w = World::new();
    let dir = w.enabled_skill("aws-deploy");
    // In the workspace's file, so that the CLI's distill reads it too.
    std::fs::write(
        w.ws.join("skillmem.toml"),
        "[memory]\nretire_unused_after = 2\nunverified_share = 1.0\nholdout = 0.0\n",
    )
    .unwrap();
    let mut c = w.spawn();
    let unused = note_in(&mut c, "s0", "aws-deploy", AWS);
    let prose = note_in(&mut c, "s0", "aws-deploy", PROSE);
    let pinned = note_in(&mut c, "s0", "aws-deploy", NPM);
    ok(c.request("skillmem/pin", json!({ "id": pinned })).unwrap());
    for s in ["s1", "s2"] {
        let b = load_in(&mut c, s, "1", "aws-deploy", &dir);
        assert_eq!(b["noteIds"].as_array().unwrap().len(), 3, "{b}");
        bash(&mut c, s, "2", "aws s3 sync dist s3://site");
        end(&mut c, s);
    }
    let n = by_id(&mut c, "aws-deploy", unused);
    assert_eq!(n["reason"], "unused: shown in 2 sessions, never used", "{n}");
    assert!(n["retiredAt"].as_i64().is_some(), "{n}");
    // No specifics: its use cannot be seen, so it stays. Pinned: it stays.
    assert!(by_id(&mut c, "aws-deploy", prose)["retiredAt"].is_null());
    assert!(by_id(&mut c, "aws-deploy", pinned)["retiredAt"].is_null());
    let b = load_in(&mut c, "s3", "1", "aws-deploy", &dir);
    assert_eq!(b["noteIds"], json!([pinned, prose]), "{b}");
    ok(c.request("skillmem/restore", json!({ "id": unused })).unwrap());
    c.shutdown().unwrap();
    // distill judges every note: the restored one, still never used, goes again, and its
    // report says so.
    let (code, out, e) = w.cli(&["--json", "distill"]);
    assert_eq!(code, 0, "{e}");
    let v: Value = serde_json::from_str(&out).unwrap();
    let retired = v["retiredUnused"].as_array().unwrap();
    assert_eq!(retired.len(), 1, "{v}");
    assert_eq!(retired[0]["id"], unused);
}

/// The listing filters and sorts by trust and use, on the protocol, the CLI and the dashboard.
#[test]
fn notes_filter_by_trust_and_sort_by_use_on_every_door() {
    let w = World::new();
    let dir = w.enabled_skill("aws-deploy");
    let mut c = w.spawn();
    let used = note_in(&mut c, "s0", "aws-deploy", AWS);
    let other = note_in(&mut c, "s0", "aws-deploy", NPM);
    load_in(&mut c, "s1", "1", "aws-deploy", &dir);
    bash(&mut c, "s1", "2", "aws s3 sync dist s3://site --exact-timestamps");
    end(&mut c, "s1");
    c.shutdown().unwrap();
    // Sessions that withhold the used note (the holdout prefers a used one): lift behind it.
    let mut c = w.spawn_with(json!({ "memory": { "holdout": 1.0 } }));
    for s in ["s2", "s3"] {
        load_in(&mut c, s, "1", "aws-deploy", &dir);
        end(&mut c, s);
    }
    let ids = |r: Value| r["notes"].as_array().unwrap().iter().map(|n| n["id"].as_i64().unwrap()).collect::<Vec<_>>();
    let q = |c: &mut Client, p: Value| ok(c.request("skillmem/notes", p).unwrap());
    assert_eq!(ids(q(&mut c, json!({ "skill": "aws-deploy", "trust": "trusted" }))), [used]);
    assert_eq!(ids(q(&mut c, json!({ "skill": "aws-deploy", "trust": "unverified" }))), [other]);
    assert_eq!(ids(q(&mut c, json!({ "skill": "aws-deploy", "sort": "used" }))), [used, other]);
    let bad = c.request("skillmem/notes", json!({ "trust": "maybe" })).unwrap();
    assert!(bad["error"]["message"].as_str().unwrap().contains("trusted"), "{bad}");
    c.shutdown().unwrap();
    let (code, out, e) = w.cli(&["notes", "aws-deploy", "--trust", "unverified"]);
    assert_eq!(code, 0, "{e}");
    assert!(out.contains("agent unverified  used 0/3") && !out.contains("exact-timestamps"), "{out}");
    let (code, out, _) = w.cli(&["notes", "aws-deploy", "--sort", "used"]);
    assert_eq!(code, 0);
    assert!(out.contains("agent trusted  used 1/1"), "{out}");
}

/// A file the note names, only read (a read tool's call), is no use; the same file written is;
/// the warned-about flag of a clause that says it does harm is none either.
#[test]
fn a_read_or_the_warned_flag_is_no_use_and_the_advised_change_is() {
    let w = World::new();
    let dir = w.enabled_skill("release");
    let mut c = w.spawn();
    let strip =
        note_in(&mut c, "w", "release", "Set `strip = true` under `[profile.release]` in Cargo.toml to shrink it.");
    let its = note_in(
        &mut c,
        "w",
        "release",
        "Skip the slow ITs with `-DskipITs`; `-DskipTests` skips the unit tests as well.",
    );
    let call = |c: &mut Client, session: &str, id: &str, tool: &str, args: Value| {
        ok(c.request(
            "skillmem/toolAfter",
            json!({ "sessionId": session, "callId": id, "tool": tool, "args": args, "output": "ok" }),
        )
        .unwrap());
    };
    load_in(&mut c, "s1", "1", "release", &dir);
    call(&mut c, "s1", "2", "read", json!({ "filePath": "/ws/Cargo.toml" }));
    call(&mut c, "s1", "3", "bash", json!({ "command": "mvn -q verify -DskipTests" }));
    end(&mut c, "s1");
    assert_eq!(trust(&by_id(&mut c, "release", strip)), (1, 0, "unverified"), "only read");
    assert_eq!(trust(&by_id(&mut c, "release", its)), (1, 0, "unverified"), "the flag the note warns about");
    load_in(&mut c, "s2", "1", "release", &dir);
    call(
        &mut c,
        "s2",
        "2",
        "edit",
        json!({ "filePath": "/ws/Cargo.toml", "oldString": "[profile.release]", "newString": "[profile.release]\nstrip = true" }),
    );
    call(&mut c, "s2", "3", "bash", json!({ "command": "mvn -q verify -DskipITs" }));
    end(&mut c, "s2");
    // Used in another session; trusted only once a withheld session gives it lift.
    assert_eq!(trust(&by_id(&mut c, "release", strip)), (2, 1, "unverified"), "written");
    assert_eq!(trust(&by_id(&mut c, "release", its)), (2, 1, "unverified"), "the advised flag");
    c.shutdown().unwrap();
}

/// A junk note whose step every session types anyway is never used, so never trusted; a real
/// use still is, once sessions that withheld it (the holdout) show the flag does not appear
/// without it: lift (docs/protocol.md, "Use and trust").
#[test]
fn a_step_every_session_types_anyway_never_earns_trust_and_a_real_use_does() {
    let w = World::new();
    let dir = w.enabled_skill("ci");
    let anyway = "make lint-fast";
    let mut c = w.spawn_with(json!({ "memory": { "holdout": 0, "unverifiedShare": 1.0 } }));
    // What the sessions of the skill do without any note.
    for s in ["p1", "p2", "p3"] {
        load_in(&mut c, s, "1", "ci", &dir);
        bash(&mut c, s, "2", anyway);
        end(&mut c, s);
    }
    let junk = note_in(&mut c, "w", "ci", "Run `make lint-fast` before pushing, or CI rejects the branch.");
    let real = note_in(&mut c, "w", "ci", AWS);
    for s in ["s1", "s2", "s3"] {
        let b = load_in(&mut c, s, "1", "ci", &dir);
        assert_eq!(b["noteIds"].as_array().unwrap().len(), 2, "{b}");
        bash(&mut c, s, "2", anyway);
        bash(&mut c, s, "3", "aws s3 sync dist s3://site --exact-timestamps");
        end(&mut c, s);
    }
    assert_eq!(trust(&by_id(&mut c, "ci", junk)), (3, 0, "unverified"), "typed anyway: no evidence");
    assert_eq!(trust(&by_id(&mut c, "ci", real)), (3, 3, "unverified"), "used, no lift yet");
    c.shutdown().unwrap();
    // Sessions that withhold a note (the holdout at every load, seeded): the used one first.
    let mut c = w.spawn_with(json!({ "memory": { "holdout": 1.0, "holdoutSeed": 7, "unverifiedShare": 1.0 } }));
    for s in ["h1", "h2"] {
        let b = load_in(&mut c, s, "1", "ci", &dir);
        assert_eq!(b["noteIds"], json!([junk]), "{b}");
        bash(&mut c, s, "2", anyway);
        bash(&mut c, s, "3", "aws s3 sync dist s3://site");
        end(&mut c, s);
    }
    let n = by_id(&mut c, "ci", real);
    assert_eq!((trust(&n), n["withheld"].as_i64()), ((3, 3, "trusted"), Some(2)), "{n}");
    let j = by_id(&mut c, "ci", junk);
    assert_eq!(trust(&j), (5, 0, "unverified"), "{j}");
    c.shutdown().unwrap();
}
