//! `skillmem setup <host>` over the real binary, in a temporary HOME whose host configurations
//! already hold other hooks, servers and settings: the way a person runs it.

use std::path::{Path, PathBuf};
use std::process::Command;

const HOSTS: [&str; 6] = ["claude-code", "opencode", "pi", "gemini-cli", "codex", "copilot"];

struct Home {
    _tmp: tempfile::TempDir,
    home: PathBuf,
    checkout: PathBuf,
}

impl Home {
    fn new() -> Home {
        let tmp = tempfile::tempdir().unwrap();
        let home = tmp.path().join("home");
        // The OpenCode plugin and the Pi extension of this checkout.
        let checkout = PathBuf::from(env!("CARGO_MANIFEST_DIR"));
        let put = |rel: &str, text: &str| {
            let p = home.join(rel);
            std::fs::create_dir_all(p.parent().unwrap()).unwrap();
            std::fs::write(p, text).unwrap();
        };
        put(
            ".claude/settings.json",
            r#"{"hooks":{"PostToolUse":[{"matcher":"Write","hooks":[{"type":"command","command":"fmt"}]}]}}"#,
        );
        put(".codex/config.toml", "# mine\n[mcp_servers.docs]\ncommand = \"docs\"\n");
        put(".gemini/settings.json", "{\"mcpServers\": {\"other\": {\"command\": \"o\"}}}\n");
        Home { _tmp: tmp, home, checkout }
    }

    fn cli(&self, args: &[&str]) -> (i32, String, String) {
        let mut cmd = Command::new(env!("CARGO_BIN_EXE_skillmem"));
        cmd.args(args);
        if args.first() == Some(&"setup") {
            cmd.arg("--checkout").arg(&self.checkout);
        }
        let out = cmd
            .env("HOME", &self.home)
            .env_remove("CODEX_HOME")
            .env_remove("XDG_CONFIG_HOME")
            .env_remove("CLAUDE_CONFIG_DIR")
            .env("SKILLMEM_HOME", self.home.with_file_name("data"))
            .output()
            .unwrap();
        (
            out.status.code().unwrap_or(-1),
            String::from_utf8_lossy(&out.stdout).into_owned(),
            String::from_utf8_lossy(&out.stderr).into_owned(),
        )
    }

    fn files(&self) -> Vec<(PathBuf, String)> {
        fn walk(d: &Path, out: &mut Vec<(PathBuf, String)>) {
            let Ok(rd) = std::fs::read_dir(d) else { return };
            for e in rd.flatten() {
                let p = e.path();
                if p.is_dir() {
                    walk(&p, out);
                } else if !p.to_string_lossy().ends_with(".skillmem-backup") {
                    out.push((p.clone(), String::from_utf8_lossy(&std::fs::read(&p).unwrap()).into_owned()));
                }
            }
        }
        let mut out = vec![];
        walk(&self.home, &mut out);
        out.sort();
        out
    }
}

#[test]
fn setup_dry_run_idempotence_and_undo_for_every_host() {
    for host in HOSTS {
        let h = Home::new();
        let before = h.files();
        // --dry-run prints the change and writes nothing.
        let (code, out, e) = h.cli(&["setup", host, "--dry-run"]);
        assert_eq!(code, 0, "{host}: {e}");
        assert!(out.contains("(dry run: nothing was written)") && out.contains("+ "), "{host}: {out}");
        assert_eq!(h.files(), before, "{host}: --dry-run wrote");
        // setup writes, names the files, says what to do next.
        let (code, out, e) = h.cli(&["setup", host]);
        assert_eq!(code, 0, "{host}: {e}");
        assert!(out.contains("Next:"), "{host}: {out}");
        let wired = h.files();
        assert_ne!(wired, before, "{host}");
        let exe = std::fs::canonicalize(env!("CARGO_BIN_EXE_skillmem")).unwrap();
        assert!(
            wired.iter().any(|(_, b)| b.contains(&exe.display().to_string())) || host == "pi",
            "{host}: the binary's absolute path is not in the configuration"
        );
        // A second run changes no byte.
        let (code, out, _) = h.cli(&["setup", host]);
        assert_eq!(code, 0);
        assert!(out.contains("already wired, nothing to change"), "{host}: {out}");
        assert_eq!(h.files(), wired, "{host}");
        // doctor sees it wired.
        let (_, out, _) = h.cli(&["doctor", "--json"]);
        let d: serde_json::Value = serde_json::from_str(&out).unwrap();
        let label = match host {
            "claude-code" => "Claude Code",
            "opencode" => "OpenCode",
            "pi" => "Pi",
            "gemini-cli" => "Gemini CLI",
            "codex" => "Codex",
            _ => "Copilot CLI",
        };
        let c = d["checks"].as_array().unwrap().iter().find(|c| c["name"] == label).unwrap();
        assert_eq!(c["status"], "ok", "{host}: {c}");
        // --undo gives back every byte.
        let (code, out, e) = h.cli(&["setup", host, "--undo"]);
        assert_eq!(code, 0, "{host}: {e}");
        assert!(!out.contains("nothing of skillmem's"), "{host}: {out}");
        assert_eq!(h.files(), before, "{host}: undo is not exact");
    }
}

