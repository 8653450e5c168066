//! SKILL.md frontmatter: name, description, and whether (and how) the skill has memory.
//!
//! The frontmatter is the YAML between a leading `---` line and the next `---` line. A BOM,
//! CRLF line ends and `#` comments are tolerated. Memory is enabled by `skill-memory: { enabled:
//! true }` (block or inline), `skill-memory: true`, or `metadata: { skill-memory: enabled }`.
//! A frontmatter that is not valid YAML (typically an unquoted `": "` in a description) is read
//! line by line, as hosts read it; one that cannot be read even so is an error, with the line,
//! that the caller turns into "disabled, warned once" and into the note tools' refusal.

use serde_norway::Value;

/// Per-skill memory settings from the frontmatter; `None` means "use the configuration".
#[derive(Debug, Clone, Default, PartialEq)]
pub struct MemorySettings {
    pub enabled: bool,
    pub max_tokens: Option<usize>,
    pub max_pinned_tokens: Option<usize>,
    pub dedup_threshold: Option<f32>,
    pub ranking: Option<Ranking>,
    /// `share: false`: the skill's notes never leave this machine (team memory).
    pub share: Option<bool>,
}

/// Ranking weights, normalised to sum 1.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Ranking {
    pub relevance: f32,
    pub recency: f32,
    /// The weight of a note's smoothed use rate (`ranking_use`; `ranking_hit` is its old name).
    pub used: f32,
}

/// The weights before they are normalised: relevance 1, recency 0, use [`USE_WEIGHT`].
const DEFAULT_WEIGHTS: (f32, f32, f32) = (1.0, 0.0, USE_WEIGHT);

/// The default weight of use beside relevance's 1: a note shown in six sessions and never used
/// (a smoothed rate of 1/8) loses 0.075 of a score where the best match scores 1, against a
/// note never shown (1/2): enough to order two equally relevant notes by use, not to lift an
/// unrelated note above a relevant one. Recall's labelled sets show no use (every rate is the
/// prior), so their figures do not move with it.
pub const USE_WEIGHT: f32 = 0.25;

impl Default for Ranking {
    /// Relevance, and the use rate (see [`USE_WEIGHT`]). Recency is off: on the labelled dev
    /// set, blending it into the score lowers MRR@10 (it does not track relevance; README,
    /// "Recall quality"). A skill may still weigh it in its frontmatter.
    fn default() -> Self {
        let (a, b, c) = DEFAULT_WEIGHTS;
        let sum = a + b + c;
        Ranking { relevance: a / sum, recency: b / sum, used: c / sum }
    }
}

/// What the frontmatter of one SKILL.md says.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Frontmatter {
    pub name: Option<String>,
    pub description: Option<String>,
    pub memory: MemorySettings,
    /// The whole frontmatter, for checks of other keys (e.g. `allowed-tools`).
    pub raw: Option<serde_norway::Mapping>,
    /// Set when the frontmatter is not valid YAML and was read line by line instead: what the
    /// YAML parser said, with the line.
    pub lenient: Option<String>,
}

/// Splits the frontmatter text off a SKILL.md (BOM and CRLF tolerated). `None` when the file
/// has no frontmatter.
pub fn split(text: &str) -> Option<(String, &str)> {
    let text = text.strip_prefix('\u{feff}').unwrap_or(text);
    let mut lines = text.split_inclusive('\n');
    let first = lines.next()?;
    if first.trim_end() != "---" {
        return None;
    }
    let mut yaml = String::new();
    let mut consumed = first.len();
    for line in lines {
        consumed += line.len();
        if line.trim_end() == "---" {
            return Some((yaml, &text[consumed..]));
        }
        yaml.push_str(line.trim_end_matches(['\r', '\n']));
        yaml.push('\n');
    }
    None
}

/// The line of SKILL.md that line `i` (0-based) of the frontmatter text is on: line 1 is the
/// opening `---`.
fn file_line(i: usize) -> usize {
    i + 2
}

