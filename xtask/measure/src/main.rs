//! The benchmarks and dataset studies of skillmem, run as `cargo xtask bench …` and `cargo
//! xtask study …` (xtask builds this binary and the `skillmem` binary in release, then runs
//! this one): programs that print figures or write data, never assertions, and that ship in
//! no product binary. docs/benchmarks.md has every benchmark and its figures.

mod common;
mod footprint;
mod index;
mod recall;
mod skills;
mod study;
mod team;
mod ui;

use std::io::Write;
use std::path::{Path, PathBuf};

use anyhow::{Context, Result};
use clap::{Args, Parser, Subcommand, ValueEnum};
use serde::Serialize;
use serde_json::Value;

use skillmem::config::Config;
use skillmem::engine::Engine;

/// skillmem's measuring programs.
#[derive(Debug, Parser)]
#[command(name = "cargo xtask", bin_name = "cargo xtask")]
struct Cli {
    #[command(flatten)]
    global: Global,
    #[command(subcommand)]
    command: Command,
}

/// Options every command takes.
#[derive(Debug, Args, Clone)]
pub struct Global {
    /// Print machine-readable JSON.
    #[arg(long, global = true, help_heading = "Global options")]
    pub json: bool,
}

#[derive(Debug, Subcommand)]
enum Command {
    /// Programs that print figures (built and run in release).
    #[command(after_help = BENCH)]
    Bench {
        #[command(subcommand)]
        what: BenchCommand,
    },
    /// Dataset studies: what a learned model would be trained on.
    Study {
        #[command(subcommand)]
        what: StudyCommand,
    },
}

#[derive(Debug, Subcommand)]
enum StudyCommand {
    /// Each labelled historian line's features, verdict and static-table vector, as JSONL (bench/historian/judge.py reads it).
    HistorianFeatures {
        /// The JSONL file to write.
        #[arg(long, value_name = "OUT")]
        out: PathBuf,
        /// Labelled historian sets (JSONL: skill, chunk and observation records; bench/historian/).
        #[arg(required = true)]
        files: Vec<PathBuf>,
    },
}

const BENCH: &str = "\
Examples (docs/benchmarks.md has every command and its figures):
  cargo xtask bench recall --notes 1000 --skills 1 --rounds 200 --writes 100
  cargo xtask bench skills --runs 25
  cargo xtask bench --features local-model recall --model DIR --fill protocol --notes 400";

#[derive(Debug, Subcommand)]
enum BenchCommand {
    /// Session skills: install and seed timings.
    Skills {
        /// Skills in the bundle.
        #[arg(long, default_value_t = 20)]
        count: usize,
        /// Runs of each step (the median and the minimum are printed).
        #[arg(long, default_value_t = 5)]
        runs: usize,
    },
    /// Team memory: push and pull of N notes through a scratch PostgreSQL server.
    Team {
        /// Notes machine A writes and pushes.
        #[arg(long, default_value_t = 10_000)]
        notes: usize,
    },
    /// The HNSW index alone: build, recall@10 vs exact, QPS per core, latency, reload, RSS.
    Index {
        /// Sizes of the synthetic sets.
        #[arg(long, value_delimiter = ',', default_value = "10000,100000")]
        n: Vec<usize>,
        /// The synthetic data.
        #[arg(long, default_value = "lowrank")]
        data: IndexData,
        /// Write the generated vectors and queries as raw little-endian f32 rows into this
        /// folder (`vectors-N.f32`, `queries-N.f32`), to run other libraries on the same data.
        #[arg(long, value_name = "DIR")]
        write_data: Option<PathBuf>,
        /// Dimensions of the vectors.
        #[arg(long, default_value_t = 384)]
        dim: usize,
        /// Queries per set (exact ground truth is computed for each).
        #[arg(long, default_value_t = 200)]
        queries: usize,
        /// Raw little-endian f32 rows of `dim` floats to index instead of synthetic data.
        #[arg(long, value_name = "FILE")]
        vectors: Option<PathBuf>,
        /// Raw little-endian f32 query rows (default: rows drawn from --vectors).
        #[arg(long = "queries-file", value_name = "FILE")]
        queries_file: Option<PathBuf>,
        /// The graph's links per node (M; twice as many on layer 0).
        #[arg(long, default_value_t = 16)]
        m: usize,
        /// The candidate list size while inserting.
        #[arg(long, default_value_t = 64)]
        ef_construction: usize,
        /// Search list sizes to measure.
        #[arg(long, value_delimiter = ',', default_value = "32,64,128")]
        ef: Vec<usize>,
        /// Keep the built graph in this folder, and reload it instead of building when it
        /// holds one over the same vectors (to measure search changes without a rebuild;
        /// one data set per folder).
        #[arg(long, value_name = "DIR")]
        index_dir: Option<PathBuf>,
    },
    /// Where a filled store's resident memory goes: each part a sidecar holds loaded in turn
    /// in this process, the resident size after each (and after malloc_trim).
    Footprint {
        /// The data directory of a filled store (`bench recall --keep DIR` leaves
        /// DIR/<notes>-<skills>/data).
        #[arg(long, value_name = "DIR")]
        data: PathBuf,
        /// Its workspace (DIR/<notes>-<skills>/ws).
        #[arg(long, value_name = "DIR")]
        workspace: PathBuf,
        /// Loads with an intent after every skill was loaded once.
        #[arg(long, default_value_t = 1000)]
        rounds: usize,
        /// Then loads of the first skill alone (a protocol fill's 90%-of-the-notes skill).
        #[arg(long, default_value_t = 0)]
        first_skill_rounds: usize,
    },
    /// The dashboard: a skill page of N notes (50 a page) fetched over loopback.
    Ui {
        /// Notes of the skill.
        #[arg(long, default_value_t = 10_000)]
        notes: usize,
        /// Requests per view.
        #[arg(long, default_value_t = 50)]
        rounds: usize,
    },
    /// `skillmem serve` as a host sees it: toolAfter round trips, spawn to first recall, writes, RSS.
    Recall(recall::RecallOpts),
}

