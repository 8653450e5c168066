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

/// The notes of `skill` held in review (a mined lesson waits there until it recurs).
fn held(c: &mut Client, skill: &str) -> Vec<Value> {
    let r = ok(c.request("skillmem/notes", json!({ "skill": skill, "pending": true })).unwrap());
    r["notes"].as_array().unwrap().clone()
}

/// `evidence` without what the store adds to a mined lesson's (its key and support).
fn quoted(evidence: &Value) -> Value {
    let mut e = evidence.clone();
    if let Some(o) = e.as_object_mut() {
        o.remove("key");
        o.remove("sessions");
    }
    e
}

/// A session that meets ERESOLVE and gets past it with `--legacy-peer-deps`.
fn eresolve_session(c: &mut Client, session: &str, dir: &Path) {
    load_in(c, session, "c1", "npm", dir);
    bash(c, session, "c2", "npm ci", 1, ERESOLVE);
    bash(c, session, "c3", "npm ci --legacy-peer-deps", 0, "added 312 packages in 9s");
}

/// A mined lesson is held (in review, never in a block) until a second session mines the same
/// lesson (`memory.minedSupport`, 2): then it is shown, with its support in its evidence.
#[test]
fn a_failed_call_and_its_fix_become_one_unverified_fix_note_with_its_evidence() {
    let w = World::new();
    let dir = w.enabled_skill("npm");
    let mut c = w.spawn();
    eresolve_session(&mut c, "s1", &dir);
    assert!(held(&mut c, "npm").is_empty(), "nothing is mined before the session ends");
    end(&mut c, "s1");
    assert!(listed(&mut c, "npm").is_empty(), "held: not in the listing of current notes");
    let queue = held(&mut c, "npm");
    assert_eq!(queue.len(), 1, "{queue:#?}");
    assert_eq!((queue[0]["pending"].as_bool(), queue[0]["evidence"]["sessions"].as_i64()), (Some(true), Some(1)));
    let r = ok(c.request("skillmem/recall", json!({ "skill": "npm", "intent": "install dependencies" })).unwrap());
    assert_eq!(r["notes"], json!([]), "a held lesson is in no block: {r:#}");
    // Ending it again counts no second session.
    end(&mut c, "s1");
    assert_eq!(held(&mut c, "npm")[0]["evidence"]["sessions"], 1);
    // A second session meeting the same failure: the same lesson, now shown.
    eresolve_session(&mut c, "s2", &dir);
    end(&mut c, "s2");
    assert!(held(&mut c, "npm").is_empty());
    let notes = listed(&mut c, "npm");
    assert_eq!(notes.len(), 1, "{notes:#?}");
    assert_eq!(notes[0]["id"], queue[0]["id"], "the held note itself is released");
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
    let evidence = json!({
        "failedCall": "npm ci",
        "errorLines": ["ERESOLVE unable to resolve dependency tree", "While resolving: app@1.0.0", "Found: react@18.2.0"],
        "fixedCall": "npm ci --legacy-peer-deps",
        "positions": [{ "callId": "c2" }, { "callId": "c3" }]
    });
    assert_eq!(quoted(&n["evidence"]), evidence, "the first session's evidence: {n}");
    assert_eq!(n["evidence"]["sessions"], 2, "{n}");
    assert!(n["evidence"]["key"].as_str().is_some_and(|k| k.starts_with("npm ci |")), "{n}");
    // recall carries it too.
    let r = ok(c.request("skillmem/recall", json!({ "skill": "npm", "intent": "install dependencies" })).unwrap());
    assert_eq!(quoted(&r["notes"][0]["evidence"]), evidence, "{r:#}");
    // A third session's find counts too, and writes no second note.
    eresolve_session(&mut c, "s3", &dir);
    end(&mut c, "s3");
    let notes = listed(&mut c, "npm");
    assert_eq!((notes.len(), &notes[0]["evidence"]["sessions"]), (1, &json!(3)), "{notes:#?}");
    c.shutdown().unwrap();
    let evidence = notes[0]["evidence"].clone();

    // An export carries it, and an import keeps it.
    let (code, export, e) = w.cli(&["export"]);
    assert_eq!(code, 0, "{e}");
    let line: Value = serde_json::from_str(export.lines().next().unwrap()).unwrap();
    assert_eq!(line["evidence"], evidence, "{line}");
    let file = w.tmp.path().join("notes.jsonl");
    std::fs::write(&file, &export).unwrap();
    let w2 = World::new();
    let (code, _, e) = w2.cli(&["--workspace", w.ws.to_str().unwrap(), "import", file.to_str().unwrap()]);
    assert_eq!(code, 0, "{e}");
    let (code, listed, e) = w2.cli(&["--workspace", w.ws.to_str().unwrap(), "notes", "--json"]);
    assert_eq!(code, 0, "{e}");
    let v: Value = serde_json::from_str(&listed).unwrap();
    assert_eq!(v["notes"][0]["evidence"], evidence, "{v:#}");
    let (_, again, _) = w2.cli(&["--workspace", w.ws.to_str().unwrap(), "export"]);
    let line2: Value = serde_json::from_str(again.lines().next().unwrap()).unwrap();
    assert_eq!(line2["evidence"], evidence, "the round trip keeps it: {line2}");
}

