//! What the transcripts of Gemini CLI, Codex CLI and Copilot CLI say about skills: the skill
//! loads they hold (for the uses recorded at a session's end or turn's end) and, for Codex,
//! the compaction summaries. Pure: records in, names out; every shape here was read off the
//! real hosts (`tests/fixtures/<host>/recorded-*`), and any other record is passed over.
//!
//! - Gemini CLI 0.61 (`~/.gemini/tmp/<project>/chats/session-*.jsonl`): a `type: "gemini"`
//!   record's `toolCalls[]` with `name: "activate_skill"` and `args.name` (the same message is
//!   written again when it changes: calls are told apart by their `id`).
//! - Codex CLI 0.171 (`$CODEX_HOME/sessions/…/rollout-*.jsonl`): a `response_item` whose
//!   payload is a `function_call` of `exec_command` (or `shell`) whose command reads a
//!   `…/<skill>/SKILL.md`, or a user message `<skill>\n<name>…` (Codex inlines a skill a
//!   prompt mentions as `$name`); the summary of a compaction is a `compacted` record's
//!   `payload.message`.
//! - Copilot CLI 1.0 (`~/.copilot/session-state/<id>/events.jsonl`): a `tool.execution_start`
//!   with `toolName: "skill"` and `arguments.skill`.
//!
//! And every tool call they hold, with its output, its failure and the skill in use, for the
//! error → fix miner ([`calls`]; Claude Code's are read in `historian/tool_calls.rs`).

use std::path::{Path, PathBuf};

use serde_json::Value;

use crate::historian::mine::{Call, Position};
use crate::historian::tool_calls::command_of;

/// One skill load a transcript shows: the skill's name and, when the record names it, its
/// folder (as the record spells it: relative to the session's folder when it is relative).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Use {
    pub skill: String,
    pub dir: Option<PathBuf>,
}

/// The transcript dialects.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    Gemini,
    Codex,
    Copilot,
}

/// A skill name as a host writes it: a plugin prefix (`plugin:jq`) dropped; no paths.
pub fn clean(raw: &str) -> Option<String> {
    let name = raw.rsplit(':').next().unwrap_or(raw).trim();
    let ok = !name.is_empty() && !name.contains(['/', '\\']) && name != "." && name != "..";
    ok.then(|| name.to_string())
}

/// The skill loads in `records`, in order of first use, each skill once.
pub fn uses(kind: Kind, records: &[Value]) -> Vec<Use> {
    let mut out: Vec<Use> = vec![];
    let mut seen_calls: Vec<String> = vec![];
    for r in records {
        for (call, u) in loads_in(kind, r) {
            if let Some(id) = call {
                if seen_calls.contains(&id) {
                    continue;
                }
                seen_calls.push(id);
            }
            if !out.iter().any(|o| o.skill == u.skill) {
                out.push(u);
            }
        }
    }
    out
}

/// The skill loads of one record, each with its call id when the host gives one.
fn loads_in(kind: Kind, r: &Value) -> Vec<(Option<String>, Use)> {
    let s = |v: &Value, k: &str| v.get(k).and_then(Value::as_str).map(str::to_string);
    match kind {
        Kind::Gemini => {
            if r.get("type").and_then(Value::as_str) != Some("gemini") {
                return vec![];
            }
            let calls = r.get("toolCalls").and_then(Value::as_array).map(Vec::as_slice).unwrap_or_default();
            calls
                .iter()
                .filter(|c| c.get("name").and_then(Value::as_str) == Some("activate_skill"))
                .filter_map(|c| {
                    let skill = clean(c.get("args")?.get("name")?.as_str()?)?;
                    Some((s(c, "id"), Use { skill, dir: None }))
                })
                .collect()
        }
        Kind::Copilot => {
            if r.get("type").and_then(Value::as_str) != Some("tool.execution_start") {
                return vec![];
            }
            let Some(d) = r.get("data") else { return vec![] };
            if !d.get("toolName").and_then(Value::as_str).is_some_and(|t| t.eq_ignore_ascii_case("skill")) {
                return vec![];
            }
            let args = match d.get("arguments") {
                Some(Value::String(t)) => serde_json::from_str(t).unwrap_or(Value::Null),
                Some(v) => v.clone(),
                None => Value::Null,
            };
            let Some(skill) = args.get("skill").or_else(|| args.get("name")).and_then(Value::as_str).and_then(clean)
            else {
                return vec![];
            };
            vec![(s(d, "toolCallId"), Use { skill, dir: None })]
        }
        Kind::Codex => {
            if r.get("type").and_then(Value::as_str) != Some("response_item") {
                return vec![];
            }
            let Some(p) = r.get("payload") else { return vec![] };
            if let Some(u) = codex_inlined(p) {
                return vec![(None, u)];
            }
            let is_shell =
                matches!(p.get("name").and_then(Value::as_str), Some("exec_command" | "shell" | "local_shell"));
            if p.get("type").and_then(Value::as_str) != Some("function_call") || !is_shell {
                return vec![];
            }
            let args: Value = match p.get("arguments") {
                Some(Value::String(t)) => serde_json::from_str(t).unwrap_or(Value::Null),
                Some(v) => v.clone(),
                None => Value::Null,
            };
            let command = match args.get("cmd").or_else(|| args.get("command")) {
                Some(Value::String(c)) => c.clone(),
                Some(Value::Array(a)) => a.iter().filter_map(Value::as_str).collect::<Vec<_>>().join(" "),
                _ => return vec![],
            };
            let Some(file) = skill_file_in(&command) else { return vec![] };
            let file = PathBuf::from(file);
            let path = match args.get("workdir").and_then(Value::as_str) {
                Some(w) if file.is_relative() => Path::new(w).join(&file),
                _ => file,
            };
            let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) else { return vec![] };
            let Some(skill) = dir.file_name().and_then(|n| n.to_str()).and_then(clean) else { return vec![] };
            vec![(s(p, "call_id"), Use { skill, dir: Some(dir.to_path_buf()) })]
        }
    }
}