/// Parses a SKILL.md's text. `Err` says why the frontmatter cannot be read, with the line of
/// SKILL.md and what to fix.
///
/// A strict YAML parse comes first. When it fails, the frontmatter is read the way hosts read
/// it, line by line ([`lenient`]): top-level `key: value` lines (the value is everything after
/// the first `": "`, so `description: Use for jq work: filtering arrays` is a description), and
/// the `skill-memory` block (flow `{ enabled: true }` or indented lines). Only what that reading
/// cannot make sense of is an error; [`Frontmatter::lenient`] records the YAML error otherwise.
pub fn parse(text: &str) -> Result<Frontmatter, String> {
    let Some((yaml, _body)) = split(text) else {
        let t = text.strip_prefix('\u{feff}').unwrap_or(text);
        if t.starts_with("---") {
            return Err(
                "the frontmatter starts with --- but has no closing --- line; add a line with --- after it".into()
            );
        }
        return Ok(Frontmatter::default());
    };
    if yaml.trim().is_empty() {
        return Ok(Frontmatter::default());
    }
    let value: Value = match serde_norway::from_str(&yaml) {
        Ok(v) => v,
        Err(e) => {
            let why = yaml_error(&e, 0);
            return match lenient(&yaml) {
                Ok(mut f) => {
                    f.lenient = Some(why);
                    Ok(f)
                }
                Err(e) => Err(format!("{e} (the frontmatter is not valid YAML either: {why})")),
            };
        }
    };
    let map = match value {
        Value::Mapping(m) => m,
        Value::Null => return Ok(Frontmatter::default()),
        _ => return Err("the frontmatter must be a YAML mapping of keys to values (`key: value` lines)".into()),
    };
    let text_of = |k: &str| -> Result<Option<String>, String> {
        match map.get(k) {
            None | Some(Value::Null) => Ok(None),
            Some(Value::String(s)) => Ok(Some(s.clone())),
            // YAML reads `name: 0x1f` or `name: 1e3` as a number; the author wrote text, and a
            // folder named as written: keep the text as written, not the number's spelling.
            Some(Value::Number(n)) => Ok(Some(raw_scalar(&yaml, k).unwrap_or_else(|| n.to_string()))),
            Some(Value::Bool(b)) => Ok(Some(raw_scalar(&yaml, k).unwrap_or_else(|| b.to_string()))),
            Some(_) => Err(format!("{}frontmatter `{k}` must be a string", at(key_line(&yaml, &[k])))),
        }
    };
    let name = text_of("name")?;
    let description = text_of("description")?;
    let mut memory = MemorySettings::default();
    // A bad setting names its own line when it has one (`skill-memory.enabled must be ...`).
    let located = |path: &[&str], e: String| {
        let sub = e.strip_prefix("skill-memory.").and_then(|r| r.split([' ', ':']).next());
        let line = sub.and_then(|k| key_line(&yaml, &[path, &[k]].concat())).or_else(|| key_line(&yaml, path));
        format!("{}{e}", at(line))
    };
    if let Some(v) = map.get("skill-memory") {
        memory = settings(v).map_err(|e| located(&["skill-memory"], e))?;
    } else if let Some(Value::Mapping(meta)) = map.get("metadata") {
        if let Some(v) = meta.get("skill-memory") {
            memory = settings(v).map_err(|e| located(&["metadata", "skill-memory"], e))?;
        }
    }
    Ok(Frontmatter { name, description, memory, raw: Some(map), lenient: None })
}

/// "line N of SKILL.md: " for a known line, else nothing.
fn at(line: Option<usize>) -> String {
    line.map(|l| format!("line {l} of SKILL.md: ")).unwrap_or_default()
}

/// A YAML error as "line N of SKILL.md: what" (`offset`: lines of the frontmatter before the
/// text that was parsed).
fn yaml_error(e: &serde_norway::Error, offset: usize) -> String {
    let msg = e.to_string();
    let msg = msg.split(" at line ").next().unwrap_or(&msg).trim().to_string();
    match e.location() {
        Some(loc) => format!("line {} of SKILL.md: {msg}", file_line(offset + loc.line().saturating_sub(1))),
        None => msg,
    }
}

