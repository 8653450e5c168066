//! The one error type of the library, and the table of its kinds and their JSON-RPC codes.
//!
//! Core domains return [`Error`]; each door reports it its own way: `server/` as a JSON-RPC
//! error with [`Error::code`] and [`Error::kind`] (a panic in a handler it answers itself, as
//! an internal error), the MCP door as a failed tool result, the CLI by printing its message.
//! Every message says what was wrong in words a user can act on.

use thiserror::Error;

/// Every failure the library reports, by the kind of the protocol's error table.
#[derive(Debug, Error)]
pub enum Error {
    /// A parameter is missing or wrong (which field, and why).
    #[error("{0}")]
    InvalidParams(String),
    /// The skill does not have memory enabled.
    #[error("{0}")]
    MemoryDisabled(String),
    /// A skill, note or source is not there.
    #[error("{0}")]
    NotFound(String),
    /// A skill name is already installed from another source.
    #[error("{0}")]
    NameCollision(String),
    /// Clone, fetch or checkout failed.
    #[error("{0}")]
    Git(String),
    /// A repository has no skill layout, bad frontmatter or unsafe content.
    #[error("{0}")]
    InvalidSkillRepo(String),
    /// The database or the data directory failed.
    #[error("{0}")]
    Storage(String),
}

/// The library's result type.
pub type Result<T, E = Error> = std::result::Result<T, E>;

impl Error {
    /// The JSON-RPC error code of this kind (docs/protocol.md, "Errors").
    pub fn code(&self) -> i64 {
        match self {
            Error::InvalidParams(_) => -32602,
            Error::MemoryDisabled(_) => -32001,
            Error::NotFound(_) => -32002,
            Error::NameCollision(_) => -32003,
            Error::Git(_) => -32004,
            Error::InvalidSkillRepo(_) => -32005,
            Error::Storage(_) => -32006,
        }
    }

    /// The `data.kind` string of this kind.
    pub fn kind(&self) -> &'static str {
        match self {
            Error::InvalidParams(_) => "invalidParams",
            Error::MemoryDisabled(_) => "memoryDisabled",
            Error::NotFound(_) => "notFound",
            Error::NameCollision(_) => "nameCollision",
            Error::Git(_) => "git",
            Error::InvalidSkillRepo(_) => "invalidSkillRepo",
            Error::Storage(_) => "storage",
        }
    }

    /// Every `data.kind` string [`Error::kind`] can produce, in the order of the error table.
    pub const KINDS: &'static [&'static str] =
        &["invalidParams", "memoryDisabled", "notFound", "nameCollision", "git", "invalidSkillRepo", "storage"];

    /// Shorthand for an `invalidParams` error.
    pub fn invalid(msg: impl Into<String>) -> Self {
        Error::InvalidParams(msg.into())
    }

    /// The `notFound` error of a note id that is not there: says how to find one.
    pub fn unknown_note(id: i64) -> Self {
        Error::NotFound(format!(
            "no note with id {id}; `skillmem notes SKILL` lists a skill's notes with their ids (over the protocol: skillmem/notes)"
        ))
    }

    /// Shorthand for a `storage` error.
    pub fn storage(msg: impl Into<String>) -> Self {
        Error::Storage(msg.into())
    }
}

impl From<rusqlite::Error> for Error {
    fn from(e: rusqlite::Error) -> Self {
        Error::Storage(format!("database error: {e}"))
    }
}

impl From<std::io::Error> for Error {
    fn from(e: std::io::Error) -> Self {
        Error::Storage(format!("file system error: {e}"))
    }
}

impl Error {
    /// A `git` error of a message from git (`skills` maps git2's errors through this, so that
    /// this crate knows no git library).
    pub fn git(message: &str) -> Self {
        Error::Git(format!("git: {message}"))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// One error of every variant. The match is exhaustive: a new variant does not compile
    /// until it has an arm here, which is the reminder to add it to `all` and to `KINDS`.
    fn every_variant() -> Vec<Error> {
        let all = vec![
            Error::InvalidParams(String::new()),
            Error::MemoryDisabled(String::new()),
            Error::NotFound(String::new()),
            Error::NameCollision(String::new()),
            Error::Git(String::new()),
            Error::InvalidSkillRepo(String::new()),
            Error::Storage(String::new()),
        ];
        for e in &all {
            match e {
                Error::InvalidParams(_)
                | Error::MemoryDisabled(_)
                | Error::NotFound(_)
                | Error::NameCollision(_)
                | Error::Git(_)
                | Error::InvalidSkillRepo(_)
                | Error::Storage(_) => {}
            }
        }
        all
    }

    #[test]
    fn kinds_lists_every_variant_once() {
        let kinds: Vec<&str> = every_variant().iter().map(Error::kind).collect();
        assert_eq!(kinds, Error::KINDS, "Error::KINDS must list every variant's kind, in order");
        let codes: std::collections::BTreeSet<i64> = every_variant().iter().map(Error::code).collect();
        assert_eq!(codes.len(), Error::KINDS.len(), "every kind has a code of its own");
    }
}
