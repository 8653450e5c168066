//! The Claude Code hook's stdin (src/hosts/hooks/claude_code.rs).
//!
//! Hook events from a grammar of every event the hook handles (fields missing, of the wrong
//! type, with traversing skill names, transcripts of generated records with torn last lines,
//! compaction summaries with observation blocks), arbitrary JSON objects and arbitrary text.
//! Properties: the hook never panics; it prints nothing or exactly one hook answer whose
//! context is a `<skill-memory>` block; its log lines are not empty; and the store stays
//! intact and keeps answering (the database passes `quick_check`, and a later load of the
//! skill with a note still gets its block).

use std::path::{Path, PathBuf};
use std::sync::OnceLock;

use proptest::collection::vec;
use proptest::prelude::*;
use proptest::sample::select;
use serde::{Deserialize, Serialize};
use serde_json::{json, Value};
use skillmem::hosts::hooks::{claude_code::answer, HookOptions};

use super::{ensure, gen, Target};

pub const TARGET: Target = Target {
    name: "hook",
    ci_cases: 60,
    run: |cases, seed| super::run(cases, seed, input(), property),
    replay: |t| super::replay(t, property),
};

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Input {
    /// The event; `${T}` stands for the transcript's path.
    pub stdin: String,
    /// The transcript file's content.
    pub transcript: String,
}

const TOKENS: &[&str] =
    &["{", "}", "\"hook_event_name\":", "\"PostToolUse\"", "\"Stop\"", ":", ",", "null", "\"", "\\u0000"];

fn event() -> BoxedStrategy<Value> {
    let name = || -> BoxedStrategy<Value> {
        prop_oneof![
            4 => select(&["PostToolUse", "UserPromptExpansion", "Stop", "SessionEnd", "SubagentStop", "PostCompact",
                "SessionStart", "", " PostToolUse"][..]).prop_map(|s| json!(s)),
            1 => gen::json_value(),
        ]
        .boxed()
    };
    let sid = || prop_oneof![4 => "[a-z0-9-]{1,12}".prop_map(|s| json!(s)), 1 => gen::json_value()];
    prop_oneof![
        3 => (sid(), prop_oneof![3 => Just(json!("Skill")), 1 => gen::json_value()], gen::skill_ref(), gen::text(&["x"]), gen::json_value())
            .prop_map(|(sid, tool, skill, args, resp)| json!({"hook_event_name": "PostToolUse", "session_id": sid,
                "tool_name": tool, "tool_input": {"skill": skill, "args": args}, "tool_response": resp, "tool_use_id": "t1"})),
        2 => (proptest::option::of(select(&["slash_command", "command", "mcp_prompt", ""][..])), gen::skill_ref(), gen::text(&["/"]))
            .prop_map(|(ty, cmd, args)| {
                let mut v = json!({"hook_event_name": "UserPromptExpansion", "session_id": "s", "prompt": format!("/{cmd} {args}"),
                    "command_args": args});
                if let Some(t) = ty {
                    v["expansion_type"] = json!(t);
                }
                if !cmd.is_empty() {
                    v["command_name"] = json!(cmd);
                }
                v
            }),
        3 => (select(&["Stop", "SessionEnd", "SubagentStop"][..]), sid(),
              prop_oneof![4 => Just(json!("${T}")), 1 => Just(json!("/nonexistent/t.jsonl")), 1 => Just(json!("~/x.jsonl")), 1 => gen::json_value()])
            .prop_map(|(n, sid, path)| json!({"hook_event_name": n, "session_id": sid, "transcript_path": path})),
        2 => (vec(prop_oneof![gen::skill_name().prop_map(|s| format!("* {s} | gotcha | a lesson")), gen::text(&["|", "*"])], 0..4))
            .prop_map(|lines| json!({"hook_event_name": "PostCompact", "session_id": "s",
                "compact_summary": format!("Summary.\n<skill_observations>\n{}\n</skill_observations>", lines.join("\n"))})),
        1 => (name(), gen::json_value()).prop_map(|(n, mut v)| {
            if !v.is_object() {
                v = json!({"payload": v});
            }
            v["hook_event_name"] = n;
            v
        }),
    ]
    .boxed()
}

fn transcript() -> BoxedStrategy<String> {
    vec(
        prop_oneof![
            3 => gen::skill_ref().prop_map(|s| json!({"type": "assistant", "message": {"content": [
                {"type": "tool_use", "id": "t1", "name": "Skill", "input": {"skill": s}}]}}).to_string()),
            2 => gen::json_value().prop_map(|v| v.to_string()),
            1 => gen::chars(30),
        ],
        0..6,
    )
    .prop_map(|lines| lines.join("\n"))
    .boxed()
}

