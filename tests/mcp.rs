//! `skillmem mcp` with a real MCP client (rmcp's client over a child process): the tools are
//! listed and run against the same store the CLI and the sidecar use. Session skills come
//! from a repository built on the fly with the `git` CLI and installed by `file://` URL.

#[rustfmt::skip] // shared file, formatted where it is owned
mod common;

use std::path::Path;
use std::sync::{Arc, Mutex};

use common::World;
use rmcp::model::{CallToolRequestParams, CallToolResult, ProgressNotificationParam};
use rmcp::service::{NotificationContext, RunningService};
use rmcp::transport::{ConfigureCommandExt, TokioChildProcess};
use rmcp::{ClientHandler, RoleClient, ServiceExt};
use serde_json::{json, Value};

fn args(v: Value) -> serde_json::Map<String, Value> {
    v.as_object().cloned().unwrap()
}

fn text(r: &CallToolResult) -> String {
    r.content.iter().filter_map(|c| c.as_text().map(|t| t.text.clone())).collect::<Vec<_>>().join("\n")
}

/// A client that keeps the progress notifications it hears.
#[derive(Clone, Default)]
struct Watcher {
    progress: Arc<Mutex<Vec<ProgressNotificationParam>>>,
}

impl ClientHandler for Watcher {
    async fn on_progress(&self, params: ProgressNotificationParam, _context: NotificationContext<RoleClient>) {
        self.progress.lock().unwrap().push(params);
    }
}

/// `skillmem mcp` in the world's workspace, served to `handler`.
async fn connect<H: ClientHandler>(w: &World, handler: H) -> RunningService<RoleClient, H> {
    let envs = w.envs();
    let ws = w.ws.clone();
    let transport =
        TokioChildProcess::new(tokio::process::Command::new(env!("CARGO_BIN_EXE_skillmem")).configure(|c| {
            c.arg("mcp").current_dir(&ws).envs(envs.iter().map(|(k, v)| (*k, v.as_str())));
        }))
        .unwrap();
    handler.serve(transport).await.unwrap()
}

async fn run<H: ClientHandler>(client: &RunningService<RoleClient, H>, tool: &'static str, a: Value) -> CallToolResult {
    client.call_tool(CallToolRequestParams::new(tool).with_arguments(args(a))).await.unwrap()
}

/// A successful call's structured result.
fn ok(r: &CallToolResult) -> Value {
    assert_ne!(r.is_error, Some(true), "{}", text(r));
    r.structured_content.clone().expect("structured content")
}

fn git(home: &Path, dir: &Path, a: &[&str]) -> String {
    let out = std::process::Command::new("git")
        .args(["-c", "user.name=Test", "-c", "user.email=test@example.com", "-c", "init.defaultBranch=main"])
        .args(["-c", "commit.gpgsign=false"])
        .args(a)
        .current_dir(dir)
        .env("HOME", home)
        .env("GIT_CONFIG_NOSYSTEM", "1")
        .output()
        .unwrap();
    assert!(out.status.success(), "git {a:?}: {}", String::from_utf8_lossy(&out.stderr));
    String::from_utf8_lossy(&out.stdout).trim().to_string()
}