/// The SKILL.md line of the key at `path` (a top-level key, then keys nested under it).
/// The plain scalar written after a top-level `key:`, without a trailing comment: the text
/// the author typed (`0x1f`, `1e3`, `yes`), where YAML would read a number or a boolean.
fn raw_scalar(yaml: &str, key: &str) -> Option<String> {
    let line = yaml.lines().nth(key_line(yaml, &[key])? - file_line(0))?;
    let (_, value) = line.split_once(':')?;
    let value = value.split(" #").next().unwrap_or(value).trim();
    (!value.is_empty() && !value.starts_with(['"', '\'', '[', '{', '|', '>', '&', '*', '!'])).then(|| value.to_string())
}

fn key_line(yaml: &str, path: &[&str]) -> Option<usize> {
    let mut indent: Option<usize> = None;
    let mut want = path.iter();
    let mut key = want.next()?;
    for (i, line) in yaml.lines().enumerate() {
        let body = line.trim_start();
        let ind = line.len() - body.len();
        if body.is_empty() || body.starts_with('#') {
            continue;
        }
        let here = match indent {
            None => ind == 0,
            Some(parent) => ind > parent,
        };
        if !here {
            if indent.is_some_and(|p| ind <= p) {
                return None;
            }
            continue;
        }
        let k = body.split(':').next().unwrap_or("").trim().trim_matches(['"', '\'']);
        if k == *key {
            match want.next() {
                Some(next) => {
                    key = next;
                    indent = Some(ind);
                }
                None => return Some(file_line(i)),
            }
        }
    }
    None
}

/// One `key: value` line of a line-by-line reading, with the lines indented under it.
#[derive(Debug)]
pub(super) struct Entry {
    pub(super) key: String,
    pub(super) value: String,
    /// Index of the key's line in the frontmatter text.
    pub(super) line: usize,
    /// The lines indented under the key (index, text), as written.
    pub(super) block: Vec<(usize, String)>,
}

/// Reads `lines` (index in the frontmatter, text) as `key: value` lines at the smallest
/// indentation, each with the more-indented lines under it. A line at that indentation
/// without `": "` continues the value above it (a wrapped line).
pub(super) fn entries(lines: &[(usize, String)]) -> Result<Vec<Entry>, String> {
    let content = |l: &str| {
        let t = l.trim();
        !t.is_empty() && !t.starts_with('#')
    };
    let base = lines.iter().filter(|(_, l)| content(l)).map(|(_, l)| l.len() - l.trim_start().len()).min();
    let Some(base) = base else { return Ok(vec![]) };
    let mut out: Vec<Entry> = vec![];
    for (i, line) in lines {
        let ind = line.len() - line.trim_start().len();
        if !content(line) {
            // Blank lines and comments inside a block keep their place (block scalars).
            if let Some(e) = out.last_mut() {
                if !e.block.is_empty() && line.trim().is_empty() {
                    e.block.push((*i, String::new()));
                }
            }
            continue;
        }
        let body = &line[ind..];
        if ind > base || body.starts_with("- ") || body == "-" {
            match out.last_mut() {
                Some(e) => e.block.push((*i, line.clone())),
                None => return Err(format!("line {}: an indented line comes before any key", file_line(*i))),
            }
            continue;
        }
        // The key ends at the first `:` followed by a space, a tab or the end of the line.
        let split = body.char_indices().find_map(|(k, c)| {
            (c == ':' && body[k + 1..].chars().next().is_none_or(|n| n == ' ' || n == '\t')).then_some(k)
        });
        match split {
            Some(k) if !body[..k].trim().is_empty() => out.push(Entry {
                key: body[..k].trim().trim_matches(['"', '\'']).to_string(),
                value: body[k + 1..].trim().to_string(),
                line: *i,
                block: vec![],
            }),
            _ => match out.last_mut() {
                Some(e) if e.block.is_empty() => {
                    e.value.push(' ');
                    e.value.push_str(body.trim());
                }
                _ => {
                    return Err(format!(
                        "line {}: `{}` is not a `key: value` line; write `key: value`, or indent it under the key it belongs to",
                        file_line(*i),
                        body.trim()
                    ))
                }
            },
        }
    }
    Ok(out)
}

