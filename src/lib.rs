//! skillmem: skill memory and session skills for AI coding agents, as a stdio JSON-RPC
//! sidecar (see PROTOCOL.md for the wire contract and ARCHITECTURE.md for the map).
//!
//! # Architecture invariants
//!
//! - Only `server/` and `protocol/` know JSON-RPC. Core domains (`memory/`, `historian/`,
//!   `skills/`, `embed/`, `index/`, `db/`) take and return plain Rust types.
//! - SQLite is the source of truth. A vector index is derived: it can be dropped and rebuilt
//!   from the database at any time.
//! - stdout carries frames only. Logs go to stderr through `tracing`; `print!` is denied by
//!   clippy outside the CLI's own output.
//! - A note's vector is stamped with the embedder's model id; vectors of another model are
//!   never compared with the query.
//! - Blocking work (SQLite, git, embedding) runs in `spawn_blocking`; no lock is held across
//!   an `.await`.
//! - State a later message depends on (the intent stash) is mutated synchronously at the start
//!   of a handler, before any `.await`.
//! - Every write commits whole or not at all, in one `BEGIN IMMEDIATE` transaction.

pub mod client;
pub mod config;
pub mod db;
pub mod embed;
pub mod engine;
pub mod error;
pub mod historian;
pub mod hosts;
pub mod index;
pub mod memory;
pub mod progress;
pub mod project;
pub mod protocol;
pub mod server;
pub mod skills;
pub mod ui;

pub use error::{Error, Result};