fn names(v: &Value) -> Vec<&str> {
    v.as_array().unwrap().iter().map(|s| s["name"].as_str().unwrap()).collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_real_client_lists_and_runs_the_note_tools() {
    let w = World::new();
    w.enabled_skill("csv-tools");
    let client = connect(&w, ()).await;

    let info = client.peer_info().unwrap();
    assert_eq!(info.server_info.as_ref().map(|s| s.name.as_str()), Some("skillmem"));
    let mut names: Vec<String> =
        client.list_all_tools().await.unwrap().into_iter().map(|t| t.name.to_string()).collect();
    names.sort();
    assert_eq!(
        names,
        [
            "skill_feedback",
            "skill_forget",
            "skill_note",
            "skill_pin",
            "skill_recall",
            "skills_audit",
            "skills_install",
            "skills_install_locked",
            "skills_list",
            "skills_lock",
            "skills_remove",
            "skills_resolve",
            "skills_seed",
            "skills_update",
            "skills_verify"
        ]
    );
    // skills_install takes the choices of skillmem/skills/install.
    let tools = client.list_all_tools().await.unwrap();
    let install = tools.iter().find(|t| t.name == "skills_install").unwrap();
    let props = install.input_schema.get("properties").and_then(Value::as_object).unwrap();
    for p in ["url", "ref", "path", "skills", "as", "list"] {
        assert!(props.contains_key(p), "skills_install takes {p}: {props:?}");
    }

    let noted = client
        .call_tool(CallToolRequestParams::new("skill_note").with_arguments(args(json!({
            "skill": "csv-tools", "kind": "gotcha", "intent": "read an Excel export", "host": "forged",
            "delta": "Excel exports start with a UTF-8 BOM; read them with utf-8-sig."
        }))))
        .await
        .unwrap();
    assert_ne!(noted.is_error, Some(true), "{}", text(&noted));
    let id = noted.structured_content.as_ref().unwrap()["id"].as_i64().unwrap();
    assert_eq!(text(&noted), format!("Saved as note {id}."));

    let again = client
        .call_tool(CallToolRequestParams::new("skill_note").with_arguments(args(json!({
            "skill": "csv-tools", "kind": "gotcha", "delta": "Excel exports start with a UTF-8 BOM; read them with utf-8-sig."
        }))))
        .await
        .unwrap();
    assert!(text(&again).starts_with("Already known"), "{}", text(&again));

    let pinned = client
        .call_tool(CallToolRequestParams::new("skill_pin").with_arguments(args(json!({ "id": id }))))
        .await
        .unwrap();
    assert_eq!(text(&pinned), format!("Note {id} pinned."));

    let recalled = client
        .call_tool(
            CallToolRequestParams::new("skill_recall")
                .with_arguments(args(json!({ "skill": "csv-tools", "intent": "BOM" }))),
        )
        .await
        .unwrap();
    let block = text(&recalled);
    assert!(block.contains("pinned=\"1\"") && block.contains("UTF-8 BOM"), "{block}");
    assert!(block.contains("with skill_note (kind"), "the guidance names this door's note tool: {block}");

    // Failures are tool results the agent can read, not protocol errors.
    let bad = client
        .call_tool(
            CallToolRequestParams::new("skill_note")
                .with_arguments(args(json!({ "skill": "csv-tools", "kind": "rumour", "delta": "x" }))),
        )
        .await
        .unwrap();
    assert_eq!(bad.is_error, Some(true));
    assert!(text(&bad).contains("rumour"), "{}", text(&bad));

    // A correction through the note tool: the new lesson takes the old one's place.
    let fixed = client
        .call_tool(CallToolRequestParams::new("skill_note").with_arguments(args(json!({
            "skill": "csv-tools", "kind": "gotcha", "replaces": id,
            "delta": "Excel exports start with a UTF-8 BOM; read them with encoding utf-8-sig, never plain utf-8."
        }))))
        .await
        .unwrap();
    assert_ne!(fixed.is_error, Some(true), "{}", text(&fixed));
    let new_id = fixed.structured_content.as_ref().unwrap()["id"].as_i64().unwrap();
    assert_eq!(fixed.structured_content.as_ref().unwrap()["status"], "replaced");
    assert_eq!(text(&fixed), format!("Saved as note {new_id}, in the place of note {id}."));
    let recalled = client
        .call_tool(
            CallToolRequestParams::new("skill_recall")
                .with_arguments(args(json!({ "skill": "csv-tools", "intent": "BOM" }))),
        )
        .await
        .unwrap();
    let block = text(&recalled);
    assert!(
        block.contains(&format!("<note id=\"{new_id}\"")) && !block.contains(&format!("<note id=\"{id}\"")),
        "{block}"
    );
    assert!(block.contains("pinned=\"true\""), "the pin carried over: {block}");
    assert!(block.contains("replaces=<its id>"), "{block}");

    let forgot = client
        .call_tool(
            CallToolRequestParams::new("skill_forget")
                .with_arguments(args(json!({ "id": new_id, "reason": "the exports lost their BOM" }))),
        )
        .await
        .unwrap();
    assert_eq!(text(&forgot), format!("Note {new_id} retired (kept as history; it can be restored)."));
    let gone = client
        .call_tool(CallToolRequestParams::new("skill_forget").with_arguments(args(json!({ "id": new_id }))))
        .await
        .unwrap();
    assert_eq!(gone.is_error, Some(true));
    assert!(text(&gone).contains("already retired"), "{}", text(&gone));

    assert!(client.call_tool(CallToolRequestParams::new("skill_teleport")).await.is_err(), "unknown tool");
    client.cancel().await.unwrap();

    // The same store: the CLI sees what the MCP door wrote.
    let (code, out, _) = w.cli(&["stats", "--json"]);
    assert_eq!(code, 0);
    let stats: Value = serde_json::from_str(&out).unwrap();
    assert_eq!(stats["notes"], 0, "the retired note is out of the counts: {stats}");
    let (code, out, _) = w.cli(&["notes", "--all-versions", "--json"]);
    assert_eq!(code, 0);
    let all: Value = serde_json::from_str(&out).unwrap();
    let notes = all["notes"].as_array().unwrap();
    assert_eq!(notes.len(), 2, "both versions are kept as history: {all}");
    assert!(notes.iter().any(|n| n["supersededBy"] == new_id), "{all}");
    assert!(notes.iter().any(|n| n["reason"] == "the exports lost their BOM"), "{all}");
    // Provenance: written from this MCP client, whatever the agent passes.
    assert!(notes.iter().all(|n| n["host"].as_str().is_some_and(|h| h.starts_with("mcp:"))), "{all}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_real_client_installs_resolves_seeds_and_removes_session_skills() {
    let w = World::new();
    let repo = w.tmp.path().join("repos/team-skills");
    for (name, body) in [("alpha", "Alpha things."), ("beta", "Beta things.")] {
        let dir = repo.join("skills").join(name);
        std::fs::create_dir_all(&dir).unwrap();
        std::fs::write(dir.join("SKILL.md"), format!("---\nname: {name}\ndescription: {body}\n---\n# {name}\n"))
            .unwrap();
    }
    git(&w.home, &repo, &["init", "-q"]);
    git(&w.home, &repo, &["add", "-A"]);
    git(&w.home, &repo, &["commit", "-q", "-m", "two skills"]);
    let head = git(&w.home, &repo, &["rev-parse", "HEAD"]);
    let url = format!("file://{}", repo.display());

    let watcher = Watcher::default();
    let client = connect(&w, watcher.clone()).await;

    let empty = run(&client, "skills_list", json!({})).await;
    assert_eq!(ok(&empty)["sources"], json!([]));
    assert_eq!(text(&empty), "No session skills installed.");

    // Install: pinned to the full commit, progress reported to a client that sent a token
    // (rmcp's client sends one with every request).
    let installed = run(&client, "skills_install", json!({ "url": url })).await;
    let r = ok(&installed);
    assert_eq!(names(&r["skills"]), ["alpha", "beta"]);
    assert!(r["skills"].as_array().unwrap().iter().all(|s| s["pinnedRef"] == json!(head)), "{r}");
    assert_eq!(r["removed"], json!([]));
    let t = text(&installed);
    assert!(t.starts_with(&format!("Installed 2 skill(s) from {url} at {}", &head[..12])), "{t}");
    assert!(t.contains("- alpha: Alpha things."), "{t}");
    let mut progress = vec![];
    for _ in 0..50 {
        progress = watcher.progress.lock().unwrap().clone();
        if progress.iter().any(|p| p.progress >= 100.0) {
            break;
        }
        tokio::time::sleep(std::time::Duration::from_millis(20)).await;
    }
    assert!(progress.iter().any(|p| p.progress >= 100.0), "install reports progress to the end: {progress:?}");
    // The server sends each notification only after the previous one is written; rmcp's client
    // runs each handler in a task of its own, so they may be heard out of order: no repeats.
    let mut steps: Vec<f64> = progress.iter().map(|p| p.progress).collect();
    steps.sort_by(f64::total_cmp);
    assert!(steps.windows(2).all(|p| p[0] < p[1]), "strictly increasing when sent: {progress:?}");
    assert!(progress.iter().all(|p| p.total == Some(100.0) && p.message.is_some()), "{progress:?}");

    let listed = ok(&run(&client, "skills_list", json!({})).await);
    let source = listed["sources"][0]["source"].as_str().unwrap().to_string();
    assert_eq!(source, url);
    assert_eq!(listed["sources"][0]["pinnedRef"], json!(head));
    assert_eq!(names(&listed["sources"][0]["skills"]), ["alpha", "beta"]);

    // list: what the repository offers, nothing written.
    let offered = run(&client, "skills_install", json!({ "url": url, "list": true, "path": "skills" })).await;
    assert_eq!(names(&ok(&offered)["offered"]), ["alpha", "beta"]);
    let t = text(&offered);
    assert!(t.starts_with("The repository offers 2 skill(s) (nothing installed):"), "{t}");
    assert!(t.contains("- alpha (skills/alpha): Alpha things."), "{t}");
    assert_eq!(names(&ok(&run(&client, "skills_list", json!({})).await)["sources"][0]["skills"]), ["alpha", "beta"]);

    let resolved =
        run(&client, "skills_resolve", json!({ "global": ["beta"], "task": ["alpha", "beta", "ghost"] })).await;
    assert_eq!(ok(&resolved), json!({ "skills": ["beta", "alpha"], "dropped": ["ghost"] }));
    assert_eq!(text(&resolved), "beta\nalpha\n(dropped, not installed: ghost)");

    // Seed into a session's checkout: a dry run writes nothing; the real one lands the copies
    // with an ignore file each, and `git add -A` stages none of it.
    let session = w.tmp.path().join("session");
    std::fs::create_dir_all(&session).unwrap();
    git(&w.home, &session, &["init", "-q"]);
    let cwd = session.display().to_string();
    let dry = run(&client, "skills_seed", json!({ "cwd": cwd, "skills": ["alpha", "beta"], "dryRun": true })).await;
    let d = ok(&dry);
    assert!(d["actions"].as_array().unwrap().iter().any(|a| a["op"] == "copy" && a["skill"] == "alpha"), "{d}");
    assert!(text(&dry).ends_with("(dry run: nothing written)"), "{}", text(&dry));
    assert!(!session.join(".claude").exists(), "a dry run writes nothing");

    let seeded = run(&client, "skills_seed", json!({ "cwd": cwd, "skills": ["alpha", "beta"] })).await;
    let s = ok(&seeded);
    let copies: Vec<&str> = s["actions"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|a| a["op"] == "copy")
        .map(|a| a["skill"].as_str().unwrap())
        .collect();
    assert_eq!(copies, ["alpha", "beta"], "{s}");
    for name in ["alpha", "beta"] {
        let dir = session.join(".claude/skills").join(name);
        let md = std::fs::read_to_string(dir.join("SKILL.md")).unwrap();
        assert!(md.contains(&format!("name: {name}")), "{md}");
        let ignore = std::fs::read_to_string(dir.join(".gitignore")).unwrap();
        assert!(ignore.lines().any(|l| l == "*"), "{ignore}");
    }
    assert!(text(&seeded).contains("copy alpha "), "{}", text(&seeded));
    git(&w.home, &session, &["add", "-A"]);
    assert_eq!(
        git(&w.home, &session, &["status", "--porcelain", "--untracked-files=all"]),
        "",
        "nothing seeded is staged"
    );

    // A target of the caller's choosing.
    ok(&run(&client, "skills_seed", json!({ "cwd": cwd, "skills": ["beta"], "target": ".opencode/skills" })).await);
    assert!(session.join(".opencode/skills/beta/SKILL.md").is_file());

    // The audit reads the installed copies: the same verdicts as `skills audit`.
    let audited = run(&client, "skills_audit", json!({ "targets": ["alpha"] })).await;
    let a = ok(&audited);
    assert_eq!(a["reports"][0]["skill"], "alpha", "{a}");
    assert_eq!(a["reports"][0]["verdict"], "ok", "{a}");
    assert!(text(&audited).starts_with("alpha: ok"), "{}", text(&audited));

    // Refusals are tool results with the reason.
    for (tool, a, mention) in [
        ("skills_audit", json!({ "targets": ["ghost"] }), "ghost"),
        ("skills_seed", json!({ "cwd": cwd, "skills": ["ghost"] }), "ghost"),
        ("skills_seed", json!({ "cwd": "relative/dir", "skills": ["alpha"] }), "relative/dir"),
        ("skills_seed", json!({ "cwd": cwd, "skills": ["alpha"], "target": "../out" }), ".."),
        ("skills_seed", json!({ "cwd": cwd }), "skills"),
        ("skills_install", json!({ "url": "ext::sh -c touch% /tmp/pwned" }), "neither a URL"),
        ("skills_install", json!({ "url": url, "skills": ["ghost"] }), "ghost"),
        ("skills_install", json!({ "url": url, "as": "renamed" }), "--as"),
        ("skills_install", json!({ "url": url, "path": "../up" }), "path"),
        ("skills_remove", json!({ "source": "file:///nowhere" }), "nowhere"),
    ] {
        let r = run(&client, tool, a.clone()).await;
        assert_eq!(r.is_error, Some(true), "{tool} {a}: {}", text(&r));
        assert!(text(&r).contains(mention), "{tool} {a}: {}", text(&r));
        assert!(r.structured_content.as_ref().unwrap()["error"]["kind"].is_string());
    }

    // Update after a new commit that drops beta; the seeded folders stay until the next seed.
    std::fs::remove_dir_all(repo.join("skills/beta")).unwrap();
    git(&w.home, &repo, &["add", "-A"]);
    git(&w.home, &repo, &["commit", "-q", "-m", "drop beta"]);
    let new_head = git(&w.home, &repo, &["rev-parse", "HEAD"]);
    let updated = run(&client, "skills_update", json!({ "source": source })).await;
    let u = ok(&updated);
    assert_eq!(names(&u["skills"]), ["alpha"]);
    assert_eq!(u["skills"][0]["pinnedRef"], json!(new_head));
    assert_eq!(u["removed"], json!(["beta"]));
    assert!(text(&updated).contains("Removed (no longer in the source): beta"), "{}", text(&updated));

    let removed = run(&client, "skills_remove", json!({ "source": source })).await;
    assert_eq!(ok(&removed), json!({ "removed": ["alpha"] }));
    assert_eq!(text(&removed), "Removed: alpha.");
    assert_eq!(ok(&run(&client, "skills_list", json!({})).await)["sources"], json!([]));
    client.cancel().await.unwrap();

    // The same store: the CLI sees what the MCP door did.
    let (code, out, _) = w.cli(&["skills", "list", "--json"]);
    assert_eq!(code, 0);
    assert_eq!(serde_json::from_str::<Value>(&out).unwrap()["sources"], json!([]));
}
