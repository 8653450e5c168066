//! `skillmem mcp` with a real MCP client (rmcp's client over a child process): the tools are
//! listed and run against the same store the CLI and the sidecar use.

#[rustfmt::skip] // shared file, formatted where it is owned
mod common;

use common::World;
use rmcp::model::{CallToolRequestParams, CallToolResult};
use rmcp::transport::{ConfigureCommandExt, TokioChildProcess};
use rmcp::ServiceExt;
use serde_json::{json, Value};

fn args(v: Value) -> serde_json::Map<String, Value> {
    v.as_object().cloned().unwrap()
}

fn text(r: &CallToolResult) -> String {
    r.content.iter().filter_map(|c| c.as_text().map(|t| t.text.clone())).collect::<Vec<_>>().join("\n")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_real_client_lists_and_runs_the_note_tools() {
    let w = World::new();
    w.enabled_skill("csv-tools");
    let envs = w.envs();
    let ws = w.ws.clone();
    let transport =
        TokioChildProcess::new(tokio::process::Command::new(env!("CARGO_BIN_EXE_skillmem")).configure(|c| {
            c.arg("mcp").current_dir(&ws).envs(envs.iter().map(|(k, v)| (*k, v.as_str())));
        }))
        .unwrap();
    let client = ().serve(transport).await.unwrap();

    let info = client.peer_info().unwrap();
    assert_eq!(info.server_info.as_ref().map(|s| s.name.as_str()), Some("skillmem"));
    let mut names: Vec<String> =
        client.list_all_tools().await.unwrap().into_iter().map(|t| t.name.to_string()).collect();
    names.sort();
    assert_eq!(names, ["skill_forget", "skill_note", "skill_pin", "skill_recall"]);

    let noted = client
        .call_tool(CallToolRequestParams::new("skill_note").with_arguments(args(json!({
            "skill": "csv-tools", "kind": "gotcha", "intent": "read an Excel export",
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

    let forgot = client
        .call_tool(CallToolRequestParams::new("skill_forget").with_arguments(args(json!({ "id": id }))))
        .await
        .unwrap();
    assert_eq!(text(&forgot), format!("Note {id} forgotten."));
    let gone = client
        .call_tool(CallToolRequestParams::new("skill_forget").with_arguments(args(json!({ "id": id }))))
        .await
        .unwrap();
    assert_eq!(gone.is_error, Some(true));

    assert!(client.call_tool(CallToolRequestParams::new("skill_teleport")).await.is_err(), "unknown tool");
    client.cancel().await.unwrap();

    // The same store: the CLI sees what the MCP door wrote.
    let (code, out, _) = w.cli(&["stats", "--json"]);
    assert_eq!(code, 0);
    let stats: Value = serde_json::from_str(&out).unwrap();
    assert_eq!(stats["notes"], 0, "the forgotten note is gone: {stats}");
}
