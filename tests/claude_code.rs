//! `skillmem hook claude-code` end to end: recorded hook events (tests/fixtures/claude-code)
//! on stdin of the real binary, the hook's JSON on stdout, failures in the log file.

#[rustfmt::skip] // shared file, formatted where it is owned
mod common;

use std::io::Write;
use std::path::Path;
use std::process::{Command, Stdio};

use common::World;
use serde_json::Value;

fn fixture(name: &str, w: &World, transcript: &Path) -> String {
    let p = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/claude-code").join(name);
    std::fs::read_to_string(p)
        .unwrap()
        .replace("${CWD}", &w.ws.display().to_string())
        .replace("${TRANSCRIPT}", &transcript.display().to_string())
}

/// Runs the hook with `stdin`; returns (exit code, stdout, stderr).
fn hook(w: &World, stdin: &str) -> (i32, String, String) {
    hook_with(w, &[], stdin)
}

fn hook_with(w: &World, extra: &[&str], stdin: &str) -> (i32, String, String) {
    let mut child = Command::new(env!("CARGO_BIN_EXE_skillmem"))
        .args(["hook", "claude-code"])
        .args(extra)
        .current_dir(&w.home)
        .envs(w.envs())
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    child.stdin.take().unwrap().write_all(stdin.as_bytes()).unwrap();
    let out = child.wait_with_output().unwrap();
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stdout).into(),
        String::from_utf8_lossy(&out.stderr).into(),
    )
}

fn log(w: &World) -> String {
    std::fs::read_to_string(w.data.join("logs/claude-code-hook.log")).unwrap_or_default()
}

fn context(stdout: &str, event: &str) -> String {
    let v: Value = serde_json::from_str(stdout.trim()).unwrap_or_else(|e| panic!("not JSON ({e}): {stdout:?}"));
    assert_eq!(v["hookSpecificOutput"]["hookEventName"], event);
    v["hookSpecificOutput"]["additionalContext"].as_str().unwrap().to_string()
}

fn world_with_note() -> World {
    let w = World::new();
    w.enabled_skill("pdf");
    let (code, _, err) =
        w.cli(&["note", "pdf", "--kind", "gotcha", "--delta", "pdftotext drops ligatures; pass -enc UTF-8"]);
    assert_eq!(code, 0, "{err}");
    w
}

#[test]
fn skill_loads_get_the_block_in_every_recorded_shape() {
    let w = world_with_note();
    let t = w.tmp.path().join("t.jsonl");
    for (file, event) in [
        ("post_tool_use_skill.json", "PostToolUse"),
        ("post_tool_use_skill_plugin.json", "PostToolUse"),
        ("post_tool_use_skill_older.json", "PostToolUse"),
        ("post_tool_use_skill_newer.json", "PostToolUse"),
        ("user_prompt_expansion.json", "UserPromptExpansion"),
    ] {
        let (code, out, _) = hook(&w, &fixture(file, &w, &t));
        assert_eq!(code, 0, "{file}");
        let ctx = context(&out, event);
        assert!(ctx.starts_with("<skill-memory skill=\"pdf\""), "{file}: {ctx}");
        assert!(ctx.contains("drops ligatures"), "{file}: {ctx}");
        assert!(
            ctx.contains("with mcp__plugin_skillmem_skillmem__skill_note (kind"),
            "{file}: the guidance names the plugin's MCP tool by its full name: {ctx}"
        );
    }
    assert_eq!(log(&w), "", "no failures logged");
}

/// The settings snippet names its MCP server `skillmem` and says so with `--note-tool`; a
/// workspace's skillmem.toml can name the tool too, and then wins.
#[test]
fn the_guidance_names_the_note_tool_the_install_registered() {
    let w = world_with_note();
    let t = w.tmp.path().join("t.jsonl");
    let event = fixture("post_tool_use_skill.json", &w, &t);
    let (_, out, _) = hook_with(&w, &["--note-tool", "mcp__skillmem__skill_note"], &event);
    let ctx = context(&out, "PostToolUse");
    assert!(ctx.contains("with mcp__skillmem__skill_note (kind"), "{ctx}");
    std::fs::write(w.ws.join("skillmem.toml"), "[memory]\nnote_tool = \"my_note\"\n").unwrap();
    let (_, out, _) = hook_with(&w, &["--note-tool", "mcp__skillmem__skill_note"], &event);
    let ctx = context(&out, "PostToolUse");
    assert!(ctx.contains("with my_note (kind"), "{ctx}");
}

