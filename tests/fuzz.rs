//! Generated-input testing of every parser and the frame guard: a short run of every target
//! (docs/fuzzing.md; the long run is `cargo run --release --example fuzz`), and the replay of
//! every input that ever failed, kept in `tests/corpus/<target>/`.
//!
//! `FUZZ_CASES=<n>` scales the short runs (a multiplier, default 1); `FUZZ_SEED=<n>` changes
//! their seed (default fixed, so that a CI run is reproducible).

#[path = "fuzz/mod.rs"]
mod targets;

#[rustfmt::skip] // shared file, formatted where it is owned
mod common;

use proptest::strategy::{Strategy, ValueTree};
use proptest::test_runner::TestRunner;
use serde_json::json;

fn short_run(name: &str) {
    let t = targets::all().into_iter().find(|t| t.name == name).expect("a target of that name");
    let scale: f64 = std::env::var("FUZZ_CASES").ok().and_then(|s| s.parse().ok()).unwrap_or(1.0);
    let seed: u64 = std::env::var("FUZZ_SEED").ok().and_then(|s| s.parse().ok()).unwrap_or(0x5eed);
    let cases = ((t.ci_cases as f64 * scale).round() as u32).max(1);
    if let Err(f) = (t.run)(cases, seed) {
        let saved = targets::save_to_corpus(name, &f.input)
            .map(|p| format!("saved to {}", p.display()))
            .unwrap_or_else(|e| format!("not saved: {e}"));
        panic!("fuzz target {name} failed ({saved}): {}\ninput: {}", f.why, f.input);
    }
}

#[test]
fn frames() {
    short_run("frames");
}

#[test]
fn frames_bytes() {
    short_run("frames-bytes");
}

#[test]
fn frontmatter() {
    short_run("frontmatter");
}

#[test]
fn provenance() {
    short_run("provenance");
}

#[test]
fn observations() {
    short_run("observations");
}

#[test]
fn redact() {
    short_run("redact");
}

#[test]
fn mine() {
    short_run("mine");
}

#[test]
fn filter() {
    short_run("filter");
}

#[test]
fn transcript() {
    short_run("transcript");
}

#[test]
fn block() {
    short_run("block");
}

#[test]
fn config() {
    short_run("config");
}

#[test]
fn skill_names() {
    short_run("skill-names");
}

#[test]
fn skills_tree() {
    short_run("skills-tree");
}

#[test]
fn hook() {
    short_run("hook");
}

/// The frame guard in the real binary: generated malformed frames, each followed by a good
/// request, over one initialized sidecar. Every malformed frame is answered with an error
/// before the good request's answer, the good request is served, and the sidecar exits
/// cleanly at the end.
#[test]
fn frames_through_the_binary() {
    let w = common::World::new();
    let mut c = w.spawn();
    let mut runner = TestRunner::deterministic();
    let strategy = targets::frames::input();
    for case in 0..40i64 {
        let input = strategy.new_tree(&mut runner).unwrap().current();
        let (bytes, want) = targets::frames::malformed_stream(&input);
        c.send_raw(&bytes).unwrap();
        let id = 10_000_000 + case;
        c.send(&json!({ "jsonrpc": "2.0", "id": id, "method": "skillmem/stats", "params": {} })).unwrap();
        let r = c.wait_for(id).unwrap();
        assert!(r.get("result").is_some(), "case {case}: the good request after malformed frames failed: {r}");
        let errors: Vec<_> = c.notifications.drain(..).filter(|m| m.get("error").is_some()).collect();
        for e in &errors {
            let code = e["error"]["code"].as_i64();
            assert!(matches!(code, Some(-32700 | -32600)), "case {case}: {e}");
        }
        assert_eq!(errors.len(), want, "case {case}: {} errors for {want} malformed frames: {input:?}", errors.len());
    }
    assert_eq!(c.shutdown().unwrap(), 0);
}

/// Every input that ever failed still passes.
#[test]
fn corpus_replays() {
    let mut failures = vec![];
    let mut n = 0;
    for t in targets::all() {
        let Ok(rd) = std::fs::read_dir(targets::corpus_dir(t.name)) else { continue };
        let mut files: Vec<_> =
            rd.flatten().map(|e| e.path()).filter(|p| p.extension().is_some_and(|x| x == "json")).collect();
        files.sort();
        for f in files {
            n += 1;
            let text = std::fs::read_to_string(&f).unwrap();
            if let Err(e) = (t.replay)(&text) {
                failures.push(format!("{}: {e}", f.display()));
            }
        }
    }
    // Every corpus folder belongs to a target.
    for e in std::fs::read_dir(std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/corpus")).unwrap().flatten()
    {
        let name = e.file_name().to_string_lossy().into_owned();
        if e.path().is_dir() {
            assert!(targets::all().iter().any(|t| t.name == name), "tests/corpus/{name} is no fuzz target");
        }
    }
    assert!(failures.is_empty(), "{} of {n} corpus inputs fail:\n{}", failures.len(), failures.join("\n"));
}
