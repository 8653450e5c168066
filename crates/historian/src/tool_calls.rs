//! Claude Code's tool calls, for the miner ([`super::mine`]): every `tool_use` of an
//! assistant record with its `tool_result` (matched by id; `is_error` is the host's own error
//! status), the index of the record that made it, and the skill whose load last preceded it
//! (a `Skill` call, or a slash command's expansion, `Base directory for this skill: …`).
//! The other hosts' calls are read beside their skill loads, in `src/hosts/hooks/transcripts.rs`;
//! they, and the calls a session reports through the protocol, name a call's command as
//! [`command_of`] does.
//!
//! Pure: records in, calls out; no disk, no database; a record of another shape is passed
//! over, and no input makes it panic.

use serde_json::Value;

use super::mine::{is_shell_tool, Call, Position};
use super::transcript::{clean_skill_name, summarize_input};
use crate::memory::provenance;

/// The tool calls of a Claude Code transcript, in order (skill loads included, as calls of
/// the `Skill` tool).
pub fn claude_code(records: &[Value]) -> Vec<Call> {
    let mut out: Vec<(String, Call)> = vec![];
    let mut skill: Option<String> = None;
    for (i, r) in records.iter().enumerate() {
        let content = r.pointer("/message/content").and_then(Value::as_array).map(Vec::as_slice).unwrap_or_default();
        match r.get("type").and_then(Value::as_str) {
            Some("assistant") => {
                for b in content.iter().filter(|b| b.get("type").and_then(Value::as_str) == Some("tool_use")) {
                    let tool = b.get("name").and_then(Value::as_str).unwrap_or("");
                    let input = b.get("input").cloned().unwrap_or(Value::Null);
                    let id = b.get("id").and_then(Value::as_str).unwrap_or("").to_string();
                    let command = match input.get("command").and_then(Value::as_str) {
                        Some(line) if is_shell_tool(tool) => line.to_string(),
                        _ => format!("{tool} {}", summarize_input(&input)).trim().to_string(),
                    };
                    if tool.is_empty() {
                        continue;
                    }
                    out.push((
                        id,
                        Call {
                            position: Position::RecordIndex(i),
                            tool: tool.to_string(),
                            command,
                            failed: false,
                            output: String::new(),
                            skill_in_use: skill.clone(),
                        },
                    ));
                    if provenance::is_skill_tool(tool) {
                        if let Some(name) = provenance::skill_name_of(&input) {
                            skill = Some(name);
                        }
                    }
                }
            }
            Some("user") => {
                for b in content {
                    match b.get("type").and_then(Value::as_str) {
                        Some("tool_result") => {
                            let id = b.get("tool_use_id").and_then(Value::as_str).unwrap_or("");
                            let Some((_, call)) = out.iter_mut().rev().find(|(c, _)| !id.is_empty() && c == id) else {
                                continue;
                            };
                            call.output = text_of(b.get("content"));
                            call.failed = b.get("is_error").and_then(Value::as_bool).unwrap_or(false);
                        }
                        Some("text") => {
                            // A slash command's expansion names the skill's folder.
                            let t = b.get("text").and_then(Value::as_str).unwrap_or("");
                            if let Some(name) = expanded_skill(t) {
                                skill = Some(name);
                            }
                        }
                        _ => {}
                    }
                }
            }
            _ => {}
        }
    }
    out.into_iter().map(|(_, c)| c).collect()
}

/// A call's command: the shell line of a shell tool (`bash -lc LINE` unwrapped), else the
/// tool and its arguments in one line.
pub fn command_of(tool: &str, args: &Value) -> String {
    let line = match args.get("cmd").or_else(|| args.get("command")) {
        Some(Value::String(c)) => Some(c.clone()),
        Some(Value::Array(a)) => {
            let words: Vec<&str> = a.iter().filter_map(Value::as_str).collect();
            match words.as_slice() {
                [sh, flag, line] if sh.ends_with("sh") && matches!(*flag, "-lc" | "-c") => Some(line.to_string()),
                _ => Some(words.join(" ")),
            }
        }
        _ => None,
    };
    match line {
        Some(l) if is_shell_tool(tool) => l,
        _ => format!("{tool} {}", summarize_input(args)).trim().to_string(),
    }
}

/// The skill of an expansion `Base directory for this skill: …/<name>`.
fn expanded_skill(text: &str) -> Option<String> {
    let rest = text.trim_start().strip_prefix("Base directory for this skill:")?;
    let dir = rest.lines().next()?.trim().trim_end_matches('/');
    clean_skill_name(dir.rsplit('/').next()?)
}

