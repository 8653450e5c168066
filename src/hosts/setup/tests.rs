use std::path::{Path, PathBuf};

use super::*;

/// A temporary HOME whose host configurations already hold other hooks, servers and settings,
/// and a fake skillmem checkout with the OpenCode plugin and the Pi extension.
struct Home {
    _dir: tempfile::TempDir,
    w: Where,
}

const CLAUDE: &str = "{\n    \"model\": \"opus\",\n    \"hooks\": {\n        \"PostToolUse\": [\n            {\n                \"matcher\": \"Write\",\n                \"hooks\": [{\"type\": \"command\", \"command\": \"prettier --write\"}]\n            }\n        ]\n    }\n}\n";
const CLAUDE_JSON: &str = "{\"numStartups\": 3, \"mcpServers\": {\"github\": {\"command\": \"gh-mcp\"}}}";
const OPENCODE: &str =
    "{\n  \"$schema\": \"https://opencode.ai/config.json\",\n  \"plugin\": [\"opencode-wakatime\"]\n}\n";
const PI: &str = "{\n  \"defaultModel\": \"x\",\n  \"extensions\": [\"/opt/other/ext.ts\"]\n}\n";
const GEMINI: &str = "{\n  \"security\": {\"auth\": {\"selectedType\": \"gemini-api-key\"}},\n  \"hooks\": {\"AfterTool\": [{\"matcher\": \"write_file\", \"hooks\": [{\"type\": \"command\", \"command\": \"lint\"}]}]},\n  \"mcpServers\": {\"other\": {\"command\": \"o\"}}\n}\n";
const TRUSTED: &str = "{\n  \"/home/u/old\": \"TRUST_FOLDER\"\n}\n";
const CODEX_CONFIG: &str = "# my settings\nmodel = \"gpt-5\" # the model\n\n[mcp_servers.docs]\ncommand = \"docs-mcp\"\nargs = [\"--stdio\"]\n\n[hooks.state.\"/elsewhere/hooks.json:stop:0:0\"]\ntrusted_hash = \"sha256:00\"\n";
const CODEX_HOOKS: &str = "{\n  \"hooks\": {\n    \"PostToolUse\": [\n      {\"matcher\": \"apply_patch\", \"hooks\": [{\"type\": \"command\", \"command\": \"fmt-hook\"}]}\n    ]\n  }\n}\n";
/// As Copilot CLI 1.0.102 writes it on its first start: comment lines, then JSON.
const COPILOT_CONFIG: &str = "// User settings belong in settings.json.\n// This file is managed automatically.\n{\n  \"firstLaunchAt\": \"2026-12-02T00:13:42.665Z\"\n}\n";
const COPILOT_MCP: &str = "{\n  \"mcpServers\": {\n    \"playwright\": {\"type\": \"local\", \"command\": \"npx\", \"args\": [\"@playwright/mcp\"], \"tools\": [\"*\"]}\n  }\n}\n";

impl Home {
    fn new() -> Home {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path();
        let home = root.join("home");
        let checkout = root.join("checkout");
        let put = |p: &Path, text: &str| {
            std::fs::create_dir_all(p.parent().unwrap()).unwrap();
            std::fs::write(p, text).unwrap();
        };
        put(&checkout.join("editors/opencode/src/index.ts"), "");
        put(&checkout.join("editors/pi/src/index.ts"), "");
        put(&checkout.join("target/debug/skillmem"), "");
        put(&home.join(".claude/settings.json"), CLAUDE);
        put(&home.join(".claude.json"), CLAUDE_JSON);
        put(&home.join(".config/opencode/opencode.json"), OPENCODE);
        put(&home.join(".pi/agent/settings.json"), PI);
        put(&home.join(".gemini/settings.json"), GEMINI);
        put(&home.join(".gemini/trustedFolders.json"), TRUSTED);
        put(&home.join(".codex/config.toml"), CODEX_CONFIG);
        put(&home.join(".codex/hooks.json"), CODEX_HOOKS);
        put(&home.join(".copilot/mcp-config.json"), COPILOT_MCP);
        put(&home.join(".copilot/config.json"), COPILOT_CONFIG);
        std::fs::create_dir_all(root.join("proj")).unwrap();
        let w = Where {
            home,
            project: None,
            exe: checkout.join("target/debug/skillmem"),
            checkout: Some(checkout),
            codex_home: None,
            xdg_config: None,
            claude_config: None,
            data_dir: None,
        };
        Home { _dir: dir, w }
    }

