//! What each host needs: which files, which entries, what to do next. Every path and entry
//! here was read off the real host (the versions of docs/hosts.md), not its documentation.

use std::path::{Path, PathBuf};

use super::json::J;
use super::{shell_command, shell_quote, JsonEdit, Op, Plan, SetupError, TomlValue};

/// The hosts `skillmem setup` knows.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Host {
    ClaudeCode,
    Opencode,
    Pi,
    GeminiCli,
    Codex,
    Copilot,
}

impl Host {
    pub const ALL: [Host; 6] =
        [Host::ClaudeCode, Host::Opencode, Host::Pi, Host::GeminiCli, Host::Codex, Host::Copilot];

    /// The name on the command line (`skillmem setup <id>`).
    pub fn id(self) -> &'static str {
        match self {
            Host::ClaudeCode => "claude-code",
            Host::Opencode => "opencode",
            Host::Pi => "pi",
            Host::GeminiCli => "gemini-cli",
            Host::Codex => "codex",
            Host::Copilot => "copilot",
        }
    }

    /// The host's own name.
    pub fn label(self) -> &'static str {
        match self {
            Host::ClaudeCode => "Claude Code",
            Host::Opencode => "OpenCode",
            Host::Pi => "Pi",
            Host::GeminiCli => "Gemini CLI",
            Host::Codex => "Codex",
            Host::Copilot => "Copilot CLI",
        }
    }

    /// The project skill folder the host reads (for `skillmem seed --target`).
    pub fn skill_folder(self) -> &'static str {
        match self {
            Host::ClaudeCode => ".claude/skills",
            Host::Opencode => ".opencode/skills",
            Host::Pi => ".pi/skills",
            Host::GeminiCli => ".gemini/skills",
            Host::Codex => ".agents/skills",
            Host::Copilot => ".github/skills",
        }
    }
}

/// Where a setup writes and what it wires in.
#[derive(Debug, Clone)]
pub struct Where {
    /// The user's home (`$HOME`).
    pub home: PathBuf,
    /// `--project DIR`: that project's configuration instead of the user's.
    pub project: Option<PathBuf>,
    /// The skillmem binary the host will run (absolute).
    pub exe: PathBuf,
    /// A skillmem checkout (its `editors/` holds the OpenCode plugin and the Pi extension).
    pub checkout: Option<PathBuf>,
    /// `$CODEX_HOME` (default `~/.codex`).
    pub codex_home: Option<PathBuf>,
    /// `$XDG_CONFIG_HOME` (default `~/.config`), where OpenCode keeps its configuration.
    pub xdg_config: Option<PathBuf>,
    /// `$CLAUDE_CONFIG_DIR`: Claude Code's folder (default `~/.claude`, its MCP servers then in
    /// `~/.claude.json`; with the variable, both are in that folder).
    pub claude_config: Option<PathBuf>,
    /// `--data-dir` of the setup command: passed on to every hook and MCP server it wires
    /// (else they use `$SKILLMEM_HOME` or the default, as the host's environment says).
    pub data_dir: Option<PathBuf>,
}

impl Where {
    /// From the environment: `$HOME`, `$CODEX_HOME`, `$XDG_CONFIG_HOME`, and the checkout the
    /// binary was built in (an ancestor holding `editors/opencode/src/index.ts`) unless given.
    pub fn from_env(project: Option<PathBuf>, exe: PathBuf, checkout: Option<PathBuf>) -> Result<Where, SetupError> {
        let home = dirs::home_dir().ok_or_else(|| SetupError("no home folder: set HOME".into()))?;
        let env = |k: &str| std::env::var_os(k).filter(|v| !v.is_empty()).map(PathBuf::from);
        let checkout = checkout
            .or_else(|| exe.ancestors().skip(1).find(|d| d.join(OPENCODE_PLUGIN).is_file()).map(Path::to_path_buf));
        Ok(Where {
            home,
            project,
            exe,
            checkout,
            codex_home: env("CODEX_HOME"),
            xdg_config: env("XDG_CONFIG_HOME"),
            claude_config: env("CLAUDE_CONFIG_DIR"),
            data_dir: None,
        })
    }

