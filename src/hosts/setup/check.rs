//! `skillmem doctor`'s look at each host's wiring: for every host installed for this user, are
//! skillmem's entries (the ones `skillmem setup` writes) there, does the binary they name
//! still exist, is Codex's hook trust current? Read only; the fix is always a setup command.

use std::path::{Path, PathBuf};

use super::json::J;
use super::plans::{plan_for_check, Host, Where};
use super::{codex_trusted, JsonEdit, Op};
use crate::doctor::{Check, CheckStatus};

/// One check per host.
pub fn wiring_checks(w: &Where) -> Vec<Check> {
    Host::ALL.iter().map(|h| check_host(*h, w)).collect()
}

fn check_host(host: Host, w: &Where) -> Check {
    let mut found = vec![];
    let mut problems = vec![];
    if host == Host::ClaudeCode {
        let plugins = w.host_home(host).join("plugins/installed_plugins.json");
        if std::fs::read_to_string(&plugins).is_ok_and(|t| t.contains("skillmem")) {
            return Check {
                name: host.label().into(),
                status: CheckStatus::Ok,
                detail: format!("wired (the skillmem plugin, {})", plugins.display()),
                fix: None,
            };
        }
    }
    for op in plan_for_check(host, w).ops {
        inspect(&op, &mut found, &mut problems);
    }
    let installed = w.host_home(host).exists();
    let fix = match host {
        Host::ClaudeCode => {
            "run skillmem setup claude-code (or install the plugin: /plugin marketplace add /ABS/PATH/skillmem/editors/claude-code, then /plugin install skillmem@skillmem)".to_string()
        }
        h => format!("run skillmem setup {}", h.id()),
    };
    let (status, detail, fix) = match (found.is_empty(), problems.is_empty(), installed) {
        (true, _, false) => (CheckStatus::Ok, "not installed on this machine".to_string(), None),
        (true, _, true) => (
            CheckStatus::Warn,
            format!("installed ({}) but not wired to skillmem", w.host_home(host).display()),
            Some(fix),
        ),
        (false, true, _) => (CheckStatus::Ok, format!("wired ({})", dedup(&found).join(", ")), None),
        (false, false, _) => (CheckStatus::Warn, problems.join("; "), Some(fix)),
    };
    Check { name: host.label().into(), status, detail, fix }
}

fn dedup(v: &[String]) -> Vec<String> {
    let mut out: Vec<String> = vec![];
    for s in v {
        if !out.contains(s) {
            out.push(s.clone());
        }
    }
    out
}

fn read(p: &Path) -> Option<String> {
    std::fs::read_to_string(p).ok()
}