/// A scalar written without YAML's rules: surrounding quotes removed.
pub(super) fn unquote(v: &str) -> String {
    let v = v.trim();
    for q in ['"', '\''] {
        if v.len() >= 2 && v.starts_with(q) && v.ends_with(q) {
            return v[1..v.len() - 1].to_string();
        }
    }
    v.to_string()
}

/// The text of an entry read line by line: its value, or the lines under it (`|` keeps line
/// breaks, anything else folds them).
pub(super) fn entry_text(e: &Entry) -> String {
    let v = e.value.trim();
    let block = || e.block.iter().map(|(_, l)| l.trim()).collect::<Vec<_>>();
    if v.starts_with('|') {
        block().join("\n").trim().to_string()
    } else if v.starts_with('>') || (v.is_empty() && !e.block.is_empty()) {
        block().into_iter().filter(|l| !l.is_empty()).collect::<Vec<_>>().join(" ")
    } else if v.starts_with(['"', '\'']) {
        unquote(v)
    } else {
        // As in YAML, ` #` starts a comment.
        v.split(" #").next().unwrap_or(v).trim().to_string()
    }
}

/// The block under an entry with its common indentation removed.
pub(super) fn dedent(block: &[(usize, String)]) -> Vec<(usize, String)> {
    let min = block
        .iter()
        .filter(|(_, l)| !l.trim().is_empty())
        .map(|(_, l)| l.len() - l.trim_start().len())
        .min()
        .unwrap_or(0);
    block.iter().map(|(i, l)| (*i, l.get(min..).unwrap_or("").to_string())).collect()
}

/// The value of an entry as YAML: its inline value (`{ enabled: true }`, `true`), or the
/// block under it parsed as YAML, or else read line by line.
pub(super) fn entry_value(e: &Entry) -> Result<Value, String> {
    let v = e.value.trim();
    if !v.is_empty() && !v.starts_with('#') {
        return serde_norway::from_str::<Value>(v).map_err(|err| {
            let msg = err.to_string();
            let msg = msg.split(" at line ").next().unwrap_or(&msg).to_string();
            format!(
                "line {}: the value of `{}` cannot be read ({msg}); write it as `{}: {{ enabled: true }}` or as indented `key: value` lines",
                file_line(e.line),
                e.key,
                e.key
            )
        });
    }
    if e.block.is_empty() {
        return Ok(Value::Null);
    }
    let lines = dedent(&e.block);
    let text: String = lines.iter().map(|(_, l)| format!("{l}\n")).collect();
    if let Ok(v) = serde_norway::from_str::<Value>(&text) {
        return Ok(v);
    }
    let mut m = serde_norway::Mapping::new();
    for sub in entries(&lines)? {
        let v = entry_value(&sub).or_else(|err| {
            if sub.block.is_empty() {
                Ok(Value::String(unquote(&sub.value)))
            } else {
                Err(err)
            }
        })?;
        m.insert(Value::String(sub.key), v);
    }
    Ok(Value::Mapping(m))
}

