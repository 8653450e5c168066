//! Skill memory through the protocol, the way a host uses it: a real `skillmem serve` child,
//! real frames, a real SQLite file.

mod common;

use common::{err, load, note, ok, World};
use serde_json::{json, Value};

fn block_of(r: &Value) -> String {
    r["append"].as_str().unwrap_or_else(|| panic!("no block in {r}")).to_string()
}

#[test]
fn lifecycle_advertises_methods_and_exits_cleanly() {
    let w = World::new();
    let mut c = w.spawn_raw();
    let r = ok(c.initialize(&w.ws, json!({})).unwrap());
    let cap = &r["capabilities"]["experimental"]["skillmem"];
    assert_eq!(cap["protocolVersion"], 1);
    let methods: Vec<&str> = cap["methods"].as_array().unwrap().iter().filter_map(Value::as_str).collect();
    for m in
        ["skillmem/toolDefinition", "skillmem/toolBefore", "skillmem/toolAfter", "skillmem/note", "skillmem/recall"]
    {
        assert!(methods.contains(&m), "{m} missing from {methods:?}");
    }
    assert_eq!(r["serverInfo"]["name"], "skillmem");
    assert!(w.data.join("skillmem.db").is_file());
    assert_eq!(c.shutdown().unwrap(), 0);
}

/// The method table is the one source: every advertised method is routed (a request with
/// bad params is an invalid-params error, never "method not found"), every one has its
/// generated schemas, and nothing else is routed.
#[test]
fn every_advertised_method_is_routed_and_has_schemas() {
    let w = World::new();
    let mut c = w.spawn_raw();
    let r = ok(c.initialize(&w.ws, json!({})).unwrap());
    let methods: Vec<String> = r["capabilities"]["experimental"]["skillmem"]["methods"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| m.as_str().unwrap().to_string())
        .collect();
    assert_eq!(methods, skillmem::protocol::METHODS);
    let schemas: Vec<String> = skillmem::protocol::all_schemas().into_iter().map(|(stem, _)| stem).collect();
    for m in &methods {
        let stem = m.trim_start_matches("skillmem/").replace('/', ".");
        assert!(schemas.contains(&format!("{stem}.params")), "no params schema for {m}");
        if m == "skillmem/toolBefore" {
            // A notification: no answer, and the next request is still served.
            c.notify(m, json!({ "bad": true })).unwrap();
            continue;
        }
        assert!(schemas.contains(&format!("{stem}.result")), "no result schema for {m}");
        let e = err(c.request(m, json!([1, 2, 3])).unwrap());
        assert_eq!(e["code"], -32602, "{m}: {e}");
    }
    let e = err(c.request("skillmem/noSuchMethod", json!({})).unwrap());
    assert_eq!(e["code"], -32601, "{e}");
    assert_eq!(c.shutdown().unwrap(), 0);
}

/// The guidance line names the host's note tool: the protocol's own by default, the host's
/// when initializationOptions name it (OpenCode's plugin: `ctx_skill_note`), and a workspace's
/// skillmem.toml when the host names none.
#[test]
fn the_guidance_line_names_the_hosts_note_tool() {
    let w = World::new();
    let dir = w.enabled_skill("jq");
    let guidance = |c: &mut skillmem::client::Client, call: &str| {
        let r = load(c, call, "jq", &dir, None);
        let b = block_of(&r);
        let line = b.lines().find(|l| l.contains("note only gotchas")).unwrap_or_default().to_string();
        line
    };
    let mut c = w.spawn();
    note(&mut c, "jq", "fix", "", "jq -r prints raw strings");
    assert!(guidance(&mut c, "c1").contains("with the skill-note tool (skillmem/note) (kind"));
    c.shutdown().unwrap();
    let mut c = w.spawn_with(json!({ "memory": { "noteTool": "ctx_skill_note" } }));
    assert!(guidance(&mut c, "c2").contains("with ctx_skill_note (kind"));
    c.shutdown().unwrap();
    std::fs::write(w.ws.join("skillmem.toml"), "[memory]\nnote_tool = \"team_note\"\n").unwrap();
    let mut c = w.spawn();
    assert!(guidance(&mut c, "c3").contains("with team_note (kind"));
    c.shutdown().unwrap();
}

#[test]
fn exit_without_shutdown_is_code_1_and_eof_ends_the_process() {
    let w = World::new();
    let mut c = w.spawn();
    c.notify("exit", Value::Null).unwrap();
    assert_eq!(c.child.wait().unwrap().code(), Some(1));

    let mut c = w.spawn();
    c.close_stdin();
    let status = c.child.wait().unwrap();
    assert!(status.code().is_some(), "ended by a signal: {status:?}");
}

#[test]
fn tool_definition_adds_optional_intent_to_skill_tools_only() {
    let w = World::new();
    let mut c = w.spawn();
    let params = json!({ "type": "object", "properties": { "name": { "type": "string" } }, "required": ["name"] });
    for tool in ["skill", "Skill"] {
        let r = ok(c.request("skillmem/toolDefinition", json!({ "tool": tool, "parameters": params })).unwrap());
        assert_eq!(r["parameters"]["properties"]["intent"]["type"], "string");
        assert_eq!(r["parameters"]["required"], json!(["name"]));
        // idempotent
        let again =
            ok(c.request("skillmem/toolDefinition", json!({ "tool": tool, "parameters": r["parameters"] })).unwrap());
        assert_eq!(again["parameters"], r["parameters"]);
    }
    let r = ok(c.request("skillmem/toolDefinition", json!({ "tool": "bash", "parameters": params })).unwrap());
    assert_eq!(r["parameters"], params);
}

