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
