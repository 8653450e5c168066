//! skillmem: skill memory and session skills for AI coding agents, as a stdio JSON-RPC
//! sidecar. The wire contract is docs/protocol.md; the map of the workspace, with each crate's
//! invariant and API boundary, is ARCHITECTURE.md (the one copy of them).
//!
//! This package holds the doors (`server/`, `hosts/`, `ui/`, `client.rs`, and the binary's
//! `cli/`), which speak to hosts and people. Everything below them is a crate under `crates/`,
//! re-exported here under the module names the doors and the tests use: the method table
//! (`protocol`), the engine (`engine`), the domains (`memory` and `db` in the store,
//! `historian`, `skills`, `team`) and the layers under them. Cargo's edges hold the layering.

pub mod client;
pub mod doctor;
pub mod export;
pub mod hosts;
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

/// The skill audit (`crates/audit`).
pub use skillmem_audit as audit;
pub use skillmem_skills::{progress, project};

/// Team memory through PostgreSQL (`crates/team`).
pub use skillmem_team as team;

/// The engine: every operation, synchronous, domain types in and out (`crates/engine`).
pub use skillmem_engine as engine;

/// The method table every door shares (`crates/protocol`).
pub use skillmem_protocol as protocol;
