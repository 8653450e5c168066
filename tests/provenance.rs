//! Where each note came from, through the protocol the way hosts write notes: the source, the
//! session, the host (the LSP client's name, or `host` in the configuration), and for the
//! historian the transcript and where in it (named by the host, or taken from the chunk's
//! records); `skillmem/notes` and `skillmem notes --json` carry it, a session's notes are listed
//! together, export and import carry it, `doctor` checks it. Real `skillmem serve` children.

mod common;

use common::{ok, World};
use serde_json::{json, Value};
use skillmem::client::Client;

fn notes(c: &mut Client, params: Value) -> Vec<Value> {
    ok(c.request("skillmem/notes", params).unwrap())["notes"].as_array().unwrap().clone()
}

fn by_text<'a>(notes: &'a [Value], text: &str) -> &'a Value {
    notes.iter().find(|n| n["delta"].as_str().unwrap().contains(text)).unwrap_or_else(|| panic!("{text}: {notes:?}"))
}

const OUT: &str = "<skill_observations>\n\
* jq | gotcha | jq -r prints raw strings; without it every string keeps its JSON quotes.\n\
</skill_observations>";

#[test]
fn every_note_says_where_it_came_from() {
    let w = World::new();
    w.enabled_skill("jq");
    let mut c = w.spawn_with(json!({ "host": "opencode" }));
    ok(c.request(
        "skillmem/note",
        json!({ "sessionId": "ses_a", "skill": "jq", "kind": "workflow",
                "delta": "Run jq with --arg for shell values; never splice them into the filter." }),
    )
    .unwrap());
    // The chunk's own records name where it is; the host names the transcript.
    let records = [
        json!({ "type": "user", "uuid": "u1", "message": { "role": "user", "content": "parse the logs" } }),
        json!({ "type": "assistant", "uuid": "u2", "message": { "role": "assistant", "content": [
            { "type": "tool_use", "id": "t1", "name": "Skill", "input": { "skill": "jq" } } ] } }),
        json!({ "type": "assistant", "uuid": "u2b", "message": { "role": "assistant", "content": [
            { "type": "tool_use", "id": "t2", "name": "Bash", "input": { "command": "jq -r .name logs.json" } } ] } }),
        json!({ "type": "assistant", "uuid": "u3", "message": { "role": "assistant", "content": "done" } }),
    ];
    ok(c.request(
        "skillmem/transcriptChunk",
        json!({ "sessionId": "ses_a", "format": "claude-code", "messages": records,
                "transcript": "/home/me/.claude/projects/p/ses_a.jsonl" }),
    )
    .unwrap());
    ok(c.request("skillmem/historianResult", json!({ "sessionId": "ses_a", "output": OUT })).unwrap());
    // Named by the host on the result itself.
    ok(c.request(
        "skillmem/historianResult",
        json!({ "sessionId": "ses_b", "transcript": "ses_b.jsonl", "transcriptAt": "bytes 0-4096",
                "output": "<skill_observations>\n* jq | fix | jq --slurp reads a stream of objects into one array; without it `length` counts each object.\n</skill_observations>" }),
    )
    .unwrap());

    let all = notes(&mut c, json!({ "skill": "jq" }));
    let agent = by_text(&all, "--arg for shell values");
    assert_eq!((agent["source"].as_str(), agent["sessionId"].as_str()), (Some("agent"), Some("ses_a")), "{agent}");
    assert_eq!(agent["host"], "opencode", "{agent}");
    assert!(agent.get("transcript").is_none(), "{agent}");
    let hist = by_text(&all, "raw strings");
    assert_eq!(hist["source"], "historian", "{hist}");
    assert_eq!(hist["transcript"], "/home/me/.claude/projects/p/ses_a.jsonl", "{hist}");
    assert_eq!(hist["transcriptAt"], "messages u1..u3", "{hist}");
    assert_eq!(hist["host"], "opencode", "{hist}");
    let named = by_text(&all, "--slurp");
    assert_eq!(
        (named["transcript"].as_str(), named["transcriptAt"].as_str()),
        (Some("ses_b.jsonl"), Some("bytes 0-4096"))
    );

    // A session's notes, together.
    let session = notes(&mut c, json!({ "sessionId": "ses_a" }));
    assert_eq!(session.len(), 2, "{session:?}");
    assert_eq!(c.shutdown().unwrap(), 0);

    // The LSP client's own name when the configuration names none.
    let mut c = w.spawn_raw();
    let uri = format!("file://{}", w.ws.display());
    let r = c
        .request(
            "initialize",
            json!({ "processId": null, "rootUri": uri, "capabilities": {}, "clientInfo": { "name": "Neovim" } }),
        )
        .unwrap();
    assert!(r.get("result").is_some(), "{r}");
    c.notify("initialized", json!({})).unwrap();
    ok(c.request(
        "skillmem/note",
        json!({ "skill": "jq", "kind": "fix", "delta": "jq -e exits 1 when the result is null or false." }),
    )
    .unwrap());
    let all = notes(&mut c, json!({ "skill": "jq" }));
    assert_eq!(by_text(&all, "jq -e exits")["host"], "Neovim");
    assert_eq!(c.shutdown().unwrap(), 0);

    // The CLI is a host of its own, and `notes --json` carries the same fields.
    let (code, _, e) = w.cli(&["note", "jq", "--kind", "gotcha", "--delta", "jq --tab indents with tabs, not spaces."]);
    assert_eq!(code, 0, "{e}");
    let (code, out, e) = w.cli(&["notes", "jq", "--json"]);
    assert_eq!(code, 0, "{e}");
    let page: Value = serde_json::from_str(&out).unwrap();
    let listed = page["notes"].as_array().unwrap();
    assert_eq!(by_text(listed, "--tab indents")["host"], "cli");
    assert_eq!(by_text(listed, "raw strings")["transcriptAt"], "messages u1..u3");
    let (_, out, _) = w.cli(&["notes", "--session", "ses_a"]);
    assert!(out.contains("host opencode, session ses_a") && out.contains("2 of 2 notes"), "{out}");

    // doctor reads the provenance.
    let (code, out, e) = w.cli(&["doctor", "--json"]);
    assert!(code == 0 || code == 1, "{e}");
    let d: Value = serde_json::from_str(&out).unwrap();
    let p = d["checks"].as_array().unwrap().iter().find(|c| c["name"] == "provenance").cloned().unwrap();
    assert_eq!(p["status"], "ok", "{p}");
    assert!(p["detail"].as_str().unwrap().contains("agent 3, historian 2"), "{p}");

    // Export and import carry it; the imported notes came by import.
    let file = w.tmp.path().join("export.jsonl");
    let (code, _, e) = w.cli(&["export", "--output", &file.display().to_string()]);
    assert_eq!(code, 0, "{e}");
    let v = World::new();
    v.enabled_skill("jq");
    let (code, _, e) = v.cli(&["import", &file.display().to_string()]);
    assert_eq!(code, 0, "{e}");
    let (_, out, _) = v.cli(&["notes", "jq", "--all-projects", "--json"]);
    let page: Value = serde_json::from_str(&out).unwrap();
    let listed = page["notes"].as_array().unwrap();
    let hist = by_text(listed, "raw strings");
    assert_eq!((hist["source"].as_str(), hist["originSource"].as_str()), (Some("import"), Some("historian")), "{hist}");
    assert_eq!(hist["transcript"], "/home/me/.claude/projects/p/ses_a.jsonl", "{hist}");
    assert_eq!((hist["sessionId"].as_str(), hist["host"].as_str()), (Some("ses_a"), Some("opencode")), "{hist}");
    let (_, md, _) = w.cli(&["export", "--format", "md"]);
    assert!(md.contains("host opencode · session ses_a"), "{md}");
}
