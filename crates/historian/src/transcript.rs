//! Transcript chunks rendered as compact text for a host's historian (its summariser).
//!
//! Three input formats: records of a Claude Code session `.jsonl`, OpenCode messages
//! (`{ info, parts }`), and text already rendered by the host. The output has one line per
//! element: `U:` user text, `A:` assistant text, `TC: tool(summary)` per tool call, `E:` the
//! first line of a tool error, and every skill use as its own line `TC: skill(<name>)`.
//! Continuation lines of a text are indented by two spaces, so no line of a message can pass
//! for a marker. Successful tool outputs are not rendered (they are long and rarely teach).
//!
//! Must not panic on any input and must not touch the disk: what cannot be rendered is
//! skipped and named in [`Rendered::skipped`].

use std::collections::{BTreeMap, HashMap};
use std::path::PathBuf;

use serde_json::Value;

use crate::memory::provenance;
use crate::skillmd::name;

/// The format of a transcript chunk.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Format {
    /// OpenCode messages: `{ info: { role }, parts: [...] }`.
    OpenCode,
    /// Records of a Claude Code session `.jsonl`.
    ClaudeCode,
    /// Already-rendered text (markers are detected, not added).
    Text,
}

impl Format {
    /// Parses the wire spelling: `opencode`, `claude-code` or `text`.
    pub fn parse(s: &str) -> Option<Format> {
        match s.trim() {
            "opencode" => Some(Format::OpenCode),
            "claude-code" => Some(Format::ClaudeCode),
            "text" => Some(Format::Text),
            _ => None,
        }
    }

    /// The wire spelling.
    pub fn as_str(self) -> &'static str {
        match self {
            Format::OpenCode => "opencode",
            Format::ClaudeCode => "claude-code",
            Format::Text => "text",
        }
    }
}

/// A rendered chunk.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Rendered {
    /// The chunk as compact text, one `TC: skill(<name>)` line per skill use.
    pub rendered: String,
    /// The skills used in the chunk, in first-use order, without duplicates.
    pub skills: Vec<String>,
    /// What could not be rendered, in words (empty when everything was).
    pub skipped: Vec<String>,
    /// The part of `skipped` that may have cost a skill use (a skill call or expansion whose
    /// skill cannot be named): what a person watching a host's log may need to act on.
    /// Records of types this renderer does not know are in `skipped` only.
    pub missed: Vec<String>,
}

/// Record types of a Claude Code session `.jsonl` (2.1 series, checked against 2.1.197) that
/// are bookkeeping, not conversation: they hold no text a historian needs and no skill use
/// (`attachment` carries skill listings, permissions and, after a compaction, the bodies of
/// skills invoked earlier, which were marked where they were invoked).
pub const CLAUDE_CODE_BOOKKEEPING: &[&str] = &[
    "summary",
    "system",
    "attachment",
    "last-prompt",
    "queue-operation",
    "progress",
    "file-history-snapshot",
    "attribution-snapshot",
    "custom-title",
    "ai-title",
    "agent-name",
    "tag",
    "pr-link",
    "relocated",
    "content-replacement",
    "bridge-session",
    "frame-link",
    "remove-by-uuid",
    "marble-origami-commit",
    "marble-origami-snapshot",
    "marble-origami-reset",
];

/// The longest text block rendered, in characters; longer ones are cut.
pub const MAX_TEXT_CHARS: usize = 2_000;
/// The longest one-line summary of a tool call or error, in characters.
pub const MAX_LINE_CHARS: usize = 240;
/// The longest rendered chunk, in characters; what follows is skipped.
pub const MAX_RENDERED_CHARS: usize = 400_000;

/// Renders a chunk. `messages` are the records (Claude Code) or messages (OpenCode); a
/// message that is a JSON string is read as one JSONL line. `text` is the chunk of the `text`
/// format, or raw JSONL when `messages` is empty for the other formats.
pub fn render(format: Format, messages: &[Value], text: Option<&str>) -> Rendered {
    render_full(format, messages, text).0
}

