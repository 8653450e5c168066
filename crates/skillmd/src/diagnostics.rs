//! What is wrong with a SKILL.md, said where it is: the checks an editor shows while a skill
//! is written, each with the range of the exact key or value, a severity, a stable code and a
//! message that says what to fix.
//!
//! Plain structs, no LSP crate: a server maps [`Diagnostic`] onto `lsp_types::Diagnostic`
//! field by field. Positions are 0-based lines and UTF-16 code units within the line (LSP's
//! default position encoding), counted in the text as given (a BOM counts as one unit).
//!
//! The checks agree with the readers: a `skill-memory` error here is exactly a setting that
//! [`super::frontmatter::parse`] refuses (so memory is off and the note tools refuse), and the
//! frontmatter is read the same way, strictly as YAML and else line by line as hosts read it.

use serde_norway::Value;

use super::frontmatter::{self, entries, entry_text, entry_value, show, Entry};
use super::name;
use super::warnings::MAX_DESCRIPTION;

/// A place in the text: 0-based line, 0-based UTF-16 column.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub struct Position {
    pub line: u32,
    pub character: u32,
}

/// A span of text from `start` to `end` (exclusive).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Range {
    pub start: Position,
    pub end: Position,
}

impl Range {
    /// Shorthand for a range within one line.
    pub fn line(line: u32, start: u32, end: u32) -> Range {
        Range { start: Position { line, character: start }, end: Position { line, character: end } }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Severity {
    /// The skill does not load, loads under another name, or its memory is off.
    Error,
    /// The skill loads, but something is likely unintended or runs unattended.
    Warning,
}

impl Severity {
    /// The number LSP uses (`DiagnosticSeverity`): 1 error, 2 warning.
    pub fn lsp(self) -> u8 {
        match self {
            Severity::Error => 1,
            Severity::Warning => 2,
        }
    }
}

/// One finding.
#[derive(Debug, Clone, PartialEq)]
pub struct Diagnostic {
    pub range: Range,
    pub severity: Severity,
    /// Stable: one of [`CODES`].
    pub code: &'static str,
    pub message: String,
}

/// A replacement of `range` by `new_text` (an insertion when the range is empty).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TextEdit {
    pub range: Range,
    pub new_text: String,
}

/// Every code [`diagnose`] emits, its severity, and what it means.
pub const CODES: &[(&str, Severity, &str)] = &[
    ("no-frontmatter", Severity::Error, "the file does not start with a `---` frontmatter"),
    ("unclosed-frontmatter", Severity::Error, "the frontmatter has no closing `---` line"),
    ("frontmatter-unreadable", Severity::Error, "the frontmatter can be read neither as YAML nor line by line"),
    ("frontmatter-not-mapping", Severity::Error, "the frontmatter is YAML but not `key: value` lines"),
    (
        "frontmatter-not-yaml",
        Severity::Warning,
        "not valid YAML; hosts and skillmem read it line by line, other tools may not",
    ),
    ("missing-name", Severity::Error, "no `name`"),
    ("empty-name", Severity::Error, "`name` has no value"),
    ("invalid-name", Severity::Error, "`name` breaks the Agent Skills rule"),
    ("name-differs-from-folder", Severity::Warning, "`name` is not the folder's name"),
    ("missing-description", Severity::Error, "no `description`"),
    ("empty-description", Severity::Error, "`description` has no value"),
    ("invalid-description", Severity::Error, "`description` is not text"),
    ("description-too-long", Severity::Warning, "`description` is over 1,024 characters"),
    ("skill-memory-invalid", Severity::Error, "a `skill-memory` value skillmem refuses (memory stays off)"),
    ("skill-memory-unknown-key", Severity::Warning, "a `skill-memory` key skillmem ignores"),
    ("skill-memory-weights-zero", Severity::Error, "the ranking weights sum to zero"),
    ("allowed-tools", Severity::Warning, "`allowed-tools` pre-approves tools, unattended in headless sessions"),
    ("hooks", Severity::Warning, "`hooks` run commands, unattended in headless sessions"),
    ("command-block", Severity::Warning, "a !`command` block runs when the skill loads"),
];

/// The text by lines, for turning byte offsets into positions.
pub(super) struct Lines<'a> {
    pub(super) text: &'a str,
    /// Byte offset where each line starts.
    starts: Vec<usize>,
}

impl<'a> Lines<'a> {
    pub(super) fn new(text: &'a str) -> Self {
        let mut starts = vec![0];
        starts.extend(text.match_indices('\n').map(|(i, _)| i + 1));
        Lines { text, starts }
    }