/// A held lesson's support travels by export as its sessions, each named by the SHA-256 of its
/// session id: the same file imported twice, or a machine's own export imported back, adds no
/// session and the lesson stays held; another machine's session of the same lesson releases it.
#[test]
fn an_import_counts_each_session_of_a_held_lesson_once() {
    // Three machines with the same checkout (the same project): A and B each mine the lesson
    // once, C mines nothing.
    let a = World::new();
    let dir = a.enabled_skill("npm");
    let mut b = World::new();
    b.ws = a.ws.clone();
    let mut c = World::new();
    c.ws = a.ws.clone();
    for (w, session) in [(&a, "a-1"), (&b, "b-1")] {
        let mut client = w.spawn();
        eresolve_session(&mut client, session, &dir);
        end(&mut client, session);
        client.shutdown().unwrap();
    }
    // (held notes, released notes, the lesson's support) on a machine.
    let state = |w: &World| {
        let mut client = w.spawn();
        let (queue, shown) = (held(&mut client, "npm"), listed(&mut client, "npm"));
        client.shutdown().unwrap();
        let support =
            queue.iter().chain(&shown).map(|n| n["evidence"]["sessions"].as_i64().unwrap()).collect::<Vec<_>>();
        (queue.len(), shown.len(), support)
    };
    let export = |w: &World, name: &str| {
        let (code, out, e) = w.cli(&["export"]);
        assert_eq!(code, 0, "{e}");
        let file = c.tmp.path().join(name);
        std::fs::write(&file, &out).unwrap();
        (file, out)
    };
    let import = |w: &World, file: &Path| {
        let (code, out, e) = w.cli(&["import", file.to_str().unwrap()]);
        assert_eq!(code, 0, "{out}{e}");
        out + &e
    };
    assert_eq!(state(&a), (1, 0, vec![1]));
    let (from_a, text) = export(&a, "a.jsonl");
    let line: Value = serde_json::from_str(text.lines().next().unwrap()).unwrap();
    let named = line["minedSessions"].as_array().unwrap();
    assert_eq!(named.len(), 1, "{line}");
    let token = named[0].as_str().unwrap();
    assert!(token.len() == 64 && token.bytes().all(|b| b.is_ascii_hexdigit()), "a SHA-256, never the id: {line}");
    let (from_b, _) = export(&b, "b.jsonl");

    // A's own export, imported back into A twice: its own session, not another one.
    for _ in 0..2 {
        let said = import(&a, &from_a);
        assert!(!said.contains("released"), "{said}");
        assert_eq!(state(&a), (1, 0, vec![1]), "{said}");
    }
    // C imports A's export twice: one session, still held, and the note is there once.
    for _ in 0..2 {
        import(&c, &from_a);
        assert_eq!(state(&c), (1, 0, vec![1]));
    }
    // What C exports now names that same session: A importing it counts nothing either.
    let (from_c, _) = export(&c, "c.jsonl");
    import(&a, &from_c);
    assert_eq!(state(&a), (1, 0, vec![1]));
    // B's export: another machine's session of the same lesson releases it, in C and in A.
    let said = import(&c, &from_b);
    assert!(said.contains("released"), "{said}");
    assert_eq!(state(&c), (0, 1, vec![2]), "{said}");
    import(&a, &from_b);
    assert_eq!(state(&a), (0, 1, vec![2]));
    // And again: still two sessions.
    import(&c, &from_b);
    import(&c, &from_a);
    assert_eq!(state(&c), (0, 1, vec![2]));
}