    /// Every file under the root with its content.
    fn snapshot(&self) -> Vec<(PathBuf, String)> {
        fn walk(d: &Path, out: &mut Vec<(PathBuf, String)>) {
            let Ok(rd) = std::fs::read_dir(d) else { return };
            let mut es: Vec<_> = rd.flatten().collect();
            es.sort_by_key(|e| e.path());
            for e in es {
                let p = e.path();
                if p.is_dir() {
                    walk(&p, out);
                } else {
                    out.push((p.clone(), std::fs::read_to_string(&p).unwrap_or_default()));
                }
            }
        }
        let mut out = vec![];
        walk(self.w.home.parent().unwrap(), &mut out);
        out
    }

    fn run(&self, host: Host, w: &Where, undo: bool) -> Vec<Change> {
        let p = plan(host, w, undo).unwrap();
        let c = changes(&p, undo).unwrap();
        write(&c).unwrap();
        c
    }

    fn read(&self, rel: &str) -> String {
        std::fs::read_to_string(self.w.home.join(rel)).unwrap_or_default()
    }
}

fn without_backups(s: Vec<(PathBuf, String)>) -> Vec<(PathBuf, String)> {
    s.into_iter().filter(|(p, _)| !p.to_string_lossy().ends_with(".skillmem-backup")).collect()
}

#[test]
fn every_host_setup_is_idempotent_keeps_the_rest_and_undoes_exactly() {
    for host in Host::ALL {
        let h = Home::new();
        let before = h.snapshot();
        let first = h.run(host, &h.w, false);
        assert!(!first.is_empty(), "{host:?}: setup changed nothing");
        let wired = h.snapshot();
        // A second run changes no byte.
        assert_eq!(h.run(host, &h.w, false), vec![], "{host:?}: second run changed something");
        assert_eq!(h.snapshot(), wired, "{host:?}");
        // Everything that was there is still there.
        for (rel, text) in [
            (".claude/settings.json", "prettier --write"),
            (".claude.json", "gh-mcp"),
            (".config/opencode/opencode.json", "opencode-wakatime"),
            (".pi/agent/settings.json", "/opt/other/ext.ts"),
            (".gemini/settings.json", "gemini-api-key"),
            (".gemini/settings.json", "\"lint\""),
            (".codex/config.toml", "docs-mcp"),
            (".codex/config.toml", "# my settings"),
            (".codex/config.toml", "# the model"),
            (".codex/hooks.json", "fmt-hook"),
            (".copilot/mcp-config.json", "playwright"),
        ] {
            assert!(h.read(rel).contains(text), "{host:?} lost {text} of {rel}:\n{}", h.read(rel));
        }
        // The old content of every changed file is kept.
        for c in &first {
            if let Some(b) = &c.before {
                assert_eq!(&std::fs::read_to_string(backup_path(&c.path)).unwrap(), b, "{host:?}");
            }
        }
        // Undo gives back every byte (the backups stay).
        assert!(!h.run(host, &h.w, true).is_empty(), "{host:?}: undo changed nothing");
        assert_eq!(without_backups(h.snapshot()), before, "{host:?}: undo is not exact");
        assert_eq!(h.run(host, &h.w, true), vec![], "{host:?}: a second undo changed something");
    }
}