    pub(super) fn count(&self) -> usize {
        self.starts.len()
    }

    /// Line `i` without its line end (`\n` or `\r\n`).
    pub(super) fn get(&self, i: usize) -> &'a str {
        let Some(&start) = self.starts.get(i) else { return "" };
        let end = self.starts.get(i + 1).map(|e| e - 1).unwrap_or(self.text.len());
        self.text[start..end].strip_suffix('\r').unwrap_or(&self.text[start..end])
    }

    /// The UTF-16 column of byte `byte` of line `i`.
    pub(super) fn col(&self, i: usize, byte: usize) -> u32 {
        let l = self.get(i);
        l[..byte.min(l.len())].encode_utf16().count() as u32
    }

    pub(super) fn pos(&self, i: usize, byte: usize) -> Position {
        Position { line: i as u32, character: self.col(i, byte) }
    }

    /// The position of a byte offset into the whole text.
    pub(super) fn at(&self, offset: usize) -> Position {
        let i = self.starts.partition_point(|&s| s <= offset) - 1;
        let start = self.starts[i];
        Position { line: i as u32, character: self.text[start..offset].encode_utf16().count() as u32 }
    }

    /// Line `i` from its first to its last non-blank character.
    pub(super) fn trimmed(&self, i: usize) -> Range {
        let l = self.get(i);
        let a = l.len() - l.trim_start().len();
        let b = l.trim_end().len().max(a);
        Range { start: self.pos(i, a), end: self.pos(i, b) }
    }
}

/// A key of the frontmatter as written: where its key and its value are.
#[derive(Debug, Clone)]
pub(super) struct Located {
    pub(super) key: Range,
    pub(super) value: Range,
}

/// The frontmatter's place in the file: the lines of the opening and closing `---`.
pub(super) struct Fences {
    pub(super) close: usize,
}

/// `Ok(None)`: no frontmatter; `Err(())`: an opening `---` without a closing one.
pub(super) fn fences(lines: &Lines) -> Result<Option<Fences>, ()> {
    let first = lines.get(0);
    if first.strip_prefix('\u{feff}').unwrap_or(first).trim_end() != "---" {
        return Ok(None);
    }
    (1..lines.count()).find(|&i| lines.get(i).trim_end() == "---").map(|close| Some(Fences { close })).ok_or(())
}

/// The byte end of the key of a `key: value` line starting at `from`: the first `:` followed
/// by a space, a tab or the end of the line (as the line-by-line reader splits).
fn key_colon(line: &str, from: usize) -> Option<usize> {
    let body = &line[from..];
    body.char_indices()
        .find_map(|(k, c)| {
            (c == ':' && body[k + 1..].chars().next().is_none_or(|n| n == ' ' || n == '\t')).then_some(k)
        })
        .map(|k| from + k)
}

/// Where a value that starts at byte `from` of `line` ends: the end of the line without a
/// ` #` comment, or inside a flow mapping (`flow`) the next `,` or `}` outside quotes and
/// brackets.
fn value_end(line: &str, from: usize, flow: bool) -> usize {
    let mut depth = 0i32;
    let mut quote: Option<char> = None;
    let mut end = line.len();
    let mut prev = ' ';
    for (k, c) in line[from..].char_indices() {
        match quote {
            Some(q) if c == q => quote = None,
            Some(_) => {}
            None => match c {
                '"' | '\'' => quote = Some(c),
                '{' | '[' => depth += 1,
                '}' | ']' if depth > 0 => depth -= 1,
                ',' | '}' | ']' if flow && depth == 0 => {
                    end = from + k;
                    break;
                }
                '#' if prev == ' ' || prev == '\t' => {
                    end = from + k;
                    break;
                }
                _ => {}
            },
        }
        prev = c;
    }
    from + line[from..end].trim_end().len()
}

