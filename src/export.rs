//! The export file formats, a door's business (the engine knows no file format): JSONL, one
//! [`ExportedNote`] a line, what `skillmem export` writes by default and `skillmem import`
//! reads; and Markdown, for reading. The engine gives and takes the notes
//! (`Engine::export_notes`, `Engine::import_notes`).

use std::collections::BTreeMap;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::engine::ExportedNote;
use crate::error::{Error, Result};

/// The export formats.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub enum ExportFormat {
    /// One JSON note a line ([`ExportedNote`]); what `import` reads.
    #[default]
    Jsonl,
    /// Markdown, for reading.
    Md,
}

/// Parses an export: one [`ExportedNote`] a line (blank lines skipped). The first bad line is
/// an error naming it.
pub fn parse_export(text: &str) -> Result<Vec<ExportedNote>> {
    let mut out = vec![];
    for (i, line) in text.lines().enumerate() {
        let n = i + 1;
        if line.trim().is_empty() {
            continue;
        }
        let bad = |why: String| Error::invalid(format!("line {n}: {why}; nothing was imported"));
        let note: ExportedNote = serde_json::from_str(line).map_err(|e| bad(format!("not a note: {e}")))?;
        note.check().map_err(bad)?;
        out.push(note);
    }
    Ok(out)
}

/// Writes notes as JSONL (one [`ExportedNote`] a line).
pub fn to_jsonl(notes: &[ExportedNote]) -> String {
    let mut s = String::new();
    for n in notes {
        s.push_str(&serde_json::to_string(n).unwrap_or_default());
        s.push('\n');
    }
    s
}

/// Writes notes as Markdown: a section per skill, a bullet per note with its metadata.
pub fn to_markdown(notes: &[ExportedNote]) -> String {
    let mut by_skill: BTreeMap<&str, Vec<&ExportedNote>> = BTreeMap::new();
    for n in notes {
        by_skill.entry(&n.skill).or_default().push(n);
    }
    let mut s = String::from("# skillmem notes\n");
    for (skill, ns) in by_skill {
        s.push_str(&format!("\n## {skill}\n\n"));
        for n in ns {
            let one_line = n.delta.replace('\n', " ");
            s.push_str(&format!(
                "- **{}** {}{}: {}\n",
                n.kind.as_str(),
                n.scope.as_str(),
                if n.pinned { ", pinned" } else { "" },
                one_line
            ));
            let mut meta = vec![
                format!("source {}", n.source.as_str()),
                format!("hits {}", n.hits),
                format!("recalls {}", n.recalls),
            ];
            if !n.intent.is_empty() {
                meta.insert(0, format!("intent: {}", n.intent.replace('\n', " ")));
            }
            if let Some(h) = &n.content_hash {
                meta.push(format!("content hash {h}"));
            }
            if let Some(e) = &n.embedder {
                meta.push(format!("embedder {e}"));
            }
            if !n.project_id.is_empty() {
                meta.push(format!("project {}", n.project_id));
            }
            if let Some(o) = n.origin_source {
                meta.push(format!("first written by the {}", o.as_str()));
            }
            if let Some(h) = &n.origin.host {
                meta.push(format!("host {h}"));
            }
            if let Some(s) = &n.session_id {
                meta.push(format!("session {s}"));
            }
            if let Some(t) = &n.origin.transcript {
                let at = n.origin.transcript_at.as_deref().map(|a| format!(" ({a})")).unwrap_or_default();
                meta.push(format!("transcript {t}{at}"));
            }
            if n.pending {
                meta.push("waiting for review".into());
            }
            s.push_str(&format!("  - {}\n", meta.join(" · ")));
        }
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn export_lines_table() {
        let good = r#"{"skill":"jq","scope":"global","source":"agent","kind":"gotcha","delta":"use -r"}"#;
        let cases: &[(&str, Result<usize, &str>)] = &[
            ("", Ok(0)),
            (good, Ok(1)),
            (&format!("{good}\n\n{good}\n"), Ok(2)),
            (&format!("{good}\n{{not json\n"), Err("line 2: not a note")),
            (r#"{"skill":"jq","scope":"global","source":"agent","kind":"tip","delta":"x"}"#, Err("line 1: not a note")),
            (
                r#"{"skill":"","scope":"global","source":"agent","kind":"fix","delta":"x"}"#,
                Err("line 1: skill is empty"),
            ),
            (
                r#"{"skill":"jq","scope":"global","source":"agent","kind":"fix","delta":"  "}"#,
                Err("line 1: delta is empty"),
            ),
            (
                r#"{"skill":"jq","scope":"project","source":"agent","kind":"fix","delta":"x"}"#,
                Err("needs its projectId"),
            ),
            (
                r#"{"skill":"jq","scope":"global","source":"agent","kind":"fix","delta":"x","contentHash":"00"}"#,
                Err("contentHash 00 does not match"),
            ),
        ];
        for (text, want) in cases {
            match (parse_export(text), want) {
                (Ok(v), Ok(n)) => assert_eq!(v.len(), *n, "{text:?}"),
                (Err(e), Err(w)) => {
                    let e = e.to_string();
                    assert!(e.contains(w) && e.contains("nothing was imported"), "{text:?}: {e}");
                }
                (got, want) => panic!("{text:?}: got {got:?}, want {want:?}"),
            }
        }
    }
}
