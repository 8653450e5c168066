//! Completion data for a SKILL.md frontmatter: the keys an author may write, each with one
//! line of documentation, and which list applies at a cursor.

use super::diagnostics::{fences, Lines, Position};
use super::frontmatter::SETTINGS;

/// A completion item: the key and one line of documentation.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Item {
    pub label: &'static str,
    pub documentation: &'static str,
}

/// Top-level frontmatter keys: the Agent Skills spec's, the ones hosts read, and skillmem's.
pub const FRONTMATTER_KEYS: &[Item] = &[
    Item { label: "name", documentation: "The skill's name: lowercase letters, digits and single hyphens, at most 64 characters, the same as its folder." },
    Item { label: "description", documentation: "What the skill does and when to use it (at most 1,024 characters); agents choose skills by it." },
    Item { label: "license", documentation: "The license the skill is under, as a name or a file in the skill." },
    Item { label: "compatibility", documentation: "What the skill needs to run (products, packages, network), at most 500 characters." },
    Item { label: "metadata", documentation: "Any other key-value data; `skill-memory` may be written here too." },
    Item { label: "allowed-tools", documentation: "Tools pre-approved while the skill is active; in headless sessions they run unattended." },
    Item { label: "skill-memory", documentation: "skillmem: give this skill memory across sessions, e.g. `{ enabled: true }`." },
];

/// Keys of a `skill-memory` mapping (the settings skillmem reads).
pub fn skill_memory_keys() -> Vec<Item> {
    SETTINGS.iter().map(|(label, documentation)| Item { label, documentation }).collect()
}

/// Which list applies at a cursor.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Context {
    /// A top-level key of the frontmatter: [`FRONTMATTER_KEYS`].
    FrontmatterKey,
    /// A key inside a `skill-memory` mapping (block or `{ ... }`): [`skill_memory_keys`].
    SkillMemoryKey,
    /// Elsewhere (a value, the body, outside a frontmatter).
    None,
}

/// The completion context at `pos` in `text`: a key is being written when nothing but the
/// key's letters precede the cursor on its line (or, in a `{ ... }` mapping, since the last
/// `{` or `,`).
pub fn context(text: &str, pos: Position) -> Context {
    let lines = Lines::new(text);
    let i = pos.line as usize;
    // Inside the frontmatter: after the opening line and before the closing one (or the end).
    let close = match fences(&lines) {
        Ok(Some(f)) => f.close,
        Ok(None) => return Context::None,
        Err(()) => lines.count(),
    };
    if i == 0 || i >= close {
        return Context::None;
    }
    let line = lines.get(i);
    let mut units = 0u32;
    let cut = line
        .char_indices()
        .find(|(_, c)| {
            let past = units >= pos.character;
            units += c.len_utf16() as u32;
            past
        })
        .map(|(b, _)| b)
        .unwrap_or(line.len());
    let before = &line[..cut];
    let word = |s: &str| s.chars().all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_');
    let trimmed = before.trim_start();
    if word(trimmed) {
        if trimmed.len() == before.len() {
            return Context::FrontmatterKey;
        }
        // Indented: a key of the nearest less-indented line above.
        let ind = before.len() - trimmed.len();
        for j in (1..i).rev() {
            let above = lines.get(j);
            let t = above.trim_start();
            if t.is_empty() || t.starts_with('#') {
                continue;
            }
            if above.len() - t.len() < ind {
                return if t.trim_matches(['"', '\'']).starts_with("skill-memory") && t.trim_end().ends_with(':') {
                    Context::SkillMemoryKey
                } else {
                    Context::None
                };
            }
        }
        return Context::None;
    }
    // A flow mapping: `skill-memory: { enabled: true, |`.
    if let Some(open) = before.find("skill-memory:").map(|k| k + "skill-memory:".len()) {
        let rest = &before[open..];
        if let Some(brace) = rest.find('{') {
            let inner = &rest[brace + 1..];
            if !inner.contains('}') {
                let last = inner.rsplit(',').next().unwrap_or(inner);
                if word(last.trim()) {
                    return Context::SkillMemoryKey;
                }
            }
        }
    }
    Context::None
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn contexts() {
        let text = "---\nna\nskill-memory:\n  ena\n  enabled: tr\nmetadata:\n  au\nm: { a: 1 }\nskill-memory: { enabled: true, ma\n---\nbody\n";
        // (line, character, want)
        let cases: &[(u32, u32, Context)] = &[
            (0, 0, Context::None),
            (1, 2, Context::FrontmatterKey),
            (1, 0, Context::FrontmatterKey),
            (3, 5, Context::SkillMemoryKey),
            (4, 13, Context::None),
            (6, 4, Context::None),
            (7, 5, Context::None),
            (8, 34, Context::SkillMemoryKey),
            (8, 16, Context::SkillMemoryKey),
            (8, 25, Context::None),
            (10, 2, Context::None),
        ];
        for (line, character, want) in cases {
            assert_eq!(context(text, Position { line: *line, character: *character }), *want, "{line}:{character}");
        }
        assert_eq!(context("no frontmatter", Position { line: 0, character: 2 }), Context::None);
        // While the closing line is not written yet, every line after the opening one counts.
        assert_eq!(context("---\nname: a\nde", Position { line: 2, character: 2 }), Context::FrontmatterKey);
    }

    #[test]
    fn tables_have_documentation() {
        let keys: Vec<Item> = FRONTMATTER_KEYS.iter().copied().chain(skill_memory_keys()).collect();
        assert!(keys.iter().all(|i| !i.documentation.is_empty() && !i.label.is_empty()));
        let labels: Vec<&str> = skill_memory_keys().iter().map(|i| i.label).collect();
        assert_eq!(
            labels,
            [
                "enabled",
                "max_tokens",
                "max_pinned_tokens",
                "dedup_threshold",
                "ranking_relevance",
                "ranking_recency",
                "ranking_use",
                "ranking_hit"
            ]
        );
    }
}