/// Where the value of an entry is: what follows its colon on its line, else the lines under
/// it, else the empty place just after the colon.
fn entry_location(lines: &Lines, e: &Entry) -> Located {
    let i = e.line + 1;
    let l = lines.get(i);
    let ind = l.len() - l.trim_start().len();
    let colon = key_colon(l, ind).unwrap_or(l.trim_end().len());
    let key = Range { start: lines.pos(i, ind), end: lines.pos(i, colon) };
    let after = (colon + 1).min(l.len());
    let vstart = after + (l[after..].len() - l[after..].trim_start().len());
    let vend = value_end(l, vstart, false);
    let block: Vec<usize> = e.block.iter().filter(|(_, t)| !t.trim().is_empty()).map(|(j, _)| j + 1).collect();
    let value = if vend > vstart && !l[vstart..].starts_with(['|', '>']) {
        Range { start: lines.pos(i, vstart), end: lines.pos(i, vend) }
    } else if let (Some(&first), Some(&last)) = (block.first(), block.last()) {
        let s = lines.trimmed(first).start;
        let e = lines.trimmed(last).end;
        let start = if vend > vstart { lines.pos(i, vstart) } else { s };
        Range { start, end: e }
    } else {
        Range { start: lines.pos(i, after), end: lines.pos(i, after) }
    };
    Located { key, value }
}

/// Where `key` is written inside the region that starts at byte `from` of line `first` and runs
/// to line `last`: as a block `key:` line or as a `key:` in a flow mapping.
fn find_key(lines: &Lines, first: usize, from: usize, last: usize, key: &str) -> Option<Located> {
    for i in first..=last {
        let l = lines.get(i);
        let start = if i == first { from.min(l.len()) } else { 0 };
        let mut search = start;
        while let Some(k) = l[search..].find(key).map(|k| search + k) {
            search = k + key.len();
            let (q0, q1) = (l[..k].chars().last(), l[k + key.len()..].chars().next());
            let quoted = matches!((q0, q1), (Some('"'), Some('"')) | (Some('\''), Some('\'')));
            let (kstart, kend) = if quoted { (k - 1, k + key.len() + 1) } else { (k, k + key.len()) };
            let before = l[start..kstart].trim_end().chars().last();
            let at_key = l[..kstart].trim().is_empty() || before.is_some_and(|c| c == '{' || c == ',');
            let rest = &l[kend..];
            let colon = rest.len() - rest.trim_start().len();
            if !at_key || !rest[colon..].starts_with(':') {
                continue;
            }
            let flow = before.is_some_and(|c| c == '{' || c == ',');
            let after = kend + colon + 1;
            let vstart = after + (l[after..].len() - l[after..].trim_start().len());
            let vend = value_end(l, vstart, flow);
            let value = if vend > vstart {
                Range { start: lines.pos(i, vstart), end: lines.pos(i, vend) }
            } else {
                Range { start: lines.pos(i, after), end: lines.pos(i, after) }
            };
            return Some(Located { key: Range { start: lines.pos(i, kstart), end: lines.pos(i, kend) }, value });
        }
    }
    None
}

/// One top-level key: where it is and its value (`Err`: the value cannot be read).
pub(super) struct Field {
    pub(super) key: String,
    pub(super) at: Located,
    /// File lines the entry spans (its own and those under it).
    pub(super) lines: (usize, usize),
    pub(super) value: Result<Value, String>,
}

/// The frontmatter read for an editor.
pub(super) enum Read {
    /// No frontmatter, or one without a closing line, or unreadable: the diagnostic says which.
    Broken(Diagnostic),
    Fields {
        fields: Vec<Field>,
        fences: Fences,
        not_yaml: Option<Diagnostic>,
    },
}

fn diag(range: Range, code: &'static str, message: String) -> Diagnostic {
    let severity = CODES.iter().find(|(c, ..)| *c == code).map(|(_, s, _)| *s).unwrap_or(Severity::Error);
    Diagnostic { range, severity, code, message }
}

/// A 1-based "line N" in a reader's error, as a 0-based line.
fn line_in(msg: &str) -> Option<usize> {
    let rest = &msg[msg.find("line ")? + 5..];
    let n: String = rest.chars().take_while(char::is_ascii_digit).collect();
    n.parse::<usize>().ok().and_then(|n| n.checked_sub(1))
}