#[test]
fn notes_are_recalled_on_the_next_load_with_intent() {
    let w = World::new();
    let dir = w.enabled_skill("jq");
    let mut c = w.spawn();
    let first = load(&mut c, "c1", "jq", &dir, Some("anything"));
    assert_eq!(first["append"], Value::Null);
    assert_eq!(first["mode"], "none");
    assert_eq!(first["skill"], "jq");

    let a = note(
        &mut c,
        "jq",
        "gotcha",
        "shell variable quotes",
        "Use jq -r for raw strings when assigning to shell variables.",
    );
    assert_eq!(a["status"], "inserted");
    note(&mut c, "jq", "fix", "Cannot iterate over null", "Use .items[]? when the key may be missing.");

    let r = load(&mut c, "c2", "jq", &dir, Some("error cannot iterate over null"));
    let b = block_of(&r);
    assert!(b.starts_with("\n\n<skill-memory skill=\"jq\""), "{b}");
    assert_eq!(r["mode"], "vector");
    let first_id = r["noteIds"][0].as_i64().unwrap();
    let second =
        ok(c.request("skillmem/recall", json!({ "skill": "jq", "intent": "Cannot iterate over null" })).unwrap());
    assert_eq!(second["notes"][0]["id"].as_i64().unwrap(), first_id);
    assert!(second["notes"][0]["delta"].as_str().unwrap().contains(".items[]?"));
    assert!(b.contains("note only gotchas"), "guidance line missing: {b}");
}

#[test]
fn exact_and_near_duplicates_bump_hits_and_return_the_same_id() {
    let w = World::new();
    w.enabled_skill("git-rebase");
    let mut c = w.spawn();
    let a = note(&mut c, "git-rebase", "gotcha", "", "Run git rebase --continue after resolving every conflict.");
    let b = note(&mut c, "git-rebase", "gotcha", "", "run  git rebase --continue after resolving every conflict!");
    assert_eq!(b["status"], "duplicate");
    assert_eq!(a["id"], b["id"]);
    let near = note(&mut c, "git-rebase", "gotcha", "", "After resolving every conflict, run git rebase --continue.");
    assert_eq!(near["status"], "duplicate", "near duplicate not detected: {near}");
    let other =
        note(&mut c, "git-rebase", "discovery", "", "Use --autosquash with fixup! commits to fold them automatically.");
    assert_eq!(other["status"], "inserted");
    let r = ok(c.request("skillmem/recall", json!({ "skill": "git-rebase" })).unwrap());
    let hits = r["notes"].as_array().unwrap().iter().find(|n| n["id"] == a["id"]).unwrap()["hits"].as_i64().unwrap();
    assert_eq!(hits, 2);
    assert_eq!(r["mode"], "recent");
}

#[test]
fn bad_input_gets_errors_with_codes_and_the_server_keeps_serving() {
    let w = World::new();
    w.enabled_skill("jq");
    w.skill("plain", "---\nname: plain\n---\n");
    let mut c = w.spawn();
    let cases = [
        ("skillmem/note", json!({ "skill": "jq", "kind": "tip", "delta": "x" }), -32602, "kind"),
        ("skillmem/note", json!({ "skill": "jq", "kind": "gotcha", "delta": "   " }), -32602, "delta"),
        ("skillmem/note", json!({ "kind": "gotcha", "delta": "x" }), -32602, "skill"),
        ("skillmem/note", json!({ "skill": "jq", "kind": "gotcha", "delta": "x", "scope": "team" }), -32602, "scope"),
        ("skillmem/note", json!({ "skill": "plain", "kind": "gotcha", "delta": "x" }), -32001, "not enabled"),
        ("skillmem/note", json!({ "skill": "ghost", "kind": "gotcha", "delta": "x" }), -32002, "no SKILL.md"),
        ("skillmem/pin", json!({ "id": 999, "pinned": true }), -32002, "999"),
        ("skillmem/forget", json!({ "id": 999 }), -32002, "999"),
        ("skillmem/edit", json!({ "id": 999, "delta": "x" }), -32002, "999"),
        ("skillmem/pin", json!({ "id": "one" }), -32602, "invalid"),
        (
            "skillmem/toolAfter",
            json!({ "sessionId": "s", "callId": "c", "tool": "skill", "args": {} }),
            -32602,
            "args.name",
        ),
    ];
    for (method, params, code, word) in cases {
        let e = err(c.request(method, params.clone()).unwrap());
        assert_eq!(e["code"], code, "{method} {params}: {e}");
        assert!(e["message"].as_str().unwrap().contains(word), "{method} {params}: {e}");
        assert!(e["data"]["kind"].is_string(), "{e}");
    }
    // unknown method
    let e = err(c.request("skillmem/nope", json!({})).unwrap());
    assert_eq!(e["code"], -32601);
    // a non-JSON body and a body that is JSON but not a request
    c.send_raw(b"Content-Length: 9\r\n\r\nnot json!").unwrap();
    let parse_error = c.read().unwrap().unwrap();
    assert_eq!(parse_error["error"]["code"], -32700);
    c.send_raw(b"Content-Length: 2\r\n\r\n[]").unwrap();
    let invalid = c.read().unwrap().unwrap();
    assert!(invalid["error"]["code"].as_i64().is_some(), "{invalid}");
    // still serving
    let r = note(&mut c, "jq", "gotcha", "", "still alive");
    assert_eq!(r["status"], "inserted");
    assert_eq!(c.shutdown().unwrap(), 0);
}

