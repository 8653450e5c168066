//! The `skillmem` binary: the stdio sidecar (`serve`) and the same operations as commands.
//! Commands live in `cli/`; each calls the library exactly as the server's methods do.

mod cli;

use std::process::ExitCode;

use clap::Parser;

fn main() -> ExitCode {
    if std::env::args_os().len() == 1 {
        // No command at all: what to run first, rather than a usage error.
        cli::out(cli::GETTING_STARTED);
        return ExitCode::SUCCESS;
    }
    limit_malloc_arenas();
    let args = cli::Cli::parse();
    tracing_subscriber::fmt()
        .with_writer(std::io::stderr)
        .with_ansi(false)
        .with_env_filter(
            tracing_subscriber::EnvFilter::try_from_env("SKILLMEM_LOG")
                .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("warn")),
        )
        .init();
    match cli::run(args) {
        Ok(code) => ExitCode::from(code),
        Err(e) => {
            eprintln!("skillmem: {e:#}");
            ExitCode::from(2)
        }
    }
}

/// At most two malloc arenas (unless `MALLOC_ARENA_MAX` says otherwise). glibc gives each
/// thread that allocates under contention an arena of its own, up to eight per core, and
/// each keeps the memory freed into it: the sidecar's request threads, the index worker and
/// the lexicon builder held about 10 MB of such free pages at 100,000 notes (server RSS
/// 183–184 MB against 172–174 MB with two arenas, docs/benchmarks.md, "Footprint at 100,000
/// notes"). On two arenas the threads share the freed pages instead.
fn limit_malloc_arenas() {
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    if std::env::var_os("MALLOC_ARENA_MAX").is_none() {
        // SAFETY: mallopt only changes the allocator's tuning; called before any other thread
        // exists.
        unsafe {
            libc::mallopt(libc::M_ARENA_MAX, 2);
        }
    }
}