    pub fn codex_home(&self) -> PathBuf {
        self.codex_home.clone().unwrap_or_else(|| self.home.join(".codex"))
    }

    fn config_home(&self) -> PathBuf {
        self.xdg_config.clone().unwrap_or_else(|| self.home.join(".config"))
    }

    /// The folder whose presence says the host is installed for this user.
    pub fn host_home(&self, host: Host) -> PathBuf {
        match host {
            Host::ClaudeCode => self.claude_config.clone().unwrap_or_else(|| self.home.join(".claude")),
            Host::Opencode => self.config_home().join("opencode"),
            Host::Pi => self.home.join(".pi"),
            Host::GeminiCli => self.home.join(".gemini"),
            Host::Codex => self.codex_home(),
            Host::Copilot => self.home.join(".copilot"),
        }
    }
}

const OPENCODE_PLUGIN: &str = "editors/opencode/src/index.ts";
const PI_EXTENSION: &str = "editors/pi/src/index.ts";
/// The npm packages of the OpenCode plugin and the Pi extension (editors/opencode, editors/pi).
pub const OPENCODE_PACKAGE: &str = "@skillmem/opencode";
pub const PI_PACKAGE: &str = "@skillmem/pi";

/// The name of the MCP server in every host's configuration.
pub const SERVER: &str = "skillmem";

/// The note tool as each host names the MCP server's `skill_note` (server `skillmem`).
pub fn note_tool(host: Host) -> &'static str {
    match host {
        Host::ClaudeCode => "mcp__skillmem__skill_note",
        Host::Opencode => "ctx_skill_note",
        Host::Pi => "skill_note",
        // MCP tools are `mcp_<server>_<tool>` in Gemini CLI 0.61, in the `mcp__<server>`
        // namespace in Codex 0.171, `<server>-<tool>` in Copilot CLI 1.0.
        Host::GeminiCli => crate::hosts::hooks::agents::GEMINI.note_tool,
        Host::Codex => crate::hosts::hooks::agents::CODEX.note_tool,
        Host::Copilot => crate::hosts::hooks::agents::COPILOT.note_tool,
    }
}

fn s(v: &str) -> String {
    v.to_string()
}

fn keys(ks: &[&str]) -> Vec<String> {
    ks.iter().map(|k| k.to_string()).collect()
}

/// A Claude-Code-style hook group: `{matcher?, hooks: [{type, command, timeout}]}`.
fn hook_group(matcher: Option<&str>, handler: J) -> J {
    let mut es = vec![];
    if let Some(m) = matcher {
        es.push((s("matcher"), J::s(m)));
    }
    es.push((s("hooks"), J::Arr(vec![handler])));
    J::Obj(es)
}

fn command_handler(command: &str, timeout: u64) -> J {
    J::obj([("type", J::s("command")), ("command", J::s(command)), ("timeout", J::n(timeout))])
}

fn mcp_server(w: &Where) -> J {
    J::obj([
        ("command", J::s(w.exe.display().to_string())),
        ("args", J::Arr(mcp_args(w).into_iter().map(J::s).collect())),
    ])
}

/// `skillmem mcp`'s arguments: `--data-dir DIR` first when the setup was given one.
fn mcp_args(w: &Where) -> Vec<String> {
    let mut a = vec![];
    if let Some(d) = &w.data_dir {
        a.push("--data-dir".to_string());
        a.push(d.display().to_string());
    }
    a.push("mcp".into());
    a
}

/// A hook's command line: the binary, `--data-dir DIR` when the setup was given one, `args`.
fn hook_command(w: &Where, args: &str) -> String {
    match &w.data_dir {
        Some(d) => shell_command(&w.exe, &format!("--data-dir {} {args}", shell_quote(&d.display().to_string()))),
        None => shell_command(&w.exe, args),
    }
}

fn seed_line(host: Host) -> String {
    format!(
        "Skills of a session's checkout: skillmem seed --cwd DIR --target {} NAME... before the session starts.",
        host.skill_folder()
    )
}

fn memory_line() -> String {
    "Give a skill memory in its SKILL.md frontmatter: skill-memory: { enabled: true } (or memory.enabledSkills in skillmem.toml).".into()
}