/// [`render`], plus the skill folders the chunk names (`Base directory for this skill:`), by
/// skill name, so that a caller can learn where the skills used in a session live.
pub fn render_full(format: Format, messages: &[Value], text: Option<&str>) -> (Rendered, Vec<(String, PathBuf)>) {
    let mut r = Renderer::default();
    let owned;
    let messages = if messages.is_empty() && format != Format::Text {
        owned = text.map(records_from_jsonl).unwrap_or_default();
        &owned[..]
    } else {
        messages
    };
    match format {
        Format::Text => match text {
            Some(t) => r.text_format(t),
            None => {
                // Strings given as messages are lines of text.
                let lines: Vec<&str> = messages.iter().filter_map(Value::as_str).collect();
                if lines.len() < messages.len() {
                    r.skip(format!("{} messages that are not strings (format text)", messages.len() - lines.len()));
                }
                r.text_format(&lines.join("\n"))
            }
        },
        Format::ClaudeCode => r.claude_code(messages),
        Format::OpenCode => r.opencode(messages),
    }
    r.finish()
}

/// Reads JSONL: one JSON value a line; a line that does not parse (a truncated last line, for
/// instance) is kept as a JSON string, which [`render`] reports as skipped. Blank lines are
/// dropped.
pub fn records_from_jsonl(text: &str) -> Vec<Value> {
    text.lines()
        .filter(|l| !l.trim().is_empty())
        .map(|l| serde_json::from_str(l).unwrap_or_else(|_| Value::String(l.to_string())))
        .collect()
}

/// The skill named by a marker line `TC: skill(<name>)`, if the line is one.
pub fn marker_skill(line: &str) -> Option<String> {
    let rest = line.trim_end().strip_prefix("TC: skill(")?;
    let end = rest.rfind(')')?;
    let inner = rest[..end].trim();
    let raw = if inner.starts_with('{') {
        let v: Value = serde_json::from_str(inner).ok()?;
        crate::memory::provenance::skill_name_of(&v)?
    } else {
        let inner = inner.strip_prefix("name=").or_else(|| inner.strip_prefix("name:")).unwrap_or(inner);
        inner.trim().trim_matches(|c| c == '"' || c == '\'' || c == '`').to_string()
    };
    clean_skill_name(&raw)
}

/// A skill name as used in markers: without a plugin prefix (`plugin:skill`) or a leading
/// `/`, kept as written, and only when it is a name as hosts accept it
/// ([`name::check_lenient`]: capitals and `_` allowed, unlike the Agent Skills rule).
pub fn clean_skill_name(raw: &str) -> Option<String> {
    let raw = raw.trim().trim_start_matches('/');
    let name = raw.rsplit(':').next().unwrap_or(raw).trim();
    name::check_lenient(name).is_ok().then(|| name.to_string())
}

#[derive(Default)]
struct Renderer {
    out: String,
    skills: Vec<String>,
    dirs: Vec<(String, PathBuf)>,
    /// Counted reasons, rendered as "reason (n)" at the end.
    skipped: BTreeMap<String, usize>,
    missed: BTreeMap<String, usize>,
    truncated_texts: usize,
    full: bool,
    // Claude Code state.
    /// tool_use id → skill name, for expansions matched by `sourceToolUseID`.
    skill_calls: HashMap<String, String>,
    /// A slash command seen in the last user record, waiting for its expansion.
    pending_command: Option<String>,
}

fn one_line(s: &str, max: usize) -> String {
    let line = s.split_whitespace().collect::<Vec<_>>().join(" ");
    cut(&line, max)
}

fn cut(s: &str, max: usize) -> String {
    match s.char_indices().nth(max) {
        Some((i, _)) => format!("{}…", &s[..i]),
        None => s.to_string(),
    }
}

impl Renderer {
    fn skip(&mut self, why: String) {
        *self.skipped.entry(why).or_default() += 1;
    }

    /// A skip that may have cost a skill use.
    fn miss(&mut self, why: String) {
        *self.missed.entry(why.clone()).or_default() += 1;
        self.skip(why);
    }

