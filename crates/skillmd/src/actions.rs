//! Quick fixes for a SKILL.md, as text edits: turn memory on, make the name match the folder.
//! Each returns `None` when there is nothing to do or the frontmatter cannot be read (the
//! diagnostics say why); the edits keep the file's line ends (LF or CRLF).

use serde_norway::Value;

use super::diagnostics::{read, Lines, Position, Range, Read, TextEdit};
use super::name;

fn eol(text: &str) -> &'static str {
    if text.contains("\r\n") {
        "\r\n"
    } else {
        "\n"
    }
}

fn at_line(line: usize) -> Range {
    let p = Position { line: line as u32, character: 0 };
    Range { start: p, end: p }
}

/// The edit that gives the skill memory: `skill-memory: { enabled: true }` added before the
/// closing `---`, or an existing `skill-memory` value that leaves memory off replaced by
/// `{ enabled: true }`. `None` when memory is already on, when the value is a mapping with
/// other settings (the author edits `enabled` there), or when the frontmatter cannot be read.
pub fn enable_memory(text: &str) -> Option<TextEdit> {
    let lines = Lines::new(text);
    let nl = eol(text);
    let (fields, fences) = match read(&lines) {
        Read::Fields { fields, fences, .. } => (fields, fences),
        Read::Broken(d) if d.code == "no-frontmatter" => {
            return Some(TextEdit {
                range: at_line(0),
                new_text: format!("---{nl}skill-memory: {{ enabled: true }}{nl}---{nl}"),
            })
        }
        Read::Broken(_) => return None,
    };
    let on = super::frontmatter::parse(text).map(|f| f.memory.enabled).unwrap_or(false);
    if on {
        return None;
    }
    match fields.iter().find(|f| f.key == "skill-memory") {
        None => {
            Some(TextEdit { range: at_line(fences.close), new_text: format!("skill-memory: {{ enabled: true }}{nl}") })
        }
        Some(f) => match &f.value {
            // Settings besides `enabled`: replacing them would lose them.
            Ok(Value::Mapping(m)) if m.keys().any(|k| k.as_str() != Some("enabled")) => None,
            _ => Some(TextEdit { range: f.at.value, new_text: "{ enabled: true }".into() }),
        },
    }
}

/// The edit that makes the frontmatter's `name` the folder's name: the value replaced, or a
/// `name:` line added after the opening `---`. `None` when they already match, when the folder's
/// name breaks the name rule (rename the folder instead), or when the frontmatter cannot be read.
pub fn name_to_folder(text: &str, folder: &str) -> Option<TextEdit> {
    name::check(folder).ok()?;
    let lines = Lines::new(text);
    let Read::Fields { fields, .. } = read(&lines) else { return None };
    match fields.iter().find(|f| f.key == "name") {
        None => Some(TextEdit { range: at_line(1), new_text: format!("name: {folder}{}", eol(text)) }),
        Some(f) => {
            if matches!(&f.value, Ok(Value::String(s)) if s.trim() == folder) {
                return None;
            }
            let v = f.at.value;
            // An empty value: after `name:`, with the space YAML needs.
            let new_text = if v.start == v.end { format!(" {folder}") } else { folder.to_string() };
            Some(TextEdit { range: v, new_text })
        }
    }
}