/// The plan for `host`. `undo` only changes what the plan says to do next (and leaves out the
/// Gemini folder trust, which may have been there before).
pub fn plan(host: Host, w: &Where, undo: bool) -> Result<Plan, SetupError> {
    build(host, w, undo, true)
}

/// The plan whose entries `doctor` looks for: the user-level one, whatever checkout it names.
pub fn plan_for_check(host: Host, w: &Where) -> Plan {
    let w = Where { project: None, ..w.clone() };
    build(host, &w, false, false).unwrap_or(Plan { host, ops: vec![], next: vec![] })
}

fn build(host: Host, w: &Where, undo: bool, strict: bool) -> Result<Plan, SetupError> {
    let mut next = vec![];
    let ops = match host {
        Host::ClaudeCode => {
            let cmd = hook_command(w, &format!("hook claude-code --note-tool {}", note_tool(host)));
            let (settings, mcp) = match &w.project {
                Some(d) => (d.join(".claude/settings.json"), d.join(".mcp.json")),
                None => match &w.claude_config {
                    Some(d) => (d.join("settings.json"), d.join(".claude.json")),
                    None => (w.home.join(".claude/settings.json"), w.home.join(".claude.json")),
                },
            };
            let hooks = [
                ("PostToolUse", Some("Skill"), 10),
                ("UserPromptExpansion", None, 10),
                ("Stop", None, 30),
                ("SessionEnd", None, 30),
                ("PostCompact", None, 30),
            ];
            let edits = hooks
                .iter()
                .map(|(event, matcher, timeout)| JsonEdit::Item {
                    at: keys(&["hooks", event]),
                    item: hook_group(*matcher, command_handler(&cmd, *timeout)),
                    marker: s("hook claude-code"),
                })
                .collect();
            next.push("Start Claude Code: /hooks lists skillmem's hooks, /mcp the skillmem server.".into());
            if w.project.is_some() {
                next.push("Claude Code asks once to approve the project's MCP server skillmem (.mcp.json).".into());
            }
            vec![
                Op::Json { path: settings, edits },
                Op::Json {
                    path: mcp,
                    edits: vec![JsonEdit::Key { at: keys(&["mcpServers"]), key: s(SERVER), value: mcp_server(w) }],
                },
            ]
        }
        Host::Opencode => {
            let path = match &w.project {
                Some(d) => d.join("opencode.json"),
                None => {
                    let dir = w.config_home().join("opencode");
                    let jsonc = dir.join("opencode.jsonc");
                    if !dir.join("opencode.json").exists() && jsonc.exists() {
                        jsonc
                    } else {
                        dir.join("opencode.json")
                    }
                }
            };
            let plugin = match plugin_source(w, OPENCODE_PLUGIN, OPENCODE_PACKAGE, strict)? {
                Source::Checkout(c) => {
                    if !c.join("editors/opencode/node_modules").is_dir() {
                        next.push(format!("Once: cd {} && npm ci", c.join("editors/opencode").display()));
                    }
                    format!("file://{}", c.join(OPENCODE_PLUGIN).display())
                }
                Source::Installed(p) => format!("file://{}", p.join("src/index.ts").display()),
                Source::Registry => {
                    next.push(format!(
                        "OpenCode installs {OPENCODE_PACKAGE} from npm when it next starts (once, online). To wire an installed copy instead: npm i -g skillmem {OPENCODE_PACKAGE}, then skillmem setup opencode from that install."
                    ));
                    format!("{OPENCODE_PACKAGE}@{}", env!("CARGO_PKG_VERSION"))
                }
            };
            let mut options = vec![(s("bin"), J::s(w.exe.display().to_string()))];
            if let Some(d) = &w.data_dir {
                options.push((s("env"), J::obj([("SKILLMEM_HOME", J::s(d.display().to_string()))])));
            }
            let item = J::Arr(vec![J::s(plugin), J::Obj(options)]);
            vec![Op::Json {
                path,
                edits: vec![JsonEdit::Item {
                    at: keys(&["plugin"]),
                    item,
                    marker: format!("{OPENCODE_PLUGIN}\n{OPENCODE_PACKAGE}"),
                }],
            }]
        }
        Host::Pi => {
            let path = match &w.project {
                Some(d) => d.join(".pi/settings.json"),
                None => w.home.join(".pi/agent/settings.json"),
            };
            let extension = match plugin_source(w, PI_EXTENSION, PI_PACKAGE, strict)? {
                Source::Checkout(c) => {
                    if !c.join("editors/pi/node_modules").is_dir() {
                        next.push(format!("Once: cd {} && npm ci", c.join("editors/pi").display()));
                    }
                    c.join(PI_EXTENSION)
                }
                Source::Installed(p) => p.join("src/index.ts"),
                Source::Registry if strict && !undo => return Err(no_pi_extension(w)),
                Source::Registry => PathBuf::new(),
            };
            if let Some(d) = &w.data_dir {
                next.push(format!(
                    "Pi's extension takes the data directory from the environment: export SKILLMEM_HOME={}",
                    d.display()
                ));
            }
            next.push(format!(
                "Pi's extension runs skillmem from PATH: put {} on PATH or export SKILLMEM_BIN={} (Pi has no per-extension options).",
                w.exe.parent().map(|p| p.display().to_string()).unwrap_or_default(),
                w.exe.display()
            ));
            vec![Op::Json {
                path,
                edits: vec![JsonEdit::Item {
                    at: keys(&["extensions"]),
                    item: J::s(extension.display().to_string()),
                    marker: format!("{PI_EXTENSION}\n{PI_PACKAGE}/src/index.ts"),
                }],
            }]
        }
        Host::GeminiCli => {
            let cmd = hook_command(w, "hook gemini-cli");
            let settings = match &w.project {
                Some(d) => d.join(".gemini/settings.json"),
                None => w.home.join(".gemini/settings.json"),
            };
            // Gemini's hook timeouts are milliseconds; `name` is what its /hooks lists.
            let handler = |timeout: u64| {
                J::obj([
                    ("name", J::s("skillmem")),
                    ("type", J::s("command")),
                    ("command", J::s(&cmd)),
                    ("timeout", J::n(timeout)),
                ])
            };
            let mut ops = vec![Op::Json {
                path: settings,
                edits: vec![
                    JsonEdit::Item {
                        at: keys(&["hooks", "AfterTool"]),
                        item: hook_group(Some("^activate_skill$"), handler(10_000)),
                        marker: s("hook gemini-cli"),
                    },
                    // The skill uses of the transcript (complete then, awaited in headless mode).
                    JsonEdit::Item {
                        at: keys(&["hooks", "SessionEnd"]),
                        item: hook_group(None, handler(30_000)),
                        marker: s("hook gemini-cli"),
                    },
                    JsonEdit::Key { at: keys(&["mcpServers"]), key: s(SERVER), value: mcp_server(w) },
                ],
            }];
            ops.push(Op::File { path: w.home.join(".gemini/policies/skillmem.toml"), content: GEMINI_POLICY.into() });
            match (&w.project, undo) {
                (Some(d), false) => {
                    ops.push(Op::Json {
                        path: w.home.join(".gemini/trustedFolders.json"),
                        edits: vec![JsonEdit::Key {
                            at: vec![],
                            key: d.display().to_string(),
                            value: J::s("TRUST_FOLDER"),
                        }],
                    });
                    next.push(format!(
                        "{} is now a trusted folder of Gemini CLI (~/.gemini/trustedFolders.json): hooks run only in trusted folders.",
                        d.display()
                    ));
                }
                (Some(d), true) => next.push(format!(
                    "Left {} trusted in ~/.gemini/trustedFolders.json (it may have been before); remove it there if you wish.",
                    d.display()
                )),
                (None, _) => next.push(
                    "Gemini CLI runs hooks only in trusted folders: trust a project when Gemini asks, or run skillmem setup gemini-cli --project DIR.".into(),
                ),
            }
            next.push("The policy ~/.gemini/policies/skillmem.toml allows activate_skill and skillmem's MCP tools without a prompt (headless mode denies them otherwise).".into());
            ops
        }
        Host::Codex => {
            let home = w.codex_home();
            let cmd = hook_command(w, "hook codex");
            // A project's `.codex/hooks.json` and `.codex/config.toml` are read only when the
            // project is trusted (`[projects."DIR"] trust_level = "trusted"` in the user's
            // config.toml); its hooks' trust is kept there too (measured on 0.171.0).
            let user_config = home.join("config.toml");
            let (hooks_json, config) = match &w.project {
                Some(d) => (d.join(".codex/hooks.json"), d.join(".codex/config.toml")),
                None => (home.join("hooks.json"), user_config.clone()),
            };
            next.push(format!(
                "Codex runs a hook only when it is trusted: setup wrote the trust of skillmem's hooks into {} (hooks.state); skillmem doctor says when it went stale.",
                user_config.display()
            ));
            let project_trust = match (&w.project, undo) {
                (Some(d), false) => {
                    next.push(format!(
                        "{} is now a trusted project of Codex ({}): Codex reads a project's .codex/ only then.",
                        d.display(),
                        user_config.display()
                    ));
                    Some(Op::Toml {
                        path: user_config.clone(),
                        tables: vec![(
                            vec![s("projects"), d.display().to_string()],
                            vec![(s("trust_level"), TomlValue::Str(s("trusted")))],
                        )],
                    })
                }
                (Some(d), true) => {
                    next.push(format!(
                        "Left {} trusted in {} (it may have been before); remove it there if you wish.",
                        d.display(),
                        user_config.display()
                    ));
                    None
                }
                (None, _) => None,
            };
            // Codex's compaction takes no instructions from a hook (a PreCompact hook's output
            // does not reach the compaction request, measured on 0.171.0), but `compact_prompt`
            // replaces its instruction: Codex's own, then the historian's.
            let prompt_op = match super::toml_key(&config, "compact_prompt") {
                Some(p) if !p.contains(COMPACT_MARKER) => {
                    next.push(format!(
                        "{} has a compact_prompt of its own, left as it is: Codex compactions write no skill observations. To have them, remove it and run setup again (skillmem then writes Codex's own instruction with the historian's after it), or add the historian's part to yours by hand.",
                        config.display()
                    ));
                    None
                }
                _ => {
                    if !undo {
                        next.push(format!(
                            "compact_prompt in {} is Codex's compaction instruction plus the historian's: a compaction's summary ends with the lessons about the skills read, which skillmem keeps (PostCompact), and the skills' blocks come back after it (SessionStart).",
                            config.display()
                        ));
                    }
                    Some(Op::TomlKey {
                        path: config.clone(),
                        key: s("compact_prompt"),
                        value: codex_compact_prompt(),
                        marker: s(COMPACT_MARKER),
                    })
                }
            };
            let mut ops = vec![
                Op::Json {
                    path: hooks_json.clone(),
                    edits: vec![
                        JsonEdit::Item {
                            at: keys(&["hooks", "PostToolUse"]),
                            item: hook_group(Some("Bash"), command_handler(&cmd, 10)),
                            marker: s("hook codex"),
                        },
                        // A prompt that mentions a skill as `$name`: Codex inlines the skill.
                        JsonEdit::Item {
                            at: keys(&["hooks", "UserPromptSubmit"]),
                            item: hook_group(None, command_handler(&cmd, 10)),
                            marker: s("hook codex"),
                        },
                        // Every turn's end: the skill uses of the rollout (Codex's SessionEnd is
                        // clamped to 3 s; Stop is not).
                        JsonEdit::Item {
                            at: keys(&["hooks", "Stop"]),
                            item: hook_group(None, command_handler(&cmd, 30)),
                            marker: s("hook codex"),
                        },
                        // The compaction's summary is in the rollout by then: its observations.
                        JsonEdit::Item {
                            at: keys(&["hooks", "PostCompact"]),
                            item: hook_group(None, command_handler(&cmd, 30)),
                            marker: s("hook codex"),
                        },
                        // `source: "compact"`: the blocks the compaction dropped come back.
                        JsonEdit::Item {
                            at: keys(&["hooks", "SessionStart"]),
                            item: hook_group(None, command_handler(&cmd, 10)),
                            marker: s("hook codex"),
                        },
                    ],
                },
                Op::Toml {
                    path: config.clone(),
                    tables: vec![(
                        keys(&["mcp_servers", SERVER]),
                        vec![
                            (s("command"), TomlValue::Str(w.exe.display().to_string())),
                            (s("args"), TomlValue::Strs(mcp_args(w))),
                            // Codex starts MCP servers with a short list of variables: the
                            // data directory must reach the server as it reaches the hook.
                            (s("env_vars"), TomlValue::Strs(vec![s("SKILLMEM_HOME")])),
                        ],
                    )],
                },
                Op::CodexTrust { hooks_json, config: user_config, marker: s("hook codex") },
            ];
            ops.extend(prompt_op);
            ops.extend(project_trust);
            ops
        }
        Host::Copilot => {
            let cmd = hook_command(w, "hook copilot");
            let hook = |matcher: Option<&str>, timeout: u64| {
                let mut es = vec![(s("type"), J::s("command"))];
                if let Some(m) = matcher {
                    es.push((s("matcher"), J::s(m)));
                }
                es.push((s("bash"), J::s(&cmd)));
                es.push((s("timeoutSec"), J::n(timeout)));
                J::Obj(es)
            };
            let hooks = J::obj([
                ("version", J::n(1)),
                (
                    "hooks",
                    J::obj([
                        ("postToolUse", J::Arr(vec![hook(Some("skill"), 10)])),
                        // Only the session id: the events file is complete by then.
                        ("sessionEnd", J::Arr(vec![hook(None, 30)])),
                    ]),
                ),
            ]);
            // A project's hooks are `.github/hooks/*.json` of its repository root and its MCP
            // servers `.github/mcp.json`, read only in a trusted folder (`trusted_folders` of
            // ~/.copilot/config.json; measured on 1.0.102 with `copilot -p`).
            let (hooks_file, mcp) = match &w.project {
                Some(d) => (d.join(".github/hooks/skillmem.json"), d.join(".github/mcp.json")),
                None => (w.home.join(".copilot/hooks/skillmem.json"), w.home.join(".copilot/mcp-config.json")),
            };
            let mut trust = vec![];
            match (&w.project, undo) {
                (Some(d), false) => {
                    let dir = d.display().to_string();
                    trust.push(Op::Json {
                        path: w.home.join(".copilot/config.json"),
                        edits: vec![JsonEdit::Item {
                            at: keys(&["trusted_folders"]),
                            item: J::s(&dir),
                            marker: J::s(&dir).compact(),
                        }],
                    });
                    next.push(format!(
                        "{dir} is now a trusted folder of Copilot CLI (trusted_folders in ~/.copilot/config.json): Copilot reads a project's .github/hooks and .github/mcp.json only then; {dir} should be the repository's root."
                    ));
                }
                (Some(d), true) => next.push(format!(
                    "Left {} trusted in ~/.copilot/config.json (it may have been before); remove it there if you wish.",
                    d.display()
                )),
                (None, _) => {}
            }
            let mut ops = vec![
                Op::File { path: hooks_file, content: hooks.pretty(b"  ") },
                Op::Json {
                    path: mcp,
                    edits: vec![JsonEdit::Key {
                        at: keys(&["mcpServers"]),
                        key: s(SERVER),
                        value: J::obj([
                            ("type", J::s("stdio")),
                            ("command", J::s(w.exe.display().to_string())),
                            ("args", J::Arr(mcp_args(w).into_iter().map(J::s).collect())),
                            ("tools", J::strs(&["*"])),
                        ]),
                    }],
                },
            ];
            ops.extend(trust);
            ops
        }
    };
    if undo {
        next.retain(|l| l.starts_with("Left "));
    } else {
        next.push(format!("The agent notes lessons with {}.", note_tool(host)));
        next.push(memory_line());
        next.push(seed_line(host));
    }
    Ok(Plan { host, ops, next })
}