/// An export written by hand whose evidence holds a secret is imported with it redacted.
#[test]
fn imported_evidence_is_redacted() {
    let w = World::new();
    let line = json!({
        "skill": "gh", "scope": "global", "source": "transcript", "kind": "fix",
        "delta": "`gh api` fails with `HTTP 401`; `GH_TOKEN=… gh api` works.",
        "evidence": { "failedCall": "gh api /user", "fixedCall": "GH_TOKEN=ghp_R4nd0mT0k3nV4lu3F0rT3st1ngOnly0123ab gh api /user",
                      "positions": [{ "recordIndex": 3 }, { "recordIndex": 5 }] }
    });
    let file = w.tmp.path().join("hand.jsonl");
    std::fs::write(&file, format!("{line}\n")).unwrap();
    let (code, _, e) = w.cli(&["import", file.to_str().unwrap()]);
    assert_eq!(code, 0, "{e}");
    let (_, listed, _) = w.cli(&["notes", "--json"]);
    let v: Value = serde_json::from_str(&listed).unwrap();
    let ev = &v["notes"][0]["evidence"];
    assert_eq!(ev["positions"], json!([{ "recordIndex": 3 }, { "recordIndex": 5 }]), "{v:#}");
    assert_eq!(ev["failedCall"], "gh api /user");
    let fixed = ev["fixedCall"].as_str().unwrap();
    assert!(!fixed.contains("R4nd0m") && fixed.ends_with("gh api /user"), "{fixed}");
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
    let queue = ok(c.request("skillmem/notes", json!({ "pending": true })).unwrap());
    assert_eq!(queue["notes"], json!([]), "nothing held either: {queue:#}");
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
    assert_eq!(held(&mut c, "npm").len(), 1);

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
    let notes = held(&mut c, "docker");
    assert_eq!(notes.len(), 1, "{notes:#?}");
    let delta = notes[0]["delta"].as_str().unwrap();
    assert!(delta.contains("until `sudo systemctl start docker` is run"), "{delta}");
    c.shutdown().unwrap();
}

