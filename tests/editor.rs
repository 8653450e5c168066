//! SKILL.md language features through the protocol, the way an editor's language client uses
//! them: `skillmem serve --stdio`, didOpen / didChange, publishDiagnostics, hover, completion,
//! code actions.

mod common;

use common::{note, ok, World};
use serde_json::{json, Value};

fn uri(p: &std::path::Path) -> String {
    format!("file://{}", p.display())
}

fn codes(diags: &Value) -> Vec<String> {
    diags["diagnostics"].as_array().unwrap().iter().map(|d| d["code"].as_str().unwrap().to_string()).collect()
}

/// `skillmem serve --stdio`, as VS Code's language client starts it.
fn spawn_stdio(w: &World) -> skillmem::client::Client {
    let envs = w.envs();
    let envs: Vec<(&str, &str)> = envs.iter().map(|(k, v)| (*k, v.as_str())).collect();
    let exe = std::path::Path::new(env!("CARGO_BIN_EXE_skillmem"));
    skillmem::client::Client::spawn_args(exe, &["serve", "--stdio"], &envs, true).unwrap()
}

fn open(c: &mut skillmem::client::Client, uri: &str, text: &str) {
    c.notify(
        "textDocument/didOpen",
        json!({ "textDocument": { "uri": uri, "languageId": "markdown", "version": 1, "text": text } }),
    )
    .unwrap();
}

#[test]
fn diagnostics_follow_every_change_and_point_at_the_key() {
    let w = World::new();
    let dir = w.skill("pdf", "placeholder");
    let file = uri(&dir.join("SKILL.md"));
    let mut c = spawn_stdio(&w);
    let caps =
        ok(c.request("initialize", json!({ "processId": null, "rootUri": uri(&w.ws), "capabilities": {} })).unwrap());
    assert_eq!(caps["capabilities"]["textDocumentSync"], 1, "full sync: {caps}");
    c.notify("initialized", json!({})).unwrap();

    // Not a SKILL.md: nothing is published for it, so the first diagnostics are the skill's.
    open(&mut c, &uri(&w.ws.join("README.md")), "---\nname: Bad Name\n---\n");
    let text = "---\nname: pdf-tools\ndescription: PDFs\nallowed-tools: Bash\n---\n# pdf\n";
    open(&mut c, &file, text);
    let d = c.next_notification("textDocument/publishDiagnostics").unwrap();
    assert_eq!(d["uri"], file);
    assert_eq!(d["version"], 1);
    let mut got = codes(&d);
    got.sort();
    assert_eq!(got, ["allowed-tools", "name-differs-from-folder"], "{d}");
    let name = d["diagnostics"].as_array().unwrap().iter().find(|x| x["code"] == "name-differs-from-folder").unwrap();
    assert_eq!(name["range"]["start"], json!({ "line": 1, "character": 6 }), "the range is the value: {name}");
    assert_eq!(name["range"]["end"], json!({ "line": 1, "character": 15 }));
    assert_eq!(name["source"], "skillmem");

    // A change with a broken name: the diagnostics follow the new text and version.
    c.notify(
        "textDocument/didChange",
        json!({ "textDocument": { "uri": file, "version": 2 },
                "contentChanges": [{ "text": "---\nname: PDF_Tools\n---\n" }] }),
    )
    .unwrap();
    let d = c.next_notification("textDocument/publishDiagnostics").unwrap();
    assert_eq!(d["version"], 2);
    let got = codes(&d);
    assert!(got.contains(&"invalid-name".to_string()) && got.contains(&"missing-description".to_string()), "{d}");

    // Fixed: no diagnostics; closing clears them.
    c.notify(
        "textDocument/didChange",
        json!({ "textDocument": { "uri": file, "version": 3 },
                "contentChanges": [{ "text": "---\nname: pdf\ndescription: PDFs\n---\n" }] }),
    )
    .unwrap();
    let d = c.next_notification("textDocument/publishDiagnostics").unwrap();
    assert_eq!((d["version"].clone(), codes(&d).len()), (json!(3), 0), "{d}");
    c.notify("textDocument/didClose", json!({ "textDocument": { "uri": file } })).unwrap();
    let d = c.next_notification("textDocument/publishDiagnostics").unwrap();
    assert_eq!(codes(&d).len(), 0);
    assert_eq!(c.shutdown().unwrap(), 0);
}

