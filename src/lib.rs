//! skillmem: skill memory and session skills for AI coding agents, as a stdio JSON-RPC
//! sidecar. The wire contract is docs/protocol.md; the map of this crate, with the invariant
//! that governs each folder, is ARCHITECTURE.md (the one copy of them).
//!
//! Layers, outside in: the doors (`server/`, `hosts/`, the binary's `cli/`) speak to hosts;
//! `protocol/` is the method table they share; `engine/` is the one room every door calls,
//! in domain types; the core domains (`memory/`, `historian/`, `skills/`, `index/`, `embed/`,
//! `db/`, the leaves `skillmd/`, `project`, `progress`, `config`, and the crates under
//! `crates/`) know nothing of the engine or the doors. Cargo's edges hold the layering between
//! crates; `tests/architecture.rs` checks it within this one.

pub mod client;
pub mod engine;
pub mod hosts;
pub mod protocol;
pub mod server;
pub mod ui;

pub use error::{Error, Result};
/// The one error type (`crates/error`).
pub use skillmem_error as error;

/// The text leaf (`crates/text`): words, stems, prose, and [`text::redact`].
pub use skillmem_text as text;

/// The embedders (`crates/embed`).
pub use skillmem_embed as embed;

/// The vector indexes (`crates/index`).
pub use skillmem_index as index;

/// Reading a SKILL.md (`crates/skillmd`).
pub use skillmem_skillmd as skillmd;

/// The configuration (`crates/config`).
pub use skillmem_config as config;

/// The store: the SQLite file and skill memory over it (`crates/store`).
pub use skillmem_store::{db, memory};

/// The historian: transcripts in, observations out (`crates/historian`).
pub use skillmem_historian as historian;

/// Session skills, project identity and the progress type (`crates/skills`).
pub use skillmem_skills as skills;
pub use skillmem_skills::{progress, project};

/// Team memory through PostgreSQL (`crates/team`).
pub use skillmem_team as team;
