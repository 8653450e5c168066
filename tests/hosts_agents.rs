//! `skillmem hook gemini-cli | codex | copilot` over the real binary, fed the hook inputs the
//! real hosts sent (tests/fixtures/*/recorded-*), the way each host runs it: one process per
//! event, JSON on stdin, the answer on stdout, always exit 0.

mod common;

use std::io::Write;
use std::path::Path;
use std::process::{Command, Stdio};

use common::{World, ENABLED};
use serde_json::{json, Value};

fn hook(w: &World, host: &str, stdin: &str) -> (i32, String, String) {
    let mut c = Command::new(env!("CARGO_BIN_EXE_skillmem"))
        .args(["hook", host])
        .current_dir(&w.ws)
        .envs(w.envs())
        .env_remove("GEMINI_PROJECT_DIR")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    c.stdin.take().unwrap().write_all(stdin.as_bytes()).unwrap();
    let out = c.wait_with_output().unwrap();
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

fn recorded(path: &str) -> Value {
    let p = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures").join(path);
    serde_json::from_str(&std::fs::read_to_string(p).unwrap()).unwrap()
}

/// A skill `jq` in `folder` of the workspace with two notes; returns the world.
fn world_with(folder: &str) -> World {
    let w = World::new();
    let dir = w.ws.join(folder).join("jq");
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(dir.join("SKILL.md"), ENABLED.replace("NAME", "jq")).unwrap();
    for (kind, delta, intent) in [
        ("gotcha", "jq -r prints strings without quotes for a shell loop", "raw strings for a shell loop"),
        ("fix", "pass --slurp when the input holds several JSON documents", "several documents"),
    ] {
        let (code, _, e) = w.cli(&["note", "jq", "--kind", kind, "--delta", delta, "--intent", intent]);
        assert_eq!(code, 0, "{e}");
    }
    w
}

/// A transcript of one line written where the host would keep it.
fn transcript(w: &World, record: Value) -> String {
    let p = w.tmp.path().join("transcript.jsonl");
    std::fs::write(&p, format!("{record}\n")).unwrap();
    p.display().to_string()
}

#[test]
fn each_hosts_recorded_skill_load_gets_the_block_ranked_by_what_the_agent_said() {
    // Gemini CLI 0.61.0: AfterTool of activate_skill; the answer is hookSpecificOutput, plain lines.
    let w = world_with(".gemini/skills");
    let mut e = recorded("gemini-cli/recorded-0.61.0/after-tool-activate-skill.json");
    e["cwd"] = json!(w.ws);
    e["transcript_path"] = json!(transcript(
        &w,
        json!({"type": "gemini", "content": "Loading jq to print raw strings for a shell loop."})
    ));
    let (code, out, err) = hook(&w, "gemini-cli", &e.to_string());
    assert_eq!(code, 0, "{err}");
    let a: Value = serde_json::from_str(&out).unwrap_or_else(|_| panic!("not JSON: {out:?} {err}"));
    assert_eq!(a["hookSpecificOutput"]["hookEventName"], "AfterTool");
    let ctx = a["hookSpecificOutput"]["additionalContext"].as_str().unwrap();
    assert!(ctx.starts_with("skill-memory for jq (2 notes, ranked by vector):"), "{ctx}");
    assert!(ctx.find("jq -r prints").unwrap() < ctx.find("--slurp").unwrap(), "{ctx}");
    // No XML framing (Gemini would show it as &lt;note ...&gt;).
    assert!(!ctx.contains("<note") && !ctx.contains("<skill-memory") && !ctx.contains("<delta>"), "{ctx}");
    assert!(ctx.contains("mcp_skillmem_skill_note"), "{ctx}");

    // Codex 0.171.0: PostToolUse of Bash reading the SKILL.md; hookSpecificOutput, the XML block.
    let w = world_with(".agents/skills");
    let mut e = recorded("codex/recorded-0.171.0/post-tool-use-bash.json");
    e["cwd"] = json!(w.ws);
    e["transcript_path"] = json!(transcript(
        &w,
        json!({"type": "response_item", "payload": {"type": "message", "role": "assistant", "content": [{"type": "output_text", "text": "Reading jq to print raw strings for a shell loop."}]}})
    ));
    let (code, out, err) = hook(&w, "codex", &e.to_string());
    assert_eq!(code, 0, "{err}");
    let a: Value = serde_json::from_str(&out).unwrap_or_else(|_| panic!("not JSON: {out:?} {err}"));
    assert_eq!(a["hookSpecificOutput"]["hookEventName"], "PostToolUse");
    let ctx = a["hookSpecificOutput"]["additionalContext"].as_str().unwrap();
    assert!(ctx.starts_with("<skill-memory skill=\"jq\" mode=\"vector\""), "{ctx}");
    assert!(ctx.find("jq -r prints").unwrap() < ctx.find("--slurp").unwrap(), "{ctx}");
    assert!(ctx.contains("mcp__skillmem__skill_note"), "{ctx}");

    // Copilot CLI 1.0.102: postToolUse of skill; top-level additionalContext; the skill is
    // found by name in .github/skills, the intent in the session's events under HOME.
    let w = world_with(".github/skills");
    let mut e = recorded("copilot/recorded-1.0.102/post-tool-use-skill.json");
    e["cwd"] = json!(w.ws);
    let id = e["sessionId"].as_str().unwrap().to_string();
    let events = w.home.join(".copilot/session-state").join(&id);
    std::fs::create_dir_all(&events).unwrap();
    let said = json!({"type": "assistant.message", "data": {"content": "Loading jq to print raw strings for a shell loop.", "toolRequests": [{"name": "skill", "arguments": {"skill": "jq"}}]}});
    std::fs::write(events.join("events.jsonl"), format!("{said}\n")).unwrap();
    let (code, out, err) = hook(&w, "copilot", &e.to_string());
    assert_eq!(code, 0, "{err}");
    let a: Value = serde_json::from_str(&out).unwrap_or_else(|_| panic!("not JSON: {out:?} {err}"));
    let ctx = a["additionalContext"].as_str().unwrap();
    assert!(ctx.starts_with("<skill-memory skill=\"jq\" mode=\"vector\""), "{ctx}");
    assert!(ctx.find("jq -r prints").unwrap() < ctx.find("--slurp").unwrap(), "{ctx}");
    assert!(ctx.contains("skillmem-skill_note"), "{ctx}");
    // The load is a skill use of the session.
    let (_, stats, _) = w.cli(&["stats", "--json"]);
    let s: Value = serde_json::from_str(&stats).unwrap();
    let jq = s["skills"].as_array().unwrap().iter().find(|k| k["skill"] == "jq").unwrap();
    assert_eq!(jq["sessions"], 1, "{s}");
    assert!(!w.data.join("logs/copilot-hook.log").exists(), "nothing to log");
}

#[test]
fn every_hook_fails_open() {
    let w = world_with(".gemini/skills");
    // (host, stdin, a log line is expected)
    let cases: &[(&str, &str, bool)] = &[
        ("gemini-cli", "", true),
        ("gemini-cli", "not json", true),
        ("codex", "[1, 2]", true),
        ("copilot", "{\"toolName\": \"skill\"}", false),
        (
            "gemini-cli",
            r#"{"hook_event_name":"AfterTool","tool_name":"activate_skill","tool_input":{"name":"nosuch"}}"#,
            true,
        ),
        ("gemini-cli", r#"{"hook_event_name":"AfterTool","tool_name":"read_file","tool_input":{"path":"x"}}"#, false),
        ("codex", r#"{"hook_event_name":"PostToolUse","tool_name":"Bash","tool_input":{"command":"ls -la"}}"#, false),
        (
            "codex",
            r#"{"hook_event_name":"PostToolUse","tool_name":"Bash","tool_input":{"command":"cat /nowhere/jq/SKILL.md"}}"#,
            true,
        ),
        ("copilot", r#"{"toolName":"skill","toolArgs":"{broken"}"#, false),
        (
            "gemini-cli",
            r#"{"hook_event_name":"AfterTool","tool_name":"activate_skill","tool_input":{"name":"jq"},"transcript_path":"/no/such/file.jsonl"}"#,
            false,
        ),
        // The session's end, a transcript that is not there or not named.
        (
            "gemini-cli",
            r#"{"hook_event_name":"SessionEnd","session_id":"s1","transcript_path":"/no/such.jsonl"}"#,
            true,
        ),
        ("gemini-cli", r#"{"hook_event_name":"SessionEnd","transcript_path":"/no/such.jsonl"}"#, true),
        ("codex", r#"{"hook_event_name":"Stop","session_id":"s1"}"#, true),
        ("copilot", r#"{"sessionId":"no-such-session","reason":"complete"}"#, true),
        ("copilot", r#"{"sessionId":"../../etc","reason":"complete"}"#, true),
        // A compaction whose rollout is missing, holds no summary, or a summary without a block.
        ("codex", r#"{"hook_event_name":"PostCompact","session_id":"s1","transcript_path":"/no/such.jsonl"}"#, true),
        ("codex", r#"{"hook_event_name":"SessionStart","source":"compact","transcript_path":"/no/such.jsonl"}"#, false),
        ("codex", r#"{"hook_event_name":"SessionStart","source":"startup"}"#, false),
    ];
    for (host, stdin, logged) in cases {
        let log = w.data.join("logs").join(format!("{host}-hook.log"));
        let _ = std::fs::remove_file(&log);
        let (code, out, err) = hook(&w, host, stdin);
        assert_eq!(code, 0, "{host} {stdin:?}: {err}");
        let answered = !out.trim().is_empty();
        // A missing transcript is no failure: the load ranks by recency and hits.
        if stdin.contains("/no/such/file") {
            assert!(out.contains("ranked by recent"), "{out}");
        } else {
            assert!(!answered, "{host} {stdin:?} answered {out}");
        }
        assert_eq!(log.exists(), *logged, "{host} {stdin:?}: log {:?}", std::fs::read_to_string(&log).ok());
    }
}

/// The `(session, skill)` rows of `skill_uses`, in order.
fn uses(w: &World) -> Vec<(String, String, String)> {
    let conn = rusqlite::Connection::open(w.data.join("skillmem.db")).unwrap();
    let mut st = conn.prepare("SELECT host, session_id, skill FROM skill_uses ORDER BY id").unwrap();
    let rows = st.query_map([], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?))).unwrap();
    rows.map(Result::unwrap).collect()
}

/// A recorded transcript copied where the test's host keeps it.
fn copy_transcript(w: &World, fixture: &str, to: &Path) -> String {
    std::fs::create_dir_all(to.parent().unwrap()).unwrap();
    std::fs::copy(Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures").join(fixture), to).unwrap();
    let _ = w;
    to.display().to_string()
}

#[test]
fn each_hosts_session_end_records_the_transcripts_skill_uses_once() {
    // (host, skill folder, the recorded end event, its transcript, the skill-load event)
    let cases = [
        (
            "gemini-cli",
            ".gemini/skills",
            "gemini-cli/recorded-0.61.0/session-end.json",
            "gemini-cli/recorded-0.61.0/session-at-end.jsonl",
            "gemini-cli/recorded-0.61.0/after-tool-activate-skill.json",
        ),
        (
            "codex",
            ".agents/skills",
            "codex/recorded-0.171.0/stop.json",
            "codex/recorded-0.171.0/rollout-at-stop.jsonl",
            "codex/recorded-0.171.0/post-tool-use-bash.json",
        ),
        (
            "copilot",
            ".github/skills",
            "copilot/recorded-1.0.102/session-end.json",
            "copilot/recorded-1.0.102/events-at-session-end.jsonl",
            "copilot/recorded-1.0.102/post-tool-use-skill.json",
        ),
    ];
    for (host, folder, end, fixture, load) in cases {
        // The hook never saw the load (it failed, say): the session's end records it.
        let w = world_with(folder);
        let mut e = recorded(end);
        e["cwd"] = json!(w.ws);
        let session = e.get("session_id").or_else(|| e.get("sessionId")).and_then(Value::as_str).unwrap().to_string();
        let at = match host {
            // Copilot's sessionEnd names only the session: its events file under HOME.
            "copilot" => w.home.join(".copilot/session-state").join(&session).join("events.jsonl"),
            _ => w.tmp.path().join("transcript.jsonl"),
        };
        let path = copy_transcript(&w, fixture, &at);
        if host != "copilot" {
            e["transcript_path"] = json!(path);
        }
        let (code, out, err) = hook(&w, host, &e.to_string());
        assert_eq!((code, out.as_str()), (0, ""), "{host}: {err}");
        let want = vec![(host.to_string(), session.clone(), "jq".to_string())];
        assert_eq!(uses(&w), want, "{host}");
        let log = w.data.join(format!("logs/{host}-hook.log"));
        assert!(!log.exists(), "{host}: {}", std::fs::read_to_string(&log).unwrap_or_default());
        // Again (Codex's next turn, a repeated event): nothing new read, nothing counted twice.
        hook(&w, host, &e.to_string());
        assert_eq!(uses(&w), want, "{host}: the second end counted again");

        // The hook saw the load: the session's end does not count it again.
        let w = world_with(folder);
        let mut l = recorded(load);
        l["cwd"] = json!(w.ws);
        l[if host == "copilot" { "sessionId" } else { "session_id" }] = json!(session);
        if host != "copilot" {
            l["transcript_path"] = json!(transcript(&w, json!({"type": "x"})));
        }
        let (code, out, _) = hook(&w, host, &l.to_string());
        assert!(code == 0 && !out.is_empty(), "{host}: the load got no block");
        let at = match host {
            "copilot" => w.home.join(".copilot/session-state").join(&session).join("events.jsonl"),
            _ => w.tmp.path().join("rollout.jsonl"),
        };
        let path = copy_transcript(&w, fixture, &at);
        let mut e = recorded(end);
        e["cwd"] = json!(w.ws);
        if host != "copilot" {
            e["transcript_path"] = json!(path);
        }
        hook(&w, host, &e.to_string());
        assert_eq!(uses(&w), vec![(host.to_string(), session.clone(), "jq".to_string())], "{host}: counted twice");
    }
}

#[test]
fn codex_compaction_promotes_the_summarys_observations_and_gives_the_blocks_back() {
    // A skill with memory and no notes yet; the rollout of a real session whose compaction
    // (Codex 0.171.0, the compact prompt of skillmem setup) ended with an observation.
    let w = World::new();
    let dir = w.ws.join(".agents/skills/jq");
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(dir.join("SKILL.md"), ENABLED.replace("NAME", "jq")).unwrap();
    let rollout = copy_transcript(&w, "codex/recorded-0.171.0/rollout-at-stop.jsonl", &w.tmp.path().join("r.jsonl"));
    let mut e = recorded("codex/recorded-0.171.0/post-compact.json");
    e["cwd"] = json!(w.ws);
    e["transcript_path"] = json!(rollout);
    let (code, out, err) = hook(&w, "codex", &e.to_string());
    assert_eq!((code, out.as_str()), (0, ""), "{err}");
    let (_, notes, _) = w.cli(&["notes", "--json"]);
    assert!(notes.contains("jq -r prints strings without quotes; use it for shell loops."), "{notes}");
    assert!(notes.contains("historian"), "promoted as the historian's: {notes}");
    // Codex then starts the session again (`source: "compact"`): the block comes back.
    let mut s = recorded("codex/recorded-0.171.0/session-start-compact.json");
    s["cwd"] = json!(w.ws);
    s["transcript_path"] = json!(rollout);
    let (code, out, err) = hook(&w, "codex", &s.to_string());
    assert_eq!(code, 0, "{err}");
    let a: Value = serde_json::from_str(&out).unwrap_or_else(|_| panic!("not JSON: {out:?} {err}"));
    assert_eq!(a["hookSpecificOutput"]["hookEventName"], "SessionStart");
    let ctx = a["hookSpecificOutput"]["additionalContext"].as_str().unwrap();
    assert!(ctx.starts_with("<skill-memory skill=\"jq\""), "{ctx}");
    assert!(ctx.contains("jq -r prints strings without quotes"), "{ctx}");
    // A session's start that is no compaction's gets nothing.
    s["source"] = json!("startup");
    assert_eq!(hook(&w, "codex", &s.to_string()).1, "");
    // A summary without a block (a compact prompt of the user's own): nothing promoted, no failure.
    let plain = w.tmp.path().join("plain.jsonl");
    std::fs::write(&plain, "{\"type\":\"compacted\",\"payload\":{\"message\":\"The agent printed names.\"}}\n")
        .unwrap();
    e["transcript_path"] = json!(plain);
    let before = w.cli(&["notes", "--json"]).1;
    assert_eq!(hook(&w, "codex", &e.to_string()).1, "");
    assert_eq!(w.cli(&["notes", "--json"]).1, before);
    assert!(
        !w.data.join("logs/codex-hook.log").exists(),
        "{}",
        std::fs::read_to_string(w.data.join("logs/codex-hook.log")).unwrap_or_default()
    );
}

/// Each host's session end (Gemini CLI's `SessionEnd`, Copilot CLI's `sessionEnd`) or turn
/// end (Codex's `Stop`), fed the recorded end event and a transcript in that host's format
/// (bench/mine, scripted) where a memory-enabled skill is loaded, a command fails and works
/// changed, or after a step: one unverified `fix` note of that skill, with its evidence in the
/// transcript's record indexes; the same end again (Codex's next turn) writes nothing again.
/// The lesson is shown from its first session here (`memory.minedSupport = 1`): what is read
/// from each host's transcript is this test's subject; holding a lesson until it recurs is
/// tests/mine.rs's and tests/claude_code.rs's.
#[test]
fn each_hosts_session_end_mines_a_failed_call_and_its_fix() {
    // (host, the recorded end event, the transcript, the skill, the failed call, the call that worked)
    let cases = [
        (
            "gemini-cli",
            "gemini-cli/recorded-0.61.0/session-end.json",
            "dev/docker-socket-permission.jsonl",
            "docker",
            "docker ps",
            "sudo docker ps",
        ),
        (
            "codex",
            "codex/recorded-0.171.0/stop.json",
            "dev/pip-externally-managed.jsonl",
            "python",
            "pip install requests",
            ".venv/bin/pip install requests",
        ),
        (
            "copilot",
            "copilot/recorded-1.0.102/session-end.json",
            "dev/git-push-no-upstream.jsonl",
            "git",
            "git push",
            "git push --set-upstream origin feature/login",
        ),
    ];
    for (host, end, transcript, skill, failed, fixed) in cases {
        let w = World::new();
        w.enabled_skill(skill);
        std::fs::write(w.ws.join("skillmem.toml"), "[memory]\nmined_support = 1\n").unwrap();
        let mut e = recorded(end);
        e["cwd"] = json!(w.ws);
        let session = e.get("session_id").or_else(|| e.get("sessionId")).and_then(Value::as_str).unwrap().to_string();
        let at = match host {
            "copilot" => w.home.join(".copilot/session-state").join(&session).join("events.jsonl"),
            _ => w.tmp.path().join("transcript.jsonl"),
        };
        std::fs::create_dir_all(at.parent().unwrap()).unwrap();
        std::fs::copy(Path::new(env!("CARGO_MANIFEST_DIR")).join("bench/mine").join(transcript), &at).unwrap();
        if host != "copilot" {
            e["transcript_path"] = json!(at);
        }
        let (code, out, err) = hook(&w, host, &e.to_string());
        assert_eq!((code, out.as_str()), (0, ""), "{host}: {err}");
        let notes = |w: &World| -> Vec<Value> {
            let (code, listed, e) = w.cli(&["notes", "--json"]);
            assert_eq!(code, 0, "{e}");
            serde_json::from_str::<Value>(&listed).unwrap()["notes"].as_array().unwrap().clone()
        };
        let got = notes(&w);
        assert_eq!(got.len(), 1, "{host}: {got:#?}");
        let n = &got[0];
        assert_eq!(
            (n["skill"].as_str(), n["kind"].as_str(), n["source"].as_str(), n["trust"].as_str()),
            (Some(skill), Some("fix"), Some("transcript"), Some("unverified")),
            "{host}: {n}"
        );
        assert_eq!((n["host"].as_str(), n["sessionId"].as_str()), (Some(host), Some(session.as_str())), "{n}");
        assert_eq!(n["transcript"], json!(at), "{host}: {n}");
        let ev = &n["evidence"];
        assert_eq!((ev["failedCall"].as_str(), ev["fixedCall"].as_str()), (Some(failed), Some(fixed)), "{host}: {n}");
        assert!(ev["errorLines"].as_array().is_some_and(|l| !l.is_empty()), "{host}: {n}");
        let positions = ev["positions"].as_array().unwrap();
        assert!(
            (2..=3).contains(&positions.len()) && positions.iter().all(|p| p["recordIndex"].is_u64()),
            "{host}: {n}"
        );
        // Again (Codex's next turn, a repeated event): nothing written again.
        hook(&w, host, &e.to_string());
        let again = notes(&w);
        assert_eq!((again.len(), &again[0]["hits"]), (1, &n["hits"]), "{host}: {again:#?}");
    }
}

/// Copilot CLI writes a session's events file behind the session: at `sessionEnd` it held only
/// the session's start (the first eight records of `events-fix.jsonl`, as a real run's hook
/// found them). The next session's skill load reads on in that file once it is complete and
/// mines it before its block is built, so the block carries the lesson (shown from its first
/// session: `memory.minedSupport = 1`); the next end writes nothing again.
#[test]
fn copilot_sessions_written_after_their_end_are_mined_by_the_next_hook() {
    let w = World::new();
    std::fs::write(w.ws.join("skillmem.toml"), "[memory]\nmined_support = 1\n").unwrap();
    let dir = w.ws.join(".github/skills/deploy");
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(dir.join("SKILL.md"), ENABLED.replace("NAME", "deploy")).unwrap();
    let events = |session: &str| w.home.join(".copilot/session-state").join(session).join("events.jsonl");
    let full = std::fs::read_to_string(
        Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/copilot/recorded-1.0.102/events-fix.jsonl"),
    )
    .unwrap();
    let first = "e32096c5-a8a6-476c-86f2-7c3cc4c82057";
    std::fs::create_dir_all(events(first).parent().unwrap()).unwrap();
    let at_end: String = full.lines().take(8).map(|l| format!("{l}\n")).collect();
    std::fs::write(events(first), at_end).unwrap();
    let mut end = recorded("copilot/recorded-1.0.102/session-end.json");
    end["cwd"] = json!(w.ws);
    end["sessionId"] = json!(first);
    let (code, out, err) = hook(&w, "copilot", &end.to_string());
    assert_eq!((code, out.as_str()), (0, ""), "{err}");
    let notes = |w: &World| -> Vec<Value> {
        let (code, listed, e) = w.cli(&["notes", "--json"]);
        assert_eq!(code, 0, "{e}");
        serde_json::from_str::<Value>(&listed).unwrap()["notes"].as_array().unwrap().clone()
    };
    assert_eq!(notes(&w), Vec::<Value>::new(), "nothing failed yet in what the end read");

    // Copilot writes the rest; the next session loads the skill.
    std::fs::write(events(first), &full).unwrap();
    let mut load = recorded("copilot/recorded-1.0.102/post-tool-use-skill.json");
    load["cwd"] = json!(w.ws);
    load["toolArgs"] = json!({"skill": "deploy"});
    let second = load["sessionId"].as_str().unwrap().to_string();
    let (code, out, err) = hook(&w, "copilot", &load.to_string());
    assert_eq!(code, 0, "{err}");
    let a: Value = serde_json::from_str(&out).unwrap_or_else(|_| panic!("not JSON: {out:?} {err}"));
    let ctx = a["additionalContext"].as_str().unwrap();
    let lesson = "`deployctl push web` fails with `error: no region configured (set --region or DEPLOY_REGION)`; \
                  `deployctl push web --region eu-west-1` works.";
    assert!(ctx.contains(lesson) && ctx.contains("trust=\"unverified\""), "{ctx}");
    let got = notes(&w);
    assert_eq!(got.len(), 1, "{got:#?}");
    assert_eq!(
        (got[0]["source"].as_str(), got[0]["sessionId"].as_str(), got[0]["host"].as_str()),
        (Some("transcript"), Some(first), Some("copilot")),
        "{}",
        got[0]
    );
    // The second session's end reads the first's file again: it has not grown, nothing more.
    end["sessionId"] = json!(second);
    hook(&w, "copilot", &end.to_string());
    hook(&w, "copilot", &load.to_string());
    let again = notes(&w);
    assert_eq!((again.len(), &again[0]["hits"]), (1, &got[0]["hits"]), "{again:#?}");
    let log = std::fs::read_to_string(w.data.join("logs/copilot-hook.log")).unwrap();
    assert_eq!(log.lines().filter(|l| l.contains("mined a fix lesson of deploy")).count(), 1, "{log}");
}