/// One frame written to `w`.
fn write_frame(w: &mut impl std::io::Write, msg: &Value) {
    let body = msg.to_string();
    write!(w, "Content-Length: {}\r\n\r\n{body}", body.len()).unwrap();
    w.flush().unwrap();
}

/// The frames of `r` up to and including the response `id` (notifications skipped).
fn response_to(r: &mut impl std::io::BufRead, id: i64) -> Value {
    loop {
        let mut len = 0;
        loop {
            let mut line = String::new();
            assert!(r.read_line(&mut line).unwrap() > 0, "the stream ended before response {id}");
            match line.trim_end().split_once(':') {
                Some((k, v)) if k.eq_ignore_ascii_case("content-length") => len = v.trim().parse().unwrap(),
                _ if line.trim_end().is_empty() => break,
                _ => {}
            }
        }
        let mut body = vec![0; len];
        r.read_exact(&mut body).unwrap();
        let v: Value = serde_json::from_slice(&body).unwrap();
        if v["id"] == id {
            return v;
        }
    }
}

/// Node's hosts (OpenCode, Pi, VS Code) spawn the sidecar on a socket pair, not a pipe: both
/// ends of it are polled by the server, and a note written through it is recalled through it.
#[cfg(unix)]
#[test]
fn a_host_that_spawns_the_sidecar_on_a_socket_pair_is_served() {
    use std::os::unix::net::UnixStream;
    let w = World::new();
    let dir = w.enabled_skill("jq");
    let (host, child) = UnixStream::pair().unwrap();
    let mut server = std::process::Command::new(env!("CARGO_BIN_EXE_skillmem"))
        .arg("serve")
        .envs(w.envs())
        .stdin(std::process::Stdio::from(std::os::fd::OwnedFd::from(child.try_clone().unwrap())))
        .stdout(std::process::Stdio::from(std::os::fd::OwnedFd::from(child)))
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    let mut out = host.try_clone().unwrap();
    let mut r = std::io::BufReader::new(host);
    let uri = format!("file://{}", w.ws.display());
    write_frame(
        &mut out,
        &json!({ "jsonrpc": "2.0", "id": 1, "method": "initialize",
        "params": { "processId": null, "rootUri": uri, "capabilities": {} } }),
    );
    assert!(response_to(&mut r, 1)["result"]["capabilities"].is_object());
    // The server's own copies of the channel are closed on exec: a process it starts cannot
    // hold the host's socket open after the sidecar exits (fd 0 is the one it was given).
    #[cfg(target_os = "linux")]
    {
        let proc = std::path::PathBuf::from(format!("/proc/{}", server.id()));
        let channel = std::fs::read_link(proc.join("fd/0")).unwrap();
        let mut copies = 0;
        for e in std::fs::read_dir(proc.join("fd")).unwrap() {
            let e = e.unwrap();
            let fd: i32 = e.file_name().to_string_lossy().parse().unwrap();
            if fd == 0 || std::fs::read_link(e.path()).ok().as_ref() != Some(&channel) {
                continue;
            }
            let info = std::fs::read_to_string(proc.join("fdinfo").join(e.file_name())).unwrap();
            let flags = info.lines().find_map(|l| l.strip_prefix("flags:")).unwrap().trim();
            let flags = u32::from_str_radix(flags, 8).unwrap();
            assert_ne!(flags & 0o2000000, 0, "fd {fd} of the channel is not close-on-exec: {info}");
            copies += 1;
        }
        assert!(copies >= 1, "the server reads the channel through a copy of it");
    }
    write_frame(&mut out, &json!({ "jsonrpc": "2.0", "method": "initialized", "params": {} }));
    write_frame(
        &mut out,
        &json!({ "jsonrpc": "2.0", "id": 2, "method": "skillmem/note",
        "params": { "skill": "jq", "kind": "gotcha", "intent": "slurp files", "delta": "use --slurp over a stream of files" } }),
    );
    assert_eq!(response_to(&mut r, 2)["result"]["status"], "inserted");
    // A body larger than a socket's buffer goes through whole (the writer waits, it does not fail).
    let output = format!("{}\nBase directory for this skill: {}\n", "x".repeat(300_000), dir.display());
    write_frame(
        &mut out,
        &json!({ "jsonrpc": "2.0", "id": 3, "method": "skillmem/toolAfter",
        "params": { "sessionId": "s", "callId": "c", "tool": "skill", "args": { "name": "jq", "intent": "slurp files" }, "output": output } }),
    );
    let block = response_to(&mut r, 3)["result"]["append"].as_str().unwrap_or_default().to_string();
    assert!(block.contains("use --slurp over a stream of files"), "{block}");
    // An answer larger than the socket's buffer reaches the host whole (the writer waits for
    // the host to read, it does not fail).
    for i in 0..50 {
        let delta = format!(
            "lesson {i}: {}",
            (0..100).map(|k| format!("w{i}x{k}{}", "q".repeat(60))).collect::<Vec<_>>().join(" ")
        );
        write_frame(
            &mut out,
            &json!({ "jsonrpc": "2.0", "id": 100 + i, "method": "skillmem/note",
            "params": { "skill": "jq", "kind": "discovery", "delta": delta } }),
        );
        assert_eq!(response_to(&mut r, 100 + i)["result"]["status"], "inserted");
    }
    write_frame(
        &mut out,
        &json!({ "jsonrpc": "2.0", "id": 4, "method": "skillmem/notes", "params": { "skill": "jq", "limit": 200 } }),
    );
    let listed = response_to(&mut r, 4);
    assert!(listed.to_string().len() > 300_000, "{}", listed.to_string().len());
    assert_eq!(listed["result"]["notes"].as_array().map(Vec::len), Some(51));
    write_frame(&mut out, &json!({ "jsonrpc": "2.0", "id": 5, "method": "shutdown" }));
    assert!(response_to(&mut r, 5).get("result").is_some());
    write_frame(&mut out, &json!({ "jsonrpc": "2.0", "method": "exit" }));
    assert_eq!(server.wait().unwrap().code(), Some(0));
}