/// A skill Codex put into the conversation itself (a prompt that mentions it as `$name`): a
/// user message `<skill>\n<name>NAME</name>\n<path>…/SKILL.md</path>…`.
fn codex_inlined(p: &Value) -> Option<Use> {
    if p.get("type")?.as_str()? != "message" || p.get("role")?.as_str()? != "user" {
        return None;
    }
    let text = p.get("content")?.as_array()?.first()?.get("text")?.as_str()?;
    let rest = text.strip_prefix("<skill>\n<name>")?;
    let (name, rest) = rest.split_once("</name>")?;
    let skill = clean(name)?;
    let dir = rest
        .trim_start()
        .strip_prefix("<path>")
        .and_then(|r| r.split_once("</path>"))
        .map(|(path, _)| PathBuf::from(path))
        .filter(|p| p.file_name().is_some_and(|n| n == "SKILL.md"))
        .and_then(|p| p.parent().map(Path::to_path_buf));
    Some(Use { skill, dir })
}

/// The summary of the last compaction in a Codex rollout, and the index of its record.
pub fn last_compaction(records: &[Value]) -> Option<(usize, String)> {
    records.iter().enumerate().rev().find_map(|(i, r)| {
        (r.get("type").and_then(Value::as_str) == Some("compacted"))
            .then(|| r.get("payload")?.get("message")?.as_str().map(|m| (i, m.to_string())))
            .flatten()
    })
}

/// The records a Codex compaction at `at` summarised: those after the compaction before it.
pub fn compacted_part(records: &[Value], at: usize) -> &[Value] {
    let before = &records[..at.min(records.len())];
    let from = before.iter().rposition(|r| r.get("type").and_then(Value::as_str) == Some("compacted"));
    &before[from.map_or(0, |i| i + 1)..]
}

/// Every tool call in `records`, in order: its command (the shell line, or the tool and its
/// arguments), its output, whether it failed (the host's error status, or a non-zero exit
/// code in the output), the index of the record that made it, and the skill whose load last
/// preceded it (enabled or not: which skills keep a memory is the engine's to say).
///
/// - Gemini CLI: `toolCalls[]` of `gemini` records (a call written again is the same call,
///   read at its last writing and placed at its first); `status: "error"` or `Exit Code: N`.
/// - Codex CLI: `function_call` / `custom_tool_call` items and their `*_output` by `call_id`;
///   `Process exited with code N` (or the older JSON output's `metadata.exit_code`).
/// - Copilot CLI: `tool.execution_start` and its `tool.execution_complete` by `toolCallId`;
///   `success: false` or `<exited with exit code N>`.
pub fn calls(kind: Kind, records: &[Value]) -> Vec<Call> {
    let mut out: Vec<(Option<String>, Call)> = vec![];
    let mut skill: Option<String> = None;
    for (i, r) in records.iter().enumerate() {
        let loads = loads_in(kind, r);
        for (id, c) in calls_in(kind, r, i) {
            let known = id.as_ref().and_then(|id| out.iter().position(|(o, _)| o.as_ref() == Some(id)));
            match known {
                // A result arriving for a call made earlier, or the call written again.
                Some(k) => {
                    let call = &mut out[k].1;
                    if !c.command.is_empty() {
                        call.command = c.command;
                        call.tool = c.tool;
                    }
                    if !c.output.is_empty() {
                        call.output = c.output;
                    }
                    call.failed |= c.failed;
                }
                None => out.push((id, Call { skill_in_use: skill.clone(), ..c })),
            }
        }
        if let Some((_, u)) = loads.last() {
            skill = Some(u.skill.clone());
        }
    }
    out.into_iter().map(|(_, c)| c).filter(|c| !c.command.is_empty()).collect()
}

