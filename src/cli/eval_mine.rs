//! `skillmem eval mine FILE...`: the error → fix miner on labelled transcripts.
//!
//! A lesson of a labels file may carry a `label`: `useful` (the default: the scripted sets
//! name only true lessons), `junk` or `harmful`, and a `why`; the real sets (bench/real/)
//! label every lesson the miner found. Besides precision and recall of the finds, it prints
//! what a load would **show**: every transcript mined through the engine, as the hosts' doors
//! mine at a session's end (each transcript a session of its own, one store for the file,
//! `memory.minedSupport` from `--support`, default the configuration's), and the notes that
//! are then out of review and in recall, by label: a mined lesson is held until the same
//! lesson was mined in that many sessions.
//!
//! Each line of a labels file is a JSON object `{"transcript": PATH, "host": "claude-code"|
//! "codex"|"gemini-cli"|"copilot", "enabled": [SKILL...], "lessons": [{"failed": CALL,
//! "fixed": CALL}...]}`, `PATH` relative to the labels file: a transcript in the host's own
//! format, the skills whose memory is enabled (a load of another skill is no skill in use),
//! and every true lesson, named by its failed call and the call that worked (for a lesson of
//! a step run between, the failed call again), both as written in the transcript. The
//! transcript is read by the host's reader of tool calls and mined ([`mine::mine`]); a mined
//! lesson is found when both its calls are a labelled lesson's (compared after redaction,
//! since evidence is stored redacted). Prints precision (of the lessons mined, how many are
//! labelled), recall (of the labelled, how many are mined), every refusal by its reason, and
//! how many mined lessons or evidence still hold a secret (what must stay 0); `--verbose`
//! lists the misses, the false finds and the refusals.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use anyhow::{Context, Result};
use serde::Deserialize;
use serde_json::{json, Value};

use super::{out, Global};
use skillmem::historian::mine::{self, Call, Reason};
use skillmem::historian::{tool_calls, transcript};
use skillmem::hosts::hooks::transcripts::{self as agent_transcripts, Kind};
use skillmem::text::redact;

#[derive(Deserialize)]
struct Labelled {
    transcript: String,
    host: String,
    #[serde(default)]
    enabled: Vec<String>,
    #[serde(default)]
    lessons: Vec<Lesson>,
}

#[derive(Deserialize)]
struct Lesson {
    failed: String,
    fixed: String,
    /// `useful` (default), `junk` or `harmful`.
    #[serde(default = "useful")]
    label: String,
}

fn useful() -> String {
    "useful".into()
}

const LABELS: [&str; 4] = ["useful", "junk", "harmful", "unlabelled"];

/// A host's tool calls of a transcript.
pub fn calls_of(host: &str, records: &[Value]) -> Result<Vec<Call>> {
    Ok(match host {
        "claude-code" => tool_calls::claude_code(records),
        "codex" => agent_transcripts::calls(Kind::Codex, records),
        "gemini-cli" => agent_transcripts::calls(Kind::Gemini, records),
        "copilot" => agent_transcripts::calls(Kind::Copilot, records),
        h => anyhow::bail!("host {h:?}: use claude-code, codex, gemini-cli or copilot"),
    })
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
                "{}:{}: not a labelled transcript {{\"transcript\", \"host\", \"enabled\", \"lessons\"}}",
                file.display(),
                n + 1
            )
        })?;
        out.push(l);
    }
    anyhow::ensure!(!out.is_empty(), "{}: no labelled transcripts", file.display());
    Ok(out)
}

fn redacted(s: &str) -> String {
    redact::redact(s).0
}

/// The label of the lesson whose calls are `failed` and `fixed` (as evidence quotes them,
/// redacted), among all of a file's labels.
fn label_of<'a>(labels: &'a [Labelled], failed: &str, fixed: &str) -> &'a str {
    labels
        .iter()
        .flat_map(|l| &l.lessons)
        .find(|x| redacted(&x.failed) == failed && redacted(&x.fixed) == fixed)
        .map_or("unlabelled", |x| x.label.as_str())
}

