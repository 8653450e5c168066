//! `skillmem demo`: a short host session against a child `skillmem serve`, printed readably.
//!
//! Everything happens in a temporary folder (workspace, sample skill, data directory), so the
//! demo touches nothing of the user's.

use anyhow::{Context, Result};
use serde_json::{json, Value};

use super::out;
use skillmem::client::Client;

const SKILL_MD: &str = "---
name: csv-tools
description: Clean and convert CSV exports.
skill-memory:
  enabled: true
---
# csv-tools
Use the scripts in this folder to clean CSV exports.
";

fn show(label: &str, v: &Value) {
    out(&format!("── {label}"));
    out(&serde_json::to_string_pretty(v).unwrap_or_default());
}

fn call(c: &mut Client, method: &str, params: Value) -> Result<Value> {
    show(&format!("host → {method}"), &params);
    let r = c.request(method, params)?;
    let body = r.get("result").or_else(|| r.get("error")).cloned().unwrap_or(Value::Null);
    show(&format!("skillmem ← {method}"), &body);
    Ok(body)
}

pub fn run() -> Result<()> {
    let tmp = tempfile::tempdir()?;
    let ws = tmp.path().join("workspace");
    let skill_dir = ws.join(".claude/skills/csv-tools");
    std::fs::create_dir_all(&skill_dir)?;
    std::fs::write(skill_dir.join("SKILL.md"), SKILL_MD)?;
    let data = tmp.path().join("data");
    let exe = std::env::current_exe().context("cannot find the skillmem binary")?;
    out(&format!("skillmem demo: workspace {}, data dir {}\n", ws.display(), data.display()));

    let mut c = Client::spawn(&exe, &[("SKILLMEM_HOME", &data.display().to_string())], true)?;
    let init = c.initialize(&ws, json!({}))?;
    show("skillmem ← initialize", &init["result"]["capabilities"]["experimental"]);

    call(
        &mut c,
        "skillmem/toolDefinition",
        json!({ "tool": "skill", "parameters": { "type": "object", "properties": { "name": { "type": "string" } }, "required": ["name"] } }),
    )?;

    let load = |c: &mut Client, call_id: &str, intent: &str| -> Result<Value> {
        let args = json!({ "name": "csv-tools", "intent": intent });
        c.notify(
            "skillmem/toolBefore",
            json!({ "sessionId": "demo", "callId": call_id, "tool": "skill", "args": args }),
        )?;
        call(
            c,
            "skillmem/toolAfter",
            json!({
                "sessionId": "demo", "callId": call_id, "tool": "skill", "args": { "name": "csv-tools" },
                "output": format!("# csv-tools\n\nBase directory for this skill: {}\n", skill_dir.display()),
            }),
        )
    };
    out("\nFirst load of the skill: nothing remembered yet.");
    load(&mut c, "call-1", "split a CSV export by region")?;

    out("\nThe agent learns three lessons and notes them.");
    let first = call(
        &mut c,
        "skillmem/note",
        json!({ "sessionId": "demo", "skill": "csv-tools", "kind": "gotcha", "intent": "read an Excel CSV export", "delta": "Excel exports start with a UTF-8 BOM; open them with encoding='utf-8-sig' or the first header gets a \\ufeff prefix." }),
    )?;
    call(
        &mut c,
        "skillmem/note",
        json!({ "sessionId": "demo", "skill": "csv-tools", "kind": "fix", "intent": "csv.Error: field larger than field limit", "delta": "Raise the limit with csv.field_size_limit(sys.maxsize) before reading exports with long text cells." }),
    )?;
    call(
        &mut c,
        "skillmem/note",
        json!({ "sessionId": "demo", "skill": "csv-tools", "kind": "workflow", "intent": "split a CSV by a column", "delta": "Always sort by the split column first; the split script streams and starts a new file on every change of value." }),
    )?;
    out("\nThe same lesson again is recognised as a duplicate.");
    call(
        &mut c,
        "skillmem/note",
        json!({ "sessionId": "demo", "skill": "csv-tools", "kind": "gotcha", "intent": "read an Excel CSV export", "delta": "Excel exports start with a UTF-8 BOM; open them with encoding='utf-8-sig' or the first header gets a \\ufeff prefix." }),
    )?;

    out("\nA later session loads the skill with an intent: the block to append to the tool result.");
    let after = load(&mut c, "call-2", "the first column name has a weird \\ufeff prefix")?;
    if let Some(block) = after["append"].as_str() {
        out("── the tool result gets this appended:");
        out(block);
    }

    out("\nPin the BOM lesson so that it always shows, then recall explicitly.");
    call(&mut c, "skillmem/pin", json!({ "id": first["id"], "pinned": true }))?;
    let r =
        call(&mut c, "skillmem/recall", json!({ "skill": "csv-tools", "intent": "field larger than field limit" }))?;
    if let Some(block) = r["block"].as_str() {
        out("── recall block:");
        out(block);
    }

    out("\nThe limit lesson turns out incomplete: the correction names the note it replaces, takes its place, and the old text is kept as history.");
    let old = r["notes"].as_array().and_then(|n| n.iter().find(|n| n["kind"] == "fix")).map(|n| n["id"].clone());
    if let Some(old) = old {
        call(
            &mut c,
            "skillmem/note",
            json!({ "sessionId": "demo", "skill": "csv-tools", "kind": "fix", "replaces": old, "intent": "csv.Error: field larger than field limit", "delta": "Raise the limit with csv.field_size_limit(2**31 - 1) before reading exports with long text cells; sys.maxsize overflows on Windows." }),
        )?;
        call(&mut c, "skillmem/notes", json!({ "skill": "csv-tools", "includeSuperseded": true, "sort": "recent" }))?;
    }
    call(&mut c, "skillmem/stats", json!({}))?;
    let code = c.shutdown()?;
    out(&format!("\nshutdown + exit: the sidecar exited with code {code}."));
    Ok(())
}
