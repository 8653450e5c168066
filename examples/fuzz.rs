//! The long fuzz run: every target (or those named) for a given time each, with fresh random
//! seeds, printing cases per second and total cases; a failing input is shrunk and saved in
//! `tests/corpus/<target>/`, where `cargo test --test fuzz` replays it from then on.
//!
//! ```text
//! cargo run --release --example fuzz -- --minutes 10 [--target NAME]... [--seed N] [--list]
//! ```
#![allow(clippy::print_stdout)]

#[path = "../tests/fuzz/mod.rs"]
mod targets;

use std::time::{Duration, Instant};

fn main() {
    let mut minutes = 1.0f64;
    let mut names: Vec<String> = vec![];
    let mut seed: Option<u64> = None;
    let mut args = std::env::args().skip(1);
    while let Some(a) = args.next() {
        match a.as_str() {
            "--minutes" => minutes = args.next().and_then(|m| m.parse().ok()).expect("--minutes takes a number"),
            "--target" => names.push(args.next().expect("--target takes a name")),
            "--seed" => seed = Some(args.next().and_then(|s| s.parse().ok()).expect("--seed takes a number")),
            "--list" => {
                for t in targets::all() {
                    println!("{}", t.name);
                }
                return;
            }
            other => {
                eprintln!(
                    "unknown argument {other:?}; usage: fuzz [--minutes M] [--target NAME]... [--seed N] [--list]"
                );
                std::process::exit(2);
            }
        }
    }
    let all = targets::all();
    for n in &names {
        if !all.iter().any(|t| t.name == n) {
            eprintln!("no target {n:?}; --list shows them");
            std::process::exit(2);
        }
    }
    // Quiet panics: a panicking case is reported (and shrunk) by the runner.
    std::panic::set_hook(Box::new(|_| {}));
    let budget = Duration::from_secs_f64(minutes * 60.0);
    let mut seed = seed.unwrap_or_else(|| {
        std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map(|d| d.as_nanos() as u64).unwrap_or(1)
    });
    let mut failed = false;
    println!("{:<14} {:>10} {:>12} {:>8}  result", "target", "cases", "cases/s", "seconds");
    for t in all.iter().filter(|t| names.is_empty() || names.iter().any(|n| n == t.name)) {
        let start = Instant::now();
        let mut total: u64 = 0;
        let mut batch: u32 = 16;
        let mut result = "ok".to_string();
        let first_seed = seed;
        while start.elapsed() < budget {
            let b0 = Instant::now();
            let r = (t.run)(batch, seed);
            seed = seed.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
            match r {
                Ok(()) => total += batch as u64,
                Err(f) => {
                    let saved = targets::save_to_corpus(t.name, &f.input)
                        .map(|p| p.display().to_string())
                        .unwrap_or_else(|e| format!("(not saved: {e})"));
                    result = format!("FAILED: {} (input saved to {saved})", f.why.lines().next().unwrap_or(""));
                    failed = true;
                    break;
                }
            }
            // Batches of about a second, so that the time budget is kept.
            let took = b0.elapsed().as_secs_f64().max(1e-3);
            batch = ((batch as f64 / took).clamp(1.0, 100_000.0)) as u32;
        }
        let secs = start.elapsed().as_secs_f64();
        println!(
            "{:<14} {:>10} {:>12.0} {:>8.0}  {result} (first seed {first_seed})",
            t.name,
            total,
            total as f64 / secs,
            secs
        );
    }
    if failed {
        std::process::exit(1);
    }
}
