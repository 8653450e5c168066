//! Where a loaded skill lives on disk.
//!
//! In order: the host's `metadata.dir`; the last `Base directory for this skill: <path>` line of
//! the tool output (a plain path or a `file://` URL, percent-decoded); the older
//! `**Base directory**: <path>` line; else the skill's folder found by name in the usual skill
//! folders of the workspace (from the workspace up to its repository root) and of the user.

use std::path::{Path, PathBuf};

/// The skill folders searched in every directory from the workspace up to the repository root.
/// (`.pi/skills` is Pi's; Pi reads `.agents/skills` too; `.gemini/skills` Gemini CLI's,
/// `.github/skills` Copilot CLI's, `.agents/skills` also Codex's, Gemini's and Copilot's.)
pub const WORKSPACE_SKILL_DIRS: &[&str] = &[
    ".opencode/skill",
    ".opencode/skills",
    ".claude/skills",
    ".agents/skills",
    ".pi/skills",
    ".gemini/skills",
    ".github/skills",
];

/// The user's skill folders, relative to the home directory.
/// (`.pi/agent/skills` is Pi's, `.gemini/skills` Gemini CLI's, `.codex/skills` Codex's (its
/// `$CODEX_HOME/skills`), `.copilot/skills` Copilot CLI's.)
pub const USER_SKILL_DIRS: &[&str] = &[
    ".config/opencode/skill",
    ".config/opencode/skills",
    ".claude/skills",
    ".agents/skills",
    ".pi/agent/skills",
    ".gemini/skills",
    ".codex/skills",
    ".copilot/skills",
];

/// The directory named by the tool output, if it names one.
pub fn dir_from_output(output: &str) -> Option<PathBuf> {
    let mut found = None;
    for line in output.lines() {
        let line = line.trim();
        if let Some(rest) = line.strip_prefix("Base directory for this skill:") {
            if let Some(p) = path_of(rest) {
                found = Some(p);
            }
        }
    }
    if found.is_some() {
        return found;
    }
    for line in output.lines() {
        let line = line.trim();
        if let Some(rest) = line.strip_prefix("**Base directory**:") {
            if let Some(p) = path_of(rest) {
                found = Some(p);
            }
        }
    }
    found
}

fn path_of(rest: &str) -> Option<PathBuf> {
    let s = rest.trim().trim_matches('`').trim();
    if s.is_empty() {
        return None;
    }
    if let Some(u) = s.strip_prefix("file://") {
        // file:///abs/path or file://localhost/abs/path
        let u = u.strip_prefix("localhost").unwrap_or(u);
        return Some(PathBuf::from(percent_decode(u)));
    }
    Some(PathBuf::from(s))
}

/// Decodes `%XX` escapes (invalid escapes are kept as they are).
pub fn percent_decode(s: &str) -> String {
    let bytes = s.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        if bytes[i] == b'%' && i + 2 < bytes.len() {
            let hex = std::str::from_utf8(&bytes[i + 1..i + 3]).ok().and_then(|h| u8::from_str_radix(h, 16).ok());
            if let Some(b) = hex {
                out.push(b);
                i += 3;
                continue;
            }
        }
        out.push(bytes[i]);
        i += 1;
    }
    String::from_utf8_lossy(&out).into_owned()
}

/// The folders in which a skill named `name` is looked for, in order.
pub fn search_dirs(workspace: Option<&Path>, home: Option<&Path>) -> Vec<PathBuf> {
    let mut out = vec![];
    if let Some(ws) = workspace {
        let top = repo_root(ws);
        let mut dir = Some(ws);
        while let Some(d) = dir {
            for sub in WORKSPACE_SKILL_DIRS {
                out.push(d.join(sub));
            }
            if top.as_deref() == Some(d) || top.is_none() {
                break;
            }
            dir = d.parent();
        }
    }
    if let Some(h) = home {
        for sub in USER_SKILL_DIRS {
            out.push(h.join(sub));
        }
    }
    out
}

/// The top of the repository containing `dir` (the folder holding `.git`), if any.
fn repo_root(dir: &Path) -> Option<PathBuf> {
    dir.ancestors().find(|d| d.join(".git").exists()).map(Path::to_path_buf)
}

/// Finds `<folder>/<name>/SKILL.md` in the search folders.
pub fn find_by_name(name: &str, workspace: Option<&Path>, home: Option<&Path>) -> Option<PathBuf> {
    if name.is_empty() || name.contains(['/', '\\']) || name == "." || name == ".." {
        return None;
    }
    search_dirs(workspace, home).into_iter().map(|d| d.join(name)).find(|d| d.join("SKILL.md").is_file())
}