/// Reads the frontmatter of `text` into located fields.
pub(super) fn read(lines: &Lines) -> Read {
    let fences = match fences(lines) {
        Ok(Some(f)) => f,
        Ok(None) => {
            return Read::Broken(diag(
                lines.trimmed(0),
                "no-frontmatter",
                "SKILL.md has no frontmatter: start the file with a `---` line, `name: ...`, `description: ...` and a closing `---` line".into(),
            ))
        }
        Err(()) => {
            return Read::Broken(diag(
                lines.trimmed(0),
                "unclosed-frontmatter",
                "the frontmatter starts with --- but has no closing --- line; add a line with --- after it".into(),
            ))
        }
    };
    let src: Vec<(usize, String)> = (1..fences.close).map(|i| (i - 1, lines.get(i).to_string())).collect();
    let yaml: String = src.iter().map(|(_, l)| format!("{l}\n")).collect();
    let strict = if yaml.trim().is_empty() { Ok(Value::Null) } else { serde_norway::from_str::<Value>(&yaml) };
    let (map, not_yaml) = match strict {
        Ok(Value::Mapping(m)) => (Some(m), None),
        Ok(Value::Null) => return Read::Fields { fields: vec![], fences, not_yaml: None },
        Ok(_) => {
            return Read::Broken(diag(
                lines.trimmed(1),
                "frontmatter-not-mapping",
                "the frontmatter must be a YAML mapping of keys to values (`key: value` lines)".into(),
            ))
        }
        Err(e) => {
            let msg = e.to_string();
            let msg = msg.split(" at line ").next().unwrap_or(&msg).trim().to_string();
            let line = e.location().map(|l| l.line()).unwrap_or(1).clamp(1, fences.close.max(2) - 1);
            (None, Some((line, msg)))
        }
    };
    let top = match entries(&src) {
        Ok(t) => t,
        Err(why) if map.is_none() => {
            let (yl, ymsg) = not_yaml.unwrap_or((1, String::new()));
            let line = line_in(&why).unwrap_or(yl);
            return Read::Broken(diag(
                lines.trimmed(line),
                "frontmatter-unreadable",
                format!("{why} (the frontmatter is not valid YAML either: {ymsg})"),
            ));
        }
        // Valid YAML that the line reader cannot place: values without ranges.
        Err(_) => vec![],
    };
    let mut fields = vec![];
    for e in &top {
        let value = match &map {
            Some(m) => Ok(m.get(e.key.as_str()).cloned().unwrap_or(Value::Null)),
            None if matches!(e.key.as_str(), "skill-memory" | "metadata") => entry_value(e),
            None => Ok(Value::String(entry_text(e))),
        };
        let last = e.block.iter().map(|(j, _)| j + 1).max().unwrap_or(e.line + 1);
        fields.push(Field { key: e.key.clone(), at: entry_location(lines, e), lines: (e.line + 1, last), value });
    }
    if let Some(m) = &map {
        // Keys the line reader did not find (unusual YAML): placed on the opening line.
        for (k, v) in m {
            let Some(k) = k.as_str() else { continue };
            if !fields.iter().any(|f| f.key == k) {
                let at = Located { key: lines.trimmed(0), value: lines.trimmed(0) };
                fields.push(Field { key: k.to_string(), at, lines: (0, 0), value: Ok(v.clone()) });
            }
        }
    }
    let not_yaml = not_yaml.map(|(line, msg)| {
        diag(
            lines.trimmed(line),
            "frontmatter-not-yaml",
            format!("the frontmatter is not valid YAML ({msg}); hosts and skillmem read it line by line, other tools may not: quote values that hold \": \""),
        )
    });
    Read::Fields { fields, fences, not_yaml }
}