/// Input from a file and output to a file (neither can be polled) are read and written as
/// before: the answer to the one request reaches the file before the sidecar exits at the
/// input's end.
#[test]
fn a_file_for_input_and_one_for_output_still_get_their_answer() {
    let w = World::new();
    let (input, output) = (w.tmp.path().join("in.frames"), w.tmp.path().join("out.frames"));
    let mut frames = vec![];
    let uri = format!("file://{}", w.ws.display());
    write_frame(
        &mut frames,
        &json!({ "jsonrpc": "2.0", "id": 1, "method": "initialize",
        "params": { "processId": null, "rootUri": uri, "capabilities": {} } }),
    );
    std::fs::write(&input, frames).unwrap();
    let status = std::process::Command::new(env!("CARGO_BIN_EXE_skillmem"))
        .arg("serve")
        .envs(w.envs())
        .stdin(std::fs::File::open(&input).unwrap())
        .stdout(std::fs::File::create(&output).unwrap())
        .stderr(std::process::Stdio::null())
        .status()
        .unwrap();
    // No `shutdown` came: the exit code says so.
    assert_eq!(status.code(), Some(1));
    let mut r = std::io::BufReader::new(std::fs::File::open(&output).unwrap());
    assert_eq!(response_to(&mut r, 1)["result"]["serverInfo"]["name"], "skillmem");
}

#[test]
fn a_malformed_frame_header_does_not_end_the_server() {
    let w = World::new();
    w.enabled_skill("jq");
    let mut c = w.spawn();
    c.send_raw(b"Content-Length: abc\r\n\r\n").unwrap();
    let r = c.request("skillmem/stats", json!({})).unwrap();
    // Whatever the codec made of the garbage, the next request is answered.
    assert!(r.get("result").is_some() || r.get("error").is_some(), "{r}");
    let again = ok(c.request("skillmem/stats", json!({})).unwrap());
    assert_eq!(again["notes"], 0);
}

#[test]
fn skill_md_missing_or_not_utf8_is_an_error() {
    let w = World::new();
    let empty = w.tmp.path().join("empty-skill");
    std::fs::create_dir_all(&empty).unwrap();
    let latin1 = w.tmp.path().join("latin1");
    std::fs::create_dir_all(&latin1).unwrap();
    std::fs::write(latin1.join("SKILL.md"), b"---\nname: caf\xe9\n---\n").unwrap();
    let mut c = w.spawn();
    let e = err(c
        .request("skillmem/toolAfter", json!({ "sessionId": "s", "callId": "1", "tool": "skill", "args": { "name": "x" }, "output": "", "metadata": { "dir": empty } }))
        .unwrap());
    assert_eq!(e["code"], -32002, "{e}");
    let e = err(c
        .request("skillmem/toolAfter", json!({ "sessionId": "s", "callId": "2", "tool": "skill", "args": { "name": "x" }, "output": "", "metadata": { "dir": latin1 } }))
        .unwrap());
    assert_eq!(e["code"], -32005, "{e}");
    assert!(e["message"].as_str().unwrap().contains("UTF-8"));
}

#[test]
fn provenance_in_every_form() {
    let w = World::new();
    // A skill that lives outside every searched folder: only provenance can find it.
    let odd = w.tmp.path().join("odd place/my skill");
    std::fs::create_dir_all(&odd).unwrap();
    std::fs::write(odd.join("SKILL.md"), common::ENABLED.replace("NAME", "odd")).unwrap();
    let mut c = w.spawn();
    let write = |c: &mut skillmem::client::Client, dir: &std::path::Path| {
        ok(c.request(
            "skillmem/toolAfter",
            json!({ "sessionId": "s", "callId": "w", "tool": "skill", "args": { "name": "odd" }, "output": "", "metadata": { "dir": dir } }),
        )
        .unwrap());
    };
    write(&mut c, &odd);
    note(&mut c, "odd", "gotcha", "", "The odd skill remembers this.");
    let url = format!("file://{}", odd.display().to_string().replace(' ', "%20"));
    let outputs = [
        format!("Base directory for this skill: {}", odd.display()),
        format!("Base directory for this skill: {url}"),
        format!("**Base directory**: {}", odd.display()),
        format!("Base directory for this skill: /nowhere\nBase directory for this skill: {}", odd.display()),
    ];
    for (i, output) in outputs.iter().enumerate() {
        // A fresh server, so no directory is remembered from an earlier call.
        let mut c = w.spawn();
        let r = ok(c
            .request("skillmem/toolAfter", json!({ "sessionId": "s", "callId": i.to_string(), "tool": "skill", "args": { "name": "odd" }, "output": output }))
            .unwrap());
        assert!(r["append"].as_str().is_some_and(|b| b.contains("remembers this")), "{output}: {r}");
    }
    // By name, from the workspace's skill folders (Claude Code's args.skill).
    let dir = w.enabled_skill("by-name");
    let mut c = w.spawn();
    note(&mut c, "by-name", "gotcha", "", "Found by name.");
    let r = ok(c.request("skillmem/toolAfter", json!({ "sessionId": "s", "callId": "n", "tool": "Skill", "args": { "skill": "by-name" }, "output": "loaded" })).unwrap());
    assert!(block_of(&r).contains("Found by name."));
    drop(dir);
}