/// The tool calls (or their results) one record holds, each with its id.
fn calls_in(kind: Kind, r: &Value, at: usize) -> Vec<(Option<String>, Call)> {
    let s = |v: &Value, k: &str| v.get(k).and_then(Value::as_str).map(str::to_string);
    let new = |tool: &str, command: String, failed: bool, output: String| Call {
        position: Position::RecordIndex(at),
        tool: tool.to_string(),
        command,
        failed,
        output,
        skill_in_use: None,
    };
    match kind {
        Kind::Gemini => {
            if r.get("type").and_then(Value::as_str) != Some("gemini") {
                return vec![];
            }
            let calls = r.get("toolCalls").and_then(Value::as_array).map(Vec::as_slice).unwrap_or_default();
            calls
                .iter()
                .filter_map(|c| {
                    let tool = c.get("name")?.as_str()?;
                    let args = c.get("args").cloned().unwrap_or(Value::Null);
                    let output = c
                        .get("result")
                        .and_then(Value::as_array)
                        .map(|rs| {
                            rs.iter()
                                .filter_map(|x| {
                                    let resp = x.pointer("/functionResponse/response")?;
                                    resp.get("output").or_else(|| resp.get("error")).and_then(Value::as_str)
                                })
                                .collect::<Vec<_>>()
                                .join("\n")
                        })
                        .filter(|o| !o.is_empty())
                        .or_else(|| s(c, "resultDisplay"))
                        .unwrap_or_default();
                    let failed = c.get("status").and_then(Value::as_str) == Some("error")
                        || exit_code_after(&output, "Exit Code:").is_some_and(|n| n != 0);
                    Some((s(c, "id"), new(tool, command_of(tool, &args), failed, gemini_shell_output(&output))))
                })
                .collect()
        }
        Kind::Codex => {
            if r.get("type").and_then(Value::as_str) != Some("response_item") {
                return vec![];
            }
            let Some(p) = r.get("payload") else { return vec![] };
            let id = s(p, "call_id");
            match p.get("type").and_then(Value::as_str) {
                Some("function_call" | "custom_tool_call") => {
                    let Some(tool) = p.get("name").and_then(Value::as_str) else { return vec![] };
                    let args = match p.get("arguments").or_else(|| p.get("input")) {
                        Some(Value::String(t)) => serde_json::from_str(t).unwrap_or_else(|_| Value::String(t.clone())),
                        Some(v) => v.clone(),
                        None => Value::Null,
                    };
                    vec![(id, new(tool, command_of(tool, &args), false, String::new()))]
                }
                Some("function_call_output" | "custom_tool_call_output") => {
                    let raw = match p.get("output") {
                        Some(Value::String(t)) => t.clone(),
                        Some(v) => v.to_string(),
                        None => String::new(),
                    };
                    // The older shell tool wrote `{"output": …, "metadata": {"exit_code": N}}`.
                    let (output, code) = match serde_json::from_str::<Value>(&raw) {
                        Ok(v) if v.get("output").is_some() => (
                            v.get("output").and_then(Value::as_str).unwrap_or("").to_string(),
                            v.pointer("/metadata/exit_code").and_then(Value::as_i64),
                        ),
                        _ => {
                            let code = exit_code_after(&raw, "Process exited with code");
                            (raw, code)
                        }
                    };
                    let failed = code.is_some_and(|n| n != 0);
                    vec![(id, new("", String::new(), failed, output))]
                }
                _ => vec![],
            }
        }
        Kind::Copilot => {
            let Some(d) = r.get("data") else { return vec![] };
            let id = s(d, "toolCallId");
            match r.get("type").and_then(Value::as_str) {
                Some("tool.execution_start") => {
                    let Some(tool) = d.get("toolName").and_then(Value::as_str) else { return vec![] };
                    let args = match d.get("arguments") {
                        Some(Value::String(t)) => serde_json::from_str(t).unwrap_or_else(|_| Value::String(t.clone())),
                        Some(v) => v.clone(),
                        None => Value::Null,
                    };
                    vec![(id, new(tool, command_of(tool, &args), false, String::new()))]
                }
                Some("tool.execution_complete") => {
                    let output = d
                        .pointer("/result/content")
                        .or_else(|| d.pointer("/error/message"))
                        .and_then(Value::as_str)
                        .unwrap_or("");
                    // A shell call that ran and exited non-zero is `success: true`; its exit
                    // code is in `shellExecution` and in the output's last line (1.0.102:
                    // `<shellId: 0 completed with exit code 1>`, `recorded-1.0.102/events-fix.jsonl`).
                    let code = d
                        .pointer("/shellExecution/exitCode")
                        .and_then(Value::as_i64)
                        .or_else(|| exit_code_after(output, "<exited with exit code"))
                        .or_else(|| exit_code_after(output, "completed with exit code"));
                    let failed =
                        d.get("success").and_then(Value::as_bool) == Some(false) || code.is_some_and(|n| n != 0);
                    vec![(id, new("", String::new(), failed, copilot_shell_output(output)))]
                }
                _ => vec![],
            }
        }
    }
}

/// What a Gemini CLI shell call printed: its `Output:` and `Error:` sections without the
/// report around them (`Command:`, `Directory:`, `Exit Code:`, `Signal:`, …, and `(none)`);
/// any other output as it is. Gemini CLI 0.61 wraps a tool's output in
/// `<untrusted_context>` … `</untrusted_context>` and starts a shell report at `Output:`
/// (`recorded-0.61.0/session-fix.jsonl`); the wrapper is dropped too.
fn gemini_shell_output(output: &str) -> String {
    let output = output
        .trim()
        .strip_prefix("<untrusted_context>")
        .and_then(|s| s.strip_suffix("</untrusted_context>"))
        .map_or(output, str::trim);
    // A report starts with its command or its output and ends with what the process did.
    const ENDS: &[&str] = &["Exit Code:", "Signal:", "Background PIDs:", "Process Group PGID:"];
    let report = (output.starts_with("Command: ") || output.starts_with("Output:"))
        && output.lines().skip(1).any(|l| ENDS.iter().any(|e| l.starts_with(e)));
    if !report {
        return output.to_string();
    }
    const FIELDS: &[&str] = &[
        "Command:",
        "Directory:",
        "Output:",
        "Error:",
        "Exit Code:",
        "Signal:",
        "Background PIDs:",
        "Process Group PGID:",
    ];
    let mut kept = String::new();
    let mut keep = false;
    for line in output.lines() {
        match FIELDS.iter().find(|f| line.starts_with(*f)) {
            Some(f) => {
                keep = matches!(*f, "Output:" | "Error:");
                let rest = line[f.len()..].trim();
                if keep && rest != "(none)" && !rest.is_empty() {
                    kept.push_str(rest);
                    kept.push('\n');
                }
            }
            None if keep => {
                kept.push_str(line);
                kept.push('\n');
            }
            None => {}
        }
    }
    kept
}

