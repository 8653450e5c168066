//! The Neovim config in editors/neovim/ against a real, headless Neovim (Debian's `neovim`, 0.7
//! on CI): it opens a broken SKILL.md in a temporary workspace, and the diagnostics, a hover on
//! the `name` line and `:SkillmemRecall` come back from `skillmem serve --stdio` (this build's
//! binary, first on PATH, so the config's own `cmd` starts it). tests/neovim/init.lua does the
//! editor side and writes what it saw to a JSON file; this test asserts on that file.
//!
//! Without `nvim` on PATH the test fails (CI installs neovim); SKILLMEM_SKIP_NEOVIM=1 skips it.

mod common;

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::Duration;

use common::World;
use serde_json::Value;

/// A broken skill: no description, `allowed-tools`, an unknown `skill-memory` key, a
/// `` !`command` `` block. Line numbers (0-based) matter to the assertions below.
const BROKEN: &str = "---
name: pdf-tools
allowed-tools: Bash
skill-memory:
  enabled: true
  colour: blue
---
# pdf-tools

Extract the text: !`pdftotext in.pdf -`
";

const NOTE: &str = "pdftotext -layout keeps the columns of a table.";

/// Bound of each wait inside Neovim, and (with room for startup) of the whole run.
const WAIT_MS: u64 = 20_000;

fn repo() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

fn nvim_available() -> bool {
    match Command::new("nvim").arg("--version").stdout(Stdio::null()).stderr(Stdio::null()).status() {
        Ok(s) => s.success(),
        Err(_) => false,
    }
}

/// Runs `nvim --headless` with tests/neovim/init.lua on `file`; returns the JSON it wrote, with
/// Neovim's stderr and LSP log on failure.
fn run_nvim(w: &World, file: &Path) -> (Value, String) {
    let out = w.tmp.path().join("nvim-result.json");
    let exe = Path::new(env!("CARGO_BIN_EXE_skillmem"));
    let path = std::env::join_paths(
        std::iter::once(exe.parent().unwrap().to_path_buf())
            .chain(std::env::split_paths(&std::env::var_os("PATH").unwrap_or_default())),
    )
    .unwrap();
    let xdg = |d: &str| w.home.join(d).display().to_string();
    let child = Command::new("nvim")
        .args(["--headless", "-n", "-i", "NONE", "-u"])
        .arg(repo().join("tests/neovim/init.lua"))
        .current_dir(&w.ws)
        .envs(w.envs())
        .env("PATH", path)
        .env("XDG_CONFIG_HOME", xdg(".config"))
        .env("XDG_DATA_HOME", xdg(".local/share"))
        .env("XDG_STATE_HOME", xdg(".local/state"))
        .env("XDG_CACHE_HOME", xdg(".cache"))
        .env("SKILLMEM_NVIM_CONFIG", repo().join("editors/neovim"))
        .env("SKILLMEM_NVIM_FILE", file)
        .env("SKILLMEM_NVIM_OUT", &out)
        .env("SKILLMEM_NVIM_TIMEOUT_MS", WAIT_MS.to_string())
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("cannot start nvim");
    let pid = child.id();
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let _ = tx.send(child.wait_with_output());
    });
    // Every wait inside Neovim is bounded; this bounds a Neovim that hangs anyway.
    let output = match rx.recv_timeout(Duration::from_millis(4 * WAIT_MS + 30_000)) {
        Ok(o) => o.expect("nvim did not run"),
        Err(_) => {
            unsafe { libc::kill(pid as i32, libc::SIGKILL) };
            panic!("nvim did not finish; its LSP log is under {}", xdg(".cache"));
        }
    };
    let stderr = String::from_utf8_lossy(&output.stderr).into_owned();
    let text = std::fs::read_to_string(&out)
        .unwrap_or_else(|e| panic!("nvim ({}) wrote no {}: {e}\nstderr:\n{stderr}", output.status, out.display()));
    let v: Value = serde_json::from_str(&text).unwrap();
    let log = v["log_path"].as_str().and_then(|p| std::fs::read_to_string(p).ok()).unwrap_or_default();
    let context = format!("nvim {}, status {}\nstderr:\n{stderr}\nLSP log:\n{log}", v["nvim"], output.status);
    (v, context)
}