#[test]
fn disabled_and_malformed_skills_get_no_block_and_one_warning() {
    let w = World::new();
    let plain = w.skill("plain", "---\nname: plain\n---\n");
    let broken = w.skill("broken", "---\nname: [oops\nskill-memory: {enabled: true\n---\n");
    let mut c = w.spawn();
    let r = load(&mut c, "1", "plain", &plain, None);
    assert_eq!(r["append"], Value::Null);
    for i in 0..3 {
        let r = load(&mut c, &format!("b{i}"), "broken", &broken, None);
        assert_eq!(r["append"], Value::Null);
    }
    let r = ok(c
        .request(
            "skillmem/toolAfter",
            json!({ "sessionId": "s", "callId": "x", "tool": "read", "args": { "name": "plain" }, "output": "" }),
        )
        .unwrap());
    assert_eq!(r["append"], Value::Null);
    assert_eq!(r["skill"], Value::Null);
    let warnings: Vec<&Value> = c
        .notifications
        .iter()
        .filter(|n| {
            n["method"] == "window/logMessage" && n["params"]["message"].as_str().unwrap_or("").contains("malformed")
        })
        .collect();
    assert_eq!(warnings.len(), 1, "{:?}", c.notifications);
}

#[test]
fn a_block_holds_every_note_it_has_room_for() {
    // Three notes, an intent that matches one: the match comes first, and the two others
    // (a must-not-skip step among them) still fill the block's room.
    let w = World::new();
    let dir = w.enabled_skill("deploy");
    let mut c = w.spawn();
    let matched = note(&mut c, "deploy", "fix", "rollback failed", "Run `kubectl rollout undo` when a rollback fails.");
    let step = note(&mut c, "deploy", "workflow", "", "Always tag the release before pushing the image.");
    let other = note(&mut c, "deploy", "discovery", "", "Staging shares the production database read replica.");
    let want: Vec<i64> = [&matched, &step, &other].iter().map(|n| n["id"].as_i64().unwrap()).collect();
    let r = load(&mut c, "c1", "deploy", &dir, Some("the rollback failed"));
    let ids: Vec<i64> = r["noteIds"].as_array().unwrap().iter().map(|v| v.as_i64().unwrap()).collect();
    assert_eq!(ids.len(), 3, "{r}");
    assert_eq!(ids[0], want[0], "the matching note comes first: {r}");
    for id in &want {
        assert!(ids.contains(id), "note {id} left out: {r}");
    }
    let b = block_of(&r);
    assert!(b.contains("tag the release") && b.contains("read replica"), "{b}");
    let r = ok(c.request("skillmem/recall", json!({ "skill": "deploy", "intent": "the rollback failed" })).unwrap());
    assert_eq!(r["notes"].as_array().unwrap().len(), 3, "{r}");
    assert_eq!(r["notes"][0]["id"].as_i64(), Some(want[0]), "{r}");
}

#[test]
fn a_colon_in_the_description_keeps_memory_on() {
    // `description: Use for jq work: filtering arrays` is not valid YAML (an unquoted ": "),
    // but hosts list and load such skills; memory must stay on, in both styles.
    let w = World::new();
    let flow = w.skill(
        "jq",
        "---\nname: jq\ndescription: Use for jq work: filtering arrays\nskill-memory: { enabled: true }\n---\n# jq\n",
    );
    let block = w.skill(
        "yq",
        "---\nname: yq\ndescription: Use for yq work: editing YAML\nskill-memory:\n  enabled: true\n---\n# yq\n",
    );
    let mut c = w.spawn();
    for (skill, dir) in [("jq", &flow), ("yq", &block)] {
        let r =
            note(&mut c, skill, "gotcha", "filter arrays", &format!("{skill}: use map(select(...)) to keep an array."));
        assert_eq!(r["status"], "inserted", "{r}");
        let r = load(&mut c, &format!("c-{skill}"), skill, dir, Some("filter arrays"));
        assert!(block_of(&r).contains("map(select(...))"), "{r}");
        let r = ok(c.request("skillmem/recall", json!({ "skill": skill, "intent": "filter arrays" })).unwrap());
        assert_eq!(r["notes"].as_array().unwrap().len(), 1, "{r}");
    }
    let noisy: Vec<&Value> = c.notifications.iter().filter(|n| n["method"] == "window/logMessage").collect();
    assert!(noisy.is_empty(), "a frontmatter hosts accept drew warnings: {noisy:?}");
}

#[test]
fn an_unreadable_frontmatter_is_named_in_the_refusal() {
    let w = World::new();
    w.skill("broken", "---\nname: broken\ndescription: a: b\nskill-memory: { enabled: true\n---\n");
    let mut c = w.spawn();
    for (method, params) in [
        ("skillmem/note", json!({ "skill": "broken", "kind": "gotcha", "delta": "x" })),
        ("skillmem/recall", json!({ "skill": "broken" })),
    ] {
        let e = err(c.request(method, params).unwrap());
        assert_eq!(e["code"], -32001, "{e}");
        let msg = e["message"].as_str().unwrap();
        assert!(msg.contains("SKILL.md") && msg.contains("line 4"), "{msg}");
        assert!(msg.contains("skill-memory"), "{msg}");
        assert!(!msg.contains("enable it"), "{msg}");
    }
}