#[test]
fn events_that_are_not_skill_loads_get_no_answer_and_no_log() {
    let w = world_with_note();
    let t = w.tmp.path().join("t.jsonl");
    for file in [
        "post_tool_use_bash.json",
        "user_prompt_expansion_custom_command.json",
        "user_prompt_expansion_mcp_prompt.json",
    ] {
        let (code, out, _) = hook(&w, &fixture(file, &w, &t));
        assert_eq!((code, out.as_str()), (0, ""), "{file}");
    }
    let (code, out, _) = hook(&w, r#"{"hook_event_name":"Notification","message":"hi"}"#);
    assert_eq!((code, out.as_str()), (0, ""));
    assert_eq!(log(&w), "");
}

#[test]
fn a_skill_without_memory_gets_no_answer() {
    let w = World::new();
    w.skill("plain", "---\nname: plain\ndescription: no memory\n---\n# plain\n");
    let t = w.tmp.path().join("t.jsonl");
    let ev = fixture("post_tool_use_skill.json", &w, &t).replace("\"pdf\"", "\"plain\"");
    let (code, out, _) = hook(&w, &ev);
    assert_eq!((code, out.as_str()), (0, ""));
}

#[test]
fn bad_input_exits_zero_prints_nothing_and_logs_why() {
    let w = world_with_note();
    let cases = [
        ("", "empty stdin"),
        ("   \n", "empty stdin"),
        ("{not json", "not valid JSON"),
        ("[1,2]", "not a JSON object"),
        (r#"{"session_id":"s","tool_name":"Skill"}"#, "no hook_event_name"),
        (r#"{"hook_event_name":"PostToolUse","tool_name":"Skill","tool_input":{}}"#, "without tool_input.skill"),
        (
            r#"{"hook_event_name":"PostToolUse","tool_name":"Skill","tool_input":{"skill":"ghost"},"cwd":"/nonexistent"}"#,
            "ghost",
        ),
    ];
    for (input, why) in cases {
        let (code, out, _) = hook(&w, input);
        assert_eq!((code, out.as_str()), (0, ""), "{input:?}");
        assert!(log(&w).contains(why), "{input:?}: log lacks {why:?}:\n{}", log(&w));
    }
}

#[test]
fn an_unusable_data_dir_still_exits_zero() {
    let w = world_with_note();
    let blocker = w.tmp.path().join("a-file");
    std::fs::write(&blocker, "x").unwrap();
    let t = w.tmp.path().join("t.jsonl");
    let mut child = Command::new(env!("CARGO_BIN_EXE_skillmem"))
        .args(["hook", "claude-code"])
        .envs(w.envs())
        .env("SKILLMEM_HOME", blocker.join("data"))
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    child.stdin.take().unwrap().write_all(fixture("post_tool_use_skill.json", &w, &t).as_bytes()).unwrap();
    let out = child.wait_with_output().unwrap();
    assert_eq!(out.status.code(), Some(0));
    assert!(out.stdout.is_empty());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("data directory"), "the reason reaches stderr when the log cannot be written: {err}");
}

fn uses(w: &World) -> Vec<(String, String)> {
    let conn = rusqlite::Connection::open(w.data.join("skillmem.db")).unwrap();
    let mut st = conn.prepare("SELECT session_id, skill FROM skill_uses ORDER BY id").unwrap();
    st.query_map([], |r| Ok((r.get(0)?, r.get(1)?))).unwrap().map(Result::unwrap).collect()
}

#[test]
fn stop_and_session_end_read_the_transcript_once_from_the_stored_offset() {
    let w = world_with_note();
    let session =
        std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/claude-code-session.jsonl"))
            .unwrap();
    let lines: Vec<&str> = session.lines().collect();
    let t = w.tmp.path().join("00893aaf.jsonl");
    // First Stop: the jq load is there, the pdf expansion not yet, and a line is half written.
    let half = &lines[12][..lines[12].len() / 2];
    std::fs::write(&t, format!("{}\n{half}", lines[..12].join("\n"))).unwrap();
    let (code, out, _) = hook(&w, &fixture("stop.json", &w, &t));
    assert_eq!((code, out.as_str()), (0, ""), "Stop never answers: an answer would make Claude continue");
    let sid = "00893aaf-19fa-41d2-8238-13269b9b3ca0".to_string();
    assert_eq!(uses(&w), vec![(sid.clone(), "jq".to_string())]);
    assert!(!log(&w).contains("not JSON"), "the half-written line was left for later: {}", log(&w));
    // The rest arrives (the fixture's own last record is truncated: one bad line, logged); SessionEnd reads only what is new (jq is not counted twice).
    std::fs::write(&t, format!("{}\n", lines.join("\n"))).unwrap();
    let (code, out, _) = hook(&w, &fixture("session_end.json", &w, &t));
    assert_eq!((code, out.as_str()), (0, ""));
    assert_eq!(uses(&w), vec![(sid.clone(), "jq".to_string()), (sid.clone(), "pdf".to_string())]);
    // Nothing new: nothing recorded.
    hook(&w, &fixture("stop.json", &w, &t));
    assert_eq!(uses(&w).len(), 2);
    assert_eq!(log(&w).matches("1 transcript line(s) are not JSON").count(), 1, "{}", log(&w));
}

#[test]
fn a_missing_transcript_is_logged_not_fatal() {
    let w = world_with_note();
    let t = w.tmp.path().join("gone.jsonl");
    let (code, out, _) = hook(&w, &fixture("stop.json", &w, &t));
    assert_eq!((code, out.as_str()), (0, ""));
    assert!(log(&w).contains("gone.jsonl"), "{}", log(&w));
    let ev = fixture("session_end.json", &w, &t).replace(&format!("\"transcript_path\": \"{}\",", t.display()), "");
    let (code, out, _) = hook(&w, &ev);
    assert_eq!((code, out.as_str()), (0, ""));
    assert!(log(&w).contains("no transcript_path"), "{}", log(&w));
}

/// The shipped plugin and settings snippet call the hook for exactly the events it answers.
#[test]
fn the_shipped_hook_configs_match_what_the_hook_handles() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("editors/claude-code");
    let read = |p: &str| -> Value { serde_json::from_str(&std::fs::read_to_string(root.join(p)).unwrap()).unwrap() };
    let plugin = read(".claude-plugin/plugin.json");
    assert_eq!(plugin["name"], "skillmem");
    // The plugin runs skillmem through its script (PATH, else npx); the snippets name it.
    const SCRIPT: &str = "${CLAUDE_PLUGIN_ROOT}/scripts/skillmem.sh";
    assert_eq!(plugin["mcpServers"]["skillmem"], serde_json::json!({"command": "sh", "args": [SCRIPT, "mcp"]}));
    assert_eq!(read("mcp.json")["mcpServers"]["skillmem"], serde_json::json!({"command": "skillmem", "args": ["mcp"]}));
    let hooks = read("hooks/hooks.json")["hooks"].to_string();
    let by_script = format!("sh \\\"{SCRIPT}\\\" hook claude-code");
    assert_eq!(hooks.matches(&by_script).count(), 6, "{hooks}");
    let hooks: Value = serde_json::from_str(&hooks.replace(&by_script, "skillmem hook claude-code")).unwrap();
    // The snippet's MCP server is `skillmem`, so its hooks name that server's note tool.
    let settings = read("settings.json")["hooks"].to_string();
    assert_eq!(settings.matches(" --note-tool mcp__skillmem__skill_note\"").count(), 6, "{settings}");
    let settings: Value =
        serde_json::from_str(&settings.replace(" --note-tool mcp__skillmem__skill_note", "")).unwrap();
    assert_eq!(settings, hooks, "settings.json carries the plugin's hooks");
    let mut events: Vec<&str> = hooks.as_object().unwrap().keys().map(String::as_str).collect();
    events.sort();
    assert_eq!(events, ["PostCompact", "PostToolUse", "PreCompact", "SessionEnd", "Stop", "UserPromptExpansion"]);
    for (event, groups) in hooks.as_object().unwrap() {
        for g in groups.as_array().unwrap() {
            if event == "PostToolUse" {
                assert_eq!(g["matcher"], "Skill");
            }
            for h in g["hooks"].as_array().unwrap() {
                assert_eq!(h["command"], "skillmem hook claude-code", "{event}");
            }
        }
    }
}

/// Claude Code runs hooks with `$CLAUDE_PROJECT_DIR` at the project root while `cwd` may be a
/// subfolder: the project's `.claude/skills` is still found.
#[test]
fn the_project_dir_wins_over_a_subfolder_cwd() {
    let w = world_with_note();
    let sub = w.ws.join("src/deep");
    std::fs::create_dir_all(&sub).unwrap();
    let t = w.tmp.path().join("t.jsonl");
    let ev = fixture("post_tool_use_skill.json", &w, &t)
        .replace(&format!("\"cwd\": \"{}\"", w.ws.display()), &format!("\"cwd\": \"{}\"", sub.display()));
    let mut child = Command::new(env!("CARGO_BIN_EXE_skillmem"))
        .args(["hook", "claude-code"])
        .current_dir(&sub)
        .envs(w.envs())
        .env("CLAUDE_PROJECT_DIR", &w.ws)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    child.stdin.take().unwrap().write_all(ev.as_bytes()).unwrap();
    let out = child.wait_with_output().unwrap();
    assert!(context(&String::from_utf8_lossy(&out.stdout), "PostToolUse").contains("drops ligatures"));
}

/// PostCompact: the observations of the summary are promoted; the placeholder line a
/// summariser may copy is rejected and logged, and a summary without a block is left alone.
#[test]
fn post_compact_promotes_the_summary_observations() {
    let w = world_with_note();
    let t = w.tmp.path().join("t.jsonl");
    let (code, out, _) = hook(&w, &fixture("post_compact.json", &w, &t));
    assert_eq!((code, out.as_str()), (0, ""));
    let (_, recalled, _) = w.cli(&["recall", "pdf", "--intent", "table columns"]);
    assert!(recalled.contains("pdftotext -layout"), "{recalled}");
    assert!(log(&w).contains("observation rejected"), "{}", log(&w));
    let plain =
        fixture("post_compact.json", &w, &t).replace("<skill_observations>", "").replace("</skill_observations>", "");
    let before = log(&w);
    let (code, out, _) = hook(&w, &plain);
    assert_eq!((code, out.as_str(), log(&w)), (0, "", before));
}

/// Recorded from Claude Code 2.1.197 (`claude -p "/pdf ..."` whose model loads `jq` through the
/// Skill tool, against a scripted loopback model): the hook events and the session transcript
/// as the real host wrote them.
#[test]
fn a_recorded_2_1_197_session_gives_blocks_records_uses_and_logs_nothing() {
    let w = world_with_note();
    w.enabled_skill("jq");
    let (code, _, err) =
        w.cli(&["note", "jq", "--kind", "fix", "--delta", "jq -r drops the quotes; use it for shell loops"]);
    assert_eq!(code, 0, "{err}");
    let t = w.tmp.path().join("58c0aa3a.jsonl");
    let rec = |f: &str| fixture(&format!("recorded-2.1.197/{f}"), &w, &t);
    std::fs::write(&t, rec("session.jsonl")).unwrap();

    let (code, out, _) = hook(&w, &rec("user_prompt_expansion.json"));
    assert_eq!(code, 0);
    assert!(context(&out, "UserPromptExpansion").contains("drops ligatures"), "{out}");
    let (code, out, _) = hook(&w, &rec("post_tool_use_skill.json"));
    assert_eq!(code, 0);
    assert!(context(&out, "PostToolUse").contains("jq -r drops the quotes"), "{out}");
    let (code, out, _) = hook(&w, &rec("user_prompt_submit.json"));
    assert_eq!((code, out.as_str()), (0, ""), "UserPromptSubmit is not a skill load");

    for f in ["stop.json", "session_end.json"] {
        let (code, out, _) = hook(&w, &rec(f));
        assert_eq!((code, out.as_str()), (0, ""), "{f}");
    }
    let sid = "58c0aa3a-edf4-4711-b5b3-22f08625a730".to_string();
    assert_eq!(uses(&w), vec![(sid.clone(), "pdf".to_string()), (sid, "jq".to_string())]);
    // attachment, last-prompt, queue-operation records are bookkeeping: nothing to act on.
    assert_eq!(log(&w), "", "the hook log holds only what a person must act on");

    // stats shows the skills used, with and without --json.
    let (code, out, err) = w.cli(&["stats", "--json"]);
    assert_eq!(code, 0, "{err}");
    let s: Value = serde_json::from_str(&out).unwrap();
    let skill = |name: &str| s["skills"].as_array().unwrap().iter().find(|k| k["skill"] == name).cloned().unwrap();
    assert_eq!((skill("pdf")["sessions"].as_i64(), skill("pdf")["notes"].as_i64()), (Some(1), Some(1)), "{s}");
    assert!(skill("jq")["lastUsed"].as_i64().is_some(), "{s}");
    let days = s["usesByDay"].as_array().unwrap();
    assert_eq!(days.len(), 2, "{s}");
    assert!(days.iter().all(|d| d["sessions"] == 1 && d["day"].as_str().unwrap().len() == 10), "{s}");
    let (code, out, _) = w.cli(&["stats"]);
    assert_eq!(code, 0);
    assert!(out.contains("skills used per day"), "{out}");
    assert!(out.contains("jq (1)") && out.contains("pdf (1)"), "{out}");
    assert!(out.contains("1 sessions, last "), "{out}");
}

/// PreCompact prints the historian's instructions (plain text, which Claude Code appends to its
/// compaction prompt) for the skills used since the last compaction; PostCompact promotes the
/// lessons of the summary through the filter, refusing lessons about skills the compacted part
/// did not use; what each run costs goes to the historian's log, not to the hook's.
#[test]
fn pre_compact_asks_for_observations_and_post_compact_promotes_them() {
    let w = world_with_note();
    w.enabled_skill("jq");
    let t = w.tmp.path().join("s.jsonl");
    let rec = |r: Value| r.to_string() + "\n";
    let skill_use = |skill: &str, id: &str| {
        rec(
            serde_json::json!({ "type": "assistant", "uuid": format!("u-{id}"), "message": { "role": "assistant", "content": [
            { "type": "tool_use", "id": id, "name": "Skill", "input": { "skill": skill } } ] } }),
        )
    };
    let boundary = rec(
        serde_json::json!({ "type": "system", "subtype": "compact_boundary", "content": "Conversation compacted" }),
    );
    // jq was used before the last compaction, pdf after it; the lesson the summary draws is
    // grounded in the command the compacted part ran.
    let bash = rec(
        serde_json::json!({ "type": "assistant", "uuid": "u-t3", "message": { "role": "assistant", "content": [
        { "type": "tool_use", "id": "t3", "name": "Bash", "input": { "command": "python split.py --strategy text  # pdfplumber table_settings" } } ] } }),
    );
    let transcript = [skill_use("jq", "t1"), boundary.clone(), skill_use("pdf", "t2"), bash].concat();
    std::fs::write(&t, &transcript).unwrap();
    let event = |name: &str, extra: &str| {
        format!(
            r#"{{"session_id":"s9","transcript_path":"{}","cwd":"{}","hook_event_name":"{name}","trigger":"auto"{extra}}}"#,
            t.display(),
            w.ws.display()
        )
    };
    let (code, out, _) = hook(&w, &event("PreCompact", r#","custom_instructions":null"#));
    assert_eq!(code, 0);
    assert!(out.contains("future sessions: pdf."), "only the skills since the last compaction: {out}");
    assert!(out.contains("<skill_observations>") && !out.trim_start().starts_with('{'), "plain text: {out}");

    // Claude Code writes the new boundary and the summary, then runs PostCompact.
    let summary = rec(
        serde_json::json!({ "type": "user", "isCompactSummary": true, "message": { "role": "user", "content": "summary" } }),
    );
    std::fs::write(&t, [transcript, boundary.clone(), summary].concat()).unwrap();
    let block = "<summary>Tables.</summary>\\n<skill_observations>\\n* pdf | gotcha | `pdfplumber` merges adjacent tables without ruling lines; pass `table_settings` with a text strategy to split them.\\n* jq | gotcha | `--arg` always passes a string; use `--argjson` for numbers.\\n</skill_observations>";
    let (code, out, _) = hook(&w, &event("PostCompact", &format!(r#","compact_summary":"{block}""#)));
    assert_eq!((code, out.as_str()), (0, ""));
    let (_, recalled, _) = w.cli(&["recall", "pdf", "--intent", "split adjacent tables"]);
    assert!(recalled.contains("pdfplumber"), "{recalled}");
    let (_, jq, _) = w.cli(&["recall", "jq", "--json"]);
    assert!(!jq.contains("argjson"), "jq was not used in the compacted part: {jq}");
    // Provenance: the host, the session, the transcript and the compacted part's records.
    let (_, listed, _) = w.cli(&["notes", "pdf", "--source", "historian", "--json"]);
    let listed: Value = serde_json::from_str(&listed).unwrap();
    let n = &listed["notes"][0];
    assert_eq!((n["host"].as_str(), n["sessionId"].as_str()), (Some("claude-code"), Some("s9")), "{listed}");
    assert_eq!(n["transcript"].as_str(), Some(t.display().to_string().as_str()), "{listed}");
    assert_eq!(n["transcriptAt"], "messages u-t2..u-t3", "{listed}");
    assert!(log(&w).contains("the session's chunk did not use skill \"jq\""), "{}", log(&w));
    let costs = std::fs::read_to_string(w.data.join("logs/historian.log")).unwrap();
    assert!(
        costs.contains("PreCompact (auto): historian instructions for pdf added to the compaction prompt"),
        "{costs}"
    );
    assert!(costs.contains("1 promoted, 1 rejected"), "{costs}");

    // No skill with memory since the last compaction: nothing printed, the compaction alone.
    std::fs::write(&t, [skill_use("jq", "t1"), boundary].concat()).unwrap();
    let (code, out, _) = hook(&w, &event("PreCompact", ""));
    assert_eq!((code, out.as_str()), (0, ""));
}

/// At the session's end the transcript's failed calls and the calls that then worked become
/// `fix` lessons of the memory-enabled skill in use (source `transcript`, with evidence), held
/// in review until another session mines the same lesson (`memory.minedSupport`, 2); then the
/// next load shows them.
#[test]
fn session_end_mines_a_failed_call_and_its_fix_into_a_lesson() {
    let w = World::new();
    let dir = w.enabled_skill("npm");
    let t = w.tmp.path().join("mine.jsonl");
    let recs = [
        serde_json::json!({"type":"assistant","uuid":"a1","message":{"role":"assistant","content":[{"type":"tool_use","id":"s1","name":"Skill","input":{"skill":"npm"}}]}}),
        serde_json::json!({"type":"user","uuid":"a2","message":{"role":"user","content":[{"type":"tool_result","tool_use_id":"s1","content":format!("Base directory for this skill: {}", dir.display())}]}}),
        serde_json::json!({"type":"assistant","uuid":"a3","message":{"role":"assistant","content":[{"type":"tool_use","id":"b1","name":"Bash","input":{"command":"npm install -D eslint@9 @typescript-eslint/parser"}}]}}),
        serde_json::json!({"type":"user","uuid":"a4","message":{"role":"user","content":[{"type":"tool_result","tool_use_id":"b1","is_error":true,"content":"Exit code 1\nnpm ERR! code ERESOLVE\nnpm ERR! ERESOLVE unable to resolve dependency tree"}]}}),
        serde_json::json!({"type":"assistant","uuid":"a5","message":{"role":"assistant","content":[{"type":"tool_use","id":"b2","name":"Bash","input":{"command":"npm install -D eslint@9 @typescript-eslint/parser --legacy-peer-deps"}}]}}),
        serde_json::json!({"type":"user","uuid":"a6","message":{"role":"user","content":[{"type":"tool_result","tool_use_id":"b2","content":"added 42 packages in 3s"}]}}),
    ];
    let text: String = recs.iter().map(|r| r.to_string() + "\n").collect();
    std::fs::write(&t, text).unwrap();
    let event_of = |session: &str, name: &str| {
        format!(
            r#"{{"session_id":"{session}","transcript_path":"{}","cwd":"{}","hook_event_name":"{name}"}}"#,
            t.display(),
            w.ws.display()
        )
    };
    let event = |name: &str| event_of("m1", name);
    // A turn's end records skill uses; only the session's end mines.
    let (code, _, _) = hook(&w, &event("Stop"));
    assert_eq!(code, 0);
    let (_, listed, _) = w.cli(&["notes", "--json"]);
    assert!(!listed.contains("legacy-peer-deps"), "{listed}");
    let (code, out, _) = hook(&w, &event("SessionEnd"));
    assert_eq!((code, out.as_str()), (0, ""));
    // Held: in review with its support, not in recall.
    let (_, listed, _) = w.cli(&["notes", "--json"]);
    assert!(!listed.contains("legacy-peer-deps"), "{listed}");
    let (code, queue, err) = w.cli(&["review", "--json"]);
    assert_eq!(code, 0, "{err}");
    let q: serde_json::Value = serde_json::from_str(&queue).unwrap();
    assert_eq!(q["notes"][0]["pending"], true, "{q:#}");
    assert_eq!(q["notes"][0]["evidence"]["sessions"], 1, "{q:#}");
    let (_, recalled, _) = w.cli(&["recall", "npm", "--intent", "install eslint"]);
    assert!(!recalled.contains("--legacy-peer-deps"), "{recalled}");
    // The same end again counts no second session.
    hook(&w, &event("SessionEnd"));
    let (_, listed, _) = w.cli(&["notes", "--json"]);
    assert!(!listed.contains("legacy-peer-deps"), "{listed}");
    // Another session meets the same failure and fix: the lesson is shown.
    let (code, _, _) = hook(&w, &event_of("m2", "SessionEnd"));
    assert_eq!(code, 0);
    let (code, listed, err) = w.cli(&["notes", "--json"]);
    assert_eq!(code, 0, "{err}");
    let v: serde_json::Value = serde_json::from_str(&listed).unwrap();
    let notes = v["notes"].as_array().unwrap();
    assert_eq!(notes.len(), 1, "{v:#}");
    let n = &notes[0];
    assert_eq!(
        (n["source"].as_str(), n["kind"].as_str(), n["skill"].as_str()),
        (Some("transcript"), Some("fix"), Some("npm")),
        "{n}"
    );
    let delta = n["delta"].as_str().unwrap();
    assert!(delta.contains("ERESOLVE") && delta.contains("--legacy-peer-deps"), "{delta}");
    assert_eq!(n["sessionId"], "m1", "{n}");
    assert_eq!(n["evidence"]["sessions"], 2, "{n}");
    // A second end of the same session meets the same lesson: no second note.
    hook(&w, &event("SessionEnd"));
    let (_, listed, _) = w.cli(&["notes", "--json"]);
    let v: serde_json::Value = serde_json::from_str(&listed).unwrap();
    assert_eq!(v["notes"].as_array().unwrap().len(), 1, "{v:#}");
    // The next load shows it.
    let (_, recalled, _) = w.cli(&["recall", "npm", "--intent", "install eslint"]);
    assert!(recalled.contains("--legacy-peer-deps"), "{recalled}");
}

/// Trust by use through the hooks: a note the agent wrote is unverified; a session that loads
/// the skill and then runs the flag the note names (read from the transcript at SessionEnd,
/// by each record's time) uses it, which makes it trusted, and the next load says `used="1"`.
/// A bare run of the program the note is about, before the load, is no use.
#[test]
fn session_end_judges_the_transcripts_calls_and_counts_a_used_note() {
    let w = World::new();
    w.enabled_skill("pdf");
    let out = Command::new(env!("CARGO_BIN_EXE_skillmem"))
        .args(["note", "pdf", "--kind", "gotcha", "--delta", "pdftotext drops ligatures; pass `-enc UTF-8`."])
        .current_dir(&w.ws)
        .envs(w.envs())
        .env("SKILLMEM_ACTOR", "agent")
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let t = w.tmp.path().join("use.jsonl");
    let (code, out, _) = hook(&w, &fixture("post_tool_use_skill.json", &w, &t));
    assert_eq!(code, 0);
    let block = context(&out, "PostToolUse");
    assert!(block.contains("trust=\"unverified\"") && block.contains("used=\"0\""), "{block}");
    // Times around the load: a bare run an hour before it, the flag a minute after.
    let now = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap().as_secs() as i64;
    let iso = |secs: i64| {
        let days = secs.div_euclid(86_400);
        let (z, s) = (days + 719_468, secs.rem_euclid(86_400));
        let era = z.div_euclid(146_097);
        let doe = z - era * 146_097;
        let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
        let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
        let mp = (5 * doy + 2) / 153;
        let d = doy - (153 * mp + 2) / 5 + 1;
        let m = if mp < 10 { mp + 3 } else { mp - 9 };
        let y = yoe + era * 400 + i64::from(m <= 2);
        format!("{y:04}-{m:02}-{d:02}T{:02}:{:02}:{:02}.000Z", s / 3600, s % 3600 / 60, s % 60)
    };
    let bash = |id: &str, cmd: &str, at: i64| {
        [
            serde_json::json!({"type":"assistant","timestamp":iso(at),"message":{"role":"assistant","content":[{"type":"tool_use","id":id,"name":"Bash","input":{"command":cmd}}]}}),
            serde_json::json!({"type":"user","timestamp":iso(at),"message":{"role":"user","content":[{"type":"tool_result","tool_use_id":id,"content":"ok"}]}}),
        ]
    };
    let mut recs = vec![];
    recs.extend(bash("b0", "pdftotext report.pdf out.txt", now - 3600));
    recs.extend(bash("b1", "pdftotext -enc UTF-8 report.pdf out.txt", now + 60));
    std::fs::write(&t, recs.iter().map(|r| r.to_string() + "\n").collect::<String>()).unwrap();
    let (code, out, _) = hook(&w, &fixture("session_end.json", &w, &t));
    assert_eq!((code, out.as_str()), (0, ""));
    let (_, listed, _) = w.cli(&["notes", "--json"]);
    let v: Value = serde_json::from_str(&listed).unwrap();
    let n = &v["notes"][0];
    assert_eq!(
        (n["shown"].as_i64(), n["used"].as_i64(), n["trust"].as_str()),
        // Used in another session than the writer's; trusted once a withheld session gives it lift.
        (Some(1), Some(1), Some("unverified")),
        "{n}"
    );
    assert_eq!(log(&w), "", "no failures logged");
    let (_, out, _) = hook(&w, &fixture("post_tool_use_skill.json", &w, &t));
    let block = context(&out, "PostToolUse");
    assert!(block.contains("used=\"1\"") && block.contains("trust=\"unverified\""), "{block}");
}