#[test]
fn setup_into_an_empty_home_and_undo_leaves_no_file() {
    for host in Host::ALL {
        let dir = tempfile::tempdir().unwrap();
        let checkout = dir.path().join("checkout");
        for f in ["editors/opencode/src/index.ts", "editors/pi/src/index.ts"] {
            std::fs::create_dir_all(checkout.join(f).parent().unwrap()).unwrap();
            std::fs::write(checkout.join(f), "").unwrap();
        }
        let home = dir.path().join("home");
        let w = Where {
            home: home.clone(),
            project: None,
            exe: PathBuf::from("/opt/skill mem/skillmem"),
            checkout: Some(checkout),
            codex_home: None,
            xdg_config: None,
            claude_config: None,
            data_dir: None,
        };
        let p = plan(host, &w, false).unwrap();
        let c = changes(&p, false).unwrap();
        assert!(c.iter().all(|c| c.before.is_none()), "{host:?}");
        write(&c).unwrap();
        let undo = changes(&plan(host, &w, true).unwrap(), true).unwrap();
        assert!(undo.iter().all(|c| c.after.is_none()), "{host:?}: {undo:?}");
        write(&undo).unwrap();
        let left: Vec<_> = walkdir(&home);
        assert_eq!(left, Vec::<PathBuf>::new(), "{host:?}");
    }
}

fn walkdir(d: &Path) -> Vec<PathBuf> {
    let mut out = vec![];
    if let Ok(rd) = std::fs::read_dir(d) {
        for e in rd.flatten() {
            if e.path().is_dir() {
                out.extend(walkdir(&e.path()));
            } else {
                out.push(e.path());
            }
        }
    }
    out
}

#[test]
fn project_setup_writes_the_projects_files() {
    let h = Home::new();
    let proj = h.w.home.parent().unwrap().join("proj");
    let w = Where { project: Some(proj.clone()), ..h.w.clone() };
    // (host, files in the project it writes)
    let cases: &[(Host, &[&str])] = &[
        (Host::ClaudeCode, &[".claude/settings.json", ".mcp.json"]),
        (Host::Opencode, &["opencode.json"]),
        (Host::Pi, &[".pi/settings.json"]),
        (Host::GeminiCli, &[".gemini/settings.json"]),
        (Host::Codex, &[".codex/hooks.json", ".codex/config.toml"]),
        (Host::Copilot, &[".github/hooks/skillmem.json", ".github/mcp.json"]),
    ];
    for (host, files) in cases {
        h.run(*host, &w, false);
        for f in *files {
            let text = std::fs::read_to_string(proj.join(f)).unwrap();
            assert!(text.contains("skillmem") || text.contains("editors/pi"), "{host:?} {f}: {text}");
        }
    }
    // Gemini: the folder is trusted, the other trusted folders kept; undo leaves the trust.
    let trusted = h.read(".gemini/trustedFolders.json");
    assert!(trusted.contains(&format!("\"{}\": \"TRUST_FOLDER\"", proj.display())) && trusted.contains("/home/u/old"));
    h.run(Host::GeminiCli, &w, true);
    assert!(h.read(".gemini/trustedFolders.json").contains(&proj.display().to_string()));
    assert!(!proj.join(".gemini/settings.json").exists());
    // Codex: the project is trusted and its hooks' trust is the user's config.toml, keyed by the
    // project's hooks.json; the MCP server and the compact prompt are the project's.
    let user = h.read(".codex/config.toml");
    assert!(user.contains(&format!("[projects.\"{}\"]\ntrust_level = \"trusted\"", proj.display())), "{user}");
    let key = format!("[hooks.state.\"{}:post_tool_use:0:0\"]", proj.join(".codex/hooks.json").display());
    assert!(user.contains(&key) && user.contains("docs-mcp"), "{user}");
    assert!(!user.contains("[mcp_servers.skillmem]") && !user.contains("compact_prompt"), "{user}");
    let project = std::fs::read_to_string(proj.join(".codex/config.toml")).unwrap();
    assert!(project.contains("[mcp_servers.skillmem]") && project.contains("compact_prompt"), "{project}");
    // Copilot: the folder is trusted in config.json, whose comment lines (Copilot writes them)
    // stay.
    let config = h.read(".copilot/config.json");
    assert!(config.starts_with("// User settings belong in settings.json.\n"), "{config}");
    assert!(config.contains(&format!("\"{}\"", proj.display())) && config.contains("firstLaunchAt"), "{config}");
    assert!(!h.read(".copilot/mcp-config.json").contains("skillmem"));
    // A second run changes nothing; undo takes the project's files back and leaves the trust.
    for host in [Host::Codex, Host::Copilot] {
        assert_eq!(h.run(host, &w, false), vec![], "{host:?}");
        let p = plan(host, &w, true).unwrap();
        assert!(p.next.iter().any(|l| l.starts_with("Left ")), "{host:?}: {:?}", p.next);
        h.run(host, &w, true);
    }
    assert!(!proj.join(".codex/hooks.json").exists() && !proj.join(".github/mcp.json").exists());
    assert!(!proj.join(".codex/config.toml").exists() && !proj.join(".github/hooks/skillmem.json").exists());
    assert!(h.read(".codex/config.toml").contains("trust_level = \"trusted\""));
    assert!(!h.read(".codex/config.toml").contains(&key), "the hooks' trust goes with them");
    assert!(h.read(".copilot/config.json").contains(&proj.display().to_string()));
}

