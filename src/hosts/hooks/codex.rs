//! Codex CLI's dialect: a `PostToolUse` of a shell command that reads a `*/SKILL.md` is a skill
//! load, and so is a `UserPromptSubmit` whose prompt mentions a skill as `$name` ([`mention`]);
//! both are answered with `hookSpecificOutput.additionalContext`. `Stop` ends each turn.
//! `PostCompact` promotes the `<skill_observations>` of the compaction's summary ([`compacted`]),
//! and `SessionStart` with `source: "compact"` gives back the blocks the compaction dropped
//! ([`after_compaction`]). The flow is [`super::agents`]'; the rollout's reader,
//! [`super::transcripts`].

use std::path::{Path, PathBuf};

use serde_json::{json, Value};

use super::transcripts::{self, skill_file_in, Kind};
use super::{
    cost_line, expand_home, name_ok, open_or_log, read_from, session_of, str_field, HookOptions, Loaded, INTENT_CHARS,
};
use crate::engine::SkillLoad;

/// The skill a `PostToolUse` of a shell command loads: the command reads a `*/SKILL.md`
/// (Codex has no skill tool; the model reads the file).
pub fn skill_load(event: &Value, ws: &Path) -> Option<Loaded> {
    if str_field(event, "hook_event_name")? != "PostToolUse" {
        return None;
    }
    let input = event.get("tool_input")?;
    let command = match input.get("command")? {
        Value::String(s) => s.clone(),
        Value::Array(a) => a.iter().filter_map(Value::as_str).collect::<Vec<_>>().join(" "),
        _ => return None,
    };
    let file = skill_file_in(&command)?;
    let cwd = str_field(input, "workdir").or_else(|| str_field(event, "cwd")).map(PathBuf::from);
    let path = match (Path::new(&file).is_absolute(), cwd) {
        (true, _) => PathBuf::from(&file),
        (false, Some(c)) => c.join(&file),
        (false, None) => ws.join(&file),
    };
    let dir = path.parent()?.to_path_buf();
    let skill = dir.file_name()?.to_str()?.to_string();
    name_ok(&skill).then_some(Loaded { skill, dir: Some(dir) })
}

/// The most of a transcript's end read for a compaction.
const COMPACTION_TAIL: u64 = 32 << 20;

/// The records of the event's transcript (its last [`COMPACTION_TAIL`] bytes, whole lines).
fn tail_records(event: &Value) -> Option<Vec<Value>> {
    let path = expand_home(str_field(event, "transcript_path")?);
    let len = std::fs::metadata(&path).ok()?.len();
    let from = len.saturating_sub(COMPACTION_TAIL);
    let (lines, _) = read_from(&path, from).ok()?;
    let skip = usize::from(from > 0);
    Some(lines.iter().skip(skip).filter_map(|l| serde_json::from_str(l).ok()).collect())
}

/// Codex's `PostCompact`: the rollout holds the compaction's summary by then (a `compacted`
/// record). When it carries a `<skill_observations>` block (the compact prompt `skillmem setup
/// codex` writes asks for one), the observations are promoted through the historian's filter,
/// as `skillmem/historianResult` does; the skills the compacted part read are the session's.
pub fn compacted(event: &Value, ws: &Path, opts: &HookOptions, log: &mut Vec<String>) {
    let Some(records) = tail_records(event) else {
        log.push("PostCompact: no readable transcript_path; nothing promoted".into());
        return;
    };
    let Some((at, summary)) = transcripts::last_compaction(&records) else {
        log.push("PostCompact: the rollout holds no compaction summary; nothing promoted".into());
        return;
    };
    if !summary.contains("<skill_observations") {
        return;
    }
    let Some(engine) = open_or_log(ws, opts, log) else { return };
    let session = session_of(event);
    let used: Vec<String> = transcripts::uses(Kind::Codex, transcripts::compacted_part(&records, at))
        .into_iter()
        .map(|u| u.skill)
        .collect();
    if let (Some(s), false) = (&session, used.is_empty()) {
        // The rollout's compacted part is not rendered as a chunk: its lessons are not grounded.
        engine.chunk_rendered(s, &used, "");
    }
    match engine.historian_result(&summary, session) {
        Ok(r) => {
            cost_line(
                &engine,
                format!("codex PostCompact: {} promoted, {} rejected", r.promoted.len(), r.rejected.len()),
            );
            for x in &r.rejected {
                log.push(format!("PostCompact: observation rejected ({}): {}", x.reason, x.line));
            }
        }
        Err(e) => log.push(format!("PostCompact: {e}")),
    }
}

/// How many skills' blocks a compaction gives back at most (the last loaded).
const REINSTATED: usize = 3;

