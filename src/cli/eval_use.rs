//! `skillmem eval use FILE...`: the use detector on labelled transcripts, by the host's path.
//!
//! Each line of a labels file is a JSON object `{"transcript": PATH, "host": "claude-code"|
//! "codex"|"gemini-cli"|"copilot"|"opencode", "notes": [{"id", "skill", "kind", "delta",
//! "used": BOOL, "ignored": BOOL, "why"}...]}`, `PATH` relative to the labels file: a session in
//! the host's own format (the four hosts' transcripts, read by their readers of tool calls;
//! for OpenCode, the `tool.execute.after` events its plugin receives, one `{"input",
//! "output"}` a line) and the notes its skill loads show, each labelled by hand: applied in the
//! session after the load (`used`), and whether an error it names came back unheeded
//! (`ignored`).
//!
//! Every labels file is replayed through a child `skillmem serve`, as a host drives it: every
//! note written with `skillmem/note`, each session's calls sent in order as
//! `skillmem/toolAfter` (a skill load as the skill tool's call, which shows the block; every
//! other call as the plugin or a door reports it: its arguments, `isError`, its exit status),
//! the session ended with `skillmem/sessionEnd`, and the counts read back with
//! `skillmem/notes`. Each transcript's skills get a name of their own (`SKILL-N`) so that no
//! session shows another's notes. Prints the precision and recall of `used` and of `ignored`
//! over the notes shown; `--verbose` lists every note judged otherwise than labelled, with the
//! specifics the rule looks for.
//!
//! A placebo set (`bench/use/placebo.py`) adds to a line its `group` (the sessions of one
//! group share their skills, so a later one is shown what an earlier one left) and, under
//! `mined`, the lessons mined from that session (`{"id", "skill", "kind", "delta", "label"}`),
//! written at its end under its id. The later sessions of its group never saw them, so every
//! use of them is a coincidence: the report's `placebo` gives sessions shown and sessions
//! judged to use them (the coincidental-use rate), in all and by label.

use std::collections::{BTreeSet, HashMap};
use std::path::{Path, PathBuf};

use anyhow::{Context, Result};
use serde::Deserialize;
use serde_json::{json, Value};

use super::eval::{answer, host_with};
use super::eval_mine::calls_of;
use super::{out, Global};
use skillmem::historian::mine::is_shell_tool;
use skillmem::historian::transcript;
use skillmem::memory::{evidence, provenance};

#[derive(Deserialize)]
struct Labelled {
    transcript: String,
    host: String,
    notes: Vec<LabelledNote>,
    /// Sessions of one group (a repository) share their skills: what one's end writes, the
    /// later ones are shown. Absent: the session's skills are its own.
    #[serde(default)]
    group: Option<String>,
    /// Lessons mined from this session (a placebo set): written at its end under its id, and
    /// shown to the later sessions of its group, whose agents never saw them.
    #[serde(default)]
    mined: Vec<MinedNote>,
}

#[derive(Deserialize, Clone)]
struct MinedNote {
    id: String,
    skill: String,
    #[serde(default = "gotcha")]
    kind: String,
    delta: String,
    /// The hand label of the lesson (useful, junk, harmful), for the breakdown.
    #[serde(default)]
    label: String,
}

#[derive(Deserialize, Clone)]
struct LabelledNote {
    id: String,
    skill: String,
    #[serde(default = "gotcha")]
    kind: String,
    #[serde(default)]
    intent: String,
    delta: String,
    used: bool,
    #[serde(default)]
    ignored: bool,
    #[serde(default)]
    why: String,
}

fn gotcha() -> String {
    "gotcha".into()
}

/// One thing a host sends, in order.
#[derive(Debug, Clone, PartialEq)]
pub enum Event {
    /// A skill load: the skill tool's call, answered with the block.
    Load { skill: String, intent: Option<String> },
    /// Any other call, as `toolAfter` params (without the session).
    Call { tool: String, args: Value, failed: bool, exit: Option<i64>, output: String },
}