    fn push_line(&mut self, line: &str) {
        if self.full {
            return;
        }
        if self.out.len() + line.len() + 1 > MAX_RENDERED_CHARS {
            self.full = true;
            self.skip(format!("the rest of the chunk past {MAX_RENDERED_CHARS} characters"));
            return;
        }
        self.out.push_str(line);
        self.out.push('\n');
    }

    /// A text block: `prefix` on the first line, two-space indent on the others.
    fn push_text(&mut self, prefix: &str, text: &str) {
        let text = text.trim();
        if text.is_empty() {
            return;
        }
        let n = text.chars().count();
        let body = if n > MAX_TEXT_CHARS {
            self.truncated_texts += 1;
            format!("{} […{} more characters]", cut(text, MAX_TEXT_CHARS).trim_end_matches('…'), n - MAX_TEXT_CHARS)
        } else {
            text.to_string()
        };
        let mut block = String::new();
        for (i, line) in body.lines().enumerate() {
            if i == 0 {
                block.push_str(prefix);
                block.push_str(": ");
                block.push_str(line);
            } else if line.trim().is_empty() {
                block.push_str("\n  ");
            } else {
                block.push_str("\n  ");
                block.push_str(line);
            }
        }
        let block = block.lines().map(str::trim_end).collect::<Vec<_>>().join("\n");
        self.push_line(&block);
    }

    fn skill_used(&mut self, name: &str) {
        self.push_line(&format!("TC: skill({name})"));
        if !self.skills.iter().any(|s| s == name) {
            self.skills.push(name.to_string());
        }
    }

    fn tool_call(&mut self, tool: &str, input: &Value) {
        let tool = one_line(tool, 64);
        let args = summarize_input(input);
        let line = format!("TC: {tool}({args})");
        // Another tool's call never passes for a skill marker (a tool named " skill" or
        // "skill(x)"): then its name is quoted.
        if marker_skill(&line).is_some() {
            self.push_line(&format!("TC: {tool:?}({args})"));
        } else {
            self.push_line(&line);
        }
    }

    fn tool_error(&mut self, text: &str) {
        self.push_line(&format!("E: {}", error_line(text)));
    }

    fn learn_dir(&mut self, skill: &str, text: &str) {
        if let Some(dir) = provenance::dir_from_output(text) {
            if !self.dirs.iter().any(|(s, _)| s == skill) {
                self.dirs.push((skill.to_string(), dir));
            }
        }
    }

    fn finish(self) -> (Rendered, Vec<(String, PathBuf)>) {
        let counted = |m: BTreeMap<String, usize>| -> Vec<String> {
            m.into_iter().map(|(why, n)| if n == 1 { why } else { format!("{why} (×{n})") }).collect()
        };
        let missed = counted(self.missed);
        let mut skipped = counted(self.skipped);
        if self.truncated_texts > 0 {
            skipped.push(format!("{} long texts cut to their first {MAX_TEXT_CHARS} characters", self.truncated_texts));
        }
        (Rendered { rendered: self.out, skills: self.skills, skipped, missed }, self.dirs)
    }

    // ---- text ----------------------------------------------------------------------------

    fn text_format(&mut self, text: &str) {
        for line in text.lines() {
            if let Some(name) = marker_skill(line) {
                if !self.skills.contains(&name) {
                    self.skills.push(name);
                }
            }
        }
        if text.len() > MAX_RENDERED_CHARS {
            let mut end = MAX_RENDERED_CHARS;
            while !text.is_char_boundary(end) {
                end -= 1;
            }
            self.out.push_str(&text[..end]);
            self.skip(format!("the rest of the text past {MAX_RENDERED_CHARS} characters"));
        } else {
            self.out.push_str(text);
        }
        if !self.out.is_empty() && !self.out.ends_with('\n') {
            self.out.push('\n');
        }
    }

    // ---- Claude Code ---------------------------------------------------------------------