/// What marks the compact prompt as skillmem's (its heading).
pub const COMPACT_MARKER: &str = "## Skill observations (skillmem)";

/// Codex 0.171.0's own compaction instruction (the last user message of its compaction request
/// when no `compact_prompt` is set, recorded from the real host).
pub const CODEX_COMPACTION: &str = "You are performing a CONTEXT CHECKPOINT COMPACTION. Create a handoff summary for another LLM that will resume the task.\n\nInclude:\n- Current progress and key decisions made\n- Important context, constraints, or user preferences\n- What remains to be done (clear next steps)\n- Any critical data, examples, or references needed to continue\n\nBe concise, structured, and focused on helping the next LLM seamlessly continue the work.\n";

/// The compact prompt setup writes for Codex: Codex's own instruction, then the historian's
/// (the promotion rules and format of [`crate::historian::observations::instructions`]) for
/// whichever skills the conversation read, since a configuration cannot name them.
pub fn codex_compact_prompt() -> String {
    let specific = crate::historian::observations::instructions(&["SKILLS".to_string()]);
    let rules = match specific.split_once("\n\nAfter your summary") {
        Some((_, rest)) => format!("After your summary{rest}"),
        None => specific.clone(),
    };
    let rules = rules.replace("as listed above", "(the name of the folder that holds its SKILL.md)");
    format!(
        "{CODEX_COMPACTION}\n{COMPACT_MARKER}\n\nSome skills keep a memory of lessons for future sessions. The agent used a skill in \
         the conversation above when it read that skill's SKILL.md (with a shell command such as `cat .agents/skills/<name>/SKILL.md`); \
         the skill's name is the folder that holds the SKILL.md. Only those skills count here.\n\n{rules}"
    )
}