#[test]
fn codex_trust_matches_codex_and_follows_the_hooks_position() {
    // The hash `codex app-server`'s hooks/list reported (currentHash) for this handler, Codex 0.171.0.
    let handler =
        J::obj([("type", J::s("command")), ("command", J::s("/x/skillmem hook codex")), ("timeout", J::n(10))]);
    assert_eq!(
        codex_hook_hash("PostToolUse", Some("Bash"), &handler),
        "sha256:2a81d6205c4fa59092a1c7e3cea635c36bc09feb6c38b7844c5c03f3255bd030"
    );
    let h = Home::new();
    h.run(Host::Codex, &h.w, false);
    let hooks = h.w.home.join(".codex/hooks.json");
    let config = h.read(".codex/config.toml");
    // skillmem's group comes after the user's own PostToolUse group: index 1.
    let key = format!("[hooks.state.\"{}:post_tool_use:1:0\"]", hooks.display());
    assert!(config.contains(&key), "{config}");
    assert!(config.contains("[hooks.state.\"/elsewhere/hooks.json:stop:0:0\"]"), "{config}");
    let trusted = codex_trusted(&hooks, Some(&h.read(".codex/hooks.json")), "hook codex").unwrap();
    // PostToolUse, UserPromptSubmit, Stop, PostCompact, SessionStart.
    assert_eq!(trusted.len(), 5);
    assert!(trusted.iter().all(|(k, h)| config.contains(k.as_str()) && config.contains(h.as_str())), "{config}");
    assert!(config.contains(&format!("[hooks.state.\"{}:user_prompt_submit:0:0\"]", hooks.display())), "{config}");
    // The doctor sees it wired; after the hook changes by hand, its trust is stale.
    let check = |w: &Where| check::wiring_checks(w).into_iter().find(|c| c.name == "Codex").unwrap();
    assert_eq!(check(&h.w).status, crate::doctor::CheckStatus::Ok, "{:?}", check(&h.w));
    std::fs::write(&hooks, h.read(".codex/hooks.json").replace("\"timeout\": 10", "\"timeout\": 11")).unwrap();
    let c = check(&h.w);
    assert_eq!(c.status, crate::doctor::CheckStatus::Warn);
    assert!(c.detail.contains("stale") && c.fix.as_deref().unwrap().contains("skillmem setup codex"), "{c:?}");
    // Running setup again trusts the edited hook (skillmem's own entry replaced).
    h.run(Host::Codex, &h.w, false);
    assert_eq!(check(&h.w).status, crate::doctor::CheckStatus::Ok);
}