/// The calls of a session in the host's format, in the order the host reports them.
///
/// For a transcript, its host's reader of tool calls gives every call and the skill in use at
/// it; a load is sent where the skill in use changes (after the skill tool's own call, or the
/// read of a `SKILL.md` that loaded it), and a shell call carries its command line, any other
/// its tool and arguments as the reader renders them. For OpenCode, each event is what the
/// plugin sends: a skill call as a load, every other call with its arguments, its exit status
/// and, when it failed, its output.
pub fn events(host: &str, text: &str) -> Result<Vec<Event>> {
    let records = transcript::records_from_jsonl(text);
    if host == "opencode" {
        return Ok(records.iter().filter_map(opencode_event).collect());
    }
    let calls = calls_of(host, &records)?;
    let mut out = vec![];
    let mut in_use: Option<String> = None;
    for c in calls {
        if c.skill_in_use != in_use {
            if let Some(s) = &c.skill_in_use {
                out.push(Event::Load { skill: s.clone(), intent: None });
            }
            in_use = c.skill_in_use.clone();
        }
        if provenance::is_skill_tool(&c.tool) {
            continue;
        }
        let args = if is_shell_tool(&c.tool) {
            json!({ "command": c.command })
        } else {
            let rest = c.command.strip_prefix(c.tool.as_str()).unwrap_or(&c.command).trim();
            json!({ "input": rest })
        };
        out.push(Event::Call { tool: c.tool, args, failed: c.failed, exit: None, output: c.output });
    }
    Ok(out)
}

/// One `tool.execute.after` event of OpenCode's plugin (`{"input": {tool, sessionID, callID,
/// args}, "output": {title, output, metadata}}`), as the plugin reports it.
fn opencode_event(r: &Value) -> Option<Event> {
    let tool = r.pointer("/input/tool")?.as_str()?.to_string();
    let args = r.pointer("/input/args").cloned().unwrap_or(json!({}));
    if provenance::is_skill_tool(&tool) {
        let skill = provenance::skill_name_of(&args)?;
        let intent = args.get("intent").and_then(Value::as_str).map(str::to_string);
        return Some(Event::Load { skill, intent });
    }
    let meta = r.pointer("/output/metadata");
    let exit = meta.and_then(|m| ["exit", "exitCode", "exit_code"].iter().find_map(|k| m.get(*k)?.as_i64()));
    let failed = exit.is_some_and(|e| e != 0);
    let output = if failed {
        r.pointer("/output/output").and_then(Value::as_str).unwrap_or("").to_string()
    } else {
        String::new()
    };
    Some(Event::Call { tool, args, failed, exit, output })
}

/// Reads a labels file: one JSON object a line (blank lines and `//` lines skipped).
fn read_labels(file: &Path) -> Result<Vec<Labelled>> {
    let text = std::fs::read_to_string(file).with_context(|| format!("reading {}", file.display()))?;
    let mut out = vec![];
    for (n, line) in text.lines().enumerate() {
        let line = line.trim();
        if line.is_empty() || line.starts_with("//") {
            continue;
        }
        let l: Labelled = serde_json::from_str(line).with_context(|| {
            format!(
                "{}:{}: not a labelled session {{\"transcript\", \"host\", \"notes\": [{{\"id\", \"skill\", \"delta\", \"used\"}}]}}",
                file.display(),
                n + 1
            )
        })?;
        anyhow::ensure!(
            ["claude-code", "codex", "gemini-cli", "copilot", "opencode"].contains(&l.host.as_str()),
            "{}:{}: host {:?}: use claude-code, codex, gemini-cli, copilot or opencode",
            file.display(),
            n + 1,
            l.host
        );
        out.push(l);
    }
    anyhow::ensure!(!out.is_empty(), "{}: no labelled sessions", file.display());
    Ok(out)
}

/// Precision and recall of one verdict.
#[derive(Default)]
struct Tally {
    labelled: usize,
    found: usize,
    right: usize,
}

impl Tally {
    fn add(&mut self, label: bool, found: bool) {
        self.labelled += usize::from(label);
        self.found += usize::from(found);
        self.right += usize::from(label && found);
    }

    fn json(&self) -> Value {
        json!({
            "labelled": self.labelled, "found": self.found, "right": self.right,
            "precision": ratio(self.right, self.found), "recall": ratio(self.right, self.labelled),
        })
    }
}