/// Reads a frontmatter that is not valid YAML line by line, as hosts do: top-level `key:
/// value` lines, and the `skill-memory` block (flow or block style, at the top level or under
/// `metadata`). `Err` names the line that cannot be read and what to write instead.
pub fn lenient(yaml: &str) -> Result<Frontmatter, String> {
    let lines: Vec<(usize, String)> = yaml.lines().map(str::to_string).enumerate().collect();
    let top = entries(&lines)?;
    let find = |k: &str| top.iter().find(|e| e.key == k);
    let mut raw = serde_norway::Mapping::new();
    for e in &top {
        raw.insert(Value::String(e.key.clone()), Value::String(entry_text(e)));
    }
    let mut memory = MemorySettings::default();
    let setting = |e: &Entry, v: &Value| settings(v).map_err(|why| format!("line {}: {why}", file_line(e.line)));
    if let Some(e) = find("skill-memory") {
        memory = setting(e, &entry_value(e)?)?;
    } else if let Some(meta) = find("metadata") {
        let inner = if meta.value.trim().is_empty() || meta.value.trim().starts_with('#') {
            match entries(&dedent(&meta.block)) {
                Ok(sub) => sub.into_iter().find(|e| e.key == "skill-memory"),
                // Only an unreadable block that may hold the setting is an error.
                Err(e) if meta.block.iter().any(|(_, l)| l.contains("skill-memory")) => return Err(e),
                Err(_) => None,
            }
        } else {
            None
        };
        match inner {
            Some(e) => memory = setting(&e, &entry_value(&e)?)?,
            None => {
                if let Ok(Value::Mapping(m)) = entry_value(meta) {
                    if let Some(v) = m.get("skill-memory") {
                        memory = setting(meta, v)?;
                    }
                }
            }
        }
    }
    let text = |k: &str| find(k).map(entry_text).filter(|s| !s.is_empty());
    Ok(Frontmatter { name: text("name"), description: text("description"), memory, raw: Some(raw), lenient: None })
}

pub(super) fn settings(v: &Value) -> Result<MemorySettings, String> {
    match v {
        Value::Bool(b) => Ok(MemorySettings { enabled: *b, ..Default::default() }),
        Value::String(s) => match s.trim().to_ascii_lowercase().as_str() {
            "enabled" | "true" | "on" | "yes" => Ok(MemorySettings { enabled: true, ..Default::default() }),
            "disabled" | "false" | "off" | "no" => Ok(MemorySettings::default()),
            other => Err(format!("skill-memory: expected enabled or disabled, got {other:?}")),
        },
        Value::Mapping(m) => {
            let get = |k: &str| m.get(k);
            let enabled = match get("enabled") {
                None | Some(Value::Null) => false,
                Some(v) => {
                    check_setting("enabled", v)?;
                    matches!(v, Value::Bool(true)) || matches!(v, Value::String(s) if s == "true" || s == "enabled")
                }
            };
            let uint = |k: &str| -> Result<Option<usize>, String> {
                match get(k) {
                    None | Some(Value::Null) => Ok(None),
                    Some(v) => check_setting(k, v).map(|_| v.as_u64().map(|x| x as usize)),
                }
            };
            let float = |k: &str| -> Result<Option<f32>, String> {
                match get(k) {
                    None | Some(Value::Null) => Ok(None),
                    Some(v) => check_setting(k, v).map(|_| v.as_f64().map(|x| x as f32)),
                }
            };
            let dedup = float("dedup_threshold")?;
            let ranking = ranking_of(m)?;
            Ok(MemorySettings {
                enabled,
                max_tokens: uint("max_tokens")?,
                max_pinned_tokens: uint("max_pinned_tokens")?,
                dedup_threshold: dedup,
                ranking,
                share: match get("share") {
                    None | Some(Value::Null) => None,
                    Some(Value::Bool(b)) => Some(*b),
                    Some(other) => {
                        return Err(format!("skill-memory.share must be true or false, got {}", show(other)))
                    }
                },
            })
        }
        Value::Null => Ok(MemorySettings::default()),
        other => Err(format!("skill-memory must be a mapping such as {{ enabled: true }}, got {}", show(other))),
    }
}

