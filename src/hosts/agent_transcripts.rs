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

use std::path::{Path, PathBuf};

use serde_json::Value;

use super::agents::skill_file_in;

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
}