/// The skill a transcript's load of `skill` stands for in the replay: one of its own, or its
/// group's.
fn own(skill: &str, l: &Labelled, k: usize) -> String {
    match &l.group {
        Some(g) => format!("{skill}-{g}"),
        None => format!("{skill}-{k}"),
    }
}

/// Replays one labels file through a child `skillmem serve` (see the module docs).
fn evaluate(file: &Path) -> Result<Value> {
    let labels = read_labels(file)?;
    let base = file.parent().unwrap_or(Path::new("."));
    let mut sessions = vec![];
    for l in &labels {
        let path = base.join(&l.transcript);
        let text = std::fs::read_to_string(&path).with_context(|| format!("reading {}", path.display()))?;
        sessions.push(events(&l.host, &text).with_context(|| path.display().to_string())?);
    }
    let tmp = tempfile::tempdir()?;
    let ws = tmp.path().join("ws");
    std::fs::create_dir_all(tmp.path().join("home"))?;
    let mut skills: BTreeSet<String> = BTreeSet::new();
    for (k, (l, evs)) in labels.iter().zip(&sessions).enumerate() {
        for n in &l.notes {
            skills.insert(own(&n.skill, l, k));
        }
        for n in &l.mined {
            skills.insert(own(&n.skill, l, k));
        }
        for e in evs {
            if let Event::Load { skill, .. } = e {
                skills.insert(own(skill, l, k));
            }
        }
    }
    for s in &skills {
        let dir = ws.join(".claude/skills").join(s);
        std::fs::create_dir_all(&dir)?;
        std::fs::write(
            dir.join("SKILL.md"),
            format!("---\nname: {s}\ndescription: {s}\nskill-memory:\n  enabled: true\n---\n# {s}\n"),
        )?;
    }
    // A labelled note is judged where its load shows it: no load withholds one (the holdout);
    // a placebo set runs as a store does, with the default holdout, so its trust is the
    // store's.
    let placebo = labels.iter().any(|l| !l.mined.is_empty());
    let options = if placebo { json!({}) } else { json!({ "memory": { "holdout": 0 } }) };
    let mut c = host_with(tmp.path(), &ws, options)?;
    // Note id in the store → (session, label).
    let mut ids: HashMap<i64, (usize, usize)> = HashMap::new();
    // A mined lesson in the store → (session it was mined from, lesson).
    let mut placebo_ids: HashMap<i64, (usize, usize)> = HashMap::new();
    let mut duplicates = vec![];
    for (k, l) in labels.iter().enumerate() {
        for (j, n) in l.notes.iter().enumerate() {
            let r = answer(
                &mut c,
                "skillmem/note",
                json!({ "skill": own(&n.skill, l, k), "kind": n.kind, "intent": n.intent, "delta": n.delta }),
            )
            .with_context(|| format!("{}: writing note {}", l.transcript, n.id))?;
            let id = r["id"].as_i64().context("skillmem/note answered no id")?;
            if ids.insert(id, (k, j)).is_some() {
                duplicates.push(json!({ "transcript": l.transcript, "note": n.id }));
            }
        }
    }
    for (k, (l, evs)) in labels.iter().zip(&sessions).enumerate() {
        let session = format!("eval-use-{k}");
        for (i, e) in evs.iter().enumerate() {
            let params = match e {
                Event::Load { skill, intent } => {
                    let name = own(skill, l, k);
                    let dir = ws.join(".claude/skills").join(&name);
                    let mut args = json!({ "name": name });
                    if let Some(intent) = intent {
                        args["intent"] = json!(intent);
                    }
                    json!({ "sessionId": session, "callId": format!("c{i}"), "tool": "skill", "args": args,
                            "output": format!("# {name}\n\nBase directory for this skill: {}\n", dir.display()) })
                }
                Event::Call { tool, args, failed, exit, output } => {
                    let mut p = json!({ "sessionId": session, "callId": format!("c{i}"), "tool": tool, "args": args,
                                        "output": output, "metadata": exit.map(|e| json!({ "exit": e })) });
                    if *failed {
                        p["isError"] = json!(true);
                    }
                    p
                }
            };
            answer(&mut c, "skillmem/toolAfter", params).with_context(|| format!("{}: call {i}", l.transcript))?;
        }
        answer(&mut c, "skillmem/sessionEnd", json!({ "sessionId": session }))?;
        for (j, n) in l.mined.iter().enumerate() {
            let r = answer(
                &mut c,
                "skillmem/note",
                json!({ "sessionId": session, "skill": own(&n.skill, l, k), "kind": n.kind, "delta": n.delta }),
            )
            .with_context(|| format!("{}: writing mined lesson {}", l.transcript, n.id))?;
            if let Some(id) = r["id"].as_i64() {
                placebo_ids.insert(id, (k, j));
            }
        }
    }
    let mut counts: HashMap<(usize, usize), Value> = HashMap::new();
    let mut placebo_counts: HashMap<(usize, usize), Value> = HashMap::new();
    for s in &skills {
        let r = answer(&mut c, "skillmem/notes", json!({ "skill": s, "limit": 1000 }))?;
        for n in r["notes"].as_array().into_iter().flatten() {
            if let Some(at) = n["id"].as_i64().and_then(|id| ids.get(&id)) {
                counts.insert(*at, n.clone());
            }
            if let Some(at) = n["id"].as_i64().and_then(|id| placebo_ids.get(&id)) {
                placebo_counts.insert(*at, n.clone());
            }
        }
    }
    c.shutdown()?;

    let (mut used, mut ignored) = (Tally::default(), Tally::default());
    let (mut shown_n, mut wrong, mut not_shown) = (0usize, vec![], vec![]);
    for (k, l) in labels.iter().enumerate() {
        for (j, n) in l.notes.iter().enumerate() {
            let got = counts.get(&(k, j));
            let count = |f: &str| got.and_then(|g| g[f].as_i64()).unwrap_or(0);
            if count("shown") == 0 {
                not_shown.push(json!({ "transcript": l.transcript, "note": n.id }));
                continue;
            }
            shown_n += 1;
            let (u, i) = (count("used") > 0, count("ignored") > 0);
            used.add(n.used, u);
            ignored.add(n.ignored, i);
            if u != n.used || i != n.ignored {
                let specifics: Vec<String> = evidence::specifics(&n.delta).into_iter().map(|s| s.text).collect();
                wrong.push(json!({
                    "transcript": l.transcript, "note": n.id, "delta": n.delta,
                    "labelled": { "used": n.used, "ignored": n.ignored }, "judged": { "used": u, "ignored": i },
                    "specifics": specifics, "errors": evidence::error_texts(&n.delta), "why": n.why,
                }));
            }
        }
    }
    let placebo = placebo_report(&labels, &placebo_counts);
    let notes: usize = labels.iter().map(|l| l.notes.len()).sum();
    let mut hosts: Vec<&str> = labels.iter().map(|l| l.host.as_str()).collect();
    hosts.sort();
    hosts.dedup();
    Ok(json!({
        "file": file.display().to_string(),
        "sessions": labels.len(),
        "hosts": hosts,
        "notes": notes,
        "shown": shown_n,
        "used": used.json(),
        "ignored": ignored.json(),
        "notShown": not_shown,
        "duplicates": duplicates,
        "wrong": wrong,
        "placebo": placebo,
    }))
}

