//! Everything about reading a SKILL.md file, and nothing else: a leaf crate that depends on no
//! other crate of the workspace, so that `memory/` (enablement, per-skill settings), `skills/`
//! (install-time checks), `historian/` (names in transcripts) and an editor door can all use
//! it without depending on one another.
//!
//! - [`frontmatter`]: the model ([`Frontmatter`](frontmatter::Frontmatter),
//!   [`MemorySettings`](frontmatter::MemorySettings), [`Ranking`](frontmatter::Ranking)) and
//!   its strict and line-by-line (lenient) parse.
//! - [`name`]: the Agent Skills name rule ([`name::check`]) and the wider reading of names
//!   hosts accept ([`name::check_lenient`]).
//! - [`warnings`]: install-time warnings (plain strings, returned with an installed skill).
//! - [`diagnostics`]: the same checks and more for an editor, with LSP-style ranges.
//! - [`completion`] and [`actions`]: completion data and code-action edits for an editor.
//!
//! # Entry points for a language server
//!
//! All are pure functions of the document text (and the folder the SKILL.md is in), so a
//! server can call them on every change without touching the engine:
//!
//! - [`diagnostics::diagnose`]`(text, folder) -> Vec<Diagnostic>`; map
//!   [`Diagnostic`](diagnostics::Diagnostic) field by field onto `lsp_types::Diagnostic`
//!   (positions are 0-based lines and UTF-16 columns, as LSP's default encoding;
//!   [`Severity::lsp`](diagnostics::Severity::lsp) gives the protocol number; `code` is stable;
//!   set `source: "skillmem"`).
//! - [`completion::context`]`(text, position)` says which table applies at the cursor;
//!   [`completion::FRONTMATTER_KEYS`] and [`completion::skill_memory_keys`] are the items
//!   (label, one line of documentation).
//! - [`actions::enable_memory`]`(text)` and [`actions::name_to_folder`]`(text, folder)` return
//!   the [`TextEdit`](diagnostics::TextEdit)s of the two quick fixes; offer the first on any
//!   SKILL.md without memory and the second with a `name-differs-from-folder` diagnostic.
//!   [`actions::folder_for_name`]`(text, folder)` is the new folder name for the other way
//!   round (a `RenameFile` of the folder).
//! - The folder is the name of the directory holding the SKILL.md (from the document URI).
//!
//! Files this applies to: [`is_skill_md`] (a file named `SKILL.md`, any case of the extension).

pub mod actions;
pub mod completion;
pub mod diagnostics;
pub mod frontmatter;
pub mod name;
pub mod warnings;

/// True when `file_name` is a SKILL.md as agents accept it: `SKILL` then `.md` in any case.
pub fn is_skill_md(file_name: &str) -> bool {
    file_name.strip_prefix("SKILL.").is_some_and(|ext| ext.eq_ignore_ascii_case("md"))
}

#[cfg(test)]
mod tests {
    #[test]
    fn skill_md_file_names() {
        for (name, ok) in [
            ("SKILL.md", true),
            ("SKILL.MD", true),
            ("SKILL.Md", true),
            ("skill.md", false),
            ("SKILL.markdown", false),
            ("README.md", false),
            ("SKILL.md.bak", false),
        ] {
            assert_eq!(super::is_skill_md(name), ok, "{name}");
        }
    }
}