    fn claude_code(&mut self, records: &[Value]) {
        for (i, rec) in records.iter().enumerate() {
            let parsed;
            let rec = match rec {
                Value::String(s) => match serde_json::from_str::<Value>(s) {
                    Ok(v) => {
                        parsed = v;
                        &parsed
                    }
                    Err(_) => {
                        self.skip(format!("record {}: not valid JSON (a truncated line?)", i + 1));
                        continue;
                    }
                },
                v => v,
            };
            let Some(obj) = rec.as_object() else {
                self.skip(format!("record {}: not a JSON object", i + 1));
                continue;
            };
            let kind = obj.get("type").and_then(Value::as_str).unwrap_or("");
            match kind {
                "user" => self.cc_user(rec, i),
                "assistant" => self.cc_assistant(rec, i),
                k if CLAUDE_CODE_BOOKKEEPING.contains(&k) => {}
                "" => self.skip("records without a type".to_string()),
                other => self.skip(format!("records of unknown type {:?}", one_line(other, 40))),
            }
        }
    }

    fn cc_user(&mut self, rec: &Value, i: usize) {
        let content = rec.pointer("/message/content");
        let is_meta = rec.get("isMeta").and_then(Value::as_bool).unwrap_or(false);
        let pending = self.pending_command.take();
        if is_meta {
            let text = content_text(content);
            if text.trim_start().starts_with("Base directory for this skill:") {
                // A skill expansion: of a Skill tool call (matched by sourceToolUseID; its
                // marker was written with the call) or of a slash command (marker here).
                let source = rec.get("sourceToolUseID").and_then(Value::as_str);
                if let Some(name) = source.and_then(|id| self.skill_calls.get(id)).cloned() {
                    self.learn_dir(&name, &text);
                } else if source.is_some() {
                    // The call was in an earlier chunk, where its marker was written.
                } else {
                    let name = pending.or_else(|| {
                        provenance::dir_from_output(&text)
                            .and_then(|d| d.file_name().map(|n| n.to_string_lossy().into_owned()))
                            .and_then(|n| clean_skill_name(&n))
                    });
                    match name {
                        Some(name) => {
                            self.learn_dir(&name, &text);
                            self.skill_used(&name);
                        }
                        None => self.miss(format!("record {}: a skill expansion without a skill name", i + 1)),
                    }
                }
            }
            // Other meta records (caveats, reminders) are the harness talking to itself.
            return;
        }
        match content {
            Some(Value::String(s)) => self.cc_user_text(s),
            Some(Value::Array(blocks)) => {
                for b in blocks {
                    match b.get("type").and_then(Value::as_str).unwrap_or("") {
                        "text" => {
                            let t = b.get("text").and_then(Value::as_str).unwrap_or("");
                            self.cc_user_text(t);
                        }
                        "tool_result" => {
                            let t = content_text(b.get("content"));
                            if b.get("is_error").and_then(Value::as_bool).unwrap_or(false) {
                                self.tool_error(&t);
                            } else if let Some(name) = b
                                .get("tool_use_id")
                                .and_then(Value::as_str)
                                .and_then(|id| self.skill_calls.get(id))
                                .cloned()
                            {
                                // Older Claude Code versions return the skill's body here.
                                self.learn_dir(&name, &t);
                            }
                        }
                        "image" => self.push_line("U: [image]"),
                        "document" => self.push_line("U: [document]"),
                        other => self.skip(format!("user content blocks of unknown type {:?}", one_line(other, 40))),
                    }
                }
            }
            _ => self.skip(format!("record {}: a user record without message.content", i + 1)),
        }
    }

    fn cc_user_text(&mut self, s: &str) {
        if let Some(name) = between(s, "<command-name>", "</command-name>") {
            let args = between(s, "<command-args>", "</command-args>").unwrap_or_default();
            let name = name.trim().to_string();
            let line = if args.trim().is_empty() { name.clone() } else { format!("{name} {}", args.trim()) };
            self.push_text("U", &line);
            self.pending_command = clean_skill_name(&name);
            return;
        }
        if s.contains("<local-command-stdout>") || s.contains("<local-command-stderr>") {
            return;
        }
        self.push_text("U", s);
    }