#[test]
fn doctor_reports_each_hosts_wiring() {
    let h = Home::new();
    let status = |w: &Where, label: &str| {
        let c = check::wiring_checks(w).into_iter().find(|c| c.name == label).unwrap();
        (c.status, c.detail)
    };
    for host in Host::ALL {
        let (s, d) = status(&h.w, host.label());
        assert_eq!(s, crate::doctor::CheckStatus::Warn, "{host:?}: {d}");
        h.run(host, &h.w, false);
        let (s, d) = status(&h.w, host.label());
        assert_eq!(s, crate::doctor::CheckStatus::Ok, "{host:?}: {d}");
        assert!(d.starts_with("wired"), "{d}");
    }
    // The binary moved away: every host says so.
    std::fs::remove_file(&h.w.exe).unwrap();
    for host in [Host::ClaudeCode, Host::GeminiCli, Host::Codex, Host::Copilot, Host::Opencode] {
        let (s, d) = status(&h.w, host.label());
        assert_eq!(s, crate::doctor::CheckStatus::Warn, "{host:?}");
        assert!(d.contains("no longer exists"), "{host:?}: {d}");
    }
    // A host that is not installed is fine.
    let empty = Where { home: h.w.home.join("nobody"), ..h.w.clone() };
    assert_eq!(status(&empty, "Gemini CLI").0, crate::doctor::CheckStatus::Ok);
}

#[test]
fn bad_files_are_refused_and_left_alone() {
    let h = Home::new();
    // (file, content, host, what the error says)
    let cases: &[(&str, &str, Host, &str)] = &[
        (".claude/settings.json", "{ // comment\n}", Host::ClaudeCode, "not plain JSON"),
        (".claude/settings.json", "[1]", Host::ClaudeCode, "does not hold a JSON object"),
        (".claude/settings.json", "{\"hooks\": []}", Host::ClaudeCode, "\"hooks\" is not an object"),
        (".codex/config.toml", "model = ", Host::Codex, "not valid TOML"),
        (".codex/config.toml", "mcp_servers = 3", Host::Codex, "is not a table"),
        (".gemini/settings.json", "{\"hooks\": {\"AfterTool\": {}}}", Host::GeminiCli, "is not an array"),
    ];
    for (rel, text, host, want) in cases {
        std::fs::write(h.w.home.join(rel), text).unwrap();
        let snap = h.snapshot();
        let e = plan(*host, &h.w, false).and_then(|p| changes(&p, false)).unwrap_err().to_string();
        assert!(e.contains(want) && e.contains(rel.trim_start_matches('.')), "{rel}: {e}");
        assert_eq!(h.snapshot(), snap);
    }
}

#[test]
fn shell_commands_quote_paths_that_need_it() {
    let cases = [
        ("/usr/bin/skillmem", "/usr/bin/skillmem hook codex"),
        ("/opt/skill mem/skillmem", "'/opt/skill mem/skillmem' hook codex"),
        ("/o'k/skillmem", r"'/o'\''k/skillmem' hook codex"),
    ];
    for (exe, want) in cases {
        assert_eq!(shell_command(Path::new(exe), "hook codex"), want);
    }
}

#[test]
fn diffs_show_added_and_removed_lines() {
    let c = Change { path: "/f".into(), before: Some("a\nb\nc\n".into()), after: Some("a\nx\nc\n".into()) };
    assert_eq!(diff(&c), "*** /f\n  a\n- b\n+ x\n  c");
    let c = Change { path: "/f".into(), before: None, after: Some("a\n".into()) };
    assert_eq!(diff(&c), "+++ /f (new file)\n+ a");
}

