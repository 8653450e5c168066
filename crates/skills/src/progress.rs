//! The one progress type of long operations (a clone, a re-embedding run): what every door
//! turns into its own progress messages (`$/progress`, MCP `notifications/progress`, the CLI's
//! progress line). A leaf: imports nothing from the crate.

/// A step of a long operation.
#[derive(Debug, Clone, PartialEq)]
pub struct Progress {
    /// What is happening, for a person ("receiving objects", "12/40 notes").
    pub message: String,
    /// How far, 0–100, when known.
    pub percent: Option<u32>,
}