/// The synthetic vectors of `bench index`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum IndexData {
    /// A 32-dim Gaussian latent times a fixed random 32×dim basis plus 0.15 noise,
    /// normalised: close to real sentence embeddings, hard for a graph.
    Lowrank,
    /// Unit vectors around n/100 centres: easy for a graph.
    Clustered,
}

/// How `bench recall` fills its store.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum FillMode {
    /// The fixture, straight into the database.
    Sql,
    /// Every note through `skillmem/note` from an empty store, 64 in flight, 90% to one
    /// skill, as a host or an import writes; prints notes/s per tenth.
    Protocol,
}

/// Writes a line to stdout.
pub fn out(s: &str) {
    let mut o = std::io::stdout().lock();
    let _ = writeln!(o, "{s}");
}

/// `value` as pretty JSON with `--json`, else as `human` renders it.
pub fn emit<T: Serialize>(g: &Global, value: &T, human: impl FnOnce(&T) -> String) -> Result<()> {
    if g.json {
        out(&serde_json::to_string_pretty(value)?);
    } else {
        out(&human(value));
    }
    Ok(())
}

/// An engine over the data directory `data` for the workspace `workspace`, configured as the
/// command line configures its own (the workspace's skillmem.toml applies).
pub fn engine(data: &Path, workspace: &Path) -> Result<Engine> {
    let mut opts = serde_json::Map::new();
    opts.insert("dataDir".into(), Value::String(data.display().to_string()));
    let mut resolved = Config::resolve(Some(workspace), Some(&Value::Object(opts)))?;
    for w in &resolved.warnings {
        eprintln!("xtask: warning: {w}");
    }
    resolved.config.default_host("cli");
    Ok(Engine::open(resolved.config, Some(workspace.to_path_buf()))?)
}

/// The `skillmem` binary the benchmarks spawn: `$SKILLMEM_BIN`, else the one beside this
/// binary (`cargo xtask bench` builds both into the same release folder).
pub fn server_exe() -> Result<PathBuf> {
    if let Some(p) = std::env::var_os("SKILLMEM_BIN") {
        return Ok(PathBuf::from(p));
    }
    let me = std::env::current_exe().context("cannot find this program's path")?;
    let exe = me.with_file_name(format!("skillmem{}", std::env::consts::EXE_SUFFIX));
    anyhow::ensure!(
        exe.is_file(),
        "no skillmem binary at {} (run the benchmarks with `cargo xtask bench`, which builds it, or set SKILLMEM_BIN)",
        exe.display()
    );
    Ok(exe)
}

fn run(cli: Cli) -> Result<()> {
    let g = &cli.global;
    let what = match cli.command {
        Command::Bench { what } => what,
        Command::Study { what: StudyCommand::HistorianFeatures { out, files } } => {
            return study::historian_features(g, &files, &out)
        }
    };
    match what {
        BenchCommand::Skills { count, runs } => skills::run(g, count, runs),
        BenchCommand::Team { notes } => team::run(g, notes),
        BenchCommand::Ui { notes, rounds } => ui::run(g, notes, rounds),
        BenchCommand::Footprint { data, workspace, rounds, first_skill_rounds } => footprint::footprint(
            g,
            footprint::FootprintOpts { data, workspace, rounds, largest_rounds: first_skill_rounds },
        ),
        BenchCommand::Index {
            n,
            data,
            write_data,
            dim,
            queries,
            vectors,
            queries_file,
            m,
            ef_construction,
            ef,
            index_dir,
        } => index::index(
            g,
            index::IndexOpts {
                sizes: n,
                data,
                write_data,
                dim,
                queries,
                vectors,
                query_file: queries_file,
                m,
                ef_construction,
                ef_search: ef,
                index_dir,
            },
        ),
        BenchCommand::Recall(o) => recall::recall(g, o),
    }
}

fn main() -> std::process::ExitCode {
    let cli = Cli::parse();
    tracing_subscriber::fmt()
        .with_writer(std::io::stderr)
        .with_ansi(false)
        .with_env_filter(
            tracing_subscriber::EnvFilter::try_from_env("SKILLMEM_LOG")
                .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("warn")),
        )
        .init();
    match run(cli) {
        Ok(()) => std::process::ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("xtask: {e:#}");
            std::process::ExitCode::from(2)
        }
    }
}

#[cfg(test)]
mod tests {
    use clap::CommandFactory;

    /// The command tree is well formed, and every argument has a line of help.
    #[test]
    fn every_argument_has_help() {
        let mut cmd = super::Cli::command();
        cmd.build();
        cmd.clone().debug_assert();
        for family in ["bench", "study"] {
            for sub in cmd.find_subcommand(family).unwrap().get_subcommands() {
                for a in sub.get_arguments() {
                    if a.get_id() != "help" {
                        assert!(a.get_help().is_some(), "{family} {} --{} has no help", sub.get_name(), a.get_id());
                    }
                }
            }
        }
    }
}
