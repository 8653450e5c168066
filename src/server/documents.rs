//! SKILL.md language features: the open documents, diagnostics on every change, hover on
//! `name` / `skill-memory`, completion of frontmatter keys, and the quick fixes. The checks
//! are `skillmd/`'s pure functions; this file maps them onto LSP types. Only files named
//! `SKILL.md` (any case of the extension) get any of this.

use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::Mutex;

use tower_lsp_server::ls_types::*;

use crate::engine::{Engine, SkillOverview};
use crate::skillmd::{self, actions, completion, diagnostics};

/// The text of every open SKILL.md, by URI, with the version the client gave it.
#[derive(Default)]
pub struct Documents {
    open: Mutex<HashMap<Uri, (String, i32)>>,
}

impl Documents {
    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<Uri, (String, i32)>> {
        self.open.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Records a document's text; `false` when it is no SKILL.md (then nothing is kept).
    pub fn set(&self, uri: &Uri, text: String, version: i32) -> bool {
        if !is_skill_md(uri) {
            return false;
        }
        self.lock().insert(uri.clone(), (text, version));
        true
    }

    pub fn close(&self, uri: &Uri) {
        self.lock().remove(uri);
    }

    /// The text and version of an open SKILL.md.
    pub fn get(&self, uri: &Uri) -> Option<(String, i32)> {
        self.lock().get(uri).cloned()
    }

    /// True when `version` is still the document's latest (a slower check must not overwrite
    /// the diagnostics of a newer text).
    pub fn is_current(&self, uri: &Uri, version: i32) -> bool {
        self.lock().get(uri).is_some_and(|(_, v)| *v == version)
    }
}

/// The file of a `file:` URI.
fn path_of(uri: &Uri) -> Option<PathBuf> {
    uri.to_file_path().map(|p| p.into_owned())
}

/// True for a URI whose file is named `SKILL.md` (any case of the extension).
pub fn is_skill_md(uri: &Uri) -> bool {
    let s = uri.as_str();
    let name = s.rsplit('/').next().unwrap_or(s);
    skillmd::is_skill_md(name)
}

/// The name of the folder a SKILL.md is in.
pub fn folder_of(uri: &Uri) -> Option<String> {
    path_of(uri)?.parent()?.file_name().map(|n| n.to_string_lossy().into_owned())
}

fn position(p: diagnostics::Position) -> Position {
    Position { line: p.line, character: p.character }
}

fn range(r: diagnostics::Range) -> Range {
    Range { start: position(r.start), end: position(r.end) }
}

fn text_edit(e: diagnostics::TextEdit) -> TextEdit {
    TextEdit { range: range(e.range), new_text: e.new_text }
}

/// The diagnostics of a SKILL.md's text, as LSP diagnostics.
pub fn diagnose(text: &str, folder: Option<&str>) -> Vec<Diagnostic> {
    diagnostics::diagnose(text, folder)
        .into_iter()
        .map(|d| Diagnostic {
            range: range(d.range),
            severity: Some(match d.severity {
                diagnostics::Severity::Error => DiagnosticSeverity::ERROR,
                diagnostics::Severity::Warning => DiagnosticSeverity::WARNING,
            }),
            code: Some(NumberOrString::String(d.code.to_string())),
            source: Some("skillmem".into()),
            message: d.message,
            ..Default::default()
        })
        .collect()
}

/// The top-level frontmatter key on `line`, when the line is inside the frontmatter.
fn frontmatter_key(text: &str, line: u32) -> Option<String> {
    let lines: Vec<&str> = text.lines().collect();
    if lines.first().map(|l| l.trim_end()) != Some("---") {
        return None;
    }
    let close = lines.iter().skip(1).position(|l| l.trim_end() == "---").map(|i| i + 1).unwrap_or(lines.len());
    let i = line as usize;
    if i == 0 || i >= close {
        return None;
    }
    let l = lines[i];
    if l.starts_with([' ', '\t']) {
        return None;
    }
    l.split_once(':').map(|(k, _)| k.trim().to_string())
}

/// The skill a SKILL.md is about: its frontmatter name, else its folder's name.
fn skill_of(text: &str, uri: &Uri) -> Option<String> {
    skillmd::frontmatter::parse(text)
        .ok()
        .and_then(|f| f.name)
        .map(|n| n.trim().to_string())
        .filter(|n| !n.is_empty())
        .or_else(|| folder_of(uri))
}

/// Markdown for a skill's memory at a glance.
pub fn overview_markdown(o: &SkillOverview) -> String {
    let mut t = format!(
        "**skillmem: {}**, {}.\n\n{} notes in this project, {} global, {} pinned.",
        o.skill, o.why, o.project_notes, o.global_notes, o.pinned
    );
    if !o.top.is_empty() {
        t.push_str("\n\nLeading notes:\n");
        for n in &o.top {
            let pin = if n.pinned { " (pinned)" } else { "" };
            let delta: String = n.delta.chars().take(200).collect();
            t.push_str(&format!("\n- `{}` #{}{pin}: {}", n.kind.as_str(), n.id, delta.replace('\n', " ")));
        }
    }
    t
}

/// Hover on the frontmatter's `name` or `skill-memory` key: the skill's memory at a glance.
/// Blocking (reads the store): the server runs it off the runtime.
pub fn hover(engine: &Engine, uri: &Uri, text: &str, pos: Position) -> Option<Hover> {
    let key = frontmatter_key(text, pos.line)?;
    if key != "name" && key != "skill-memory" {
        return None;
    }
    let skill = skill_of(text, uri)?;
    let dir = path_of(uri).and_then(|p| p.parent().map(PathBuf::from));
    let value = match engine.skill_overview(&skill, dir, 3) {
        Ok(o) => overview_markdown(&o),
        Err(e) => format!("**skillmem: {skill}**: {e}"),
    };
    Some(Hover { contents: HoverContents::Markup(MarkupContent { kind: MarkupKind::Markdown, value }), range: None })
}

/// Completion of frontmatter keys and `skill-memory` sub-keys at the cursor.
pub fn complete(text: &str, pos: Position) -> Vec<CompletionItem> {
    let items = match completion::context(text, diagnostics::Position { line: pos.line, character: pos.character }) {
        completion::Context::FrontmatterKey => completion::FRONTMATTER_KEYS.to_vec(),
        completion::Context::SkillMemoryKey => completion::skill_memory_keys(),
        completion::Context::None => return vec![],
    };
    items
        .into_iter()
        .map(|i| CompletionItem {
            label: i.label.to_string(),
            kind: Some(CompletionItemKind::PROPERTY),
            documentation: Some(Documentation::String(i.documentation.to_string())),
            insert_text: Some(format!("{}: ", i.label)),
            ..Default::default()
        })
        .collect()
}

/// The quick fixes: give the skill memory; make the name and the folder match (rename the
/// name, or the folder when the name is a valid one).
pub fn code_actions(uri: &Uri, text: &str, context: &[Diagnostic]) -> Vec<CodeActionOrCommand> {
    let mut out = vec![];
    let edit_of = |e: diagnostics::TextEdit| WorkspaceEdit {
        changes: Some(HashMap::from([(uri.clone(), vec![text_edit(e)])])),
        ..Default::default()
    };
    if let Some(e) = actions::enable_memory(text) {
        out.push(CodeActionOrCommand::CodeAction(CodeAction {
            title: "Give this skill memory (skill-memory: { enabled: true })".into(),
            kind: Some(CodeActionKind::QUICKFIX),
            edit: Some(edit_of(e)),
            ..Default::default()
        }));
    }
    let differs: Vec<Diagnostic> = context
        .iter()
        .filter(|d| d.code == Some(NumberOrString::String("name-differs-from-folder".into())))
        .cloned()
        .collect();
    let folder = folder_of(uri);
    if let Some(folder) = &folder {
        if let Some(e) = actions::name_to_folder(text, folder) {
            out.push(CodeActionOrCommand::CodeAction(CodeAction {
                title: format!("Set the name to the folder's: {folder}"),
                kind: Some(CodeActionKind::QUICKFIX),
                diagnostics: (!differs.is_empty()).then(|| differs.clone()),
                edit: Some(edit_of(e)),
                is_preferred: Some(true),
                ..Default::default()
            }));
        }
    }
    // Rename the folder to the name, when the name is a valid one and differs.
    let dir = path_of(uri).and_then(|p| p.parent().map(PathBuf::from));
    if let (Some(folder), Some(dir)) = (folder, dir) {
        if let Some(name) = actions::folder_for_name(text, &folder) {
            let renamed = dir.with_file_name(&name);
            if let (Some(old_uri), Some(new_uri)) = (Uri::from_file_path(&dir), Uri::from_file_path(&renamed)) {
                out.push(CodeActionOrCommand::CodeAction(CodeAction {
                    title: format!("Rename the folder to the name: {name}"),
                    kind: Some(CodeActionKind::QUICKFIX),
                    diagnostics: (!differs.is_empty()).then_some(differs),
                    edit: Some(WorkspaceEdit {
                        document_changes: Some(DocumentChanges::Operations(vec![DocumentChangeOperation::Op(
                            ResourceOp::Rename(RenameFile { old_uri, new_uri, options: None, annotation_id: None }),
                        )])),
                        ..Default::default()
                    }),
                    ..Default::default()
                }));
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keys_are_read_inside_the_frontmatter_only() {
        let text = "---\nname: pdf\nskill-memory:\n  enabled: true\n---\nname: body\n";
        let cases = [(0, None), (1, Some("name")), (2, Some("skill-memory")), (3, None), (4, None), (5, None)];
        for (line, want) in cases {
            assert_eq!(frontmatter_key(text, line).as_deref(), want, "line {line}");
        }
        assert_eq!(frontmatter_key("# no frontmatter\nname: x\n", 1), None);
    }

    #[test]
    fn only_skill_md_files() {
        for (uri, want) in [
            ("file:///w/.claude/skills/pdf/SKILL.md", true),
            ("file:///w/.claude/skills/pdf/SKILL.MD", true),
            ("file:///w/README.md", false),
            ("file:///w/skill.md", false),
        ] {
            let u: Uri = uri.parse().unwrap();
            assert_eq!(is_skill_md(&u), want, "{uri}");
        }
    }
}