/// The folder name the other fix (rename the folder to match the name) would use: the
/// frontmatter's `name` when it follows the name rule and differs from `folder`. The server
/// turns it into a `RenameFile` of the folder.
pub fn folder_for_name(text: &str, folder: &str) -> Option<String> {
    let lines = Lines::new(text);
    let Read::Fields { fields, .. } = read(&lines) else { return None };
    let Ok(Value::String(n)) = &fields.iter().find(|f| f.key == "name")?.value else { return None };
    let n = n.trim();
    (n != folder && name::check(n).is_ok()).then(|| n.to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Applies one edit (ranges within one line or insertions at a line start).
    fn apply(text: &str, e: &TextEdit) -> String {
        let offset = |p: Position| {
            let mut off = 0;
            for (i, l) in text.split_inclusive('\n').enumerate() {
                if i == p.line as usize {
                    let mut units = 0;
                    for (b, c) in l.char_indices() {
                        if units >= p.character {
                            return off + b;
                        }
                        units += c.len_utf16() as u32;
                    }
                    return off + l.len();
                }
                off += l.len();
            }
            text.len()
        };
        let (a, b) = (offset(e.range.start), offset(e.range.end));
        format!("{}{}{}", &text[..a], e.new_text, &text[b..])
    }

    #[test]
    fn enable_memory_edits() {
        let cases: &[(&str, Option<&str>)] = &[
            (
                "---\nname: a\ndescription: d\n---\nbody\n",
                Some("---\nname: a\ndescription: d\nskill-memory: { enabled: true }\n---\nbody\n"),
            ),
            ("---\r\nname: a\r\n---\r\n", Some("---\r\nname: a\r\nskill-memory: { enabled: true }\r\n---\r\n")),
            ("---\nname: a\nskill-memory: false\n---\n", Some("---\nname: a\nskill-memory: { enabled: true }\n---\n")),
            (
                "---\nname: a\nskill-memory: disabled # later\n---\n",
                Some("---\nname: a\nskill-memory: { enabled: true } # later\n---\n"),
            ),
            (
                "---\nname: a\nskill-memory: { enabled: false }\n---\n",
                Some("---\nname: a\nskill-memory: { enabled: true }\n---\n"),
            ),
            (
                "---\nname: a\nskill-memory:\n  enabled: false\n---\n",
                Some("---\nname: a\nskill-memory:\n  { enabled: true }\n---\n"),
            ),
            ("# Title\n", Some("---\nskill-memory: { enabled: true }\n---\n# Title\n")),
            ("---\nname: a\nskill-memory: { enabled: true }\n---\n", None),
            ("---\nname: a\nmetadata: { skill-memory: enabled }\n---\n", None),
            ("---\nname: a\nskill-memory: { max_tokens: 500 }\n---\n", None),
            ("---\nname: a\n", None),
        ];
        for (text, want) in cases {
            let got = enable_memory(text).map(|e| apply(text, &e));
            assert_eq!(got.as_deref(), *want, "{text:?}");
            if let Some(fixed) = got {
                assert!(super::super::frontmatter::parse(&fixed).unwrap().memory.enabled, "{fixed:?}");
            }
        }
    }

    #[test]
    fn folder_for_name_cases() {
        let cases: &[(&str, &str, Option<&str>)] = &[
            ("---\nname: pdf-tools\n---\n", "pdf", Some("pdf-tools")),
            ("---\nname: pdf\n---\n", "pdf", None),
            ("---\nname: PDF Tools\n---\n", "pdf", None),
            ("---\nname: [a]\n---\n", "pdf", None),
            ("---\ndescription: d\n---\n", "pdf", None),
            ("no frontmatter", "pdf", None),
        ];
        for (text, folder, want) in cases {
            assert_eq!(folder_for_name(text, folder).as_deref(), *want, "{text:?}");
        }
    }

    #[test]
    fn name_to_folder_edits() {
        let cases: &[(&str, &str, Option<&str>)] = &[
            ("---\nname: pdf\ndescription: d\n---\n", "pdf-tools", Some("---\nname: pdf-tools\ndescription: d\n---\n")),
            ("---\nname: \"PDF\" # x\n---\n", "pdf", Some("---\nname: pdf # x\n---\n")),
            ("---\nname:\n---\n", "pdf", Some("---\nname: pdf\n---\n")),
            ("---\ndescription: d\n---\n", "pdf", Some("---\nname: pdf\ndescription: d\n---\n")),
            ("---\r\ndescription: d\r\n---\r\n", "pdf", Some("---\r\nname: pdf\r\ndescription: d\r\n---\r\n")),
            ("---\nname: pdf\n---\n", "pdf", None),
            ("---\nname: pdf\n---\n", "PDF Tools", None),
            ("no frontmatter", "pdf", None),
        ];
        for (text, folder, want) in cases {
            let got = name_to_folder(text, folder).map(|e| apply(text, &e));
            assert_eq!(got.as_deref(), *want, "{text:?}");
        }
    }
}