/// The diagnostics of a SKILL.md's text. `folder`: the name of the folder the file is in, for
/// the check that the name matches it (`None` skips that check).
pub fn diagnose(text: &str, folder: Option<&str>) -> Vec<Diagnostic> {
    let lines = Lines::new(text);
    let mut out = vec![];
    let (fields, fences) = match read(&lines) {
        Read::Broken(d) => return vec![d],
        Read::Fields { fields, fences, not_yaml } => {
            out.extend(not_yaml);
            (fields, fences)
        }
    };
    let opening = lines.trimmed(0);
    let field = |k: &str| fields.iter().find(|f| f.key == k);
    let text_of = |f: &Field| -> Result<Option<String>, ()> {
        match &f.value {
            Ok(Value::Null) => Ok(None),
            Ok(Value::String(s)) => Ok(Some(s.trim().to_string()).filter(|s| !s.is_empty())),
            Ok(Value::Number(n)) => Ok(Some(n.to_string())),
            Ok(Value::Bool(b)) => Ok(Some(b.to_string())),
            _ => Err(()),
        }
    };
    let example = folder.filter(|f| name::check(f).is_ok()).unwrap_or("my-skill");

    // name
    match field("name") {
        None => out.push(diag(
            opening,
            "missing-name",
            format!("the frontmatter has no `name`; add `name: {example}` (the folder's name)"),
        )),
        Some(f) => match text_of(f) {
            Err(()) => {
                out.push(diag(f.at.value, "invalid-name", format!("`name` must be text, like `name: {example}`")))
            }
            Ok(None) => out.push(diag(
                f.at.key,
                "empty-name",
                format!("`name` is empty; write the skill's name, like `name: {example}` (the folder's name)"),
            )),
            Ok(Some(n)) => match name::check(&n) {
                Err(why) => {
                    let hint = name::suggest(&n).map(|s| format!(", e.g. `{s}`")).unwrap_or_default();
                    out.push(diag(f.at.value, "invalid-name", format!("{why}{hint}")));
                }
                Ok(()) => {
                    if let Some(folder) = folder.filter(|d| *d != n) {
                        out.push(diag(
                            f.at.value,
                            "name-differs-from-folder",
                            format!(
                                "the name {n:?} differs from its folder {folder:?}; the Agent Skills spec wants them equal and skillmem installs the skill as {folder:?}: rename the folder or change the name"
                            ),
                        ));
                    }
                }
            },
        },
    }

    // description
    match field("description") {
        None => out.push(diag(
            opening,
            "missing-description",
            "the frontmatter has no `description`; agents choose a skill by it: add `description: what the skill does and when to use it`".into(),
        )),
        Some(f) => match text_of(f) {
            Err(()) => out.push(diag(
                f.at.value,
                "invalid-description",
                "`description` must be text: what the skill does and when to use it".into(),
            )),
            Ok(None) => out.push(diag(
                f.at.key,
                "empty-description",
                "`description` is empty; agents choose a skill by it: say what the skill does and when to use it".into(),
            )),
            Ok(Some(d)) => {
                let n = d.chars().count();
                if n > MAX_DESCRIPTION {
                    out.push(diag(
                        f.at.value,
                        "description-too-long",
                        format!("the description is {n} characters long; the Agent Skills limit is {MAX_DESCRIPTION} and hosts may cut the rest: shorten it"),
                    ));
                }
            }
        },
    }

    // skill-memory, at the top level or under metadata (the top level wins, as in parse)
    if let Some(f) = field("skill-memory") {
        memory(&lines, f.at.clone(), f.lines, f.at.key.end, &f.value, &mut out);
    } else if let Some(meta) = field("metadata") {
        if let Ok(Value::Mapping(m)) = &meta.value {
            if let Some(v) = m.get("skill-memory") {
                let (a, b) = meta.lines;
                let from = byte_of(&lines, meta.at.key.end);
                if let Some(at) = find_key(&lines, a, from, b, "skill-memory") {
                    let end = at.key.end;
                    memory(&lines, at, (end.line as usize, b), end, &Ok(v.clone()), &mut out);
                }
            }
        } else if let Err(why) = &meta.value {
            // As in the reader: only an unreadable metadata that may hold the setting matters.
            if (meta.lines.0..=meta.lines.1).any(|i| lines.get(i).contains("skill-memory")) {
                out.push(diag(meta.at.value, "skill-memory-invalid", why.clone()));
            }
        }
    }

    // things that run unattended
    for key in ["allowed-tools", "hooks"] {
        if let Some(f) = field(key) {
            let message = if key == "hooks" {
                "`hooks` run shell commands on agent events while this skill is active; in headless sessions nobody sees or approves them: keep only what is safe to run unattended"
            } else {
                "`allowed-tools` lets the agent use these tools without asking while this skill is active; in headless sessions they run unattended: list only what is safe to run that way"
            };
            out.push(diag(f.at.key, key, message.into()));
        }
    }
    let body = lines.starts_of(fences.close + 1);
    let mut search = body;
    while let Some(i) = text[search..].find("!`").map(|i| search + i) {
        search = i + 2;
        let Some(len) = text[i + 2..].find('`').filter(|&n| n > 0) else { continue };
        let end = i + 2 + len + 1;
        out.push(diag(
            Range { start: lines.at(i), end: lines.at(end) },
            "command-block",
            format!(
                "!`{}` runs in a shell when the skill loads, before the agent reads it; in headless sessions nobody approves it: make sure it is safe to run unattended",
                text[i + 2..end - 1].trim()
            ),
        ));
        search = end;
    }
    out
}

impl Lines<'_> {
    /// The byte offset where line `i` starts (the text's end past the last line).
    pub(super) fn starts_of(&self, i: usize) -> usize {
        self.starts.get(i).copied().unwrap_or(self.text.len())
    }
}

/// The byte offset within its line of a position (inverse of [`Lines::col`]).
fn byte_of(lines: &Lines, p: Position) -> usize {
    let l = lines.get(p.line as usize);
    let mut units = 0u32;
    for (b, c) in l.char_indices() {
        if units >= p.character {
            return b;
        }
        units += c.len_utf16() as u32;
    }
    l.len()
}