#[test]
fn hover_shows_the_skills_memory_and_completion_and_fixes_help_write_it() {
    let w = World::new();
    let dir = w.enabled_skill("jq");
    let file = uri(&dir.join("SKILL.md"));
    let mut c = spawn_stdio(&w);
    ok(c.initialize(&w.ws, json!({})).unwrap());
    note(&mut c, "jq", "fix", "index an array", "jq: Cannot index array with string: iterate with .[] first.");
    let pinned = note(&mut c, "jq", "gotcha", "", "jq -r prints raw strings, without quotes.");
    ok(c.request("skillmem/pin", json!({ "id": pinned["id"] })).unwrap());
    let text = std::fs::read_to_string(dir.join("SKILL.md")).unwrap();
    open(&mut c, &file, &text);
    c.next_notification("textDocument/publishDiagnostics").unwrap();

    let hover = ok(c
        .request(
            "textDocument/hover",
            json!({ "textDocument": { "uri": file }, "position": { "line": 1, "character": 2 } }),
        )
        .unwrap());
    let md = hover["contents"]["value"].as_str().unwrap();
    assert!(md.contains("memory is on by the frontmatter"), "{md}");
    assert!(md.contains("2 notes in this project, 0 global, 1 pinned"), "{md}");
    assert!(md.find("raw strings").unwrap() < md.find("Cannot index").unwrap(), "pinned first: {md}");
    // The hover counts no recall.
    let r = ok(c.request("skillmem/stats", json!({})).unwrap());
    assert_eq!(r["skills"][0]["recalls"], 0, "{r}");
    // The body has no hover.
    let body = ok(c
        .request(
            "textDocument/hover",
            json!({ "textDocument": { "uri": file }, "position": { "line": 6, "character": 1 } }),
        )
        .unwrap());
    assert!(body.is_null(), "{body}");

    // Completion of a top-level key, and of a skill-memory key.
    let draft = "---\nname: jq\nde\nskill-memory:\n  en\n---\n";
    c.notify(
        "textDocument/didChange",
        json!({ "textDocument": { "uri": file, "version": 2 }, "contentChanges": [{ "text": draft }] }),
    )
    .unwrap();
    let items = |c: &mut skillmem::client::Client, line: u32, character: u32| -> Vec<String> {
        let r = ok(c
            .request(
                "textDocument/completion",
                json!({ "textDocument": { "uri": file }, "position": { "line": line, "character": character } }),
            )
            .unwrap());
        r.as_array().map(|a| a.iter().map(|i| i["label"].as_str().unwrap().to_string()).collect()).unwrap_or_default()
    };
    let top = items(&mut c, 2, 2);
    assert!(top.contains(&"description".to_string()) && top.contains(&"skill-memory".to_string()), "{top:?}");
    let sub = items(&mut c, 4, 4);
    assert!(sub.contains(&"enabled".to_string()) && !sub.contains(&"description".to_string()), "{sub:?}");

    // Quick fixes: memory off → turn it on; a name unlike its folder → either side.
    let off = "---\nname: jq-tool\ndescription: jq\n---\n";
    c.notify(
        "textDocument/didChange",
        json!({ "textDocument": { "uri": file, "version": 3 }, "contentChanges": [{ "text": off }] }),
    )
    .unwrap();
    let actions = ok(c
        .request(
            "textDocument/codeAction",
            json!({ "textDocument": { "uri": file },
                    "range": { "start": { "line": 1, "character": 0 }, "end": { "line": 1, "character": 0 } },
                    "context": { "diagnostics": [] } }),
        )
        .unwrap());
    let titles: Vec<&str> = actions.as_array().unwrap().iter().map(|a| a["title"].as_str().unwrap()).collect();
    assert_eq!(titles.len(), 3, "{titles:?}");
    let memory = &actions[0]["edit"]["changes"][&file][0];
    assert_eq!(memory["newText"], "skill-memory: { enabled: true }\n", "{actions}");
    assert_eq!(memory["range"]["start"]["line"], 3, "before the closing ---: {memory}");
    let name = &actions[1]["edit"]["changes"][&file][0];
    assert_eq!(name["newText"], "jq", "{actions}");
    let rename = &actions[2]["edit"]["documentChanges"][0];
    assert_eq!(rename["kind"], "rename");
    assert_eq!(rename["newUri"], uri(&dir.with_file_name("jq-tool")), "{rename}");
    assert_eq!(c.shutdown().unwrap(), 0);
}
