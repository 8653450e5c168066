//! The fuzz targets: one generator and one property per parser (README, "Fuzzing").
//!
//! Shared by the short runs of `cargo test --test fuzz` and the long runs of
//! `cargo run --release --example fuzz`. Every input is JSON-serialisable, so that an input that
//! ever failed can be kept in `tests/corpus/<target>/` and replayed by the test suite.
//! Properties, not only "does not panic": a parser returns a value or an error that says what
//! to fix, the renderer round-trips, the frame guard answers every malformed frame and keeps
//! serving, nothing a skill repository holds is written outside the store.
#![allow(dead_code)]

use std::path::{Path, PathBuf};

use proptest::prelude::*;
use proptest::test_runner::{Config, RngAlgorithm, TestCaseError, TestError, TestRng, TestRunner};
use serde::de::DeserializeOwned;
use serde::Serialize;
use serde_json::{json, Value};

pub mod blocks;
pub mod config;
pub mod filter;
pub mod frames;
pub mod frontmatter;
pub mod gen;
pub mod hook;
pub mod mine;
pub mod observations;
pub mod provenance;
pub mod redact;
pub mod skill_names;
pub mod skills_tree;
pub mod transcript;

/// A failed case: the (shrunk) input as corpus JSON and why it failed.
#[derive(Debug)]
pub struct Failure {
    pub input: String,
    pub why: String,
}

/// One fuzz target.
pub struct Target {
    pub name: &'static str,
    /// Cases of the short run in `cargo test` (a debug build).
    pub ci_cases: u32,
    /// Runs `cases` generated cases from `seed`.
    pub run: fn(cases: u32, seed: u64) -> Result<(), Failure>,
    /// Replays one corpus file (its JSON text).
    pub replay: fn(&str) -> Result<(), String>,
}

/// Every target, in the order the long run takes them.
pub fn all() -> Vec<Target> {
    vec![
        frames::TARGET,
        frames::BYTES_TARGET,
        frontmatter::TARGET,
        provenance::TARGET,
        observations::TARGET,
        transcript::TARGET,
        blocks::TARGET,
        config::TARGET,
        skill_names::TARGET,
        skills_tree::TARGET,
        hook::TARGET,
        redact::TARGET,
        filter::TARGET,
        mine::TARGET,
    ]
}

/// Runs `cases` cases of `strategy` against `property`, shrinking a failure to a small input.
pub fn run<S>(cases: u32, seed: u64, strategy: S, property: fn(&S::Value) -> Result<(), String>) -> Result<(), Failure>
where
    S: Strategy,
    S::Value: Serialize,
{
    let config = Config {
        cases,
        failure_persistence: None,
        max_shrink_iters: 2_000,
        max_global_rejects: cases.saturating_mul(4).max(1024),
        ..Config::default()
    };
    let mut seed_bytes = [0u8; 32];
    seed_bytes[..8].copy_from_slice(&seed.to_le_bytes());
    let mut runner = TestRunner::new_with_rng(config, TestRng::from_seed(RngAlgorithm::ChaCha, &seed_bytes));
    match runner.run(&strategy, |v| property(&v).map_err(TestCaseError::fail)) {
        Ok(()) => Ok(()),
        Err(TestError::Fail(why, v)) => Err(Failure {
            input: serde_json::to_string_pretty(&v).unwrap_or_else(|e| format!("(unserialisable input: {e})")),
            why: why.to_string(),
        }),
        Err(TestError::Abort(why)) => Err(Failure { input: String::new(), why: format!("aborted: {why}") }),
    }
}

/// Replays one corpus input.
pub fn replay<T: DeserializeOwned>(text: &str, property: fn(&T) -> Result<(), String>) -> Result<(), String> {
    let v: T =
        serde_json::from_str(text).map_err(|e| format!("corpus file does not parse as this target's input: {e}"))?;
    // A panic in a replay is a failure like any other, with its message.
    match std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| property(&v))) {
        Ok(r) => r,
        Err(p) => Err(format!(
            "panicked: {}",
            p.downcast_ref::<String>()
                .cloned()
                .or_else(|| p.downcast_ref::<&str>().map(|s| s.to_string()))
                .unwrap_or_default()
        )),
    }
}

/// `Err(msg)` unless `cond`.
pub fn ensure(cond: bool, msg: impl FnOnce() -> String) -> Result<(), String> {
    if cond {
        Ok(())
    } else {
        Err(msg())
    }
}

/// The corpus folder of `target`.
pub fn corpus_dir(target: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/corpus").join(target)
}

/// Writes a failing input into the corpus; returns its path.
pub fn save_to_corpus(target: &str, input: &str) -> std::io::Result<PathBuf> {
    use std::hash::{Hash, Hasher};
    let dir = corpus_dir(target);
    std::fs::create_dir_all(&dir)?;
    let mut h = std::collections::hash_map::DefaultHasher::new();
    input.hash(&mut h);
    let path = dir.join(format!("{:016x}.json", h.finish()));
    std::fs::write(&path, input)?;
    Ok(path)
}

/// A small JSON helper for the targets.
pub fn to_json<T: Serialize>(v: &T) -> Value {
    serde_json::to_value(v).unwrap_or(json!(null))
}