pub fn input() -> impl Strategy<Value = Input> {
    (
        prop_oneof![
            6 => event().prop_map(|v| v.to_string()),
            1 => gen::soup(TOKENS, 20),
            1 => gen::chars(40),
        ],
        transcript(),
    )
        .prop_map(|(stdin, transcript)| Input { stdin, transcript })
}

/// One world for all cases: a workspace with the enabled skill `pdf` and a note for it.
struct World {
    _tmp: tempfile::TempDir,
    data: PathBuf,
    ws: PathBuf,
}

fn world() -> &'static World {
    static W: OnceLock<World> = OnceLock::new();
    W.get_or_init(|| {
        let tmp = tempfile::tempdir().unwrap();
        let data = tmp.path().join("data");
        let ws = tmp.path().join("ws");
        let skill = ws.join(".claude/skills/pdf");
        std::fs::create_dir_all(&skill).unwrap();
        std::fs::write(
            skill.join("SKILL.md"),
            "---\nname: pdf\ndescription: PDFs\nskill-memory:\n  enabled: true\n---\n# pdf\n",
        )
        .unwrap();
        let config = skillmem::config::Config {
            data_dir: data.clone(),
            embedding: skillmem::config::EmbeddingConfig::Off,
            ..Default::default()
        };
        let engine = skillmem::engine::Engine::open(config, Some(ws.clone())).unwrap();
        let p: skillmem::protocol::memory::NoteParams = serde_json::from_value(json!({
            "skill": "pdf", "kind": "gotcha", "delta": "pdftotext drops ligatures; pass -enc UTF-8"}))
        .unwrap();
        use skillmem::protocol::Method;
        skillmem::protocol::memory::Note::run(&engine, p, &skillmem::protocol::Cx::quiet()).unwrap();
        World { _tmp: tmp, data, ws }
    })
}

fn check_answer(stdin: &str, opts: &HookOptions) -> Result<Option<String>, String> {
    let a = answer(stdin, opts);
    ensure(!a.log.iter().any(|l| l.contains("panicked")), || format!("the hook panicked: {:?}", a.log))?;
    ensure(a.log.iter().all(|l| !l.trim().is_empty()), || "an empty log line".into())?;
    let Some(out) = a.stdout else { return Ok(None) };
    let v: Value = serde_json::from_str(&out).map_err(|e| format!("stdout is not JSON ({e}): {out:?}"))?;
    let ctx =
        v["hookSpecificOutput"]["additionalContext"].as_str().ok_or_else(|| format!("no additionalContext: {v}"))?;
    ensure(v["hookSpecificOutput"]["hookEventName"].is_string(), || format!("no hookEventName: {v}"))?;
    ensure(ctx.starts_with("<skill-memory "), || format!("the context is not a block: {ctx:?}"))?;
    Ok(Some(ctx.to_string()))
}

pub fn property(input: &Input) -> Result<(), String> {
    let w = world();
    let t = tempfile::tempdir().map_err(|e| e.to_string())?;
    let path = t.path().join("t.jsonl");
    std::fs::write(&path, &input.transcript).map_err(|e| e.to_string())?;
    let tpath = serde_json::to_string(&path.display().to_string()).unwrap();
    let stdin = input.stdin.replace("\"${T}\"", &tpath);
    let opts =
        HookOptions { data_dir: Some(w.data.clone()), workspace: Some(w.ws.clone()), note_tool: None, host: None };
    check_answer(&stdin, &opts)?;
    // The store is intact and keeps answering.
    let conn = rusqlite::Connection::open(w.data.join("skillmem.db")).map_err(|e| e.to_string())?;
    let ok: String = conn.query_row("PRAGMA quick_check", [], |r| r.get(0)).map_err(|e| e.to_string())?;
    ensure(ok == "ok", || format!("quick_check: {ok}"))?;
    let load = json!({"hook_event_name": "PostToolUse", "session_id": "check", "tool_name": "Skill",
        "tool_input": {"skill": "pdf"}, "tool_response": "Launching skill: pdf"});
    let ctx = check_answer(&load.to_string(), &opts)?;
    ensure(ctx.is_some_and(|c| c.contains("drops ligatures")), || "the skill's note is no longer recalled".into())?;
    let _: &Path = &path;
    Ok(())
}