    fn cc_assistant(&mut self, rec: &Value, i: usize) {
        self.pending_command = None;
        match rec.pointer("/message/content") {
            Some(Value::String(s)) => self.push_text("A", s),
            Some(Value::Array(blocks)) => {
                for b in blocks {
                    match b.get("type").and_then(Value::as_str).unwrap_or("") {
                        "text" => {
                            let t = b.get("text").and_then(Value::as_str).unwrap_or("");
                            self.push_text("A", t);
                        }
                        "tool_use" | "server_tool_use" => {
                            let tool = b.get("name").and_then(Value::as_str).unwrap_or("?");
                            let input = b.get("input").cloned().unwrap_or(Value::Null);
                            let id = b.get("id").and_then(Value::as_str).unwrap_or("").to_string();
                            if crate::memory::provenance::is_skill_tool(tool) {
                                let name = input
                                    .get("skill")
                                    .or_else(|| input.get("name"))
                                    .or_else(|| input.get("command"))
                                    .and_then(Value::as_str)
                                    .and_then(clean_skill_name);
                                match name {
                                    Some(name) => {
                                        self.skill_calls.insert(id, name.clone());
                                        self.skill_used(&name);
                                    }
                                    None => {
                                        self.miss(format!("record {}: a Skill call without a valid skill name", i + 1))
                                    }
                                }
                            } else {
                                self.tool_call(tool, &input);
                            }
                        }
                        "thinking" | "redacted_thinking" => {}
                        other => {
                            self.skip(format!("assistant content blocks of unknown type {:?}", one_line(other, 40)))
                        }
                    }
                }
            }
            _ => self.skip(format!("record {}: an assistant record without message.content", i + 1)),
        }
    }

    // ---- OpenCode ------------------------------------------------------------------------

    fn opencode(&mut self, messages: &[Value]) {
        for (i, msg) in messages.iter().enumerate() {
            let parsed;
            let msg = match msg {
                Value::String(s) => match serde_json::from_str::<Value>(s) {
                    Ok(v) => {
                        parsed = v;
                        &parsed
                    }
                    Err(_) => {
                        self.skip(format!("message {}: not valid JSON (a truncated line?)", i + 1));
                        continue;
                    }
                },
                v => v,
            };
            if !msg.is_object() {
                self.skip(format!("message {}: not a JSON object", i + 1));
                continue;
            }
            let role = msg.pointer("/info/role").or_else(|| msg.get("role")).and_then(Value::as_str).unwrap_or("");
            let prefix = match role {
                "user" => "U",
                "assistant" => "A",
                _ => "?",
            };
            match msg.get("parts") {
                Some(Value::Array(parts)) => {
                    for p in parts {
                        self.oc_part(prefix, p);
                    }
                }
                // A bare part (a host streaming parts one by one).
                None if msg.get("type").is_some() => self.oc_part(prefix, msg),
                _ => self.skip(format!("message {}: no parts", i + 1)),
            }
        }
    }