/// What a placebo set's mined lessons met in the later sessions of their group, whose agents
/// never saw them: sessions shown each and sessions judged to use it (every use a
/// coincidence), in all and by hand label. Null when the file has no mined lessons.
fn placebo_report(labels: &[Labelled], counts: &HashMap<(usize, usize), Value>) -> Value {
    if labels.iter().all(|l| l.mined.is_empty()) {
        return Value::Null;
    }
    let mut by_label: std::collections::BTreeMap<String, (i64, i64)> = Default::default();
    let (mut shown, mut used, mut notes_shown, mut notes_used) = (0i64, 0i64, 0usize, 0usize);
    let mut trusted = 0usize;
    let mut coincidences = vec![];
    for (k, l) in labels.iter().enumerate() {
        for (j, n) in l.mined.iter().enumerate() {
            let got = counts.get(&(k, j));
            let count = |f: &str| got.and_then(|g| g[f].as_i64()).unwrap_or(0);
            let (s, u) = (count("shown"), count("used"));
            trusted += usize::from(got.is_some_and(|g| g["trust"] == "trusted"));
            shown += s;
            used += u;
            notes_shown += usize::from(s > 0);
            notes_used += usize::from(u > 0);
            let e = by_label.entry(if n.label.is_empty() { "unlabelled".into() } else { n.label.clone() }).or_default();
            e.0 += s;
            e.1 += u;
            if u > 0 {
                let specifics: Vec<String> = evidence::specifics(&n.delta).into_iter().map(|s| s.text).collect();
                coincidences
                    .push(json!({ "lesson": n.id, "delta": n.delta, "shown": s, "used": u, "specifics": specifics }));
            }
        }
    }
    let lessons: usize = labels.iter().map(|l| l.mined.len()).sum();
    let labels: serde_json::Map<String, Value> =
        by_label.into_iter().map(|(k, (s, u))| (k, json!({ "shown": s, "used": u, "rate": ratio0(u, s) }))).collect();
    json!({
        "lessons": lessons,
        "shown": shown, "used": used, "rate": ratio0(used, shown),
        "notesShown": notes_shown, "notesUsed": notes_used, "trusted": trusted,
        "byLabel": labels, "coincidences": coincidences,
    })
}