/// The settings a `skill-memory` mapping may hold, each with one line of documentation; any
/// other key is ignored.
pub const SETTINGS: &[(&str, &str)] = &[
    ("enabled", "true to give this skill memory (notes recalled when it loads, note tools offered)"),
    ("max_tokens", "the most tokens of notes injected when the skill loads (whole number)"),
    ("max_pinned_tokens", "the most of max_tokens that pinned notes may take (whole number)"),
    ("dedup_threshold", "similarity (0 to 1) above which a new note is merged into an existing one"),
    ("ranking_relevance", "weight of relevance to the task in recall (non-negative; default 1)"),
    ("ranking_recency", "weight of how recently a note was written or used (non-negative; default 0)"),
    ("ranking_use", "weight of how often the agent applied a note where it was shown: its smoothed use rate (non-negative; default 0.25)"),
    ("ranking_hit", "the old name of ranking_use (read when ranking_use is not set)"),
];

/// The ranking weights; unset ones take their default (relevance 1, recency 0, use
/// [`USE_WEIGHT`]). `ranking_hit` is `ranking_use`'s old name.
pub const RANKING_KEYS: [&str; 4] = ["ranking_relevance", "ranking_recency", "ranking_use", "ranking_hit"];

/// The ranking weights of a `skill-memory` mapping, normalised to sum 1; `None` when none is
/// set. `Err` when one is not a finite non-negative number, or when they sum to zero.
pub(super) fn ranking_of(m: &serde_norway::Mapping) -> Result<Option<Ranking>, String> {
    let float = |k: &str| -> Result<Option<f32>, String> {
        match m.get(k) {
            None | Some(Value::Null) => Ok(None),
            Some(v) => check_setting(k, v).map(|_| v.as_f64().map(|x| x as f32)),
        }
    };
    let (rel, rec) = (float("ranking_relevance")?, float("ranking_recency")?);
    let (used, old) = (float("ranking_use")?, float("ranking_hit")?);
    let used = used.or(old);
    if rel.is_none() && rec.is_none() && used.is_none() {
        return Ok(None);
    }
    let d = DEFAULT_WEIGHTS;
    let (a, b, c) = (rel.unwrap_or(d.0), rec.unwrap_or(d.1), used.unwrap_or(d.2));
    // Summed in f64: three weights near f32::MAX overflow an f32 sum.
    let sum = a as f64 + b as f64 + c as f64;
    if sum <= 0.0 {
        return Err(WEIGHTS_ZERO.into());
    }
    let w = |x: f32| (x as f64 / sum) as f32;
    Ok(Some(Ranking { relevance: w(a), recency: w(b), used: w(c) }))
}

/// The error when the ranking weights sum to zero.
pub const WEIGHTS_ZERO: &str = "skill-memory ranking weights must not all be zero";

/// Checks the value of one known `skill-memory` setting (a key of [`SETTINGS`]); `Err` says
/// what the value must be. Null (`key:` with no value) means unset and is accepted.
pub fn check_setting(key: &str, v: &Value) -> Result<(), String> {
    if v.is_null() {
        return Ok(());
    }
    match key {
        "enabled" => match v {
            Value::Bool(_) => Ok(()),
            Value::String(s) if matches!(s.as_str(), "true" | "enabled" | "false" | "disabled") => Ok(()),
            other => Err(format!("skill-memory.enabled must be true or false, got {}", show(other))),
        },
        "max_tokens" | "max_pinned_tokens" => match v {
            Value::Number(n) if n.as_u64().is_some() => Ok(()),
            other => Err(format!("skill-memory.{key} must be a whole number, got {}", show(other))),
        },
        "dedup_threshold" | "ranking_relevance" | "ranking_recency" | "ranking_use" | "ranking_hit" => match v {
            // Finite as an f32 too: an infinite weight would make every weight NaN.
            Value::Number(n) if n.as_f64().is_some_and(|x| x >= 0.0 && (x as f32).is_finite()) => {
                if key == "dedup_threshold" && n.as_f64().is_some_and(|d| d as f32 > 1.0) {
                    return Err("skill-memory.dedup_threshold must be between 0 and 1".into());
                }
                Ok(())
            }
            other => Err(format!("skill-memory.{key} must be a finite non-negative number, got {}", show(other))),
        },
        other => Err(format!("skill-memory.{other} is not a setting")),
    }
}