#[test]
fn neovim_shows_the_diagnostics_and_the_memory_of_a_broken_skill_md() {
    if std::env::var("SKILLMEM_SKIP_NEOVIM").as_deref() == Ok("1") {
        eprintln!("skipped: SKILLMEM_SKIP_NEOVIM=1");
        return;
    }
    assert!(
        nvim_available(),
        "nvim is not on PATH: install neovim (`apt-get install neovim`; .ci/run does) to run the \
         Neovim test, or set SKILLMEM_SKIP_NEOVIM=1 to skip it"
    );

    let w = World::new();
    // The root marker of lsp/skillmem.lua: the client's root (the server's workspace) is the
    // workspace, not the skill's folder, so it sees the notes written from the workspace below.
    std::fs::write(w.ws.join("skillmem.toml"), "").unwrap();
    let dir = w.skill("pdf-tools", BROKEN);
    let (code, stdout, stderr) = w.cli(&["note", "pdf-tools", "--kind", "fix", "--delta", NOTE]);
    assert_eq!(code, 0, "skillmem note: {stdout}{stderr}");

    let (v, context) = run_nvim(&w, &dir.join("SKILL.md"));
    assert!(v["error"].is_null(), "the Neovim script failed: {}\n{context}", v["error"]);
    assert_eq!(v["filetype"], "skillmd", "{context}");
    let clients = v["clients"].as_array().unwrap();
    assert_eq!(clients.len(), 1, "one client attached: {v}\n{context}");
    assert_eq!(clients[0]["name"], "skillmem");
    assert_eq!(clients[0]["root_dir"].as_str().map(PathBuf::from), Some(w.ws.clone()), "root by skillmem.toml: {v}");

    // Diagnostics: each on its key's line, from skillmem.
    assert_eq!(v["diagnostics_arrived"], true, "no diagnostics within {WAIT_MS} ms\n{context}");
    let diags = v["diagnostics"].as_array().unwrap();
    let got: Vec<(String, u64)> =
        diags.iter().map(|d| (d["code"].as_str().unwrap_or("?").to_string(), d["lnum"].as_u64().unwrap())).collect();
    let want: Vec<(String, u64)> =
        [("missing-description", 0), ("allowed-tools", 2), ("skill-memory-unknown-key", 5), ("command-block", 9)]
            .iter()
            .map(|(c, l)| (c.to_string(), *l))
            .collect();
    assert_eq!(got, want, "{v}\n{context}");
    assert!(diags.iter().all(|d| d["source"] == "skillmem"), "{v}");
    let unknown = diags.iter().find(|d| d["code"] == "skill-memory-unknown-key").unwrap();
    assert_eq!((unknown["col"].as_u64(), unknown["end_col"].as_u64()), (Some(2), Some(8)), "the key itself: {unknown}");

    // Hover on `name`: the skill's memory, with the note written before opening.
    assert!(v["hover_error"].is_null(), "hover failed: {}\n{context}", v["hover_error"]);
    assert_eq!(v["hover_kind"], "markdown", "{v}");
    let md = v["hover"].as_str().unwrap_or_default();
    assert!(md.contains("**skillmem: pdf-tools**"), "{md}\n{context}");
    assert!(md.contains("1 notes in this project, 0 global, 0 pinned"), "{md}");
    assert!(md.contains(NOTE), "the top note: {md}");

    // :SkillmemRecall shows the notes in a scratch window.
    assert_eq!(v["recall_opened"], true, "{v}\n{context}");
    let recall: Vec<&str> = v["recall"].as_array().unwrap().iter().map(|l| l.as_str().unwrap()).collect();
    assert!(recall[0].starts_with("# Notes of `pdf-tools` (1, "), "{recall:?}");
    assert!(recall.contains(&NOTE), "{recall:?}");
}