/// Codex's `SessionStart` after a compaction (`source: "compact"`): the developer messages
/// that carried the blocks are gone with the compacted history, so the blocks of the skills
/// the session read before it come back as the hook's context (no intent: recency × hits).
pub fn after_compaction(event: &Value, ws: &Path, opts: &HookOptions, log: &mut Vec<String>) -> Option<String> {
    if str_field(event, "source") != Some("compact") {
        return None;
    }
    let records = tail_records(event)?;
    let used = transcripts::uses(Kind::Codex, &records);
    if used.is_empty() {
        return None;
    }
    let cwd = str_field(event, "cwd").map(PathBuf::from).unwrap_or_else(|| ws.to_path_buf());
    let engine = open_or_log(ws, opts, log)?;
    let mut blocks = vec![];
    for u in &used[used.len().saturating_sub(REINSTATED)..] {
        let dir = u.dir.as_ref().map(|d| if d.is_relative() { cwd.join(d) } else { d.clone() });
        match engine.skill_loaded(SkillLoad {
            skill: u.skill.clone(),
            dir,
            intent: None,
            session: session_of(event),
            ..Default::default()
        }) {
            Ok(r) => blocks.extend(r.append.map(|a| a.trim().to_string()).filter(|a| !a.is_empty())),
            Err(e) => log.push(format!("SessionStart (compact): skill {}: {e}", u.skill)),
        }
    }
    if blocks.is_empty() {
        return None;
    }
    let out =
        json!({ "hookSpecificOutput": { "hookEventName": "SessionStart", "additionalContext": blocks.join("\n\n") } });
    Some(out.to_string())
}

/// Codex's `UserPromptSubmit` whose prompt mentions a skill as `$name` (Codex then gives the
/// model the skill itself, with no read a `PostToolUse` could see): the first mentioned name
/// that is a skill in the workspace's or the user's skill folders, and the prompt without the
/// mention as the intent.
pub fn mention(event: &Value, ws: &Path, home: Option<&Path>) -> Option<(Loaded, Option<String>)> {
    if str_field(event, "hook_event_name")? != "UserPromptSubmit" {
        return None;
    }
    let prompt = str_field(event, "prompt")?;
    let cwd = str_field(event, "cwd").map(PathBuf::from).filter(|p| p.is_dir()).unwrap_or_else(|| ws.to_path_buf());
    let codex_home = std::env::var_os("CODEX_HOME").map(PathBuf::from);
    for word in prompt.split_whitespace() {
        let Some(name) = word.strip_prefix('$') else { continue };
        let name = name.trim_end_matches(|c: char| !(c.is_ascii_alphanumeric() || c == '-' || c == '_'));
        if name.is_empty() {
            continue;
        }
        let dir = crate::memory::provenance::find_by_name(name, Some(&cwd), home).or_else(|| {
            codex_home.as_ref().map(|h| h.join("skills").join(name)).filter(|d| d.join("SKILL.md").is_file())
        });
        if let Some(dir) = dir {
            let rest: Vec<&str> = prompt.split_whitespace().filter(|w| *w != word).collect();
            let said: String = rest.join(" ").chars().take(INTENT_CHARS).collect();
            return Some((Loaded { skill: name.to_string(), dir: Some(dir) }, (!said.is_empty()).then_some(said)));
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;
    #[test]
    fn codex_prompts_that_mention_a_skill() {
        let tmp = tempfile::tempdir().unwrap();
        let ws = tmp.path();
        std::fs::create_dir_all(ws.join(".agents/skills/jq")).unwrap();
        std::fs::write(ws.join(".agents/skills/jq/SKILL.md"), "---\nname: jq\n---\n").unwrap();
        let cwd = ws.display().to_string();
        // (prompt, the skill and intent it yields)
        type Want<'a> = Option<(&'a str, Option<&'a str>)>;
        let cases: &[(&str, Want)] = &[
            ("$jq print the names raw", Some(("jq", Some("print the names raw")))),
            ("use $jq, then stop", Some(("jq", Some("use then stop")))),
            ("$jq", Some(("jq", None))),
            ("echo $HOME and $pdf", None),
            ("no mention here", None),
        ];
        for (prompt, want) in cases {
            let e = json!({"hook_event_name": "UserPromptSubmit", "prompt": prompt, "cwd": cwd});
            let got = mention(&e, ws, None).map(|(l, said)| (l.skill, said));
            let want = want.map(|(s, i)| (s.to_string(), i.map(str::to_string)));
            assert_eq!(got, want, "{prompt}");
        }
        assert_eq!(mention(&json!({"hook_event_name": "PostToolUse", "prompt": "$jq"}), ws, None), None);
    }
}