/// What one op of the plan finds on disk: `found` names the files that hold skillmem's
/// entries, `problems` what is missing or stale.
fn inspect(op: &Op, found: &mut Vec<String>, problems: &mut Vec<String>) {
    match op {
        Op::Json { path, edits } => {
            let Some(doc) = read(path).and_then(|t| J::parse(&t).ok()) else {
                if path.exists() {
                    problems.push(format!("{} is not plain JSON", path.display()));
                } else {
                    problems.push(format!("{} is missing", path.display()));
                }
                return;
            };
            for e in edits {
                match e {
                    JsonEdit::Item { at, marker, .. } => {
                        let items = walk(&doc, at).map(J::items).unwrap_or_default();
                        let ours: Vec<&J> = items.iter().filter(|i| super::is_ours(i, marker)).collect();
                        if ours.is_empty() {
                            problems.push(format!("no skillmem entry under {} in {}", at.join("."), path.display()));
                        } else {
                            found.push(path.display().to_string());
                            for i in ours {
                                binaries(i, path, problems);
                            }
                        }
                    }
                    JsonEdit::Key { at, key, .. } => match walk(&doc, at).and_then(|o| o.get(key)) {
                        Some(v) => {
                            found.push(path.display().to_string());
                            binaries(v, path, problems);
                        }
                        None => problems.push(format!("no {key} under {} in {}", at.join("."), path.display())),
                    },
                }
            }
        }
        Op::Toml { path, tables } => {
            let doc = read(path).and_then(|t| t.parse::<toml_edit::DocumentMut>().ok());
            for (at, _) in tables {
                let mut item = doc.as_ref().map(|d| d.as_item());
                for k in at {
                    item = item.and_then(|i| i.get(k));
                }
                match item {
                    Some(t) => {
                        found.push(path.display().to_string());
                        if let Some(cmd) = t.get("command").and_then(|c| c.as_str()) {
                            binary(cmd, false, path, problems);
                        }
                    }
                    None => problems.push(format!("no [{}] in {}", at.join("."), path.display())),
                }
            }
        }
        // The compact prompt: the historian's, unless the user has one of their own (setup
        // says so and leaves it); not a wiring problem either way.
        Op::TomlKey { .. } => {}
        Op::File { path, .. } => match read(path) {
            Some(text) => {
                found.push(path.display().to_string());
                if let Ok(j) = J::parse(&text) {
                    binaries(&j, path, problems);
                }
            }
            None => problems.push(format!("{} is missing", path.display())),
        },
        Op::CodexTrust { hooks_json, config, marker } => {
            let Ok(handlers) = codex_trusted(hooks_json, read(hooks_json).as_deref(), marker) else { return };
            let doc = read(config).and_then(|t| t.parse::<toml_edit::DocumentMut>().ok());
            let state = doc.as_ref().and_then(|d| d.get("hooks")).and_then(|h| h.get("state"));
            for (key, hash) in handlers {
                let entry = state.and_then(|s| s.get(&key));
                let trusted = entry.and_then(|e| e.get("trusted_hash")).and_then(|h| h.as_str());
                let enabled = entry.and_then(|e| e.get("enabled")).and_then(|b| b.as_bool()).unwrap_or(true);
                match trusted {
                    None => problems.push(format!("Codex does not trust the hook {key} (no hooks.state in {})", config.display())),
                    Some(t) if t != hash => problems.push(format!(
                        "the trust of the hook {key} is stale (the hook changed since it was trusted), so Codex skips it"
                    )),
                    Some(_) if !enabled => problems.push(format!("the hook {key} is disabled in {}", config.display())),
                    Some(_) => {}
                }
            }
        }
    }
}

fn walk<'a>(doc: &'a J, at: &[String]) -> Option<&'a J> {
    let mut cur = doc;
    for k in at {
        cur = cur.get(k)?;
    }
    Some(cur)
}

/// Every binary an entry names (`command`, `bash`, OpenCode's `bin`, Pi's extension path)
/// must still exist.
fn binaries(j: &J, path: &Path, problems: &mut Vec<String>) {
    match j {
        J::Obj(es) => {
            for (k, v) in es {
                match (k.as_str(), v.as_str()) {
                    ("command" | "bash", Some(cmd)) => binary(cmd, true, path, problems),
                    ("bin", Some(bin)) => binary(bin, false, path, problems),
                    _ => binaries(v, path, problems),
                }
            }
        }
        J::Arr(items) => items.iter().for_each(|i| binaries(i, path, problems)),
        J::Str(s) if s.ends_with("/src/index.ts") => {
            let p = PathBuf::from(s.strip_prefix("file://").unwrap_or(s));
            if !p.is_file() {
                problems.push(format!("{} (named in {}) no longer exists", p.display(), path.display()));
            }
        }
        _ => {}
    }
}

/// `command` is a shell line (its first word, maybe single-quoted, is the binary) or, with
/// `shell` false, the binary itself.
fn binary(command: &str, shell: bool, path: &Path, problems: &mut Vec<String>) {
    let first = if !shell {
        command.to_string()
    } else if let Some(rest) = command.strip_prefix('\'') {
        rest.split("' ").next().unwrap_or(rest).trim_end_matches('\'').replace(r"'\''", "'")
    } else {
        command.split_whitespace().next().unwrap_or_default().to_string()
    };
    // A bare name (`skillmem`) is found on PATH by the host: not checked here.
    if !first.contains('/') {
        return;
    }
    if !Path::new(&first).is_file() {
        problems.push(format!(
            "the binary {first} (named in {}) no longer exists; run setup again from the skillmem you use",
            path.display()
        ));
    }
}