/// What a load shows after every transcript of a file is mined through the engine: the notes
/// out of review, by label, and their ids.
fn shown_by_engine(
    labels: &[Labelled],
    calls: &[(String, Vec<Call>)],
    support: Option<u32>,
) -> Result<Vec<(i64, String, String)>> {
    let tmp = tempfile::tempdir()?;
    let (data, ws) = (tmp.path().join("data"), tmp.path().join("ws"));
    std::fs::create_dir_all(&ws)?;
    let mut enabled: Vec<&String> = labels.iter().flat_map(|l| &l.enabled).collect();
    enabled.sort();
    enabled.dedup();
    let mut memory = json!({ "enabledSkills": enabled });
    if let Some(n) = support {
        memory["minedSupport"] = json!(n);
    }
    let resolved = skillmem::config::Config::from_value(&json!({ "dataDir": data, "memory": memory }))?;
    let engine = skillmem::engine::Engine::open(resolved.config, Some(ws))?;
    for (session, c) in calls {
        engine.mine_calls(c, Some(session), Default::default())?;
    }
    let f = skillmem::engine::NoteFilter { limit: Some(1000), ..Default::default() };
    let page = engine.list_notes(&f)?;
    Ok(page
        .notes
        .iter()
        .map(|n| {
            let b = n.backing.clone().unwrap_or_default();
            let (failed, fixed) = (b.failed_call.unwrap_or_default(), b.fixed_call.unwrap_or_default());
            (n.id, label_of(labels, &failed, &fixed).to_string(), n.delta.clone())
        })
        .collect())
}

