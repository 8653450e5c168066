//! A note's use, over the real binary, the way a host drives it: notes written with
//! `skillmem/note`, a skill loaded with `toolAfter`, the session's other calls reported with
//! `toolAfter`, the session ended with `skillmem/sessionEnd` (or by the end of the input), and
//! the counts read back with `skillmem/notes` and `skillmem/recall`.

mod common;

use std::path::Path;

use common::*;
use serde_json::{json, Value};
use skillmem::client::Client;

const AWS: &str = "aws s3 sync skips files whose size did not change; pass `--exact-timestamps` after a rebuild.";

fn load_in(c: &mut Client, session: &str, call: &str, name: &str, dir: &Path) -> Value {
    ok(c.request(
        "skillmem/toolAfter",
        json!({ "sessionId": session, "callId": call, "tool": "skill", "args": { "name": name },
                "output": format!("# {name}\n\nBase directory for this skill: {}\n", dir.display()) }),
    )
    .unwrap())
}

/// An OpenCode bash call: `metadata.exit` is its exit status.
fn bash(c: &mut Client, session: &str, call: &str, command: &str, exit: i64, output: &str) -> Value {
    ok(c.request(
        "skillmem/toolAfter",
        json!({ "sessionId": session, "callId": call, "tool": "bash",
                "args": { "command": command, "description": "run it" },
                "output": output, "metadata": { "exit": exit, "output": output } }),
    )
    .unwrap())
}

fn end(c: &mut Client, session: &str) {
    assert_eq!(ok(c.request("skillmem/sessionEnd", json!({ "sessionId": session })).unwrap()), json!({}));
}

fn listed(c: &mut Client, skill: &str) -> Vec<Value> {
    let r = ok(c.request("skillmem/notes", json!({ "skill": skill })).unwrap());
    r["notes"].as_array().unwrap().clone()
}

fn counts(n: &Value) -> (i64, i64, i64, bool) {
    (
        n["shown"].as_i64().unwrap(),
        n["used"].as_i64().unwrap(),
        n["ignored"].as_i64().unwrap(),
        n.get("usedAt").is_some_and(|t| t.as_i64().is_some_and(|t| t > 0)),
    )
}

#[test]
fn a_note_applied_after_its_load_is_used_and_the_bare_program_is_not() {
    let w = World::new();
    let dir = w.enabled_skill("aws-deploy");
    let mut c = w.spawn();
    let id = note(&mut c, "aws-deploy", "gotcha", "deploy the site", AWS)["id"].clone();

    // Session a: a call before the load, the load, the note applied.
    let nothing = json!({ "append": null, "skill": null, "mode": "none", "noteIds": [] });
    assert_eq!(bash(&mut c, "a", "1", "ls dist", 0, "index.html"), nothing);
    let l = load_in(&mut c, "a", "2", "aws-deploy", &dir);
    assert_eq!(l["noteIds"], json!([id]));
    assert_eq!(bash(&mut c, "a", "3", "aws s3 sync dist s3://site --exact-timestamps", 0, "upload: ..."), nothing);
    let n = &listed(&mut c, "aws-deploy")[0];
    assert_eq!(counts(n), (0, 0, 0, false), "nothing counts before the session ends: {n}");
    end(&mut c, "a");
    let n = &listed(&mut c, "aws-deploy")[0];
    assert_eq!(counts(n), (1, 1, 0, true), "{n}");
    let used_at = n["usedAt"].clone();

    // Session b runs the program the note is about, without what the note adds.
    load_in(&mut c, "b", "1", "aws-deploy", &dir);
    bash(&mut c, "b", "2", "aws s3 sync dist s3://site", 0, "upload: ...");
    end(&mut c, "b");
    // Ending again counts nothing twice.
    end(&mut c, "b");
    let n = &listed(&mut c, "aws-deploy")[0];
    assert_eq!(counts(n), (2, 1, 0, true), "{n}");
    assert_eq!(n["usedAt"], used_at);

    // recall carries the counts, and is no showing.
    let r = ok(c.request("skillmem/recall", json!({ "skill": "aws-deploy" })).unwrap());
    assert_eq!((r["notes"][0]["shown"].clone(), r["notes"][0]["used"].clone()), (json!(2), json!(1)));
    end(&mut c, "nobody");
    assert_eq!(counts(&listed(&mut c, "aws-deploy")[0]).0, 2);
    c.shutdown().unwrap();

    // An export carries the counts, and an import that inserts the note keeps them.
    let (code, export, e) = w.cli(&["export"]);
    assert_eq!(code, 0, "{e}");
    let line: Value = serde_json::from_str(export.lines().next().unwrap()).unwrap();
    assert_eq!((line["shown"].clone(), line["used"].clone(), line["usedAt"].clone()), (json!(2), json!(1), used_at));
    let file = w.tmp.path().join("notes.jsonl");
    std::fs::write(&file, &export).unwrap();
    let w2 = World::new();
    let (code, _, e) = w2.cli(&["--workspace", w.ws.to_str().unwrap(), "import", file.to_str().unwrap()]);
    assert_eq!(code, 0, "{e}");
    let mut c = w2.spawn_raw();
    ok(c.initialize(&w.ws, json!({})).unwrap());
    assert_eq!(counts(&listed(&mut c, "aws-deploy")[0]), (2, 1, 0, true));
    c.shutdown().unwrap();
}