/// True for the skill tool of the hosts we know (`skill` in OpenCode, `Skill` in Claude Code).
pub fn is_skill_tool(tool: &str) -> bool {
    tool.eq_ignore_ascii_case("skill")
}

/// The skill named by a skill tool call: `args.name` (OpenCode) or `args.skill` (Claude Code),
/// without a plugin prefix (`plugin:skill`).
pub fn skill_name_of(args: &serde_json::Value) -> Option<String> {
    let raw = args.get("name").or_else(|| args.get("skill")).and_then(serde_json::Value::as_str)?.trim();
    let name = raw.rsplit(':').next().unwrap_or(raw).trim();
    (!name.is_empty()).then(|| name.to_string())
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    #[test]
    fn skill_names() {
        let cases = [
            (json!({"name": "jq"}), Some("jq")),
            (json!({"skill": "pdf"}), Some("pdf")),
            (json!({"skill": "my-plugin:pdf"}), Some("pdf")),
            (json!({"name": "  "}), None),
            (json!({"name": 3}), None),
            (json!({}), None),
        ];
        for (args, want) in cases {
            assert_eq!(skill_name_of(&args).as_deref(), want, "{args}");
        }
    }

    use super::*;

    #[test]
    fn output_table() {
        let cases: &[(&str, Option<&str>)] = &[
            ("Base directory for this skill: /a/b\n\nbody", Some("/a/b")),
            ("Base directory for this skill: file:///a/my%20skill", Some("/a/my skill")),
            ("Base directory for this skill: file://localhost/x/y", Some("/x/y")),
            ("Base directory for this skill: /first\nBase directory for this skill: /second", Some("/second")),
            ("**Base directory**: /legacy/dir", Some("/legacy/dir")),
            ("**Base directory**: /legacy\nBase directory for this skill: /new", Some("/new")),
            ("Base directory for this skill:   \n", None),
            ("nothing here", None),
            ("Base directory for this skill: `/quoted/path`", Some("/quoted/path")),
            ("Base directory for this skill: file:///bad%zzescape", Some("/bad%zzescape")),
            ("Base directory for this skill: file:///end%2", Some("/end%2")),
        ];
        for (text, want) in cases {
            assert_eq!(dir_from_output(text), want.map(PathBuf::from), "{text:?}");
        }
    }

    #[test]
    fn finds_by_name_from_subfolder_up_to_repo_root() {
        let t = tempfile::tempdir().unwrap();
        let root = t.path();
        std::fs::create_dir_all(root.join(".git")).unwrap();
        std::fs::create_dir_all(root.join(".agents/skills/jq")).unwrap();
        std::fs::write(root.join(".agents/skills/jq/SKILL.md"), "---\nname: jq\n---\n").unwrap();
        let sub = root.join("src/deep");
        std::fs::create_dir_all(&sub).unwrap();
        assert_eq!(find_by_name("jq", Some(&sub), None), Some(root.join(".agents/skills/jq")));
        assert_eq!(find_by_name("../jq", Some(&sub), None), None);
        assert_eq!(find_by_name("nope", Some(&sub), None), None);
    }

    #[test]
    fn user_folders_come_last() {
        let home = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(home.path().join(".claude/skills/x")).unwrap();
        std::fs::write(home.path().join(".claude/skills/x/SKILL.md"), "").unwrap();
        assert_eq!(find_by_name("x", None, Some(home.path())), Some(home.path().join(".claude/skills/x")));
    }

    #[test]
    fn finds_pi_skill_folders() {
        // Pi 0.73 reads .pi/skills and .agents/skills in the project, ~/.pi/agent/skills for the user.
        let t = tempfile::tempdir().unwrap();
        let (ws, home) = (t.path().join("ws"), t.path().join("home"));
        std::fs::create_dir_all(ws.join(".git")).unwrap();
        for d in [ws.join(".pi/skills/pdf"), home.join(".pi/agent/skills/jq")] {
            std::fs::create_dir_all(&d).unwrap();
            std::fs::write(d.join("SKILL.md"), "").unwrap();
        }
        assert_eq!(find_by_name("pdf", Some(&ws), Some(&home)), Some(ws.join(".pi/skills/pdf")));
        assert_eq!(find_by_name("jq", Some(&ws), Some(&home)), Some(home.join(".pi/agent/skills/jq")));
    }
}