/// Checks a `skill-memory` value located at `at`, whose sub-keys are written from `from` on
/// the first of `span`'s lines to its last.
fn memory(
    lines: &Lines,
    at: Located,
    span: (usize, usize),
    from: Position,
    value: &Result<Value, String>,
    out: &mut Vec<Diagnostic>,
) {
    let v = match value {
        Ok(v) => v,
        Err(why) => return out.push(diag(at.value, "skill-memory-invalid", why.clone())),
    };
    let map = match v {
        Value::Null | Value::Bool(_) => return,
        Value::String(s)
            if matches!(
                s.trim().to_ascii_lowercase().as_str(),
                "enabled" | "true" | "on" | "yes" | "disabled" | "false" | "off" | "no"
            ) =>
        {
            return
        }
        Value::Mapping(m) => m,
        other => {
            return out.push(diag(
                at.value,
                "skill-memory-invalid",
                format!(
                    "`skill-memory` must be a mapping such as {{ enabled: true }}, `true` or `enabled`; got {}",
                    show(other)
                ),
            ))
        }
    };
    let from_byte = byte_of(lines, from);
    let locate = |k: &str| find_key(lines, from.line as usize, from_byte, span.1, k);
    let known: Vec<&str> = frontmatter::SETTINGS.iter().map(|(k, _)| *k).collect();
    let mut weights_ok = true;
    for (k, v) in map {
        let key = k.as_str().map(str::to_string).unwrap_or_else(|| show(k));
        let place = locate(&key);
        if !known.contains(&key.as_str()) {
            let hint = closest(&key, &known).map(|c| format!("did you mean `{c}`? ")).unwrap_or_default();
            out.push(diag(
                place.map(|p| p.key).unwrap_or(at.key),
                "skill-memory-unknown-key",
                format!("`{key}` is not a skill-memory setting and is ignored; {hint}settings: {}", known.join(", ")),
            ));
            continue;
        }
        if let Err(why) = frontmatter::check_setting(&key, v) {
            weights_ok &= !frontmatter::RANKING_KEYS.contains(&key.as_str());
            out.push(diag(place.map(|p| p.value).unwrap_or(at.value), "skill-memory-invalid", why));
        }
    }
    let set: Vec<&str> =
        frontmatter::RANKING_KEYS.iter().copied().filter(|k| map.get(*k).is_some_and(|v| !v.is_null())).collect();
    if weights_ok && !set.is_empty() && frontmatter::ranking_of(map).is_err() {
        let range = set.iter().find_map(|k| locate(k)).map(|p| p.value).unwrap_or(at.key);
        out.push(diag(
            range,
            "skill-memory-weights-zero",
            "the ranking weights sum to zero (an unset ranking_relevance counts as 1, ranking_use as 0.25, ranking_recency as 0): give at least one a positive value".into(),
        ));
    }
}