/// What a Copilot CLI shell call printed, without the line it ends with to say how the process
/// ended (`<shellId: 0 completed with exit code 1>`, `<exited with exit code 1>`); any other
/// output as it is.
fn copilot_shell_output(output: &str) -> String {
    let body = output.trim_end();
    let (rest, last) = body.rsplit_once('\n').unwrap_or(("", body));
    let trailer = last.starts_with('<') && last.ends_with('>') && last.contains("exit code");
    if trailer {
        rest.to_string()
    } else {
        output.to_string()
    }
}

/// The number after `label` in an output (`Exit Code: 1`, `Process exited with code 2`).
fn exit_code_after(output: &str, label: &str) -> Option<i64> {
    let at = output.rfind(label)? + label.len();
    let digits: String = output[at..].trim_start().chars().take_while(|c| c.is_ascii_digit() || *c == '-').collect();
    digits.parse().ok()
}

/// The `…/SKILL.md` a shell command reads (`cat`, `sed -n 1,200p`, `head`, …): the last word
/// naming a file called `SKILL.md`, quotes taken off.
pub fn skill_file_in(command: &str) -> Option<String> {
    let mut words = vec![];
    let mut cur = String::new();
    let mut quote: Option<char> = None;
    for c in command.chars() {
        match (quote, c) {
            (Some(q), c) if c == q => quote = None,
            (Some(_), c) => cur.push(c),
            (None, '\'' | '"') => quote = Some(c),
            (None, c) if c.is_whitespace() || ";|&<>()".contains(c) => {
                if !cur.is_empty() {
                    words.push(std::mem::take(&mut cur));
                }
            }
            (None, c) => cur.push(c),
        }
    }
    if !cur.is_empty() {
        words.push(cur);
    }
    words.into_iter().rev().find(|w| w == "SKILL.md" || w.ends_with("/SKILL.md"))
}

