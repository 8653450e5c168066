//! Lessons mined from the calls a session reported, over the real binary, the way a host
//! drives it: a skill loaded with `skillmem/toolAfter`, the session's shell calls reported
//! with `toolAfter` (OpenCode's bash: `metadata.exit` is the exit status), the session ended
//! with `skillmem/sessionEnd` (or by the end of the input, or `shutdown`), and the notes read
//! back with `skillmem/notes`.

mod common;

use std::path::Path;

use common::*;
use serde_json::{json, Value};
use skillmem::client::Client;

const ERESOLVE: &str = "npm ERR! code ERESOLVE\nnpm ERR! ERESOLVE unable to resolve dependency tree\nnpm ERR! \nnpm ERR! While resolving: app@1.0.0\nnpm ERR! Found: react@18.2.0\nnpm ERR! A complete log of this run can be found in: /home/u/.npm/_logs/x.log";

fn load_in(c: &mut Client, session: &str, call: &str, name: &str, dir: &Path) -> Value {
    ok(c.request(
        "skillmem/toolAfter",
        json!({ "sessionId": session, "callId": call, "tool": "skill", "args": { "name": name },
                "output": format!("# {name}\n\nBase directory for this skill: {}\n", dir.display()) }),
    )
    .unwrap())
}

fn bash(c: &mut Client, session: &str, call: &str, command: &str, exit: i64, output: &str) {
    ok(c.request(
        "skillmem/toolAfter",
        json!({ "sessionId": session, "callId": call, "tool": "bash",
                "args": { "command": command, "description": "install the dependencies" },
                "output": output, "metadata": { "exit": exit, "output": output } }),
    )
    .unwrap());
}

fn end(c: &mut Client, session: &str) {
    assert_eq!(ok(c.request("skillmem/sessionEnd", json!({ "sessionId": session })).unwrap()), json!({}));
}

fn listed(c: &mut Client, skill: &str) -> Vec<Value> {
    let r = ok(c.request("skillmem/notes", json!({ "skill": skill })).unwrap());
    r["notes"].as_array().unwrap().clone()
}

/// A session that meets ERESOLVE and gets past it with `--legacy-peer-deps`.
fn eresolve_session(c: &mut Client, session: &str, dir: &Path) {
    load_in(c, session, "c1", "npm", dir);
    bash(c, session, "c2", "npm ci", 1, ERESOLVE);
    bash(c, session, "c3", "npm ci --legacy-peer-deps", 0, "added 312 packages in 9s");
}

#[test]
fn a_failed_call_and_its_fix_become_one_unverified_fix_note_with_its_evidence() {
    let w = World::new();
    let dir = w.enabled_skill("npm");
    let mut c = w.spawn();
    eresolve_session(&mut c, "s1", &dir);
    assert!(listed(&mut c, "npm").is_empty(), "nothing is mined before the session ends");
    end(&mut c, "s1");
    let notes = listed(&mut c, "npm");
    assert_eq!(notes.len(), 1, "{notes:#?}");
    let n = &notes[0];
    assert_eq!(
        (n["kind"].as_str(), n["source"].as_str(), n["trust"].as_str(), n["sessionId"].as_str()),
        (Some("fix"), Some("transcript"), Some("unverified"), Some("s1")),
        "{n}"
    );
    let delta = n["delta"].as_str().unwrap();
    assert_eq!(
        delta,
        "`npm ci` fails with `ERESOLVE unable to resolve dependency tree`; `npm ci --legacy-peer-deps` works."
    );
    let hits = n["hits"].clone();

    // Ending it again writes nothing again.
    end(&mut c, "s1");
    let again = listed(&mut c, "npm");
    assert_eq!((again.len(), &again[0]["hits"]), (1, &hits), "{again:#?}");

    // A second session meeting the same failure merges into the same note.
    eresolve_session(&mut c, "s2", &dir);
    end(&mut c, "s2");
    let notes = listed(&mut c, "npm");
    assert_eq!(notes.len(), 1, "{notes:#?}");
    assert_eq!(notes[0]["id"], n["id"]);
    assert!(notes[0]["hits"].as_i64() > hits.as_i64(), "{notes:#?}");
    c.shutdown().unwrap();
}

#[test]
fn no_skill_loaded_or_the_same_call_working_later_is_no_lesson() {
    let w = World::new();
    let dir = w.enabled_skill("npm");
    let mut c = w.spawn();
    // No skill loaded.
    bash(&mut c, "bare", "1", "npm ci", 1, ERESOLVE);
    bash(&mut c, "bare", "2", "npm ci --legacy-peer-deps", 0, "added 312 packages in 9s");
    end(&mut c, "bare");
    // The same call, unchanged, working later: the fix was elsewhere.
    load_in(&mut c, "same", "1", "npm", &dir);
    bash(&mut c, "same", "2", "npm ci", 1, ERESOLVE);
    bash(&mut c, "same", "3", "npm ci", 0, "added 312 packages in 9s");
    end(&mut c, "same");
    // A skill that keeps no memory.
    let plain = w.skill("plain", "---\nname: NAME\ndescription: no memory\n---\n# NAME\n");
    load_in(&mut c, "plain", "1", "plain", &plain);
    bash(&mut c, "plain", "2", "npm ci", 1, ERESOLVE);
    bash(&mut c, "plain", "3", "npm ci --legacy-peer-deps", 0, "added 312 packages in 9s");
    end(&mut c, "plain");
    let all = ok(c.request("skillmem/notes", json!({})).unwrap());
    assert_eq!(all["notes"], json!([]), "{all:#}");
    c.shutdown().unwrap();
}

#[test]
fn a_session_that_ends_with_the_input_or_shutdown_is_mined() {
    let w = World::new();
    let dir = w.enabled_skill("npm");
    let mut c = w.spawn();
    eresolve_session(&mut c, "eof", &dir);
    c.close_stdin();
    assert!(c.child.wait().unwrap().code().is_some());
    let mut c = w.spawn();
    assert_eq!(listed(&mut c, "npm").len(), 1);

    // shutdown: another failure of the session's, fixed by a step run between.
    let docker = w.enabled_skill("docker");
    load_in(&mut c, "shut", "1", "docker", &docker);
    bash(
        &mut c,
        "shut",
        "2",
        "docker compose up -d",
        1,
        "unable to get image 'postgres:16': Cannot connect to the Docker daemon at unix:///var/run/docker.sock. Is the docker daemon running?",
    );
    bash(&mut c, "shut", "3", "sudo systemctl start docker", 0, "");
    bash(&mut c, "shut", "4", "docker compose up -d", 0, "Container db Started");
    assert_eq!(c.shutdown().unwrap(), 0);
    let mut c = w.spawn();
    let notes = listed(&mut c, "docker");
    assert_eq!(notes.len(), 1, "{notes:#?}");
    let delta = notes[0]["delta"].as_str().unwrap();
    assert!(delta.contains("until `sudo systemctl start docker` is run"), "{delta}");
    c.shutdown().unwrap();
}