#[test]
fn enabled_skills_globs_turn_memory_on() {
    let w = World::new();
    let dir = w.skill("git-worktree", "---\nname: git-worktree\n---\n");
    let mut c = w.spawn_with(json!({ "memory": { "enabledSkills": ["git-*"] } }));
    note(&mut c, "git-worktree", "workflow", "", "Prune stale worktrees with git worktree prune.");
    let r = load(&mut c, "1", "git-worktree", &dir, None);
    assert!(block_of(&r).contains("worktree prune"));
}

#[test]
fn budget_is_respected_framing_included() {
    let w = World::new();
    w.enabled_skill("big");
    // Synthetic lessons that differ by one made-up word are near-duplicates to a semantic
    // embedder (the default, static): the hash embedder keeps them apart.
    // Every note in the budget, trusted or not (the share unverified notes get is tested apart).
    let mut c = w.spawn_with(json!({ "embedding": { "provider": "hash" }, "memory": { "unverifiedShare": 1.0 } }));
    for i in 0..40 {
        let words: String = (0..25).map(|j| format!("w{}x{} ", i * 31 + j, j * 7 + i)).collect();
        note(&mut c, "big", "discovery", &format!("topic {i}"), &format!("Lesson {i}: {words}"));
    }
    for max in [300usize, 500, 900] {
        let r = ok(c.request("skillmem/recall", json!({ "skill": "big", "maxTokens": max })).unwrap());
        let b = r["block"].as_str().unwrap();
        assert!(b.chars().count().div_ceil(4) <= max, "{} tokens > {max}", b.len() / 4);
        let n = r["notes"].as_array().unwrap().len();
        assert!((1..40).contains(&n), "{n} notes for {max}");
        assert!(b.contains(&format!("count=\"{n}\"")));
    }
    let r = ok(c.request("skillmem/recall", json!({ "skill": "big", "limit": 3 })).unwrap());
    assert_eq!(r["notes"].as_array().unwrap().len(), 3);
}

/// A block with room for more notes than are loaded before it is first rendered still shows
/// every note that fits (the rest of the ranked head is loaded and the block rendered again).
#[test]
fn a_roomy_block_shows_every_note_that_fits() {
    let w = World::new();
    w.enabled_skill("many");
    let mut c = w.spawn_with(json!({ "embedding": { "provider": "hash" } }));
    for i in 0..80 {
        note(&mut c, "many", "fix", &format!("case {i}"), &format!("Set flag q{i}z{} first.", i * 7));
    }
    let r = ok(c.request("skillmem/recall", json!({ "skill": "many", "maxTokens": 20000 })).unwrap());
    assert_eq!(r["notes"].as_array().unwrap().len(), 80, "every note fits");
    let b = r["block"].as_str().unwrap();
    assert!(b.contains("count=\"80\""));
    for i in [0, 47, 48, 79] {
        assert!(b.contains(&format!("q{i}z{}", i * 7)), "note {i} missing");
    }
    // A budget the first notes fill: the block is as full as it can be, within the budget.
    let r = ok(c.request("skillmem/recall", json!({ "skill": "many", "maxTokens": 600 })).unwrap());
    let n = r["notes"].as_array().unwrap().len();
    assert!((1..48).contains(&n), "{n}");
    assert!(r["block"].as_str().unwrap().chars().count().div_ceil(4) <= 600);
}

fn unescape(s: &str) -> String {
    s.replace("&lt;", "<").replace("&gt;", ">").replace("&quot;", "\"").replace("&apos;", "'").replace("&amp;", "&")
}

#[test]
fn escaping_round_trips_and_blocks_are_deterministic() {
    let w = World::new();
    let dir = w.enabled_skill("xml");
    let mut c = w.spawn();
    let delta = r#"Use <a href="x">&amp;</a> with 'quotes' & ampersands"#;
    let intent = r#"intent with "quotes" & <tags>"#;
    note(&mut c, "xml", "gotcha", intent, delta);
    let r1 = load(&mut c, "1", "xml", &dir, Some("quotes tags"));
    let r2 = load(&mut c, "2", "xml", &dir, Some("quotes tags"));
    assert_eq!(r1["append"], r2["append"], "the block changed between identical calls");
    let b = block_of(&r1);
    let inner = b.split("<delta>").nth(1).unwrap().split("</delta>").next().unwrap();
    assert!(!inner.contains('<') && !inner.contains('"') && !inner.contains('\''), "{inner}");
    assert_eq!(unescape(inner), delta);
    let attr = b.split("intent=\"").nth(1).unwrap().split('"').next().unwrap();
    assert_eq!(unescape(attr), intent);
}