/// Mining a session's log finds what mining its transcript finds: each labelled session of
/// bench/mine (scripted, in the four hosts' formats) replayed through `toolAfter` (a skill
/// load wherever the skill in use changes, every call with its command, output and failure)
/// and ended, against the miner run over the transcript's own calls. The log keeps only the
/// lines of a failed output the error is read from, so this is the check that they are enough.
#[test]
fn the_log_mines_what_the_transcript_mines_on_the_bench_sessions() {
    use skillmem::historian::{mine, tool_calls, transcript};
    use skillmem::hosts::hooks::transcripts::{self as agent_transcripts, Kind};
    let bench = Path::new(env!("CARGO_MANIFEST_DIR")).join("bench/mine");
    let (mut sessions, mut lessons) = (0, 0);
    for set in ["dev.labels.jsonl", "held-out.labels.jsonl"] {
        let text = std::fs::read_to_string(bench.join(set)).unwrap();
        for line in text.lines().map(str::trim).filter(|l| !l.is_empty() && !l.starts_with("//")) {
            let label: Value = serde_json::from_str(line).unwrap();
            let path = bench.join(label["transcript"].as_str().unwrap());
            let records = transcript::records_from_jsonl(&std::fs::read_to_string(&path).unwrap());
            let calls = match label["host"].as_str().unwrap() {
                "claude-code" => tool_calls::claude_code(&records),
                "codex" => agent_transcripts::calls(Kind::Codex, &records),
                "gemini-cli" => agent_transcripts::calls(Kind::Gemini, &records),
                "copilot" => agent_transcripts::calls(Kind::Copilot, &records),
                h => panic!("{h}"),
            };
            let enabled: Vec<&str> = label["enabled"].as_array().unwrap().iter().filter_map(Value::as_str).collect();
            let mut want: Vec<(String, String)> = mine::mine(&calls)
                .mined
                .into_iter()
                .filter(|m| enabled.contains(&m.skill.as_str()))
                .map(|m| (m.skill, m.delta))
                .collect();
            want.sort();
            want.dedup();

            let w = World::new();
            let mut dirs = std::collections::HashMap::new();
            for s in calls.iter().filter_map(|c| c.skill_in_use.clone()) {
                dirs.entry(s.clone()).or_insert_with(|| {
                    let memory = if enabled.contains(&s.as_str()) { "skill-memory:\n  enabled: true\n" } else { "" };
                    w.skill(&s, &format!("---\nname: NAME\ndescription: a skill\n{memory}---\n# NAME\n"))
                });
            }
            let mut c = w.spawn();
            let mut in_use: Option<&str> = None;
            for (k, call) in calls.iter().enumerate() {
                if let Some(s) = call.skill_in_use.as_deref().filter(|s| in_use != Some(*s)) {
                    load_in(&mut c, "s", &format!("load{k}"), s, &dirs[s]);
                    in_use = Some(s);
                }
                // The transcript's own skill tool call is the load sent above.
                if call.tool.eq_ignore_ascii_case("skill") {
                    continue;
                }
                ok(c.request(
                    "skillmem/toolAfter",
                    json!({ "sessionId": "s", "callId": format!("c{k}"), "tool": call.tool,
                            "args": { "command": call.command }, "output": call.output, "isError": call.failed }),
                )
                .unwrap());
            }
            end(&mut c, "s");
            // Each a session of its own store: every lesson is held, in review.
            let all = ok(c.request("skillmem/notes", json!({ "pending": true })).unwrap());
            let mut got: Vec<(String, String)> = all["notes"]
                .as_array()
                .unwrap()
                .iter()
                .map(|n| (n["skill"].as_str().unwrap().to_string(), n["delta"].as_str().unwrap().to_string()))
                .collect();
            got.sort();
            assert_eq!(got, want, "{}", path.display());
            c.shutdown().unwrap();
            // What the log kept holds no secret (gh-token, curl-self-signed-with-token plant some).
            let db = rusqlite::Connection::open(w.data.join("skillmem.db")).unwrap();
            let mut st = db.prepare("SELECT command || ' ' || key_lines || ' ' || args FROM call_log").unwrap();
            for kept in st.query_map([], |r| r.get::<_, String>(0)).unwrap() {
                let kept = kept.unwrap();
                assert_eq!(skillmem_text::redact::find_secret(&kept), None, "{}: {kept}", path.display());
            }
            sessions += 1;
            lessons += want.len();
        }
    }
    // 39 before a fix had to be the failed call changed in place: `docker run -p 5432:5432` →
    // `-p 5433:5432` (another port, the held-out set's labelled negative) is mined no more.
    assert_eq!((sessions, lessons), (58, 38), "every bench session replayed");
}