/// The agent's text of one transcript record, in the shapes these hosts write: Codex's rollout
/// (`response_item` of an assistant `message`), Copilot's events (`assistant.message`), and
/// Gemini's records (`type: "gemini"` with `content`, or a `model` turn's text `parts`).
pub fn agent_text(r: &Value) -> Option<String> {
    let text_of = |v: &Value| -> Option<String> {
        match v {
            Value::String(s) => Some(s.clone()),
            Value::Array(parts) => {
                let t: Vec<&str> = parts.iter().filter_map(|p| p.get("text").and_then(Value::as_str)).collect();
                (!t.is_empty()).then(|| t.join(" "))
            }
            _ => None,
        }
    };
    let typ = r.get("type").and_then(Value::as_str).unwrap_or_default();
    let found = if typ == "response_item" {
        let p = r.get("payload")?;
        (p.get("type")?.as_str()? == "message" && p.get("role")?.as_str()? == "assistant")
            .then(|| p.get("content").and_then(text_of))
            .flatten()
    } else if typ == "assistant.message" {
        r.get("data").and_then(|d| d.get("content")).and_then(text_of)
    } else if typ == "gemini" {
        r.get("content").and_then(text_of)
    } else if r.get("role").and_then(Value::as_str).is_some_and(|x| x == "model" || x == "assistant") {
        r.get("parts").or_else(|| r.get("content")).and_then(text_of)
    } else {
        None
    };
    found.map(|s| s.trim().to_string()).filter(|s| !s.is_empty())
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn names(u: &[Use]) -> Vec<&str> {
        u.iter().map(|u| u.skill.as_str()).collect()
    }

    #[test]
    fn skill_loads_per_host() {
        // (dialect, records, the skills they show used)
        let cases: Vec<(Kind, Vec<Value>, Vec<&str>)> = vec![
            (
                Kind::Gemini,
                vec![
                    json!({"type":"gemini","content":"I will load jq.","toolCalls":[{"id":"a1","name":"activate_skill","args":{"name":"jq"}}]}),
                    // the same message written again
                    json!({"type":"gemini","content":"I will load jq.","toolCalls":[{"id":"a1","name":"activate_skill","args":{"name":"jq"},"status":"success"}]}),
                    json!({"type":"gemini","toolCalls":[{"id":"a2","name":"read_file","args":{"name":"pdf"}}]}),
                    json!({"type":"gemini","toolCalls":[{"id":"a3","name":"activate_skill","args":{"name":"../x"}}]}),
                    json!({"type":"user","toolCalls":[{"id":"a4","name":"activate_skill","args":{"name":"csv"}}]}),
                    json!({"type":"gemini","toolCalls":[{"id":"a5","name":"activate_skill","args":{"name":"pdf"}}]}),
                ],
                vec!["jq", "pdf"],
            ),
            (
                Kind::Copilot,
                vec![
                    json!({"type":"tool.execution_start","data":{"toolCallId":"c1","toolName":"skill","arguments":{"skill":"jq"}}}),
                    json!({"type":"tool.execution_start","data":{"toolCallId":"c2","toolName":"skill","arguments":"{\"skill\":\"plugin:pdf\"}"}}),
                    json!({"type":"tool.execution_start","data":{"toolCallId":"c3","toolName":"bash","arguments":{"skill":"csv"}}}),
                    json!({"type":"assistant.message","data":{"toolRequests":[{"name":"skill","arguments":{"skill":"csv"}}]}}),
                    json!({"type":"tool.execution_start","data":{"toolCallId":"c4","toolName":"skill","arguments":"not json"}}),
                ],
                vec!["jq", "pdf"],
            ),
            (
                Kind::Codex,
                vec![
                    json!({"type":"response_item","payload":{"type":"function_call","name":"exec_command","call_id":"x1","arguments":"{\"cmd\":\"cat .agents/skills/jq/SKILL.md\"}"}}),
                    json!({"type":"response_item","payload":{"type":"function_call","name":"exec_command","call_id":"x2","arguments":"{\"cmd\":\"sed -n 1,80p SKILL.md\",\"workdir\":\"/p/.agents/skills/pdf\"}"}}),
                    json!({"type":"response_item","payload":{"type":"function_call","name":"shell","call_id":"x3","arguments":"{\"command\":[\"bash\",\"-lc\",\"cat /h/.codex/skills/csv/SKILL.md\"]}"}}),
                    json!({"type":"response_item","payload":{"type":"function_call","name":"exec_command","call_id":"x4","arguments":"{\"cmd\":\"cat SKILL.md\"}"}}),
                    json!({"type":"response_item","payload":{"type":"function_call","name":"apply_patch","call_id":"x5","arguments":"{\"cmd\":\"cat a/b/SKILL.md\"}"}}),
                    json!({"type":"event_msg","payload":{"type":"function_call","name":"exec_command","arguments":"{\"cmd\":\"cat a/yq/SKILL.md\"}"}}),
                    json!({"type":"response_item","payload":{"type":"function_call","name":"exec_command","arguments":"not json"}}),
                    // `$yq` in a prompt: Codex inlines the skill as a user message.
                    json!({"type":"response_item","payload":{"type":"message","role":"user","content":[{"type":"input_text","text":"<skill>\n<name>yq</name>\n<path>/p/.agents/skills/yq/SKILL.md</path>\n# yq\n</skill>"}]}}),
                    // The user's own words about a skill are no load.
                    json!({"type":"response_item","payload":{"type":"message","role":"user","content":[{"type":"input_text","text":"use <skill> tags"}]}}),
                    json!({"type":"response_item","payload":{"type":"message","role":"assistant","content":[{"type":"output_text","text":"<skill>\n<name>zq</name>"}]}}),
                ],
                vec!["jq", "pdf", "csv", "yq"],
            ),
            (Kind::Codex, vec![json!(1), json!(null), json!({"type":"response_item"})], vec![]),
        ];
        for (kind, records, want) in cases {
            assert_eq!(names(&uses(kind, &records)), want, "{kind:?}");
        }
        let codex = uses(
            Kind::Codex,
            &[
                json!({"type":"response_item","payload":{"type":"function_call","name":"exec_command","arguments":"{\"cmd\":\"cat /h/.codex/skills/csv/SKILL.md\"}"}}),
            ],
        );
        assert_eq!(codex[0].dir.as_deref(), Some(Path::new("/h/.codex/skills/csv")));
    }

    fn fixture(path: &str) -> Vec<Value> {
        let p = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures").join(path);
        let text = std::fs::read_to_string(p).unwrap();
        text.lines().filter_map(|l| serde_json::from_str(l).ok()).collect()
    }

    #[test]
    fn recorded_transcripts_at_the_session_end() {
        // (dialect, the transcript a real session left, the skills it used)
        let cases = [
            (Kind::Gemini, "gemini-cli/recorded-0.61.0/session-at-end.jsonl", vec!["jq"]),
            (Kind::Gemini, "gemini-cli/recorded-0.61.0/session.jsonl", vec!["jq"]),
            (Kind::Copilot, "copilot/recorded-1.0.102/events-at-session-end.jsonl", vec!["jq"]),
            // Copied when the postToolUse hook ran: the call was not written yet.
            (Kind::Copilot, "copilot/recorded-1.0.102/events-when-the-hook-ran.jsonl", vec![]),
            (Kind::Codex, "codex/recorded-0.171.0/rollout-at-stop.jsonl", vec!["jq"]),
            (Kind::Codex, "codex/recorded-0.171.0/rollout-at-hook.jsonl", vec!["jq"]),
            // `$jq print names raw`: no read, the skill inlined by Codex.
            (Kind::Codex, "codex/recorded-0.171.0/rollout-mention.jsonl", vec!["jq"]),
            // Another host's transcript shows no load in this dialect.
            (Kind::Codex, "copilot/recorded-1.0.102/events-at-session-end.jsonl", vec![]),
            (Kind::Gemini, "codex/recorded-0.171.0/rollout-at-stop.jsonl", vec![]),
        ];
        for (kind, path, want) in cases {
            assert_eq!(names(&uses(kind, &fixture(path))), want, "{path}");
        }
    }

    #[test]
    fn codex_compactions_in_a_recorded_rollout() {
        let records = fixture("codex/recorded-0.171.0/rollout-at-stop.jsonl");
        let (at, summary) = last_compaction(&records).unwrap();
        assert!(summary.contains("<skill_observations>"), "{summary}");
        assert!(summary.contains("* jq | gotcha |"), "{summary}");
        // The part it summarised read the skill.
        assert_eq!(names(&uses(Kind::Codex, compacted_part(&records, at))), vec!["jq"]);
        assert_eq!(last_compaction(&fixture("codex/recorded-0.171.0/rollout-at-hook.jsonl")), None);
        // (records, compaction index, the part)
        let c = json!({"type":"compacted","payload":{"message":"s"}});
        let (a, b) = (json!({"type":"a"}), json!({"type":"b"}));
        let recs = vec![a.clone(), c.clone(), b.clone(), c.clone()];
        assert_eq!(compacted_part(&recs, 3), &[b.clone()][..]);
        assert_eq!(compacted_part(&recs, 1), &[a.clone()][..]);
        assert_eq!(last_compaction(&recs).map(|x| x.0), Some(3));
        assert!(compacted_part(&recs, 99).len() <= recs.len());
    }

    /// (tool, command, failed, skill in use, record) of each call.
    type Row = (String, String, bool, Option<String>, usize);

    fn rows(calls: &[Call]) -> Vec<Row> {
        calls
            .iter()
            .map(|c| {
                let Position::RecordIndex(at) = c.position else { panic!("{c:?}") };
                (c.tool.clone(), c.command.clone(), c.failed, c.skill_in_use.clone(), at)
            })
            .collect()
    }

    fn row(tool: &str, command: &str, failed: bool, skill: Option<&str>, at: usize) -> Row {
        (tool.into(), command.into(), failed, skill.map(str::to_string), at)
    }

    #[test]
    fn tool_calls_their_failures_and_the_skill_in_use_per_host() {
        // (dialect, records, the calls read)
        let cases: Vec<(Kind, Vec<Value>, Vec<Row>)> = vec![
            (
                Kind::Gemini,
                vec![
                    json!({"type":"gemini","toolCalls":[{"id":"a1","name":"activate_skill","args":{"name":"node"}}]}),
                    json!({"type":"gemini","toolCalls":[{"id":"a2","name":"run_shell_command","args":{"command":"npm ci"}}]}),
                    // written again with its result: the same call
                    json!({"type":"gemini","toolCalls":[{"id":"a2","name":"run_shell_command","args":{"command":"npm ci"},"status":"success",
                        "result":[{"functionResponse":{"response":{"output":"Command: npm ci\nOutput: npm ERR! EUSAGE\nExit Code: 1"}}}]}]}),
                    json!({"type":"gemini","toolCalls":[{"id":"a3","name":"replace","args":{"file_path":"a.js"},"status":"error",
                        "result":[{"functionResponse":{"response":{"error":"no match"}}}]}]}),
                ],
                vec![
                    row("activate_skill", "activate_skill node", false, None, 0),
                    row("run_shell_command", "npm ci", true, Some("node"), 1),
                    row("replace", "replace a.js", true, Some("node"), 3),
                ],
            ),
            (
                Kind::Codex,
                vec![
                    json!({"type":"response_item","payload":{"type":"function_call","name":"exec_command","call_id":"x1","arguments":"{\"cmd\":\"cat .agents/skills/jq/SKILL.md\"}"}}),
                    json!({"type":"response_item","payload":{"type":"function_call_output","call_id":"x1","output":"Process exited with code 0\nOutput:\n# jq"}}),
                    json!({"type":"response_item","payload":{"type":"function_call","name":"shell","call_id":"x2","arguments":"{\"command\":[\"bash\",\"-lc\",\"jq .a f.json\"]}"}}),
                    json!({"type":"response_item","payload":{"type":"function_call_output","call_id":"x2","output":"{\"output\":\"jq: error\",\"metadata\":{\"exit_code\":5}}"}}),
                    json!({"type":"response_item","payload":{"type":"custom_tool_call","name":"apply_patch","call_id":"x3","input":"*** Begin Patch"}}),
                    json!({"type":"response_item","payload":{"type":"function_call_output","call_id":"nobody","output":"Process exited with code 1"}}),
                ],
                vec![
                    row("exec_command", "cat .agents/skills/jq/SKILL.md", false, None, 0),
                    row("shell", "jq .a f.json", true, Some("jq"), 2),
                    row("apply_patch", "apply_patch *** Begin Patch", false, Some("jq"), 4),
                ],
            ),
            (
                Kind::Copilot,
                vec![
                    json!({"type":"tool.execution_start","data":{"toolCallId":"c1","toolName":"skill","arguments":{"skill":"git"}}}),
                    json!({"type":"tool.execution_complete","data":{"toolCallId":"c1","success":true,"result":{"content":"loaded"}}}),
                    json!({"type":"tool.execution_start","data":{"toolCallId":"c2","toolName":"bash","arguments":{"command":"git push"}}}),
                    json!({"type":"tool.execution_complete","data":{"toolCallId":"c2","success":true,"result":{"content":"fatal: no upstream\n<exited with exit code 128>"}}}),
                    json!({"type":"tool.execution_start","data":{"toolCallId":"c3","toolName":"bash","arguments":"{\"command\":\"git push -u origin main\"}"}}),
                    json!({"type":"tool.execution_complete","data":{"toolCallId":"c3","success":false,"error":{"message":"denied"}}}),
                    // 1.0.102 as recorded (events-fix.jsonl): the exit code in `shellExecution`.
                    json!({"type":"tool.execution_start","data":{"toolCallId":"c4","toolName":"bash","arguments":{"command":"git fetch"}}}),
                    json!({"type":"tool.execution_complete","data":{"toolCallId":"c4","success":true,"shellExecution":{"exitCode":128},
                        "result":{"content":"fatal: not a remote\n<shellId: 0 completed with exit code 128>"}}}),
                    json!({"type":"tool.execution_start","data":{"toolCallId":"c5","toolName":"bash","arguments":{"command":"git fetch origin"}}}),
                    json!({"type":"tool.execution_complete","data":{"toolCallId":"c5","success":true,"shellExecution":{"exitCode":0},
                        "result":{"content":"done\n<shellId: 1 completed with exit code 0>"}}}),
                    // The exit code only in the output's last line.
                    json!({"type":"tool.execution_start","data":{"toolCallId":"c6","toolName":"bash","arguments":{"command":"git gc"}}}),
                    json!({"type":"tool.execution_complete","data":{"toolCallId":"c6","success":true,
                        "result":{"content":"fatal: locked\n<shellId: 2 completed with exit code 1>"}}}),
                ],
                vec![
                    row("skill", r#"skill {"skill":"git"}"#, false, None, 0),
                    row("bash", "git push", true, Some("git"), 2),
                    row("bash", "git push -u origin main", true, Some("git"), 4),
                    row("bash", "git fetch", true, Some("git"), 6),
                    row("bash", "git fetch origin", false, Some("git"), 8),
                    row("bash", "git gc", true, Some("git"), 10),
                ],
            ),
            (Kind::Copilot, vec![json!(null), json!({"type":"tool.execution_complete"}), json!("x")], vec![]),
        ];
        for (kind, records, want) in &cases {
            assert_eq!(rows(&calls(*kind, records)), *want, "{kind:?}");
        }
        // Gemini's shell report is read for what the command printed.
        assert_eq!(calls(Kind::Gemini, &cases[0].1)[1].output, "npm ERR! EUSAGE\n");
        assert_eq!(
            gemini_shell_output("Command: x\nOutput: a\nb\nError: (none)\nExit Code: 1\nSignal: (none)"),
            "a\nb\n"
        );
        assert_eq!(gemini_shell_output("plain"), "plain");
        // Copilot's shell output is read without the line that says how the process ended.
        let copilot = calls(Kind::Copilot, &cases[2].1);
        assert_eq!(
            [copilot[1].output.as_str(), copilot[3].output.as_str(), copilot[4].output.as_str()],
            ["fatal: no upstream", "fatal: not a remote", "done"]
        );
        for (output, want) in [
            ("a\n<exited with exit code 1>\n", "a"),
            ("<shellId: 0 completed with exit code 0>", ""),
            ("a\n<b>", "a\n<b>"),
            ("plain", "plain"),
        ] {
            assert_eq!(copilot_shell_output(output), want, "{output:?}");
        }
        // (a shell call's output as Gemini CLI wrote it, what it printed)
        let outputs = [
            // 0.61.0, as recorded (session-fix.jsonl): wrapped, no `Command:` line.
            (
                "<untrusted_context>\nOutput: error: no region configured (set --region or DEPLOY_REGION)\nExit Code: 1\nProcess Group PGID: 23249\n</untrusted_context>",
                "error: no region configured (set --region or DEPLOY_REGION)\n",
            ),
            (
                "<untrusted_context>\nOutput: pushed web\nsecond line\nProcess Group PGID: 7\n</untrusted_context>",
                "pushed web\nsecond line\n",
            ),
            ("<untrusted_context>\nOutput: (none)\nExit Code: 2\n</untrusted_context>", ""),
            // Another tool's wrapped output: unwrapped, kept whole.
            ("<untrusted_context>\nOutput: of a file\n</untrusted_context>", "Output: of a file"),
            ("<untrusted_context>\nfile text\n</untrusted_context>", "file text"),
            ("<untrusted_context>", "<untrusted_context>"),
            ("Output: words\nmore words", "Output: words\nmore words"),
        ];
        for (output, want) in outputs {
            assert_eq!(gemini_shell_output(output), want, "{output:?}");
        }
    }

    #[test]
    fn tool_calls_in_the_recorded_transcripts() {
        // (dialect, a real session's transcript, its calls)
        let cases = [
            (
                Kind::Codex,
                "codex/recorded-0.171.0/rollout-at-stop.jsonl",
                vec![row("exec_command", "cat .agents/skills/jq/SKILL.md", false, None, 11)],
            ),
            (
                Kind::Copilot,
                "copilot/recorded-1.0.102/events-at-session-end.jsonl",
                vec![row("skill", r#"skill {"skill":"jq"}"#, false, None, 8)],
            ),
            (
                Kind::Gemini,
                "gemini-cli/recorded-0.61.0/session-at-end.jsonl",
                vec![row("activate_skill", "activate_skill jq", false, None, 6)],
            ),
            (
                Kind::Codex,
                "codex/recorded-0.171.0/rollout-fix.jsonl",
                vec![
                    row("exec_command", "cat .agents/skills/deploy/SKILL.md", false, None, 11),
                    row("exec_command", "deployctl push web", true, Some("deploy"), 16),
                    row("exec_command", "deployctl push web --region eu-west-1", false, Some("deploy"), 21),
                ],
            ),
            (
                Kind::Copilot,
                "copilot/recorded-1.0.102/events-fix.jsonl",
                vec![
                    row("skill", r#"skill {"skill":"deploy"}"#, false, None, 6),
                    row("bash", "deployctl push web", true, Some("deploy"), 16),
                    row("bash", "deployctl push web --region eu-west-1", false, Some("deploy"), 24),
                ],
            ),
            (
                Kind::Gemini,
                "gemini-cli/recorded-0.61.0/session-fix.jsonl",
                vec![
                    row("activate_skill", "activate_skill deploy", false, None, 6),
                    row("run_shell_command", "deployctl push web", true, Some("deploy"), 11),
                    row("run_shell_command", "deployctl push web --region eu-west-1", false, Some("deploy"), 16),
                ],
            ),
        ];
        for (kind, path, want) in cases {
            let got = calls(kind, &fixture(path));
            assert_eq!(rows(&got), want, "{path}");
            assert!(got.iter().all(|c| !c.output.is_empty()), "{path}: {got:?}");
        }
    }

    #[test]
    fn lessons_mined_from_the_recorded_failures() {
        // (dialect, a real session where a shell call failed and a changed one then worked).
        // Scripted model; the host ran the calls and wrote the transcript
        // (editors/e2e/isolated/*-mine.test.mjs).
        let cases = [
            (Kind::Gemini, "gemini-cli/recorded-0.61.0/session-fix.jsonl"),
            (Kind::Copilot, "copilot/recorded-1.0.102/events-fix.jsonl"),
            (Kind::Codex, "codex/recorded-0.171.0/rollout-fix.jsonl"),
        ];
        let error = "error: no region configured (set --region or DEPLOY_REGION)";
        let lesson =
            format!("`deployctl push web` fails with `{error}`; `deployctl push web --region eu-west-1` works.");
        for (kind, path) in cases {
            let got = calls(kind, &fixture(path));
            let failed: Vec<&str> = got.iter().filter(|c| c.failed).map(|c| c.command.as_str()).collect();
            assert_eq!(failed, vec!["deployctl push web"], "{path}");
            let out = crate::historian::mine::mine(&got);
            let mined: Vec<(&str, &str, &[String])> = out
                .mined
                .iter()
                .map(|m| (m.skill.as_str(), m.delta.as_str(), m.evidence.error_lines.as_slice()))
                .collect();
            assert_eq!(mined, vec![("deploy", lesson.as_str(), &[error.to_string()][..])], "{path}");
            assert!(out.refused.is_empty(), "{path}: {:?}", out.refused);
        }
        // What Gemini's and Copilot's shell calls printed, read out of the report around it.
        let printed = |kind, path| calls(kind, &fixture(path)).into_iter().find(|c| c.failed).unwrap().output;
        assert_eq!(printed(Kind::Gemini, "gemini-cli/recorded-0.61.0/session-fix.jsonl"), format!("{error}\n"));
        assert_eq!(printed(Kind::Copilot, "copilot/recorded-1.0.102/events-fix.jsonl"), error);
    }
    #[test]
    fn skill_files_in_shell_commands() {
        // (command, the SKILL.md it reads)
        let cases: &[(&str, Option<&str>)] = &[
            ("cat .agents/skills/jq/SKILL.md", Some(".agents/skills/jq/SKILL.md")),
            (
                "sed -n '1,200p' '/home/u/.codex/skills/my skill/SKILL.md'",
                Some("/home/u/.codex/skills/my skill/SKILL.md"),
            ),
            ("bash -lc \"cat ~/x/SKILL.md | head\"", None),
            ("cd skills/jq && cat SKILL.md", Some("SKILL.md")),
            ("cat README.md", None),
            ("cat SKILL.md.bak", None),
            ("", None),
        ];
        for (cmd, want) in cases {
            assert_eq!(skill_file_in(cmd).as_deref(), *want, "{cmd}");
        }
    }
    #[test]
    fn agent_text_of_transcript_records() {
        // (record, what the agent said)
        let cases: Vec<(Value, Option<&str>)> = vec![
            (
                json!({"type":"response_item","payload":{"type":"message","role":"assistant","content":[{"type":"output_text","text":"Reading the jq skill to print raw strings."}]}}),
                Some("Reading the jq skill to print raw strings."),
            ),
            (
                json!({"type":"response_item","payload":{"type":"message","role":"user","content":[{"type":"input_text","text":"hi"}]}}),
                None,
            ),
            (
                json!({"type":"assistant.message","data":{"content":"Loading jq for raw output."}}),
                Some("Loading jq for raw output."),
            ),
            (json!({"type":"gemini","content":"I will use jq."}), Some("I will use jq.")),
            (json!({"role":"model","parts":[{"text":"Using jq"},{"functionCall":{}}]}), Some("Using jq")),
            (json!({"type":"user","content":"x"}), None),
            (json!({"type":"gemini","content":"  "}), None),
        ];
        for (r, want) in cases {
            assert_eq!(agent_text(&r).as_deref(), want, "{r}");
        }
    }
}