#[test]
fn pin_edit_forget() {
    let w = World::new();
    w.enabled_skill("s");
    let mut c = w.spawn();
    let a = note(&mut c, "s", "gotcha", "alpha", "Alpha lesson about widgets.");
    let b = note(&mut c, "s", "gotcha", "beta", "Beta lesson about gadgets.");
    ok(c.request("skillmem/pin", json!({ "id": b["id"], "pinned": true })).unwrap());
    let r = ok(c.request("skillmem/recall", json!({ "skill": "s", "intent": "widgets" })).unwrap());
    assert_eq!(r["notes"][0]["id"], b["id"], "pinned note must come first");
    assert_eq!(r["notes"][0]["pinned"], true);
    assert!(r["block"].as_str().unwrap().contains("pinned=\"1\""));
    ok(c.request("skillmem/edit", json!({ "id": a["id"], "delta": "Alpha lesson rewritten about sprockets." }))
        .unwrap());
    let r = ok(c.request("skillmem/recall", json!({ "skill": "s", "intent": "sprockets" })).unwrap());
    assert!(r["notes"]
        .as_array()
        .unwrap()
        .iter()
        .any(|n| n["id"] == a["id"] && n["delta"].as_str().unwrap().contains("sprockets")));
    ok(c.request("skillmem/forget", json!({ "id": a["id"] })).unwrap());
    let r = ok(c.request("skillmem/recall", json!({ "skill": "s", "intent": "sprockets" })).unwrap());
    assert!(r["notes"].as_array().unwrap().iter().all(|n| n["id"] != a["id"]));
    // Retired, not deleted: an edit says to restore it first.
    let e = err(c.request("skillmem/edit", json!({ "id": a["id"], "delta": "again" })).unwrap());
    assert_eq!(e["code"], -32602, "{e}");
    assert!(e["message"].as_str().unwrap().contains("restore"), "{e}");
    let e = err(c.request("skillmem/edit", json!({ "id": 424242, "delta": "again" })).unwrap());
    assert_eq!(e["code"], -32002, "{e}");
}

#[test]
fn a_burst_of_before_after_pairs_always_sees_its_intent() {
    let w = World::new();
    let dir = w.enabled_skill("burst");
    let mut c = w.spawn();
    let topics = ["apples", "bridges", "cobalt", "dolphins", "engines"];
    let mut ids = std::collections::HashMap::new();
    for t in topics {
        let r = note(&mut c, "burst", "discovery", t, &format!("Everything about {t} in one lesson."));
        ids.insert(t, r["id"].clone());
    }
    let output = format!("Base directory for this skill: {}", dir.display());
    let mut pending = vec![];
    for i in 0..60 {
        let t = topics[i % topics.len()];
        let call = format!("call-{i}");
        c.notify(
            "skillmem/toolBefore",
            json!({ "sessionId": "burst", "callId": call, "tool": "skill", "args": { "name": "burst", "intent": t } }),
        )
        .unwrap();
        let id = c
            .send_request("skillmem/toolAfter", json!({ "sessionId": "burst", "callId": call, "tool": "skill", "args": { "name": "burst" }, "output": output }))
            .unwrap();
        pending.push((id, t));
    }
    for (id, t) in pending {
        let r = ok(c.wait_for(id).unwrap());
        assert_ne!(r["mode"], "recent", "call for {t} lost its intent: {r}");
        assert_eq!(r["noteIds"][0], ids[t], "call for {t}: {r}");
    }
}

#[test]
fn notes_survive_a_restart() {
    let w = World::new();
    w.enabled_skill("p");
    let mut c = w.spawn();
    let a = note(&mut c, "p", "workflow", "", "Persist me across restarts.");
    assert_eq!(c.shutdown().unwrap(), 0);
    let mut c = w.spawn();
    let r = ok(c.request("skillmem/recall", json!({ "skill": "p" })).unwrap());
    assert_eq!(r["notes"][0]["id"], a["id"]);
    let s = ok(c.request("skillmem/stats", json!({})).unwrap());
    assert_eq!(s["notes"], 1);
    assert_eq!(s["skills"][0]["skill"], "p");
}

#[test]
fn two_sidecars_write_to_one_data_dir_at_once() {
    let w = World::new();
    w.enabled_skill("shared");
    // Synthetic lessons that differ by one made-up word are near-duplicates to a semantic
    // embedder (the default, static): the hash embedder keeps them apart.
    let mut a = w.spawn_with(json!({ "embedding": { "provider": "hash" } }));
    let mut b = w.spawn_with(json!({ "embedding": { "provider": "hash" } }));
    let n = 150;
    let mut pa = vec![];
    let mut pb = vec![];
    for i in 0..n {
        pa.push(
            a.send_request(
                "skillmem/note",
                json!({ "skill": "shared", "kind": "fix", "delta": format!("alpha writer lesson {i} zq{i}x") }),
            )
            .unwrap(),
        );
        pb.push(
            b.send_request(
                "skillmem/note",
                json!({ "skill": "shared", "kind": "fix", "delta": format!("beta writer lesson {i} wk{i}y") }),
            )
            .unwrap(),
        );
    }
    for id in pa {
        let r = ok(a.wait_for(id).unwrap());
        assert_eq!(r["status"], "inserted");
    }
    for id in pb {
        let r = ok(b.wait_for(id).unwrap());
        assert_eq!(r["status"], "inserted");
    }
    let s = ok(a.request("skillmem/stats", json!({})).unwrap());
    assert_eq!(s["notes"], 2 * n);
    // Each sees the other's notes in recall.
    let r =
        ok(a.request("skillmem/recall", json!({ "skill": "shared", "intent": "beta writer lesson 7 wk7y" })).unwrap());
    assert!(r["notes"][0]["delta"].as_str().unwrap().contains("wk7y"), "{r}");
}

