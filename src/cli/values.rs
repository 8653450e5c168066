//! The enumerations of the command line as clap `ValueEnum`s, so that `--help` lists their
//! values and a wrong one is refused with the list. Each accepts exactly the strings the
//! library parses (the wire names of docs/protocol.md); [`wire`] hands the command the same
//! `String` it had before, so the commands and the protocol share one parser.

use clap::builder::{EnumValueParser, TypedValueParser};
use clap::ValueEnum;

/// A parser that accepts the values of `E` and yields the value's name, as the protocol
/// spells it.
pub fn wire<E: ValueEnum + Clone + Send + Sync + 'static>() -> impl TypedValueParser<Value = String> {
    EnumValueParser::<E>::new().map(|v: E| v.to_possible_value().map(|p| p.get_name().to_string()).unwrap_or_default())
}

/// A parser that accepts the values of `E` and yields the library's value of that name, by
/// the library's one `FromStr`: clap lists and checks the names, the library parses them.
pub fn typed<E, T>() -> impl TypedValueParser<Value = T>
where
    E: ValueEnum + Clone + Send + Sync + 'static,
    T: std::str::FromStr + Clone + Send + Sync + 'static,
    T::Err: std::error::Error + Send + Sync + 'static,
{
    wire::<E>().try_map(|s| s.parse::<T>())
}

/// What kind of lesson a note is (`--kind`).
#[derive(Debug, Clone, Copy, ValueEnum)]
pub enum Kind {
    /// A trap: something that looks right and is not.
    Gotcha,
    /// A useful fact found out while working.
    Discovery,
    /// An error and what fixed it.
    Fix,
    /// A step that must not be skipped.
    Workflow,
}

/// Who sees a note (`--scope`).
#[derive(Debug, Clone, Copy, ValueEnum)]
pub enum Scope {
    /// Only this project (the git repository, or the folder outside git).
    Project,
    /// Every project.
    Global,
}

/// How a note came to the store (`--source`).
#[derive(Debug, Clone, Copy, ValueEnum)]
pub enum Source {
    /// The agent's own note tool.
    Agent,
    /// Promoted from the historian's observations.
    Historian,
    /// Read from an export (`skillmem import`).
    Import,
    /// Brought by a team pull.
    Team,
    /// Mined from a session's transcript: a failed call and the call that worked.
    Transcript,
}

/// The order of a note list (`--sort`).
#[derive(Debug, Clone, Copy, ValueEnum)]
pub enum Sort {
    /// Newest first.
    Recent,
    /// Most hits (duplicate writes) first.
    Hits,
    /// Most recalls first.
    Recalls,
    /// Most sessions that used it first.
    Used,
}

/// The format of `skillmem export`.
#[derive(Debug, Clone, Copy, ValueEnum)]
pub enum ExportFormat {
    /// One JSON note a line: what `skillmem import` reads.
    Jsonl,
    /// Markdown, for reading.
    Md,
}

/// The format of a transcript (`skillmem chunk --format`).
#[derive(Debug, Clone, Copy, ValueEnum)]
pub enum TranscriptFormat {
    /// Records of a Claude Code session `.jsonl`.
    ClaudeCode,
    /// Message parts as OpenCode stores them.
    Opencode,
    /// Plain text.
    Text,
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every value the command line offers is one the library parses, and the other way round.
    #[test]
    fn the_values_are_the_librarys() {
        fn names<E: ValueEnum>() -> Vec<String> {
            E::value_variants().iter().filter_map(|v| v.to_possible_value()).map(|p| p.get_name().to_string()).collect()
        }
        let kinds: Vec<String> = skillmem::memory::Kind::ALL.iter().map(|k| k.as_str().to_string()).collect();
        assert_eq!(names::<Kind>(), kinds);
        for s in names::<Scope>() {
            assert!(s.parse::<skillmem::memory::Scope>().is_ok(), "{s}");
        }
        let sources: Vec<String> = skillmem::memory::Source::ALL.iter().map(|s| s.as_str().to_string()).collect();
        assert_eq!(names::<Source>(), sources);
        for s in names::<TranscriptFormat>() {
            assert!(skillmem::historian::transcript::Format::parse(&s).is_some(), "{s}");
        }
        for s in names::<Sort>() {
            let parsed: Result<skillmem::engine::NoteSort, _> = serde_json::from_value(serde_json::json!(s));
            assert!(parsed.is_ok(), "{s}");
        }
        for s in names::<ExportFormat>() {
            let parsed: Result<skillmem::export::ExportFormat, _> = serde_json::from_value(serde_json::json!(s));
            assert!(parsed.is_ok(), "{s}");
        }
    }
}
