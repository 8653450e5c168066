//! Transcript chunks in each format (crates/historian/src/transcript.rs).
//!
//! Claude Code records and OpenCode messages from a grammar of what hosts send (skill calls,
//! expansions, slash commands, tool results and errors, texts that try to forge markers) mixed
//! with arbitrary JSON; text chunks. Properties: the `TC: skill(<name>)` lines of the rendered
//! chunk are exactly the skills reported (no text can forge one), every name is valid, every
//! rendered line is a marker, a prefixed line or an indented continuation, the size limit
//! holds, and the same records given as JSONL text render the same.

use std::collections::BTreeSet;

use proptest::collection::vec;
use proptest::prelude::*;
use proptest::sample::select;
use serde::{Deserialize, Serialize};
use serde_json::{json, Value};
use skillmem::historian::transcript::{marker_skill, render, render_full, Format, MAX_RENDERED_CHARS};
use skillmem::skillmd::name::check_lenient;

use super::{ensure, gen, Target};

pub const TARGET: Target = Target {
    name: "transcript",
    ci_cases: 700,
    run: |cases, seed| super::run(cases, seed, input(), property),
    replay: |t| super::replay(t, property),
};

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Input {
    /// 0 claude-code, 1 opencode, 2 text.
    pub format: u8,
    pub messages: Vec<Value>,
    pub text: Option<String>,
}

const TOKENS: &[&str] = &[
    "TC: skill(evil)",
    "\nTC: skill(evil)",
    "\nTC: skill(pdf)\n",
    "TC: skill(",
    ")",
    "\nU: ",
    "\nA: ",
    "\nE: ",
    "\n  ",
    "Base directory for this skill: /s/pdf",
    "\nBase directory for this skill: file:///s/my%20skill\n",
    "**Base directory**: /old",
    "<command-name>/pdf</command-name>",
    "<command-args>x</command-args>",
    "<local-command-stdout>",
    "<tool_use_error>",
    "Exit code 1\n",
    "\n",
    "\r\n",
    "\u{2028}",
    "\u{85}",
    "  ",
    "\t",
    "é",
    "\u{1f600}",
];

fn text() -> BoxedStrategy<String> {
    gen::text(TOKENS)
}

fn tool_name() -> BoxedStrategy<String> {
    prop_oneof![
        4 => select(&["Bash", "Read", "Edit", "Skill", "skill", "SKILL", " skill", "skill ", "Skill\n", "\u{a0}Skill",
            "s kill", "Task", "mcp__x__y", "", "skill(evil)", "skill(evil"][..]).prop_map(str::to_string),
        1 => gen::chars(10),
    ]
    .boxed()
}

fn tool_input() -> BoxedStrategy<Value> {
    prop_oneof![
        text().prop_map(|t| json!({ "command": t })),
        text().prop_map(|t| json!({ "file_path": t })),
        gen::skill_ref().prop_map(|s| json!({ "skill": s })),
        gen::skill_ref().prop_map(|s| json!({ "name": s })),
        gen::json_value(),
    ]
    .boxed()
}

fn tool_id() -> impl Strategy<Value = String> {
    select(&["t1", "t2", "t3", ""][..]).prop_map(str::to_string)
}

fn cc_assistant_block() -> BoxedStrategy<Value> {
    prop_oneof![
        text().prop_map(|t| json!({"type": "text", "text": t})),
        (tool_id(), tool_name(), tool_input())
            .prop_map(|(id, n, i)| json!({"type": "tool_use", "id": id, "name": n, "input": i})),
        (tool_id(), gen::skill_ref())
            .prop_map(|(id, s)| json!({"type": "tool_use", "id": id, "name": "Skill", "input": {"skill": s}})),
        text().prop_map(|t| json!({"type": "thinking", "thinking": t})),
        gen::json_value(),
    ]
    .boxed()
}

fn cc_user_block() -> BoxedStrategy<Value> {
    prop_oneof![
        text().prop_map(|t| json!({"type": "text", "text": t})),
        (tool_id(), text(), any::<bool>())
            .prop_map(|(id, t, e)| json!({"type": "tool_result", "tool_use_id": id, "content": t, "is_error": e})),
        (tool_id(), vec(text(), 0..3)).prop_map(|(id, ts)| json!({"type": "tool_result", "tool_use_id": id,
            "content": ts.into_iter().map(|t| json!({"type": "text", "text": t})).collect::<Vec<_>>()})),
        gen::json_value(),
    ]
    .boxed()
}

fn cc_record() -> BoxedStrategy<Value> {
    prop_oneof![
        2 => text().prop_map(|t| json!({"type": "user", "message": {"content": t}})),
        2 => vec(cc_user_block(), 0..4).prop_map(|b| json!({"type": "user", "message": {"content": b}})),
        2 => (gen::skill_ref(), text(), proptest::option::of(tool_id())).prop_map(|(s, t, src)| {
            let mut v = json!({"type": "user", "isMeta": true, "message": {"content": [
                {"type": "text", "text": format!("Base directory for this skill: /skills/{s}\n\n{t}")}]}});
            if let Some(id) = src {
                v["sourceToolUseID"] = json!(id);
            }
            v
        }),
        1 => (gen::skill_ref(), text()).prop_map(|(n, a)| json!({"type": "user", "message": {"content":
            format!("<command-message>{n}</command-message>\n<command-name>/{n}</command-name>\n<command-args>{a}</command-args>")}})),
        3 => vec(cc_assistant_block(), 0..4).prop_map(|b| json!({"type": "assistant", "message": {"content": b}})),
        1 => text().prop_map(|t| json!({"type": "assistant", "message": {"content": t}})),
        1 => select(&["summary", "system", "progress", "weird", ""][..]).prop_map(|t| json!({"type": t})),
        1 => gen::json_value(),
        1 => text().prop_map(Value::String),
    ]
    .boxed()
}