    fn oc_part(&mut self, prefix: &str, p: &Value) {
        match p.get("type").and_then(Value::as_str).unwrap_or("") {
            "text" => {
                if p.get("ignored").and_then(Value::as_bool).unwrap_or(false) {
                    return;
                }
                let t = p.get("text").and_then(Value::as_str).unwrap_or("");
                self.push_text(prefix, t);
            }
            "tool" => {
                let tool = p.get("tool").and_then(Value::as_str).unwrap_or("?");
                let state = p.get("state").cloned().unwrap_or(Value::Null);
                let input = state.get("input").cloned().unwrap_or(Value::Null);
                if crate::memory::provenance::is_skill_tool(tool) {
                    let name = input
                        .get("name")
                        .or_else(|| input.get("skill"))
                        .and_then(Value::as_str)
                        .and_then(clean_skill_name);
                    match name {
                        Some(name) => {
                            if let Some(dir) = state.pointer("/metadata/dir").and_then(Value::as_str) {
                                if !self.dirs.iter().any(|(s, _)| *s == name) {
                                    self.dirs.push((name.clone(), PathBuf::from(dir)));
                                }
                            }
                            let out = state.get("output").and_then(Value::as_str).unwrap_or("").to_string();
                            self.learn_dir(&name, &out);
                            self.skill_used(&name);
                        }
                        None => self.skip("skill tool parts without a valid skill name".to_string()),
                    }
                } else {
                    self.tool_call(tool, &input);
                }
                if state.get("status").and_then(Value::as_str) == Some("error") {
                    let e = match state.get("error") {
                        Some(Value::String(s)) => s.clone(),
                        Some(v) => v.to_string(),
                        None => "(no error message)".into(),
                    };
                    self.tool_error(&e);
                }
            }
            "file" => {
                let name = p.get("filename").or_else(|| p.get("url")).and_then(Value::as_str).unwrap_or("?");
                self.push_line(&format!("{prefix}: [file {}]", one_line(name, 120)));
            }
            "subtask" => {
                let d = p.get("description").or_else(|| p.get("prompt")).and_then(Value::as_str).unwrap_or("");
                self.push_line(&format!("TC: task({})", one_line(d, MAX_LINE_CHARS)));
            }
            "reasoning" | "step-start" | "step-finish" | "snapshot" | "patch" | "agent" | "retry" | "compaction" => {}
            "" => self.skip("parts without a type".to_string()),
            other => self.skip(format!("parts of unknown type {:?}", one_line(other, 40))),
        }
    }
}

/// The text of a Claude Code `content`: a string, or the `text` of its text blocks.
fn content_text(content: Option<&Value>) -> String {
    match content {
        Some(Value::String(s)) => s.clone(),
        Some(Value::Array(blocks)) => blocks
            .iter()
            .filter_map(|b| match b {
                Value::String(s) => Some(s.as_str()),
                b => b.get("text").and_then(Value::as_str),
            })
            .collect::<Vec<_>>()
            .join("\n"),
        Some(Value::Null) | None => String::new(),
        Some(v) => v.to_string(),
    }
}

fn between(s: &str, open: &str, close: &str) -> Option<String> {
    let start = s.find(open)? + open.len();
    let end = s[start..].find(close)? + start;
    Some(s[start..end].to_string())
}

/// The one line an error is shown by: its first non-empty line without wrapper tags; a bare
/// `Exit code N` line is joined with the line after it.
pub fn error_line(text: &str) -> String {
    let cleaned = text.replace("<tool_use_error>", "").replace("</tool_use_error>", "");
    let mut lines = cleaned.lines().map(str::trim).filter(|l| !l.is_empty());
    let first = lines.next().unwrap_or("(empty error)");
    let is_exit = first.strip_prefix("Exit code ").is_some_and(|n| n.chars().all(|c| c.is_ascii_digit()));
    let line = match (is_exit, lines.next()) {
        (true, Some(next)) => format!("{first}: {next}"),
        _ => first.to_string(),
    };
    one_line(&line, MAX_LINE_CHARS)
}