/// The known key nearest to `key` by edit distance, when it is near (a typo).
fn closest<'a>(key: &str, known: &[&'a str]) -> Option<&'a str> {
    let d = |a: &str, b: &str| {
        let b: Vec<char> = b.chars().collect();
        let mut row: Vec<usize> = (0..=b.len()).collect();
        for (i, ca) in a.chars().enumerate() {
            let mut prev = row[0];
            row[0] = i + 1;
            for (j, cb) in b.iter().enumerate() {
                let cur = row[j + 1];
                row[j + 1] = (prev + usize::from(ca != *cb)).min(row[j] + 1).min(cur + 1);
                prev = cur;
            }
        }
        row[b.len()]
    };
    known.iter().map(|k| (d(key, k), *k)).filter(|(n, _)| *n <= 3).min().map(|(_, k)| k)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// (text, folder, [(code, line, start, end)]): every diagnostic and its range.
    type Case<'a> = (&'a str, Option<&'a str>, &'a [(&'a str, u32, u32, u32)]);

    const OK: &str = "---\nname: pdf\ndescription: Fill PDF forms\n---\nbody\n";

    #[test]
    fn every_check_and_its_range() {
        let long = format!("---\nname: a\ndescription: {}\n---\n", "x".repeat(1025));
        let exact = format!("---\nname: a\ndescription: {}\n---\n", "é".repeat(1024));
        let cases: &[Case] = &[
            (OK, Some("pdf"), &[]),
            (OK, None, &[]),
            ("# Title\nno frontmatter", None, &[("no-frontmatter", 0, 0, 7)]),
            ("---\nname: a\n", None, &[("unclosed-frontmatter", 0, 0, 3)]),
            ("---\n- a\n- b\n---\n", None, &[("frontmatter-not-mapping", 1, 0, 3)]),
            (
                "---\nname: a\n  indented: x: y\n---\n",
                None,
                &[("frontmatter-not-yaml", 2, 2, 16), ("missing-description", 0, 0, 3)],
            ),
            ("---\nno colon here\nname: a: b\n---\n", None, &[("frontmatter-unreadable", 1, 0, 13)]),
            // Not YAML but read as hosts read it: a warning on the line, and the checks go on.
            (
                "---\nname: pdf\ndescription: Use for forms: filling\n---\n",
                Some("pdf"),
                &[("frontmatter-not-yaml", 2, 0, 35)],
            ),
            ("---\n---\n", None, &[("missing-name", 0, 0, 3), ("missing-description", 0, 0, 3)]),
            ("---\nname:\ndescription: d\n---\n", None, &[("empty-name", 1, 0, 4)]),
            ("---\nname: \"\"\ndescription: d\n---\n", None, &[("empty-name", 1, 0, 4)]),
            ("---\nname: [a]\ndescription: d\n---\n", None, &[("invalid-name", 1, 6, 9)]),
            ("---\nname: PDF_Tools\ndescription: d\n---\n", None, &[("invalid-name", 1, 6, 15)]),
            ("---\nname: pdf--tools # x\ndescription: d\n---\n", None, &[("invalid-name", 1, 6, 16)]),
            ("---\nname: con\ndescription: d\n---\n", None, &[("invalid-name", 1, 6, 9)]),
            ("---\nname: café\ndescription: d\n---\n", None, &[("invalid-name", 1, 6, 10)]),
            ("---\nname: a😀\ndescription: d\n---\n", None, &[("invalid-name", 1, 6, 9)]),
            ("\u{feff}---\r\nname: \"a b\"\r\ndescription: d\r\n---\r\n", None, &[("invalid-name", 1, 6, 11)]),
            ("---\nname: pdf\ndescription: d\n---\n", Some("pdf-tools"), &[("name-differs-from-folder", 1, 6, 9)]),
            ("---\nname: pdf\n---\n", None, &[("missing-description", 0, 0, 3)]),
            ("---\nname: pdf\ndescription:   \n---\n", None, &[("empty-description", 2, 0, 11)]),
            (&long, None, &[("description-too-long", 2, 13, 1038)]),
            (&exact, None, &[]),
            // skill-memory: the forms that read, and every refusal at its value
            ("---\nname: a\ndescription: d\nskill-memory: { enabled: true, max_tokens: 800 }\n---\n", None, &[]),
            ("---\nname: a\ndescription: d\nskill-memory: enabled\n---\n", None, &[]),
            ("---\nname: a\ndescription: d\nmetadata: { skill-memory: enabled }\n---\n", None, &[]),
            ("---\nname: a\ndescription: d\nskill-memory: 7\n---\n", None, &[("skill-memory-invalid", 3, 14, 15)]),
            ("---\nname: a\ndescription: d\nskill-memory: maybe\n---\n", None, &[("skill-memory-invalid", 3, 14, 19)]),
            (
                "---\nname: a\ndescription: d\nskill-memory:\n  enabled: maybe\n  max_tokens: -3\n---\n",
                None,
                &[("skill-memory-invalid", 4, 11, 16), ("skill-memory-invalid", 5, 14, 16)],
            ),
            (
                "---\nname: a\ndescription: d\nskill-memory: { enabled: true, max_token: 5, dedup_threshold: 2 }\n---\n",
                None,
                &[("skill-memory-unknown-key", 3, 31, 40), ("skill-memory-invalid", 3, 62, 63)],
            ),
            (
                "---\nname: a\ndescription: d\nskill-memory:\n  enabled: true\n  ranking_relevance: 0\n  ranking_use: 0\n---\n",
                None,
                &[("skill-memory-weights-zero", 5, 21, 22)],
            ),
            (
                "---\nname: a\ndescription: d\nskill-memory:\n  enabled: true\n  ranking_relevance: 0\n  ranking_hit: 0.5\n---\n",
                None,
                &[],
            ),
            (
                "---\nname: a\ndescription: d\nskill-memory: { enabled: true, ranking_hit: .inf }\n---\n",
                None,
                &[("skill-memory-invalid", 3, 44, 48)],
            ),
            (
                "---\nname: a\ndescription: d\nmetadata:\n  author: me\n  skill-memory:\n    enabled: yes please\n---\n",
                None,
                &[("skill-memory-invalid", 6, 13, 23)],
            ),
            (
                "---\nname: a\ndescription: Use: this\nskill-memory: { enabled: true\n---\n",
                None,
                &[("frontmatter-not-yaml", 2, 0, 22), ("skill-memory-invalid", 3, 14, 29)],
            ),
            (
                "---\nname: a\ndescription: d\nmetadata:\n  skill-memory: { enabled: true, max_tokns: 5 }\n---\n",
                None,
                &[("skill-memory-unknown-key", 4, 33, 42)],
            ),
            (
                "---\r\nname: a\r\ndescription: d\r\n\"skill-memory\":\r\n  enabled: 2\r\n---\r\n",
                None,
                &[("skill-memory-invalid", 4, 11, 12)],
            ),
            (
                "---\nname: a\ndescription: d\nskill-memory:\n  # on for now\n  enabled: true\n  notes: many\nlicense: MIT\n---\n",
                None,
                &[("skill-memory-unknown-key", 6, 2, 7)],
            ),
            // unattended
            ("---\nname: a\ndescription: d\nallowed-tools: Bash(git:*)\n---\n", None, &[("allowed-tools", 3, 0, 13)]),
            ("---\nname: a\ndescription: d\nhooks:\n  PreToolUse: []\n---\n", None, &[("hooks", 3, 0, 5)]),
            ("---\nname: a\ndescription: d\n---\nFirst run !`git status`, then\n", None, &[("command-block", 4, 10, 23)]),
            ("---\nname: a\ndescription: d\n---\nsay hi! and `code`\n", None, &[]),
            ("---\nname: a\ndescription: d\n---\nπ !`ls`\n", None, &[("command-block", 4, 2, 7)]),
        ];
        for (text, folder, want) in cases {
            let got = diagnose(text, *folder);
            let got: Vec<(&str, u32, u32, u32)> = got
                .iter()
                .map(|d| {
                    assert_eq!(d.range.start.line, d.range.end.line, "{text:?}: {d:?}");
                    (d.code, d.range.start.line, d.range.start.character, d.range.end.character)
                })
                .collect();
            assert_eq!(&got, want, "{text:?}: {:#?}", diagnose(text, *folder));
        }
    }

    #[test]
    fn codes_are_documented_and_messages_say_what_to_do() {
        let text = "---\nname: Bad_Name\ndescription: d\nskill-memory: { enabled: tru, max_tokns: 5, ranking_relevance: 0 }\nhooks: {}\n---\n!`x`";
        for d in diagnose(text, Some("bad-name")) {
            assert!(CODES.iter().any(|(c, s, _)| *c == d.code && *s == d.severity), "{d:?}");
            assert!(!d.message.is_empty());
        }
        let d = diagnose(text, None);
        assert!(d[0].message.contains("e.g. `bad-name`"), "{d:?}");
        assert!(d.iter().any(|d| d.message.contains("did you mean `max_tokens`")), "{d:?}");
    }

    #[test]
    fn block_values_span_their_lines() {
        let text = format!("---\nname: a\ndescription: >\n  {}\n  more\n---\n", "y".repeat(1030));
        let d = diagnose(&text, None);
        assert_eq!(d.len(), 1, "{d:?}");
        assert_eq!(d[0].code, "description-too-long");
        assert_eq!(
            d[0].range,
            Range { start: Position { line: 2, character: 13 }, end: Position { line: 4, character: 6 } }
        );
    }

    /// A skill-memory error here is exactly a setting the reader refuses.
    #[test]
    fn memory_errors_agree_with_the_reader() {
        let values = [
            "true",
            "7",
            "maybe",
            "enabled",
            "{ enabled: true }",
            "{ enabled: 1 }",
            "{ max_tokens: 1.5 }",
            "{ dedup_threshold: 1.5 }",
            "{ dedup_threshold: 1 }",
            "{ ranking_recency: 0, ranking_relevance: 0 }",
            "{ ranking_hit: -1 }",
            "{ other: 1 }",
            "[a]",
            "{ enabled: true, ranking_relevance: 1e300 }",
        ];
        for v in values {
            let text = format!("---\nname: a\ndescription: d\nskill-memory: {v}\n---\n");
            let refused = frontmatter::parse(&text).is_err();
            let flagged = diagnose(&text, None).iter().any(|d| d.severity == Severity::Error);
            assert_eq!(refused, flagged, "{v}: {:?} / {:?}", frontmatter::parse(&text), diagnose(&text, None));
        }
    }
}