pub fn run(g: &Global, files: &[PathBuf], support: Option<u32>, verbose: bool) -> Result<()> {
    let mut reports = vec![];
    for file in files {
        let labels = read_labels(file)?;
        let base = file.parent().unwrap_or(Path::new("."));
        let (mut labelled, mut mined_n, mut found, mut leaked) = (0usize, 0usize, 0usize, 0usize);
        let mut by_label: BTreeMap<&str, usize> = LABELS.iter().map(|l| (*l, 0)).collect();
        let mut sessions: Vec<(String, Vec<Call>)> = vec![];
        // The transcripts each lesson key was mined in, and whether a find of it is useful.
        let mut keys: BTreeMap<String, (std::collections::BTreeSet<String>, bool)> = BTreeMap::new();
        let mut refused: BTreeMap<&str, usize> = Reason::ALL.iter().map(|r| (r.as_str(), 0)).collect();
        let (mut misses, mut false_finds, mut refusals, mut lessons) = (vec![], vec![], vec![], vec![]);
        for l in &labels {
            let path = base.join(&l.transcript);
            let text = std::fs::read_to_string(&path).with_context(|| format!("reading {}", path.display()))?;
            let records = transcript::records_from_jsonl(&text);
            let mut calls = calls_of(&l.host, &records).with_context(|| path.display().to_string())?;
            for c in &mut calls {
                if c.skill_in_use.as_ref().is_some_and(|s| !l.enabled.contains(s)) {
                    c.skill_in_use = None;
                }
            }
            let got = mine::mine(&calls);
            sessions.push((l.transcript.clone(), calls.clone()));
            labelled += l.lessons.iter().filter(|x| x.label == "useful").count();
            mined_n += got.mined.len();
            let mut hit = vec![false; l.lessons.len()];
            for m in &got.mined {
                let all = format!("{} {}", m.delta, serde_json::to_string(&m.evidence)?);
                if redact::find_secret(&all).is_some() {
                    leaked += 1;
                }
                let at = l.lessons.iter().position(|x| {
                    redacted(&x.failed) == m.evidence.failed_call && redacted(&x.fixed) == m.evidence.fixed_call
                });
                let label = at.map_or("unlabelled", |k| l.lessons[k].label.as_str());
                *by_label.entry(LABELS.iter().find(|x| **x == label).copied().unwrap_or("unlabelled")).or_default() +=
                    1;
                match at {
                    Some(k) if !hit[k] && label == "useful" => {
                        hit[k] = true;
                        found += 1;
                    }
                    _ => false_finds.push(json!({ "transcript": l.transcript, "delta": m.delta, "label": label })),
                }
                let k = keys.entry(format!("{}\u{1f}{}", m.skill, m.key)).or_default();
                k.0.insert(l.transcript.clone());
                k.1 |= label == "useful";
                lessons.push(json!({ "transcript": l.transcript, "skill": m.skill, "delta": m.delta,
                                     "evidence": m.evidence, "key": m.key, "label": label }));
            }
            for (x, h) in l.lessons.iter().zip(&hit) {
                if !h && x.label == "useful" {
                    misses.push(json!({ "transcript": l.transcript, "failed": redacted(&x.failed), "fixed": redacted(&x.fixed) }));
                }
            }
            for r in &got.refused {
                *refused.entry(r.reason.as_str()).or_default() += 1;
                refusals.push(json!({
                    "transcript": l.transcript, "reason": r.reason.as_str(),
                    "failed": redacted(&r.failed_call), "fixed": redacted(&r.fixed_call)
                }));
            }
        }
        let shown = shown_by_engine(&labels, &sessions, support)?;
        let mut shown_by: BTreeMap<&str, usize> = LABELS.iter().map(|l| (*l, 0)).collect();
        for (_, label, _) in &shown {
            *shown_by.entry(LABELS.iter().find(|x| *x == label).copied().unwrap_or("unlabelled")).or_default() += 1;
        }
        let bad = shown_by["junk"] + shown_by["harmful"];
        let needed = support.unwrap_or(skillmem::config::MemoryConfig::default().mined_support) as usize;
        let recurring: Vec<&String> =
            keys.iter().filter(|(_, (t, useful))| *useful && t.len() >= needed).map(|(k, _)| k).collect();
        reports.push(json!({
            "file": file.display().to_string(),
            "transcripts": labels.len(),
            "labelled": labelled,
            "mined": mined_n,
            "found": found,
            "precision": ratio(found, mined_n),
            "recall": ratio(found, labelled),
            "minedByLabel": by_label,
            "minedSupport": needed,
            "shown": shown.len(),
            "shownByLabel": shown_by,
            "shownJunkOrHarmful": if shown.is_empty() { 0.0 } else { bad as f64 / shown.len() as f64 },
            "usefulRecurring": recurring.len(),
            "shownNotes": shown.iter().map(|(id, label, delta)| json!({ "id": id, "label": label, "delta": delta })).collect::<Vec<_>>(),
            "refused": refused,
            "secretsLeft": leaked,
            "misses": misses,
            "falseFinds": false_finds,
            "refusals": refusals,
            "lessons": lessons,
        }));
    }
    if g.json {
        out(&serde_json::to_string_pretty(&reports)?);
        return Ok(());
    }
    for r in &reports {
        out(&format!(
            "mine eval: {} ({} transcripts, {} lessons labelled)",
            r["file"].as_str().unwrap_or(""),
            r["transcripts"],
            r["labelled"]
        ));
        out(&format!(
            "  mined {}, {} labelled: precision {:.3}  recall {:.3}",
            r["mined"],
            r["found"],
            r["precision"].as_f64().unwrap_or(0.0),
            r["recall"].as_f64().unwrap_or(0.0)
        ));
        let by =
            |k: &str| -> String { LABELS.iter().map(|l| format!("{l} {}", r[k][*l])).collect::<Vec<_>>().join(", ") };
        out(&format!("  mined by label: {}", by("minedByLabel")));
        out(&format!(
            "  a load shows {} (held until mined in {} sessions): {}; junk or harmful {:.1} %",
            r["shown"],
            r["minedSupport"],
            by("shownByLabel"),
            100.0 * r["shownJunkOrHarmful"].as_f64().unwrap_or(0.0)
        ));
        out(&format!("  useful lessons mined in {} sessions or more: {}", r["minedSupport"], r["usefulRecurring"]));
        let refused: Vec<String> =
            r["refused"].as_object().into_iter().flatten().map(|(k, v)| format!("{k} {v}")).collect();
        out(&format!("  refused: {}", refused.join(", ")));
        out(&format!("  secrets left in a lesson or its evidence: {}", r["secretsLeft"]));
        if verbose {
            let s = |v: &Value, k: &str| v[k].as_str().unwrap_or("").to_string();
            for m in r["misses"].as_array().into_iter().flatten() {
                out(&format!("  - missed {}: `{}` → `{}`", s(m, "transcript"), s(m, "failed"), s(m, "fixed")));
            }
            for m in r["falseFinds"].as_array().into_iter().flatten() {
                out(&format!("  - false find {}: {}", s(m, "transcript"), s(m, "delta")));
            }
            for m in r["refusals"].as_array().into_iter().flatten() {
                out(&format!(
                    "  - refused ({}) {}: `{}` → `{}`",
                    s(m, "reason"),
                    s(m, "transcript"),
                    s(m, "failed"),
                    s(m, "fixed")
                ));
            }
            for m in r["lessons"].as_array().into_iter().flatten() {
                out(&format!("  + {} [{}] ({}): {}", s(m, "transcript"), s(m, "skill"), s(m, "label"), s(m, "delta")));
            }
            for m in r["shownNotes"].as_array().into_iter().flatten() {
                out(&format!("  shown #{} ({}): {}", m["id"], s(m, "label"), s(m, "delta")));
            }
        }
    }
    Ok(())
}

fn ratio(a: usize, b: usize) -> f64 {
    if b == 0 {
        1.0
    } else {
        a as f64 / b as f64
    }
}