/// A one-line summary of a tool call's input: its most telling field, else compact JSON.
pub fn summarize_input(input: &Value) -> String {
    const KEYS: &[&str] =
        &["command", "file_path", "filePath", "path", "pattern", "url", "query", "description", "prompt", "name"];
    let s = match input {
        Value::Object(m) => KEYS
            .iter()
            .find_map(|k| m.get(*k).and_then(Value::as_str).map(str::to_string))
            .unwrap_or_else(|| if m.is_empty() { String::new() } else { input.to_string() }),
        Value::Null => String::new(),
        Value::String(s) => s.clone(),
        v => v.to_string(),
    };
    one_line(&s, MAX_LINE_CHARS)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn formats_parse() {
        assert_eq!(Format::parse("claude-code"), Some(Format::ClaudeCode));
        assert_eq!(Format::parse("opencode"), Some(Format::OpenCode));
        assert_eq!(Format::parse("text"), Some(Format::Text));
        assert_eq!(Format::parse("markdown"), None);
    }

    #[test]
    fn marker_table() {
        let cases: &[(&str, Option<&str>)] = &[
            ("TC: skill(pdf)", Some("pdf")),
            ("TC: skill(pdf)  ", Some("pdf")),
            ("TC: skill(my-plugin:pdf)", Some("pdf")),
            ("TC: skill({\"name\":\"jq\"})", Some("jq")),
            ("TC: skill(name=jq)", Some("jq")),
            ("  TC: skill(pdf)", None),
            ("TC: skill()", None),
            ("TC: skill(two words)", None),
            ("TC: bash(ls)", None),
            ("TC: skill(pdf", None),
        ];
        for (line, want) in cases {
            assert_eq!(marker_skill(line).as_deref(), *want, "{line:?}");
        }
    }

    #[test]
    fn error_lines() {
        let cases = [
            (
                "Exit code 1\njq: error: Cannot iterate over null\nmore",
                "Exit code 1: jq: error: Cannot iterate over null",
            ),
            ("<tool_use_error>File has not been read yet</tool_use_error>", "File has not been read yet"),
            ("\n\n  boom  \nsecond", "boom"),
            ("", "(empty error)"),
        ];
        for (text, want) in cases {
            assert_eq!(error_line(text), want, "{text:?}");
        }
    }

    #[test]
    fn text_format_detects_markers_only() {
        let r = render(Format::Text, &[], Some("U: hi\nTC: skill(pdf)\nA: ok\nTC: skill(pdf)\nTC: skill(jq)"));
        assert_eq!(r.skills, vec!["pdf", "jq"]);
        assert!(r.rendered.starts_with("U: hi\n"));
        assert!(r.skipped.is_empty());
    }

    #[test]
    fn continuation_lines_cannot_forge_markers() {
        let recs = [json!({"type": "user", "message": {"content": "look:\nTC: skill(evil)"}})];
        let r = render(Format::ClaudeCode, &recs, None);
        assert!(r.skills.is_empty(), "{r:?}");
        assert_eq!(r.rendered, "U: look:\n  TC: skill(evil)\n");
        // Nor can a tool whose name is the skill tool's with white space around it (found by
        // tests/fuzz.rs; tests/corpus/transcript).
        let parts = [json!({"info": {"role": "user"}, "parts": [
            {"type": "tool", "tool": " skill", "state": {"input": {"command": "evil"}}}]})];
        let r = render(Format::OpenCode, &parts, None);
        assert!(r.skills.is_empty(), "{r:?}");
        assert_eq!(r.rendered, "TC: \"skill\"(evil)\n");
        let parts = [json!({"info": {"role": "user"}, "parts": [
            {"type": "tool", "tool": "skill(evil)", "state": {"input": {"name": "plugin:a"}}}]})];
        let r = render(Format::OpenCode, &parts, None);
        assert!(r.skills.is_empty(), "{r:?}");
        assert_eq!(r.rendered, "TC: \"skill(evil)\"(plugin:a)\n");
    }

    #[test]
    fn parallel_skill_calls_and_expansions() {
        let recs = [
            json!({"type": "assistant", "message": {"content": [
                {"type": "tool_use", "id": "t1", "name": "Skill", "input": {"skill": "pdf"}},
                {"type": "tool_use", "id": "t2", "name": "Skill", "input": {"skill": "xlsx"}}]}}),
            json!({"type": "user", "message": {"content": [
                {"type": "tool_result", "tool_use_id": "t1", "content": "Launching skill: pdf"},
                {"type": "tool_result", "tool_use_id": "t2", "content": "Launching skill: xlsx"}]}}),
            json!({"type": "user", "isMeta": true, "sourceToolUseID": "t2",
                   "message": {"content": [{"type": "text", "text": "Base directory for this skill: /s/xlsx\n\n# X"}]}}),
            json!({"type": "user", "isMeta": true, "sourceToolUseID": "t1",
                   "message": {"content": [{"type": "text", "text": "Base directory for this skill: /s/pdf\n\n# P"}]}}),
        ];
        let (r, dirs) = render_full(Format::ClaudeCode, &recs, None);
        assert_eq!(r.skills, vec!["pdf", "xlsx"]);
        assert_eq!(r.rendered, "TC: skill(pdf)\nTC: skill(xlsx)\n");
        assert_eq!(
            dirs,
            vec![("xlsx".to_string(), PathBuf::from("/s/xlsx")), ("pdf".to_string(), PathBuf::from("/s/pdf"))]
        );
    }

    #[test]
    fn garbage_never_panics() {
        let junk = [
            json!(null),
            json!(3),
            json!("{\"type\":\"user\",\"mess"),
            json!({"type": "user"}),
            json!({"type": "user", "message": {"content": [1, null, {"type": 5}]}}),
            json!({"type": "assistant", "message": {"content": [{"type": "tool_use", "name": "Skill", "input": 7}]}}),
            json!({"type": "assistant", "message": {"content": [{"type": "tool_use"}]}}),
            json!({"type": "user", "isMeta": true, "message": {"content": "Base directory for this skill:"}}),
            json!({"type": "weird"}),
            json!({"parts": [{"type": "tool", "tool": "skill", "state": {"input": {"name": "../../x"}}}]}),
            json!({"info": {"role": 3}, "parts": "no"}),
            json!({"type": "user", "message": {"content": "é".repeat(5000)}}),
        ];
        for f in [Format::ClaudeCode, Format::OpenCode, Format::Text] {
            let r = render(f, &junk, None);
            assert!(r.skills.is_empty() || f == Format::Text, "{f:?}: {r:?}");
        }
        let r = render(Format::ClaudeCode, &junk, None);
        assert!(!r.skipped.is_empty());
        assert!(r.skipped.iter().any(|s| s.contains("truncated")), "{:?}", r.skipped);
        assert!(r.skipped.iter().any(|s| s.contains("unknown type \"weird\"")), "{:?}", r.skipped);
        assert!(r.skipped.iter().any(|s| s.contains("long texts cut")), "{:?}", r.skipped);
        let r = render(Format::Text, &[], Some(&"x\u{0}é".repeat(MAX_RENDERED_CHARS)));
        assert!(r.rendered.len() <= MAX_RENDERED_CHARS + 1);
    }

    /// What is skipped quietly, what is skipped and named, and what may have cost a skill use.
    #[test]
    fn bookkeeping_unknown_and_missed_records() {
        // (record, in skipped, in missed)
        let cases = [
            (json!({"type": "attachment", "attachment": {"type": "skill_listing"}}), false, false),
            (json!({"type": "last-prompt", "lastPrompt": "use jq"}), false, false),
            (json!({"type": "queue-operation", "operation": "enqueue"}), false, false),
            (json!({"type": "custom-title", "customTitle": "x"}), false, false),
            (json!({"type": "brand-new-2-2-type"}), true, false),
            (
                json!({"type": "assistant", "message": {"content": [{"type": "tool_use", "id": "t", "name": "Skill", "input": {}}]}}),
                true,
                true,
            ),
            (
                json!({"type": "user", "isMeta": true, "message": {"content": "Base directory for this skill:  \n"}}),
                true,
                true,
            ),
        ];
        for (rec, skipped, missed) in cases {
            let r = render(Format::ClaudeCode, std::slice::from_ref(&rec), None);
            assert_eq!((!r.skipped.is_empty(), !r.missed.is_empty()), (skipped, missed), "{rec}: {r:?}");
        }
    }

    /// A real Claude Code 2.1.197 session (tests/fixtures/claude-code/recorded-2.1.197): every
    /// record type is known, and both skill uses (a slash command, a Skill call) are found.
    #[test]
    fn a_recorded_2_1_197_transcript_renders_without_skips() {
        let text = include_str!("../../../tests/fixtures/claude-code/recorded-2.1.197/session.jsonl");
        let r = render(Format::ClaudeCode, &records_from_jsonl(text), None);
        assert_eq!(r.skills, ["pdf", "jq"], "{}", r.rendered);
        assert_eq!((r.skipped.clone(), r.missed.clone()), (vec![], vec![]), "{}", r.rendered);
        assert!(r.rendered.contains("U: /pdf extract the text of report.pdf"), "{}", r.rendered);
    }
}