#[test]
fn sigkill_mid_burst_loses_no_acknowledged_note() {
    let w = World::new();
    w.enabled_skill("k");
    // Synthetic lessons that differ by one made-up word are near-duplicates to a semantic
    // embedder (the default, static): the hash embedder keeps them apart.
    let mut c = w.spawn_with(json!({ "embedding": { "provider": "hash" } }));
    let mut sent = vec![];
    for i in 0..400 {
        sent.push(
            c.send_request(
                "skillmem/note",
                json!({ "skill": "k", "kind": "gotcha", "delta": format!("lesson {i} token{i}q") }),
            )
            .unwrap(),
        );
    }
    let mut acked = vec![];
    for id in sent.iter().take(120) {
        let r = ok(c.wait_for(*id).unwrap());
        acked.push(r["id"].as_i64().unwrap());
    }
    c.child.kill().unwrap(); // SIGKILL
    c.child.wait().unwrap();
    drop(c);
    let conn = rusqlite::Connection::open(w.data.join("skillmem.db")).unwrap();
    let check: String = conn.query_row("PRAGMA integrity_check", [], |r| r.get(0)).unwrap();
    assert_eq!(check, "ok");
    drop(conn);
    let mut c = w.spawn();
    let s = ok(c.request("skillmem/stats", json!({})).unwrap());
    assert!(s["notes"].as_i64().unwrap() >= acked.len() as i64);
    for id in acked {
        ok(c.request("skillmem/pin", json!({ "id": id, "pinned": false })).unwrap());
    }
}

#[test]
fn an_unwritable_data_dir_fails_initialize_with_a_clear_message() {
    let w = World::new();
    let file = w.tmp.path().join("not-a-dir");
    std::fs::write(&file, "x").unwrap();
    let mut c = w.spawn_raw();
    let r = c.initialize(&w.ws, json!({ "dataDir": file.join("sub") })).unwrap();
    let e = err(r);
    assert!(e["message"].as_str().unwrap().contains("data directory"), "{e}");
    assert_eq!(e["data"]["kind"], "storage");
}

#[test]
fn wrong_config_types_fail_initialize_and_unknown_keys_warn() {
    let w = World::new();
    let mut c = w.spawn_raw();
    let e = err(c.initialize(&w.ws, json!({ "memory": { "maxTokens": "lots" } })).unwrap());
    assert!(e["message"].as_str().unwrap().contains("memory.maxTokens"), "{e}");
    let mut c = w.spawn_raw();
    ok(c.initialize(&w.ws, json!({ "colour": "blue" })).unwrap());
    // The warning is a notification, so it may overtake or trail a response: ask a few times.
    let seen = |c: &skillmem::client::Client| {
        c.notifications.iter().any(|n| n["params"]["message"].as_str().unwrap_or("").contains("colour"))
    };
    for _ in 0..20 {
        ok(c.request("skillmem/stats", json!({})).unwrap());
        if seen(&c) {
            break;
        }
    }
    assert!(seen(&c), "{:?}", c.notifications);
}

#[test]
fn workspace_toml_is_read_and_init_options_win() {
    let w = World::new();
    std::fs::write(w.ws.join("skillmem.toml"), "[memory]\nmax_tokens = 250\nunverified_share = 1.0\nenabled_skills = [\"t*\"]\n\n# near-identical synthetic lessons: see budget_is_respected_framing_included\n[embedding]\nprovider = \"hash\"\n").unwrap();
    let dir = w.skill("tiny", "---\nname: tiny\n---\n");
    let mut c = w.spawn();
    for i in 0..5 {
        note(&mut c, "tiny", "gotcha", "", &format!("lesson alpha{i} beta{i} gamma{i} delta{i}"));
    }
    let r = load(&mut c, "1", "tiny", &dir, None);
    let b = block_of(&r);
    assert!(b.trim_start().chars().count().div_ceil(4) <= 250);
    assert!(r["noteIds"].as_array().unwrap().len() < 5, "the budget leaves notes out: {r}");
    let mut c = w.spawn_with(json!({ "memory": { "maxTokens": 5000 } }));
    let r = load(&mut c, "2", "tiny", &dir, None);
    assert_eq!(r["noteIds"].as_array().unwrap().len(), 5);
}

#[test]
fn global_notes_cross_projects_and_project_notes_do_not() {
    let w = World::new();
    w.enabled_skill("g");
    let mut a = w.spawn_with(json!({ "projectId": "project-a" }));
    note(&mut a, "g", "gotcha", "", "Project A private lesson.");
    ok(a.request(
        "skillmem/note",
        json!({ "skill": "g", "kind": "gotcha", "delta": "Global lesson for all.", "scope": "global" }),
    )
    .unwrap());
    let mut b = w.spawn_with(json!({ "projectId": "project-b" }));
    let r = ok(b.request("skillmem/recall", json!({ "skill": "g" })).unwrap());
    let deltas: Vec<&str> = r["notes"].as_array().unwrap().iter().map(|n| n["delta"].as_str().unwrap()).collect();
    assert_eq!(deltas, vec!["Global lesson for all."]);
    assert_eq!(r["notes"][0]["scope"], "global");
    let s = ok(b.request("skillmem/stats", json!({})).unwrap());
    assert_eq!(s["notes"], 1);
}

#[test]
fn cli_commands_share_the_store() {
    let w = World::new();
    w.enabled_skill("cli");
    let (code, out, errs) = w.cli(&["note", "cli", "--kind", "fix", "--delta", "CLI lesson about flags.", "--json"]);
    assert_eq!(code, 0, "{errs}");
    let v: Value = serde_json::from_str(&out).unwrap();
    assert_eq!(v["status"], "inserted");
    let (code, out, _) = w.cli(&["recall", "cli", "--intent", "flags"]);
    assert_eq!(code, 0);
    assert!(out.contains("CLI lesson about flags."), "{out}");
    let (code, out, _) = w.cli(&["stats", "--json"]);
    assert_eq!(code, 0);
    assert_eq!(serde_json::from_str::<Value>(&out).unwrap()["notes"], 1);
    let (code, _, errs) = w.cli(&["note", "cli", "--kind", "nope", "--delta", "x"]);
    assert_ne!(code, 0);
    assert!(errs.contains("gotcha, discovery, fix, workflow"), "{errs}");
}