/// A tool result's text: a string, or its text blocks joined.
fn text_of(content: Option<&Value>) -> String {
    match content {
        Some(Value::String(s)) => s.clone(),
        Some(Value::Array(blocks)) => {
            blocks.iter().filter_map(|b| b.get("text").and_then(Value::as_str)).collect::<Vec<_>>().join("\n")
        }
        _ => String::new(),
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn calls_results_and_the_skill_in_use() {
        let records = vec![
            json!({"type":"user","message":{"content":[{"type":"text","text":"Base directory for this skill: /p/.claude/skills/node\n\n# node"}]},"isMeta":true}),
            json!({"type":"assistant","message":{"content":[{"type":"text","text":"Installing."},{"type":"tool_use","id":"t1","name":"Bash","input":{"command":"npm install","description":"install"}}]}}),
            json!({"type":"user","message":{"content":[{"type":"tool_result","tool_use_id":"t1","is_error":true,"content":"Exit code 1\nnpm ERR! ERESOLVE"}]}}),
            json!({"type":"assistant","message":{"content":[{"type":"tool_use","id":"t2","name":"Skill","input":{"skill":"plugin:docker"}}]}}),
            json!({"type":"user","message":{"content":[{"type":"tool_result","tool_use_id":"t2","content":[{"type":"text","text":"Launching skill: docker"}]}]}}),
            json!({"type":"assistant","message":{"content":[{"type":"tool_use","id":"t3","name":"Edit","input":{"file_path":"/p/a.js"}}]}}),
            json!("not a record"),
            json!({"type":"user","message":{"content":[{"type":"tool_result","tool_use_id":"nope","is_error":true}]}}),
        ];
        // (tool, command, failed, output, skill in use, record)
        type Row<'a> = (&'a str, &'a str, bool, &'a str, Option<&'a str>, usize);
        let want: Vec<Row> = vec![
            ("Bash", "npm install", true, "Exit code 1\nnpm ERR! ERESOLVE", Some("node"), 1),
            ("Skill", r#"Skill {"skill":"plugin:docker"}"#, false, "Launching skill: docker", Some("node"), 3),
            ("Edit", "Edit /p/a.js", false, "", Some("docker"), 5),
        ];
        let got = claude_code(&records);
        let got: Vec<_> = got
            .iter()
            .map(|c| {
                let Position::RecordIndex(at) = c.position else { panic!("{c:?}") };
                (c.tool.as_str(), c.command.as_str(), c.failed, c.output.as_str(), c.skill_in_use.as_deref(), at)
            })
            .collect();
        assert_eq!(got, want);
    }

    #[test]
    fn the_recorded_session() {
        let p = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("../..")
            .join("tests/fixtures/claude-code/recorded-2.1.197/session.jsonl");
        let records = super::super::transcript::records_from_jsonl(&std::fs::read_to_string(p).unwrap());
        let got = claude_code(&records);
        // `/pdf …` expanded the pdf skill; then the model loaded jq with the Skill tool.
        assert_eq!(got.len(), 1, "{got:?}");
        assert_eq!((got[0].tool.as_str(), got[0].failed), ("Skill", false));
        assert_eq!(got[0].skill_in_use.as_deref(), Some("pdf"));
        assert_eq!(got[0].output, "Launching skill: jq");
        assert_eq!(got[0].position, Position::RecordIndex(8));
    }

    #[test]
    fn the_recorded_failure_and_its_fix() {
        // editors/e2e/test/claude-code-mine.test.mjs's first session: the deploy skill loaded,
        // `deployctl push web` really failed (no region), then worked with `--region`.
        let p = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("../..")
            .join("tests/fixtures/claude-code/recorded-2.1.197/session-fix.jsonl");
        let records = super::super::transcript::records_from_jsonl(&std::fs::read_to_string(p).unwrap());
        let got = claude_code(&records);
        let shell: Vec<(&str, bool, Option<&str>)> = got
            .iter()
            .filter(|c| c.tool == "Bash")
            .map(|c| (c.command.as_str(), c.failed, c.skill_in_use.as_deref()))
            .collect();
        assert_eq!(
            shell,
            vec![
                ("deployctl push web", true, Some("deploy")),
                ("deployctl push web --region eu-west-1", false, Some("deploy"))
            ]
        );
        let out = super::super::mine::mine(&got);
        let mined: Vec<(&str, &[String])> =
            out.mined.iter().map(|m| (m.delta.as_str(), m.evidence.error_lines.as_slice())).collect();
        let error = "error: no region configured (set --region or DEPLOY_REGION)";
        let lesson =
            format!("`deployctl push web` fails with `{error}`; `deployctl push web --region eu-west-1` works.");
        assert_eq!(mined, vec![(lesson.as_str(), &[error.to_string()][..])]);
    }
}
