//! The historian path: transcript chunks in, `TC: skill(<name>)` markers and instructions
//! out; a historian's `<skill_observations>` in, promoted notes out.
//!
//! [`mine`] turns a session's tool calls into `fix` lessons (a failure, then the call that
//! worked after a change); [`tool_calls`] reads Claude Code's. [`transcript`],
//! [`observations`], [`mine`] and [`tool_calls`] are pure text work (no disk, no database, no panics on
//! any input). The engine (`engine/historian.rs`) joins them to the store: enablement is looked
//! up per skill, and promotion goes through the same write path as `skillmem/note` (exact and
//! near-duplicate detection, an embedding at write time), with source `historian` and the
//! scope `historian.promoteScope`. Knows nothing of JSON-RPC or the engine.

// The crates below, under the module names the code has always used (`crate::memory::…`).
use skillmem_embed as embed;
use skillmem_skillmd as skillmd;
use skillmem_store::memory;
use skillmem_text as text;

pub mod filter;
pub mod labelled;
pub mod mine;
pub mod observations;
pub mod tool_calls;
pub mod transcript;

pub use transcript::{render, Format, Rendered};
