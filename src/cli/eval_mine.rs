//! `skillmem eval mine FILE...`: the error → fix miner on labelled transcripts.
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
}

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

pub fn run(g: &Global, files: &[PathBuf], verbose: bool) -> Result<()> {
    let mut reports = vec![];
    for file in files {
        let labels = read_labels(file)?;
        let base = file.parent().unwrap_or(Path::new("."));
        let (mut labelled, mut mined_n, mut found, mut leaked) = (0usize, 0usize, 0usize, 0usize);
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
            labelled += l.lessons.len();
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
                match at {
                    Some(k) if !hit[k] => {
                        hit[k] = true;
                        found += 1;
                    }
                    _ => false_finds.push(json!({ "transcript": l.transcript, "delta": m.delta })),
                }
                lessons.push(
                    json!({ "transcript": l.transcript, "skill": m.skill, "delta": m.delta, "evidence": m.evidence }),
                );
            }
            for (x, h) in l.lessons.iter().zip(&hit) {
                if !h {
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
        reports.push(json!({
            "file": file.display().to_string(),
            "transcripts": labels.len(),
            "labelled": labelled,
            "mined": mined_n,
            "found": found,
            "precision": ratio(found, mined_n),
            "recall": ratio(found, labelled),
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
                out(&format!("  + {} [{}]: {}", s(m, "transcript"), s(m, "skill"), s(m, "delta")));
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