#[test]
fn only_the_sessions_own_calls_after_the_load_count() {
    let w = World::new();
    let dir = w.enabled_skill("aws-deploy");
    let mut c = w.spawn();
    note(&mut c, "aws-deploy", "gotcha", "", AWS);
    // The flag was there before the load: the note added nothing.
    bash(&mut c, "early", "1", "aws s3 sync dist s3://site --exact-timestamps", 0, "");
    load_in(&mut c, "early", "2", "aws-deploy", &dir);
    bash(&mut c, "early", "3", "aws s3 sync dist s3://site --exact-timestamps", 0, "");
    // Another session applied it; this one did not.
    load_in(&mut c, "mine", "1", "aws-deploy", &dir);
    bash(&mut c, "other", "1", "aws s3 sync dist s3://site --exact-timestamps", 0, "");
    end(&mut c, "early");
    end(&mut c, "mine");
    end(&mut c, "other");
    assert_eq!(counts(&listed(&mut c, "aws-deploy")[0]), (2, 0, 0, false));
    c.shutdown().unwrap();
}

#[test]
fn an_error_the_note_names_coming_back_is_ignored() {
    let w = World::new();
    let dir = w.enabled_skill("npm-ci");
    let mut c = w.spawn();
    note(&mut c, "npm-ci", "fix", "", "npm ci fails with ERESOLVE on the peer deps; run `npm ci --legacy-peer-deps`.");
    load_in(&mut c, "s", "1", "npm-ci", &dir);
    let out = "npm ERR! code ERESOLVE\nnpm ERR! ERESOLVE unable to resolve dependency tree\n";
    bash(&mut c, "s", "2", "npm ci", 1, out);
    end(&mut c, "s");
    assert_eq!(counts(&listed(&mut c, "npm-ci")[0]), (1, 0, 1, false));
    // isError says the same as an exit status.
    load_in(&mut c, "t", "1", "npm-ci", &dir);
    ok(c.request(
        "skillmem/toolAfter",
        json!({ "sessionId": "t", "callId": "2", "tool": "bash", "args": { "command": "npm ci" }, "output": out, "isError": true }),
    )
    .unwrap());
    end(&mut c, "t");
    assert_eq!(counts(&listed(&mut c, "npm-ci")[0]), (2, 0, 2, false));
    c.shutdown().unwrap();
}

#[test]
fn malformed_calls_of_other_tools_never_fail() {
    let w = World::new();
    let mut c = w.spawn();
    let nothing = json!({ "append": null, "skill": null, "mode": "none", "noteIds": [] });
    let odd = [
        json!({ "tool": "bash" }),
        json!({ "sessionId": "s", "tool": "bash", "args": "not an object", "output": 42, "isError": "yes" }),
        json!({ "sessionId": "s", "callId": 7, "tool": "read", "args": [1, { "a": null }], "metadata": [1, 2] }),
        json!({ "sessionId": "s", "callId": "x", "tool": "bash", "args": { "command": "x".repeat(100_000) },
                "output": "e\n".repeat(100_000), "metadata": { "exit": "nope" } }),
        json!({ "sessionId": null, "callId": null, "tool": "webfetch", "output": null, "metadata": null }),
    ];
    for p in odd {
        assert_eq!(ok(c.request("skillmem/toolAfter", p.clone()).unwrap()), nothing, "{p}");
    }
    end(&mut c, "s");
    c.shutdown().unwrap();
}

#[test]
fn the_end_of_input_shutdown_and_sigterm_end_the_open_sessions() {
    let w = World::new();
    let dir = w.enabled_skill("aws-deploy");
    // Every load shows the note (no holdout).
    std::fs::write(w.ws.join("skillmem.toml"), "[memory]\nholdout = 0.0\n").unwrap();
    let mut c = w.spawn();
    note(&mut c, "aws-deploy", "gotcha", "", AWS);
    load_in(&mut c, "eof", "1", "aws-deploy", &dir);
    bash(&mut c, "eof", "2", "aws s3 sync dist s3://site --exact-timestamps", 0, "");
    c.close_stdin();
    assert!(c.child.wait().unwrap().code().is_some());

    let mut c = w.spawn();
    assert_eq!(counts(&listed(&mut c, "aws-deploy")[0]), (1, 1, 0, true));
    load_in(&mut c, "shut", "1", "aws-deploy", &dir);
    assert_eq!(c.shutdown().unwrap(), 0);

    let mut c = w.spawn();
    assert_eq!(counts(&listed(&mut c, "aws-deploy")[0]), (2, 1, 0, true));
    load_in(&mut c, "term", "1", "aws-deploy", &dir);
    // SIGTERM (a host that kills its children at exit) ends them too.
    #[cfg(unix)]
    {
        // SAFETY: a signal to the child this test spawned.
        assert_eq!(unsafe { libc::kill(c.child.id() as i32, libc::SIGTERM) }, 0);
        assert_eq!(c.child.wait().unwrap().code(), Some(1));
        let mut c = w.spawn();
        assert_eq!(counts(&listed(&mut c, "aws-deploy")[0]), (3, 1, 0, true));
        c.shutdown().unwrap();
    }
}
