//! Copilot CLI's dialect: `postToolUse` of `skill` is a skill load, answered with a top-level
//! `additionalContext`; `sessionEnd` (which names no event and no transcript, only the
//! session) ends the session. Copilot writes its events file behind the session, so the intent
//! is waited for ([`intent`]) and later hooks read on in earlier sessions' files (the flow's
//! catch-up, [`super::agents`]). The events file's reader is [`super::transcripts`].

use std::path::Path;

use serde_json::Value;

use super::transcripts::agent_text;
use super::{name_ok, read_tail, str_field, Loaded, INTENT_CHARS, TAIL};

/// The skill a `postToolUse` of `skill` loads (`toolArgs.skill`, `toolArgs` a JSON text or an
/// object; a plugin's `plugin:name` is the name).
pub fn skill_load(event: &Value) -> Option<Loaded> {
    let tool = str_field(event, "toolName").or_else(|| str_field(event, "tool_name"))?;
    if !tool.eq_ignore_ascii_case("skill") {
        return None;
    }
    let args = event.get("toolArgs").or_else(|| event.get("tool_input"))?;
    let args = match args {
        Value::String(s) => serde_json::from_str(s).ok()?,
        v => v.clone(),
    };
    let skill = str_field(&args, "skill").or_else(|| str_field(&args, "name"))?;
    let skill = skill.rsplit(':').next().unwrap_or(skill).trim();
    name_ok(skill).then(|| Loaded { skill: skill.to_string(), dir: None })
}

/// How long the Copilot hook waits for the session's events to show the call.
const COPILOT_WAIT: std::time::Duration = std::time::Duration::from_millis(1500);

/// What the agent said with its `skill` call of `skill`, from Copilot's events file. Copilot
/// 1.0.102 writes that file asynchronously: when `postToolUse` runs, the call's
/// `assistant.message` is often not in it yet (recorded: the file ended at
/// `assistant.turn_start`). So the file is read again until the message is there, for at most
/// [`COPILOT_WAIT`]; the last `assistant.message` whose tool requests load this skill gives the
/// intent (when a session loads one skill twice and the second call is not written yet, the
/// first call's words are taken).
pub fn intent(path: &Path, skill: &str) -> Option<String> {
    let deadline = std::time::Instant::now() + COPILOT_WAIT;
    loop {
        if let Some(said) = said(path, skill) {
            return said;
        }
        if std::time::Instant::now() >= deadline {
            return None;
        }
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
}

/// The last `assistant.message` of Copilot's events that requests `skill {skill}`, if there
/// is one, and its text, if it has any.
pub fn said(path: &Path, skill: &str) -> Option<Option<String>> {
    let text = read_tail(path, TAIL)?;
    let loads = |r: &Value| {
        r.pointer("/data/toolRequests").and_then(Value::as_array).is_some_and(|reqs| {
            reqs.iter().any(|q| {
                q.get("name").and_then(Value::as_str) == Some("skill")
                    && q.pointer("/arguments/skill").and_then(Value::as_str).map(|s| s.rsplit(':').next().unwrap_or(s))
                        == Some(skill)
            })
        })
    };
    let r = text
        .lines()
        .rev()
        .filter_map(|l| serde_json::from_str::<Value>(l).ok())
        .find(|r| r.get("type").and_then(Value::as_str) == Some("assistant.message") && loads(r))?;
    // A call with no words is still the call: no intent, and no more waiting for one.
    Some(
        agent_text(&r)
            .map(|said| said.split_whitespace().collect::<Vec<_>>().join(" ").chars().take(INTENT_CHARS).collect()),
    )
}