#[test]
fn a_data_directory_given_to_setup_reaches_every_hook_and_server() {
    let h = Home::new();
    let w = Where { data_dir: Some(PathBuf::from("/srv/skill mem")), ..h.w.clone() };
    // (host, file, what it must hold)
    let cases: &[(Host, &str, &str)] = &[
        (Host::ClaudeCode, ".claude/settings.json", "--data-dir '/srv/skill mem' hook claude-code"),
        (Host::ClaudeCode, ".claude.json", "\"/srv/skill mem\""),
        (Host::GeminiCli, ".gemini/settings.json", "--data-dir '/srv/skill mem' hook gemini-cli"),
        (Host::Codex, ".codex/hooks.json", "--data-dir '/srv/skill mem' hook codex"),
        (Host::Codex, ".codex/config.toml", "args = [\"--data-dir\", \"/srv/skill mem\", \"mcp\"]"),
        (Host::Copilot, ".copilot/hooks/skillmem.json", "--data-dir '/srv/skill mem' hook copilot"),
        (Host::Copilot, ".copilot/mcp-config.json", "\"--data-dir\",\n        \"/srv/skill mem\",\n        \"mcp\""),
        (Host::Opencode, ".config/opencode/opencode.json", "\"SKILLMEM_HOME\": \"/srv/skill mem\""),
    ];
    for (host, rel, want) in cases {
        h.run(*host, &w, false);
        assert!(h.read(rel).contains(want), "{host:?} {rel}:\n{}", h.read(rel));
    }
    // Undo without it still finds skillmem's entries.
    for host in [Host::ClaudeCode, Host::GeminiCli, Host::Codex, Host::Copilot, Host::Opencode] {
        h.run(host, &h.w, true);
    }
    for rel in
        [".claude/settings.json", ".claude.json", ".codex/hooks.json", ".codex/config.toml", ".gemini/settings.json"]
    {
        assert!(!h.read(rel).contains("skill mem"), "{rel}: {}", h.read(rel));
    }
}

#[test]
fn codex_compact_prompt_is_codexs_own_then_the_historians_and_a_users_own_is_left() {
    let h = Home::new();
    h.run(Host::Codex, &h.w, false);
    let config = h.w.home.join(".codex/config.toml");
    let prompt = toml_key(&config, "compact_prompt").unwrap();
    assert!(prompt.starts_with(plans::CODEX_COMPACTION), "{prompt}");
    assert!(prompt.contains(plans::COMPACT_MARKER) && prompt.contains("<skill_observations>"), "{prompt}");
    assert!(prompt.contains("* <skill> | <kind> | <lesson>"), "{prompt}");
    // A configuration cannot know the session's skills: no list of them, no transcript markers.
    assert!(!prompt.contains("SKILLS") && !prompt.contains("TC: skill("), "{prompt}");
    // The rest of the file is as it was, and the prompt is a top-level key.
    let text = h.read(".codex/config.toml");
    assert!(text.starts_with("# my settings\nmodel = \"gpt-5\" # the model\ncompact_prompt = "), "{text}");
    h.run(Host::Codex, &h.w, true);
    assert_eq!(toml_key(&config, "compact_prompt"), None);

    // A compact prompt of the user's own is kept, through setup and undo; setup says so.
    let h = Home::new();
    let mine = format!("compact_prompt = \"Summarise tersely.\"\n{CODEX_CONFIG}");
    std::fs::write(h.w.home.join(".codex/config.toml"), &mine).unwrap();
    let p = plan(Host::Codex, &h.w, false).unwrap();
    assert!(p.next.iter().any(|l| l.contains("compact_prompt of its own")), "{:?}", p.next);
    h.run(Host::Codex, &h.w, false);
    assert_eq!(toml_key(&h.w.home.join(".codex/config.toml"), "compact_prompt").as_deref(), Some("Summarise tersely."));
    h.run(Host::Codex, &h.w, true);
    assert_eq!(h.read(".codex/config.toml"), mine);
}
