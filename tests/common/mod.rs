//! Shared setup of the end-to-end tests: a temporary home, data directory and workspace, a
//! sample skill, and a `skillmem serve` child speaking real frames.
#![allow(dead_code)]

use std::path::{Path, PathBuf};

use serde_json::{json, Value};
use skillmem::client::Client;

/// A temporary world for one test.
pub struct World {
    pub tmp: tempfile::TempDir,
    pub home: PathBuf,
    pub data: PathBuf,
    pub ws: PathBuf,
}

pub const ENABLED: &str = "---\nname: NAME\ndescription: test skill\nskill-memory:\n  enabled: true\n---\n# NAME\n";

impl World {
    pub fn new() -> World {
        let tmp = tempfile::tempdir().unwrap();
        let home = tmp.path().join("home");
        let data = tmp.path().join("data");
        let ws = tmp.path().join("ws");
        for d in [&home, &data, &ws] {
            std::fs::create_dir_all(d).unwrap();
        }
        World { tmp, home, data, ws }
    }

    /// Writes `<ws>/.claude/skills/<name>/SKILL.md` with `text` (NAME replaced) and returns the folder.
    pub fn skill(&self, name: &str, text: &str) -> PathBuf {
        let dir = self.ws.join(".claude/skills").join(name);
        std::fs::create_dir_all(&dir).unwrap();
        std::fs::write(dir.join("SKILL.md"), text.replace("NAME", name)).unwrap();
        dir
    }

    /// An enabled skill.
    pub fn enabled_skill(&self, name: &str) -> PathBuf {
        self.skill(name, ENABLED)
    }

    pub fn envs(&self) -> Vec<(&'static str, String)> {
        vec![
            ("HOME", self.home.display().to_string()),
            ("SKILLMEM_HOME", self.data.display().to_string()),
            ("SKILLMEM_LOG", "warn".into()),
        ]
    }

    /// Spawns `skillmem serve` without initializing it.
    pub fn spawn_raw(&self) -> Client {
        let envs = self.envs();
        let envs: Vec<(&str, &str)> = envs.iter().map(|(k, v)| (*k, v.as_str())).collect();
        Client::spawn(Path::new(env!("CARGO_BIN_EXE_skillmem")), &envs, true).unwrap()
    }

    /// Spawns and initializes with `options`.
    pub fn spawn_with(&self, options: Value) -> Client {
        let mut c = self.spawn_raw();
        let r = c.initialize(&self.ws, options).unwrap();
        assert!(r.get("result").is_some(), "initialize failed: {r}");
        c
    }

    /// Spawns and initializes with default options.
    pub fn spawn(&self) -> Client {
        self.spawn_with(json!({}))
    }

    /// Runs the CLI with this world's environment; returns (status code, stdout, stderr).
    pub fn cli(&self, args: &[&str]) -> (i32, String, String) {
        let out = std::process::Command::new(env!("CARGO_BIN_EXE_skillmem"))
            .args(args)
            .current_dir(&self.ws)
            .envs(self.envs())
            .output()
            .unwrap();
        (
            out.status.code().unwrap_or(-1),
            String::from_utf8_lossy(&out.stdout).into(),
            String::from_utf8_lossy(&out.stderr).into(),
        )
    }
}

/// The `result` of a response, panicking with the error otherwise.
pub fn ok(r: Value) -> Value {
    match r.get("result") {
        Some(v) => v.clone(),
        None => panic!("expected a result, got {r}"),
    }
}

/// The `error` of a response, panicking with the result otherwise.
pub fn err(r: Value) -> Value {
    match r.get("error") {
        Some(v) => v.clone(),
        None => panic!("expected an error, got {r}"),
    }
}

/// A toolAfter for an OpenCode-style skill load of `name` from `dir`.
pub fn load(c: &mut Client, call: &str, name: &str, dir: &Path, intent: Option<&str>) -> Value {
    let mut args = json!({ "name": name });
    if let Some(i) = intent {
        args["intent"] = json!(i);
    }
    ok(c.request(
        "skillmem/toolAfter",
        json!({ "sessionId": "s1", "callId": call, "tool": "skill", "args": args,
                    "output": format!("# {name}\n\nBase directory for this skill: {}\n", dir.display()) }),
    )
    .unwrap())
}

/// Writes a note and returns the result.
pub fn note(c: &mut Client, skill: &str, kind: &str, intent: &str, delta: &str) -> Value {
    ok(c.request("skillmem/note", json!({ "skill": skill, "kind": kind, "intent": intent, "delta": delta })).unwrap())
}