pub(super) fn show(v: &Value) -> String {
    serde_norway::to_string(v).map(|s| s.trim().to_string()).unwrap_or_else(|_| "?".into())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn enabled(text: &str) -> Result<bool, String> {
        parse(text).map(|f| f.memory.enabled)
    }

    #[test]
    fn enablement_table() {
        let cases: &[(&str, Result<bool, &str>)] = &[
            ("---\nname: a\nskill-memory:\n  enabled: true\n---\nbody", Ok(true)),
            ("---\nname: a\nskill-memory: { enabled: true }\n---\n", Ok(true)),
            ("---\nmetadata: { skill-memory: enabled }\n---\n", Ok(true)),
            ("---\nmetadata:\n  skill-memory:\n    enabled: true\n---\n", Ok(true)),
            ("\u{feff}---\r\nname: a\r\nskill-memory:\r\n  enabled: true\r\n---\r\n", Ok(true)),
            ("---\n# a comment\nname: a # trailing\nskill-memory: {enabled: true} # on\n---\n", Ok(true)),
            ("---\nskill-memory: true\n---\n", Ok(true)),
            ("---\nskill-memory:\n  enabled: false\n---\n", Ok(false)),
            ("---\nname: a\n---\n", Ok(false)),
            ("no frontmatter at all", Ok(false)),
            ("---\n---\n", Ok(false)),
            // Not YAML, read line by line as hosts do: the value is what follows the first ": ".
            ("---\nname: [unclosed\n---\n", Ok(false)),
            ("---\nname: [oops\nskill-memory: {enabled: true}\n---\n", Ok(true)),
            ("---\ndescription: Use for jq work: filtering arrays\nskill-memory: { enabled: true }\n---\n", Ok(true)),
            ("---\ndescription: Use for jq work: filtering arrays\nskill-memory:\n  enabled: true\n  max_tokens: 800\n---\n", Ok(true)),
            ("---\ndescription: a: b\nskill-memory:\n  enabled: false\n---\n", Ok(false)),
            ("---\ndescription: a: b\nmetadata:\n  skill-memory: enabled\n---\n", Ok(true)),
            ("---\ndescription: a: b\nmetadata: { skill-memory: enabled }\n---\n", Ok(true)),
            ("---\ndescription: a: b\nskill-memory:\n  enabled: true # on\n  note: x: y\n---\n", Ok(true)),
            ("---\ndescription: a: b\n  wrapped: onto a second line\nskill-memory: true\n---\n", Ok(true)),
            ("---\ndescription: a: b\n---\n", Ok(false)),
            ("---\ndescription: a: b\nskill-memory:\ttrue\n---\n", Ok(true)),
            ("---\ndescription: see https://x.io/a:b: c\nskill-memory: true\n---\n", Ok(true)),
            // Cannot be read at all: the error names the line and what to write.
            ("---\nname: a\n", Err("no closing")),
            ("---\n- a\n- b\n---\n", Err("mapping")),
            ("---\nskill-memory:\n  enabled: maybe\n---\n", Err("line 3 of SKILL.md: skill-memory.enabled must be")),
            ("---\nskill-memory: 7\n---\n", Err("line 2 of SKILL.md: skill-memory must be")),
            ("---\nskill-memory: {enabled: true, max_tokens: -3}\n---\n", Err("max_tokens")),
            // Found by tests/fuzz.rs (tests/corpus/frontmatter): an infinite weight made every weight NaN.
            ("---\nskill-memory: {enabled: true, ranking_relevance: 1e300}\n---\n", Err("finite")),
            ("---\nskill-memory: {enabled: true, ranking_hit: .inf}\n---\n", Err("finite")),
            ("---\ndescription: a: b\nskill-memory: { enabled: true\n---\n", Err("line 3: the value of `skill-memory` cannot be read")),
            ("---\ndescription: a: b\nskill-memory:\n  enabled: maybe\n---\n", Err("line 3: skill-memory.enabled must be")),
            ("---\n  indented: first\nname: a: b\n---\n", Err("line 2: an indented line")),
            ("---\nno colon here\nname: a: b\n---\n", Err("line 2: `no colon here` is not a `key: value` line")),
        ];
        for (text, want) in cases {
            match (enabled(text), want) {
                (Ok(a), Ok(b)) => assert_eq!(a, *b, "{text:?}"),
                (Err(e), Err(w)) => assert!(e.contains(w), "{text:?}: {e}"),
                (got, want) => panic!("{text:?}: got {got:?}, want {want:?}"),
            }
        }
    }

    #[test]
    fn names_yaml_reads_as_numbers_keep_their_text() {
        for (text, want) in [
            ("---\nname: 0x1f\n---\n", "0x1f"),
            ("---\nname: 1e3 # a comment\n---\n", "1e3"),
            ("---\nname: 007\n---\n", "007"),
            ("---\nname: yes\n---\n", "yes"),
            ("---\nname: 42\n---\n", "42"),
        ] {
            assert_eq!(parse(text).unwrap().name.as_deref(), Some(want), "{text:?}");
        }
    }

    #[test]
    fn lenient_reading_keeps_names_descriptions_and_settings() {
        // (SKILL.md, name, description, max_tokens)
        type Case<'a> = (&'a str, Option<&'a str>, Option<&'a str>, Option<usize>);
        let cases: &[Case] = &[
            (
                "---\nname: jq\ndescription: Use for jq work: filtering arrays\nskill-memory: { enabled: true, max_tokens: 700 }\n---\n",
                Some("jq"),
                Some("Use for jq work: filtering arrays"),
                Some(700),
            ),
            (
                "---\nname: \"jq\"\ndescription: >\n  Folded: over\n  two lines\nbad: a: b\nskill-memory:\n  enabled: true\n  max_tokens: 900\n---\n",
                Some("jq"),
                Some("Folded: over two lines"),
                Some(900),
            ),
            (
                "---\nname: x # note\ndescription: 'quoted: yes'\nother: a: b\n---\n",
                Some("x"),
                Some("quoted: yes"),
                None,
            ),
        ];
        for (text, name, description, max_tokens) in cases {
            let f = parse(text).unwrap_or_else(|e| panic!("{text:?}: {e}"));
            assert_eq!(f.name.as_deref(), *name, "{text:?}");
            assert_eq!(f.description.as_deref(), *description, "{text:?}");
            assert_eq!(f.memory.max_tokens, *max_tokens, "{text:?}");
            assert!(f.lenient.as_deref().is_some_and(|w| w.contains("line ")), "{text:?}: {:?}", f.lenient);
        }
        let strict = parse("---\nname: a\n---\n").unwrap();
        assert_eq!(strict.lenient, None);
    }

    #[test]
    fn overrides_and_normalised_weights() {
        let f = parse(
            "---\nname: jq\ndescription: JSON on the command line\nskill-memory:\n  enabled: true\n  max_tokens: 800\n  max_pinned_tokens: 200\n  dedup_threshold: 0.8\n  ranking_relevance: 2\n  ranking_recency: 1\n  ranking_hit: 1\n---\n",
        )
        .unwrap();
        assert_eq!(f.name.as_deref(), Some("jq"));
        assert_eq!(f.description.as_deref(), Some("JSON on the command line"));
        assert_eq!(f.memory.max_tokens, Some(800));
        assert_eq!(f.memory.max_pinned_tokens, Some(200));
        assert_eq!(f.memory.dedup_threshold, Some(0.8));
        assert_eq!(f.memory.ranking, Some(Ranking { relevance: 0.5, recency: 0.25, used: 0.25 }));
    }

    #[test]
    fn split_returns_the_body() {
        let (yaml, body) = split("---\r\na: 1\r\n---\r\nhello\n").unwrap();
        assert_eq!(yaml, "a: 1\n");
        assert_eq!(body, "hello\n");
    }
}