pub fn run(g: &Global, files: &[PathBuf], verbose: bool) -> Result<()> {
    let reports: Vec<Value> = files.iter().map(|f| evaluate(f)).collect::<Result<_>>()?;
    if g.json {
        out(&serde_json::to_string_pretty(&reports)?);
        return Ok(());
    }
    let f = |v: &Value| v.as_f64().unwrap_or(0.0);
    for r in &reports {
        let hosts: Vec<&str> = r["hosts"].as_array().into_iter().flatten().filter_map(Value::as_str).collect();
        out(&format!(
            "use eval: {} ({} sessions of {}, {} notes, {} shown)",
            r["file"].as_str().unwrap_or(""),
            r["sessions"],
            hosts.join(", "),
            r["notes"],
            r["shown"]
        ));
        for k in ["used", "ignored"] {
            let t = &r[k];
            out(&format!(
                "  {k:<8} labelled {:>3}, judged {:>3}, both {:>3}: precision {:.3}  recall {:.3}",
                t["labelled"].as_u64().unwrap_or(0),
                t["found"].as_u64().unwrap_or(0),
                t["right"].as_u64().unwrap_or(0),
                f(&t["precision"]),
                f(&t["recall"])
            ));
        }
        let p = &r["placebo"];
        if !p.is_null() {
            let by: Vec<String> = p["byLabel"]
                .as_object()
                .into_iter()
                .flatten()
                .map(|(k, v)| format!("{k} {}/{}", v["used"], v["shown"]))
                .collect();
            out(&format!(
                "  placebo  {} mined lessons, {} shown to later sessions of their repository ({} showings): used by coincidence in {}: coincidental use {:.3} ({}); {} trusted at the end",
                p["lessons"],
                p["notesShown"],
                p["shown"],
                p["used"],
                f(&p["rate"]),
                by.join(", "),
                p["trusted"]
            ));
            if verbose {
                for c in p["coincidences"].as_array().into_iter().flatten() {
                    out(&format!(
                        "  - {} used in {} of {}: {}\n      specifics {}",
                        c["lesson"].as_str().unwrap_or(""),
                        c["used"],
                        c["shown"],
                        c["delta"].as_str().unwrap_or(""),
                        c["specifics"]
                    ));
                }
            }
        }
        let not_shown = r["notShown"].as_array().map_or(0, Vec::len);
        let dups = r["duplicates"].as_array().map_or(0, Vec::len);
        if not_shown + dups > 0 {
            out(&format!("  {not_shown} notes never shown (left out), {dups} written as duplicates"));
        }
        if verbose {
            let s = |v: &Value, k: &str| v[k].as_str().unwrap_or("").to_string();
            for w in r["wrong"].as_array().into_iter().flatten() {
                out(&format!(
                    "  - {} {}: labelled {}, judged {}: {}\n      specifics {}  errors {}{}",
                    s(w, "transcript"),
                    s(w, "note"),
                    verdict(&w["labelled"]),
                    verdict(&w["judged"]),
                    s(w, "delta"),
                    w["specifics"],
                    w["errors"],
                    if s(w, "why").is_empty() { String::new() } else { format!("\n      why: {}", s(w, "why")) }
                ));
            }
            for n in r["notShown"].as_array().into_iter().flatten() {
                out(&format!("  - {} {}: never shown", s(n, "transcript"), s(n, "note")));
            }
        }
    }
    Ok(())
}