#[test]
fn setup_refuses_what_it_cannot_do_and_writes_nothing() {
    let h = Home::new();
    std::fs::write(h.home.join(".claude/settings.json"), "{ \"a\": 1, }").unwrap();
    let before = h.files();
    // (arguments, what the error says)
    let cases: &[(&[&str], &str)] = &[
        (&["setup", "claude-code"], "not plain JSON"),
        (&["setup", "pi", "--project", "/no/such/folder"], "not a folder"),
    ];
    for (args, want) in cases {
        let (code, _, e) = h.cli(args);
        assert_ne!(code, 0, "{args:?}");
        assert!(e.contains(want), "{args:?}: {e}");
        assert_eq!(h.files(), before, "{args:?}");
    }
    let (code, _, e) = h.cli(&["setup", "kiro"]);
    assert_ne!(code, 0);
    assert!(e.contains("claude-code") && e.contains("gemini-cli"), "{e}");
}

/// Installed from npm (`npm i -g skillmem @skillmem/opencode @skillmem/pi`: the binary's package
/// and the plugins side by side in `lib/node_modules`), OpenCode and Pi are wired from those
/// packages, with no path into a checkout; without the packages, OpenCode gets the registry
/// package's name and Pi's setup says how to install its extension.
#[test]
fn opencode_and_pi_are_wired_from_the_installed_npm_packages() {
    let h = Home::new();
    let modules = h.home.with_file_name("prefix").join("lib/node_modules");
    let put = |rel: &str| {
        let p = modules.join(rel);
        std::fs::create_dir_all(p.parent().unwrap()).unwrap();
        std::fs::write(p, "").unwrap();
    };
    put("@skillmem/cli-linux-x64/bin/skillmem");
    let bin = modules.join("@skillmem/cli-linux-x64/bin/skillmem");
    let setup = |host: &str| {
        let out = Command::new(env!("CARGO_BIN_EXE_skillmem"))
            .args(["setup", host, "--bin"])
            .arg(&bin)
            .env("HOME", &h.home)
            .env_remove("CODEX_HOME")
            .env_remove("XDG_CONFIG_HOME")
            .env_remove("CLAUDE_CONFIG_DIR")
            .output()
            .unwrap();
        (
            out.status.code(),
            String::from_utf8_lossy(&out.stdout).into_owned(),
            String::from_utf8_lossy(&out.stderr).into_owned(),
        )
    };
    // No packages beside the binary: the registry's for OpenCode, a refusal for Pi.
    let (code, out, e) = setup("opencode");
    assert_eq!(code, Some(0), "{e}");
    assert!(out.contains("OpenCode installs @skillmem/opencode from npm"), "{out}");
    let config = h.home.join(".config/opencode/opencode.json");
    let text = std::fs::read_to_string(&config).unwrap();
    assert!(text.contains(&format!("\"@skillmem/opencode@{}\"", env!("CARGO_PKG_VERSION"))), "{text}");
    let (code, _, e) = setup("pi");
    assert_ne!(code, Some(0));
    assert!(e.contains("pi install npm:@skillmem/pi"), "{e}");
    // Installed: each is wired from its package, and the registry entry is replaced.
    for p in ["@skillmem/opencode", "@skillmem/pi"] {
        put(&format!("{p}/package.json"));
        put(&format!("{p}/src/index.ts"));
    }
    for host in ["opencode", "pi"] {
        let (code, _, e) = setup(host);
        assert_eq!(code, Some(0), "{host}: {e}");
    }
    let text = std::fs::read_to_string(&config).unwrap();
    let plugin = format!("file://{}", modules.join("@skillmem/opencode/src/index.ts").display());
    assert!(text.contains(&plugin) && !text.contains("@skillmem/opencode@"), "{text}");
    let pi = std::fs::read_to_string(h.home.join(".pi/agent/settings.json")).unwrap();
    assert!(pi.contains(&modules.join("@skillmem/pi/src/index.ts").display().to_string()), "{pi}");
    for (path, text) in h.files() {
        assert!(!text.contains(env!("CARGO_MANIFEST_DIR")), "{} names the checkout: {text}", path.display());
    }
    // Undo takes both back.
    for host in ["opencode", "pi"] {
        let out = Command::new(env!("CARGO_BIN_EXE_skillmem"))
            .args(["setup", host, "--undo"])
            .env("HOME", &h.home)
            .env_remove("XDG_CONFIG_HOME")
            .output()
            .unwrap();
        assert!(out.status.success(), "{host}: {}", String::from_utf8_lossy(&out.stderr));
    }
    // (opencode.json was changed twice, so its backup keeps the emptied file.)
    for (path, text) in h.files() {
        assert!(!text.contains("@skillmem/"), "{} still wires skillmem: {text}", path.display());
    }
}