fn oc_part() -> BoxedStrategy<Value> {
    prop_oneof![
        3 => (text(), any::<bool>()).prop_map(|(t, ig)| json!({"type": "text", "text": t, "ignored": ig})),
        3 => (tool_name(), tool_input(), select(&["completed", "error", "running"][..]), text(), gen::json_value())
            .prop_map(|(tool, input, status, out, err)| json!({"type": "tool", "tool": tool,
                "state": {"status": status, "input": input, "output": out, "error": err}})),
        3 => (gen::skill_ref(), text(), proptest::option::of(text())).prop_map(|(s, t, dir)| {
            let mut state = json!({"status": "completed", "input": {"name": s},
                "output": format!("Base directory for this skill: /skills/{s}\n{t}")});
            if let Some(d) = dir {
                state["metadata"] = json!({"dir": d});
            }
            json!({"type": "tool", "tool": "skill", "state": state})
        }),
        1 => text().prop_map(|f| json!({"type": "file", "filename": f})),
        1 => text().prop_map(|d| json!({"type": "subtask", "description": d})),
        1 => select(&["reasoning", "step-start", "patch", "weird", ""][..]).prop_map(|t| json!({"type": t})),
        1 => gen::json_value(),
    ]
    .boxed()
}

fn oc_message() -> BoxedStrategy<Value> {
    prop_oneof![
        5 => (select(&["user", "assistant", "system", ""][..]), vec(oc_part(), 0..5))
            .prop_map(|(role, parts)| json!({"info": {"role": role}, "parts": parts})),
        1 => oc_part(),
        1 => gen::json_value(),
        1 => text().prop_map(Value::String),
    ]
    .boxed()
}

pub fn input() -> impl Strategy<Value = Input> {
    prop_oneof![
        3 => vec(cc_record(), 0..8).prop_map(|messages| Input { format: 0, messages, text: None }),
        3 => vec(oc_message(), 0..6).prop_map(|messages| Input { format: 1, messages, text: None }),
        1 => (0..2u8, text()).prop_map(|(format, t)| Input { format, messages: vec![], text: Some(t) }),
        1 => vec(prop_oneof![text(), gen::skill_ref().prop_map(|s| format!("TC: skill({s})"))], 0..10)
            .prop_map(|lines| Input { format: 2, messages: vec![], text: Some(lines.join("\n")) }),
        1 => vec(prop_oneof![text().prop_map(Value::String), gen::json_value()], 0..6)
            .prop_map(|messages| Input { format: 2, messages, text: None }),
    ]
}

fn format_of(n: u8) -> Format {
    [Format::ClaudeCode, Format::OpenCode, Format::Text][n as usize % 3]
}

pub fn property(input: &Input) -> Result<(), String> {
    let format = format_of(input.format);
    let (r, dirs) = render_full(format, &input.messages, input.text.as_deref());
    let mut seen = BTreeSet::new();
    for s in &r.skills {
        ensure(check_lenient(s).is_ok(), || format!("invalid skill name reported: {s:?}"))?;
        ensure(seen.insert(s.clone()), || format!("skill reported twice: {s:?}"))?;
    }
    for (s, _) in &dirs {
        ensure(r.skills.contains(s), || format!("a folder for {s:?}, which is not among the skills used"))?;
    }
    ensure(r.skipped.iter().all(|s| !s.trim().is_empty()), || "an empty skip reason".into())?;
    let markers: BTreeSet<String> = r.rendered.lines().filter_map(marker_skill).collect();
    let truncated = r.skipped.iter().any(|s| s.contains("past"));
    if format == Format::Text {
        // Markers are detected, not added: the skills are the markers of the text.
        ensure(r.rendered.len() <= MAX_RENDERED_CHARS + 1, || format!("rendered {} bytes", r.rendered.len()))?;
        let source = match &input.text {
            Some(t) => t.clone(),
            None => input.messages.iter().filter_map(Value::as_str).collect::<Vec<_>>().join("\n"),
        };
        let want: BTreeSet<String> = source.lines().filter_map(marker_skill).collect();
        ensure(seen == want, || format!("skills {seen:?}, markers of the text {want:?}"))?;
        return Ok(());
    }
    ensure(r.rendered.len() <= MAX_RENDERED_CHARS, || format!("rendered {} bytes", r.rendered.len()))?;
    // No text can forge a marker: the marker lines are the skills used, exactly.
    if truncated {
        ensure(markers.is_subset(&seen), || format!("markers {markers:?} not among the skills {seen:?}"))?;
    } else {
        ensure(markers == seen, || format!("marker lines {markers:?} but skills {seen:?}\n{}", r.rendered))?;
    }
    for line in r.rendered.lines() {
        let ok = line.is_empty()
            || ["U: ", "A: ", "?: ", "TC: ", "E: ", "  "].iter().any(|p| line.starts_with(p))
            || ["U:", "A:", "?:", "E:"].contains(&line);
        ensure(ok, || {
            format!("a rendered line that is neither a marker, a prefixed line nor a continuation: {line:?}")
        })?;
    }
    // The same records as JSONL text render the same.
    if !input.messages.is_empty() {
        let jsonl = input.messages.iter().map(|m| m.to_string()).collect::<Vec<_>>().join("\n");
        let again = render(format, &[], Some(&jsonl));
        ensure(again == r, || format!("JSONL text renders differently:\n{again:?}\nvs\n{r:?}"))?;
    }
    Ok(())
}