fn verdict(v: &Value) -> String {
    let mut parts = vec![];
    parts.push(if v["used"] == true { "used" } else { "not used" });
    if v["ignored"] == true {
        parts.push("ignored");
    }
    parts.join("+")
}

/// `a / b`, 0 when `b` is 0.
fn ratio0(a: i64, b: i64) -> f64 {
    if b == 0 {
        0.0
    } else {
        a as f64 / b as f64
    }
}

fn ratio(a: usize, b: usize) -> f64 {
    if b == 0 {
        1.0
    } else {
        a as f64 / b as f64
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn opencode_events_table() {
        let cases: &[(Value, Option<Event>)] = &[
            (
                json!({ "input": { "tool": "skill", "sessionID": "s", "callID": "c", "args": { "name": "docker", "intent": "build" } },
                        "output": { "title": "Loaded skill: docker", "output": "# docker", "metadata": { "name": "docker" } } }),
                Some(Event::Load { skill: "docker".into(), intent: Some("build".into()) }),
            ),
            (
                json!({ "input": { "tool": "bash", "sessionID": "s", "callID": "c", "args": { "command": "npm ci" } },
                        "output": { "title": "npm ci", "output": "npm ERR! code ERESOLVE", "metadata": { "exit": 1, "output": "npm ERR! code ERESOLVE" } } }),
                Some(Event::Call {
                    tool: "bash".into(),
                    args: json!({ "command": "npm ci" }),
                    failed: true,
                    exit: Some(1),
                    output: "npm ERR! code ERESOLVE".into(),
                }),
            ),
            (
                json!({ "input": { "tool": "read", "sessionID": "s", "callID": "c", "args": { "filePath": "/w/a.ts" } },
                        "output": { "title": "a.ts", "output": "<file>", "metadata": { "preview": "x" } } }),
                Some(Event::Call {
                    tool: "read".into(),
                    args: json!({ "filePath": "/w/a.ts" }),
                    failed: false,
                    exit: None,
                    output: String::new(),
                }),
            ),
            (json!({ "input": { "tool": "skill", "args": {} } }), None),
            (json!({ "type": "other" }), None),
        ];
        for (record, want) in cases {
            assert_eq!(&opencode_event(record), want, "{record}");
        }
    }

    #[test]
    fn transcript_events_put_the_load_where_the_skill_changes() {
        let records = [
            json!({"type": "assistant", "message": {"content": [{"type": "tool_use", "id": "t1", "name": "Bash", "input": {"command": "ls"}}]}}),
            json!({"type": "user", "message": {"content": [{"type": "tool_result", "tool_use_id": "t1", "content": "a"}]}}),
            json!({"type": "assistant", "message": {"content": [{"type": "tool_use", "id": "t2", "name": "Skill", "input": {"skill": "jq"}}]}}),
            json!({"type": "assistant", "message": {"content": [{"type": "tool_use", "id": "t3", "name": "Bash", "input": {"command": "jq -r .a f.json"}}]}}),
            json!({"type": "user", "message": {"content": [{"type": "tool_result", "tool_use_id": "t3", "content": "jq: error", "is_error": true}]}}),
            json!({"type": "assistant", "message": {"content": [{"type": "tool_use", "id": "t4", "name": "Read", "input": {"file_path": "/w/f.json"}}]}}),
        ];
        let text: String = records.iter().map(|r| format!("{r}\n")).collect();
        let got = events("claude-code", &text).unwrap();
        let call = |tool: &str, args: Value, failed: bool, output: &str| Event::Call {
            tool: tool.into(),
            args,
            failed,
            exit: None,
            output: output.into(),
        };
        assert_eq!(
            got,
            vec![
                call("Bash", json!({ "command": "ls" }), false, "a"),
                Event::Load { skill: "jq".into(), intent: None },
                call("Bash", json!({ "command": "jq -r .a f.json" }), true, "jq: error"),
                call("Read", json!({ "input": "/w/f.json" }), false, ""),
            ]
        );
    }
}
