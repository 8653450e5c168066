//! SKILL.md frontmatter: name, description, and whether (and how) the skill has memory.
//!
//! The frontmatter is the YAML between a leading `---` line and the next `---` line. A BOM,
//! CRLF line ends and `#` comments are tolerated. Memory is enabled by `skill-memory: { enabled:
//! true }` (block or inline), `skill-memory: true`, or `metadata: { skill-memory: enabled }`.
//! A malformed frontmatter is an error the caller turns into "disabled, warned once".

use serde_norway::Value;

/// Per-skill memory settings from the frontmatter; `None` means "use the configuration".
#[derive(Debug, Clone, Default, PartialEq)]
pub struct MemorySettings {
    pub enabled: bool,
    pub max_tokens: Option<usize>,
    pub max_pinned_tokens: Option<usize>,
    pub dedup_threshold: Option<f32>,
    pub ranking: Option<Ranking>,
}

/// Ranking weights, normalised to sum 1.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Ranking {
    pub relevance: f32,
    pub recency: f32,
    pub hit: f32,
}

impl Default for Ranking {
    /// Relevance alone: on the labelled dev set, blending recency and hits into the score
    /// lowers MRR@10 (they do not track relevance), so by default they only break ties (see
    /// README, "Recall quality"). A skill may still weigh them in its frontmatter.
    fn default() -> Self {
        Ranking { relevance: 1.0, recency: 0.0, hit: 0.0 }
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

/// Parses a SKILL.md's text. `Err` says why the frontmatter is malformed.
pub fn parse(text: &str) -> Result<Frontmatter, String> {
    let Some((yaml, _body)) = split(text) else {
        let t = text.strip_prefix('\u{feff}').unwrap_or(text);
        if t.starts_with("---") {
            return Err("the frontmatter starts with --- but has no closing --- line".into());
        }
        return Ok(Frontmatter::default());
    };
    if yaml.trim().is_empty() {
        return Ok(Frontmatter::default());
    }
    let value: Value = serde_norway::from_str(&yaml).map_err(|e| format!("the frontmatter is not valid YAML: {e}"))?;
    let map = match value {
        Value::Mapping(m) => m,
        Value::Null => return Ok(Frontmatter::default()),
        _ => return Err("the frontmatter must be a YAML mapping of keys to values".into()),
    };
    let text_of = |k: &str| -> Result<Option<String>, String> {
        match map.get(k) {
            None | Some(Value::Null) => Ok(None),
            Some(Value::String(s)) => Ok(Some(s.clone())),
            Some(Value::Number(n)) => Ok(Some(n.to_string())),
            Some(Value::Bool(b)) => Ok(Some(b.to_string())),
            Some(_) => Err(format!("frontmatter `{k}` must be a string")),
        }
    };
    let name = text_of("name")?;
    let description = text_of("description")?;
    let mut memory = MemorySettings::default();
    if let Some(v) = map.get("skill-memory") {
        memory = settings(v)?;
    } else if let Some(Value::Mapping(meta)) = map.get("metadata") {
        if let Some(v) = meta.get("skill-memory") {
            memory = settings(v)?;
        }
    }
    Ok(Frontmatter { name, description, memory, raw: Some(map) })
}

fn settings(v: &Value) -> Result<MemorySettings, String> {
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
                Some(Value::Bool(b)) => *b,
                Some(Value::String(s)) if s == "true" || s == "enabled" => true,
                Some(Value::String(s)) if s == "false" || s == "disabled" => false,
                Some(other) => return Err(format!("skill-memory.enabled must be true or false, got {}", show(other))),
            };
            let uint = |k: &str| -> Result<Option<usize>, String> {
                match get(k) {
                    None | Some(Value::Null) => Ok(None),
                    Some(Value::Number(n)) if n.as_u64().is_some() => Ok(n.as_u64().map(|x| x as usize)),
                    Some(other) => Err(format!("skill-memory.{k} must be a whole number, got {}", show(other))),
                }
            };
            let float = |k: &str| -> Result<Option<f32>, String> {
                match get(k) {
                    None | Some(Value::Null) => Ok(None),
                    // Finite as an f32 too: an infinite weight would make every weight NaN.
                    Some(Value::Number(n)) if n.as_f64().is_some_and(|x| x >= 0.0 && (x as f32).is_finite()) => {
                        Ok(n.as_f64().map(|x| x as f32))
                    }
                    Some(other) => {
                        Err(format!("skill-memory.{k} must be a finite non-negative number, got {}", show(other)))
                    }
                }
            };
            let dedup = float("dedup_threshold")?;
            if dedup.is_some_and(|d| d > 1.0) {
                return Err("skill-memory.dedup_threshold must be between 0 and 1".into());
            }
            let (rel, rec, hit) = (float("ranking_relevance")?, float("ranking_recency")?, float("ranking_hit")?);
            let ranking = if rel.is_some() || rec.is_some() || hit.is_some() {
                let d = Ranking::default();
                let (a, b, c) = (rel.unwrap_or(d.relevance), rec.unwrap_or(d.recency), hit.unwrap_or(d.hit));
                // Summed in f64: three weights near f32::MAX overflow an f32 sum.
                let sum = a as f64 + b as f64 + c as f64;
                if sum <= 0.0 {
                    return Err("skill-memory ranking weights must not all be zero".into());
                }
                let w = |x: f32| (x as f64 / sum) as f32;
                Some(Ranking { relevance: w(a), recency: w(b), hit: w(c) })
            } else {
                None
            };
            Ok(MemorySettings {
                enabled,
                max_tokens: uint("max_tokens")?,
                max_pinned_tokens: uint("max_pinned_tokens")?,
                dedup_threshold: dedup,
                ranking,
            })
        }
        Value::Null => Ok(MemorySettings::default()),
        other => Err(format!("skill-memory must be a mapping such as {{ enabled: true }}, got {}", show(other))),
    }
}

fn show(v: &Value) -> String {
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
            ("---\nname: [unclosed\n---\n", Err("not valid YAML")),
            ("---\nname: a\n", Err("no closing")),
            ("---\n- a\n- b\n---\n", Err("mapping")),
            ("---\nskill-memory:\n  enabled: maybe\n---\n", Err("enabled must be")),
            ("---\nskill-memory: 7\n---\n", Err("skill-memory must be")),
            ("---\nskill-memory: {enabled: true, max_tokens: -3}\n---\n", Err("max_tokens")),
            // Found by tests/fuzz.rs (tests/corpus/frontmatter): an infinite weight made every weight NaN.
            ("---\nskill-memory: {enabled: true, ranking_relevance: 1e300}\n---\n", Err("finite")),
            ("---\nskill-memory: {enabled: true, ranking_hit: .inf}\n---\n", Err("finite")),
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
        assert_eq!(f.memory.ranking, Some(Ranking { relevance: 0.5, recency: 0.25, hit: 0.25 }));
    }

    #[test]
    fn split_returns_the_body() {
        let (yaml, body) = split("---\r\na: 1\r\n---\r\nhello\n").unwrap();
        assert_eq!(yaml, "a: 1\n");
        assert_eq!(body, "hello\n");
    }
}