/// Gemini CLI's policy for skillmem: headless runs deny `activate_skill` and MCP tools
/// unless a policy allows them.
pub const GEMINI_POLICY: &str = r#"# Written by skillmem setup gemini-cli (removed by skillmem setup gemini-cli --undo).
# Headless Gemini CLI denies these tools unless a policy allows them.
[[rule]]
toolName = "activate_skill"
decision = "allow"
priority = 100

[[rule]]
toolName = ["mcp_skillmem_skill_note", "mcp_skillmem_skill_recall", "mcp_skillmem_skill_pin", "mcp_skillmem_skill_forget"]
decision = "allow"
priority = 100
"#;

/// Where the OpenCode plugin or the Pi extension is wired from.
enum Source {
    /// A skillmem checkout (`--checkout`, or the one the binary was built in).
    Checkout(PathBuf),
    /// The npm package's folder, installed beside the binary's own package.
    Installed(PathBuf),
    /// Neither: the package by its name on the npm registry.
    Registry,
}

fn plugin_source(w: &Where, file: &str, package: &str, strict: bool) -> Result<Source, SetupError> {
    match &w.checkout {
        Some(c) if c.join(file).is_file() => Ok(Source::Checkout(c.clone())),
        Some(c) if strict => Err(SetupError(format!(
            "{} is not a skillmem checkout ({file} is missing); pass --checkout with the folder of a skillmem checkout",
            c.display()
        ))),
        _ => Ok(installed_package(&w.exe, package).map_or(Source::Registry, Source::Installed)),
    }
}

/// The folder of the npm package `name` installed with this binary: npm puts the package that
/// holds the binary (`@skillmem/cli-<platform>`) and the plugins in one `node_modules` (a
/// global install's `lib/node_modules`, a project's, npx's cache), or the plugins under the
/// `skillmem` package's own `node_modules`.
pub fn installed_package(exe: &Path, name: &str) -> Option<PathBuf> {
    exe.ancestors()
        .skip(1)
        .flat_map(|d| [d.join(name), d.join("node_modules").join(name)])
        .find(|p| p.join("package.json").is_file() && p.join("src/index.ts").is_file())
}

fn no_pi_extension(w: &Where) -> SetupError {
    SetupError(format!(
        "Pi's extension ({PI_PACKAGE}) is not installed beside {}: install it with npm i -g skillmem {PI_PACKAGE} and run this setup from there, let Pi install it (pi install npm:{PI_PACKAGE}, no setup needed), or pass --checkout DIR with a skillmem checkout",
        w.exe.display()
    ))
}
