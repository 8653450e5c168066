//! Skill memory: notes, enablement, provenance, the intent stash, the recall cascade and the
//! `<skill-memory>` block.
//!
//! Knows nothing of JSON-RPC or the engine. Takes a SQLite connection, an embedder and a
//! vector index from its caller (the engine) and returns plain Rust values.

pub mod block;
pub mod calls;
pub mod catalog;
pub mod evidence;
pub mod lexicon;
pub mod provenance;
pub mod recall;
pub mod sameness;
pub mod stash;
pub mod store;
pub mod usage;
pub mod version;
pub mod write;

use std::str::FromStr;

use schemars::JsonSchema;
use serde::{Deserialize, Deserializer, Serialize};

use crate::error::Error;

pub use crate::config::Scope;

/// What kind of lesson a note is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
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

impl Kind {
    /// Every kind, in their documented order.
    pub const ALL: [Kind; 4] = [Kind::Gotcha, Kind::Discovery, Kind::Fix, Kind::Workflow];

    /// The stored and wire spelling.
    pub fn as_str(self) -> &'static str {
        match self {
            Kind::Gotcha => "gotcha",
            Kind::Discovery => "discovery",
            Kind::Fix => "fix",
            Kind::Workflow => "workflow",
        }
    }
}

/// The one parse of a kind, from text (the CLI, the protocol, a historian line, a stored row)
/// and from JSON (through `Deserialize`); its error lists the kinds.
impl FromStr for Kind {
    type Err = Error;

    /// The wire spelling, case-insensitive, surrounding space ignored.
    fn from_str(s: &str) -> Result<Kind, Error> {
        let lower = s.trim().to_ascii_lowercase();
        Kind::ALL.into_iter().find(|k| k.as_str() == lower).ok_or_else(|| {
            Error::invalid(format!("kind {s:?} is not a note kind; use one of {}", names(Kind::ALL, Kind::as_str)))
        })
    }
}

impl<'de> Deserialize<'de> for Kind {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Kind, D::Error> {
        String::deserialize(d)?.parse().map_err(serde::de::Error::custom)
    }
}

/// How a note came to this store.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub enum Source {
    /// The agent's own note tool.
    Agent,
    /// Promoted from the historian's observations.
    Historian,
    /// Read from an export (`skillmem import`); who first wrote it is its `originSource`.
    Import,
    /// Brought by a team pull; who first wrote it is its `originSource`.
    Team,
    /// Mined from a session's transcript: a failed call and the call that worked after a
    /// change (`historian::mine`), with its evidence.
    Transcript,
}

impl Source {
    /// Every source, in their documented order.
    pub const ALL: [Source; 5] = [Source::Agent, Source::Historian, Source::Import, Source::Team, Source::Transcript];

    /// The stored and wire spelling.
    pub fn as_str(self) -> &'static str {
        match self {
            Source::Agent => "agent",
            Source::Historian => "historian",
            Source::Import => "import",
            Source::Team => "team",
            Source::Transcript => "transcript",
        }
    }
}

/// The one parse of a source, from text and from JSON (through `Deserialize`); its error lists
/// the sources.
impl FromStr for Source {
    type Err = Error;

    /// The stored and wire spelling, exactly.
    fn from_str(s: &str) -> Result<Source, Error> {
        Source::ALL.into_iter().find(|x| x.as_str() == s).ok_or_else(|| {
            Error::invalid(format!(
                "source {s:?} is not a note source; use one of {}",
                names(Source::ALL, Source::as_str)
            ))
        })
    }
}

impl<'de> Deserialize<'de> for Source {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Source, D::Error> {
        String::deserialize(d)?.parse().map_err(serde::de::Error::custom)
    }
}

/// The spellings of `all`, comma-separated, for an error that says what is valid.
pub(crate) fn names<T: Copy, const N: usize>(all: [T; N], name: fn(T) -> &'static str) -> String {
    all.map(name).join(", ")
}

/// Where a note was written, besides its [`Source`]: the host, and for the historian the
/// transcript the observation was read from. Every field is optional (notes written before
/// provenance was kept have none).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct Origin {
    /// The host that wrote it: `claude-code`, an LSP client's name (`opencode`, `Neovim`, ...),
    /// `mcp:<client>`, `cli`, `ui`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub host: Option<String>,
    /// The transcript the historian read it from (a path, or the host's id of it).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub transcript: Option<String>,
    /// Where in the transcript: `bytes A-B`, `message ID` or `messages FIRST..LAST`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub transcript_at: Option<String>,
}

/// What backs a note, shown as its `evidence`: for a lesson mined from a session's calls
/// (`historian::mine`), the failed call, its error's key lines, the call that worked or the
/// step run before it, and their positions; for a historian lesson, the error line of the
/// session's transcript it names. Every field is optional: a note the agent wrote has none.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct Backing {
    /// The call that failed, as it was run.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub failed_call: Option<String>,
    /// The error's key lines (the key line first), redacted.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub error_lines: Vec<String>,
    /// The call that worked after the change.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub fixed_call: Option<String>,
    /// The step run between them, when the call that worked was the failed one again.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub step: Option<String>,
    /// The failed call's, the step's (when there is one) and the working call's positions.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub positions: Vec<CallPosition>,
    /// A mined lesson's key: what makes another session's find the same lesson (the program,
    /// the change, the error's signature).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub key: Option<String>,
    /// A mined lesson's support: the distinct sessions that mined it (filled when read; an
    /// import carries it).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sessions: Option<i64>,
}

/// Where a call is in what reported it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub enum CallPosition {
    /// The record's index (from 0) in the host's transcript.
    RecordIndex(u64),
    /// The `callId` the call was reported with (`skillmem/toolAfter`), or its place in the
    /// session when it had none.
    CallId(String),
}

impl Backing {
    /// Reads what a note's `evidence` column holds (JSON); `None` when it is empty or unreadable.
    pub fn parse(stored: &str) -> Option<Backing> {
        serde_json::from_str::<Backing>(stored).ok().filter(|b| *b != Backing::default())
    }

    /// The same, with every text redacted (an import: the file may hold anything).
    pub fn redacted(self) -> Backing {
        let r = |s: String| crate::text::redact::redact(&s).0;
        Backing {
            failed_call: self.failed_call.map(r),
            error_lines: self.error_lines.into_iter().map(r).collect(),
            fixed_call: self.fixed_call.map(r),
            step: self.step.map(r),
            positions: self.positions,
            key: self.key.map(r),
            sessions: self.sessions,
        }
    }
}

/// One stored note.
#[derive(Debug, Clone, PartialEq)]
pub struct Note {
    pub id: i64,
    pub skill: String,
    pub scope: Scope,
    pub origin_project: String,
    pub source: Source,
    pub kind: Kind,
    pub intent: String,
    pub delta: String,
    pub tags: Vec<String>,
    pub hits: i64,
    pub recalls: i64,
    pub pinned: bool,
    pub skill_hash: Option<String>,
    pub created_at: i64,
    pub updated_at: i64,
    /// When the note left recall (replaced or retired); `None` while it is current.
    pub retired_at: Option<i64>,
    /// The note that replaced it.
    pub superseded_by: Option<i64>,
    /// Why it was replaced or retired, when someone said so.
    pub reason: Option<String>,
    /// The host's session it was written in.
    pub session_id: Option<String>,
    /// The host and transcript it was written from.
    pub origin: Origin,
    /// For a note that came by import or team pull: who first wrote it.
    pub origin_source: Option<Source>,
    /// A promoted observation waiting for a person (`historian.review`): out of recall.
    pub pending: bool,
    /// A pending correction: the note it takes the place of once accepted.
    pub review_replaces: Option<i64>,
    /// Its text's pieces for token matching, as stored with it (`TokenMatch::stored` in
    /// `skillmem_embed::tokens`); read by recall's loads only, `None` elsewhere.
    pub match_pieces: Option<Box<[u8]>>,
}

impl Note {
    /// True while the note is recalled (not replaced, not retired).
    pub fn is_current(&self) -> bool {
        self.retired_at.is_none()
    }
}

/// A note to write.
#[derive(Debug, Clone)]
pub struct NewNote {
    pub skill: String,
    pub kind: Kind,
    pub intent: String,
    pub delta: String,
    pub tags: Vec<String>,
    pub scope: Scope,
    pub source: Source,
    pub session_id: Option<String>,
    pub skill_hash: Option<String>,
    /// The host and transcript it is written from.
    pub origin: Origin,
    /// Held for review (`historian.review`): stored out of recall until a person accepts it.
    pub pending: bool,
}

impl NewNote {
    /// A project gotcha of `skill` as the agent's note tool writes it, no tags, no session, no
    /// provenance (evals and tests change what they need with `..NewNote::gotcha(..)`).
    pub fn gotcha(skill: &str, intent: &str, delta: &str) -> NewNote {
        NewNote {
            skill: skill.into(),
            kind: Kind::Gotcha,
            intent: intent.into(),
            delta: delta.into(),
            tags: vec![],
            scope: Scope::Project,
            source: Source::Agent,
            session_id: None,
            skill_hash: None,
            origin: Default::default(),
            pending: false,
        }
    }
}

/// Whether a write stored a new note or found an existing one.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub enum WriteStatus {
    /// A new note.
    Inserted,
    /// An existing note says the same thing: its hits went up, nothing new was stored.
    Duplicate,
    /// A new note took the place of the one named by `replaces`.
    Replaced,
}

/// Which rung of the cascade answered a recall.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub enum RecallMode {
    /// Vector similarity (fused with bm25).
    Vector,
    /// Full-text bm25 only.
    Fts,
    /// Recency × hits (no intent, or nothing matched it).
    Recent,
    /// Nothing to recall.
    None,
}

impl RecallMode {
    /// The wire spelling.
    pub fn as_str(self) -> &'static str {
        match self {
            RecallMode::Vector => "vector",
            RecallMode::Fts => "fts",
            RecallMode::Recent => "recent",
            RecallMode::None => "none",
        }
    }
}

/// The text a duplicate check compares: lower-cased words joined by single spaces.
pub fn normalize_text(s: &str) -> String {
    s.split(|c: char| !c.is_alphanumeric())
        .filter(|w| !w.is_empty())
        .map(str::to_lowercase)
        .collect::<Vec<_>>()
        .join(" ")
}

/// The exact-duplicate hash of a delta (hex SHA-256 of its normalised text).
pub fn norm_hash(delta: &str) -> String {
    use sha2::{Digest, Sha256};
    let d = Sha256::digest(normalize_text(delta).as_bytes());
    d.iter().take(16).map(|b| format!("{b:02x}")).collect()
}

/// The estimated token count of a text (4 characters a token, rounded up).
pub fn tokens(s: &str) -> usize {
    s.chars().count().div_ceil(4)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hash_table() {
        let cases = [
            ("Use jq -r", "use  JQ -r!", true),
            ("Use jq -r", "use jq --raw", false),
            ("  a\tb\nc ", "a b c", true),
            ("", "   ", true),
            ("naïve café", "NAÏVE CAFÉ", true),
        ];
        for (a, b, same) in cases {
            assert_eq!(norm_hash(a) == norm_hash(b), same, "{a:?} vs {b:?}");
        }
    }

    #[test]
    fn token_estimates() {
        for (s, n) in [("", 0), ("abc", 1), ("abcd", 1), ("abcde", 2), ("ééééé", 2)] {
            assert_eq!(tokens(s), n, "{s:?}");
        }
    }

    /// (text, the kind; or the error)
    #[test]
    fn kinds_parse() {
        let cases: &[(&str, Result<Kind, &str>)] = &[
            ("gotcha", Ok(Kind::Gotcha)),
            ("discovery", Ok(Kind::Discovery)),
            ("fix", Ok(Kind::Fix)),
            ("workflow", Ok(Kind::Workflow)),
            (" Gotcha ", Ok(Kind::Gotcha)),
            ("FIX", Ok(Kind::Fix)),
            ("tip", Err("kind \"tip\" is not a note kind; use one of gotcha, discovery, fix, workflow")),
            ("", Err("kind \"\" is not a note kind; use one of gotcha, discovery, fix, workflow")),
            ("fix,", Err("kind \"fix,\" is not a note kind")),
        ];
        for (text, want) in cases {
            match (text.parse::<Kind>(), want) {
                (Ok(k), Ok(w)) => assert_eq!(k, *w, "{text:?}"),
                (Err(e), Err(w)) => assert!(e.to_string().starts_with(w), "{text:?}: {e}"),
                (got, want) => panic!("{text:?}: got {got:?}, want {want:?}"),
            }
        }
        // JSON reads a kind by the same parse, and writes what it reads.
        for k in Kind::ALL {
            assert_eq!(k.as_str().parse::<Kind>().unwrap(), k);
            let json = serde_json::to_value(k).unwrap();
            assert_eq!(json, k.as_str());
            assert_eq!(serde_json::from_value::<Kind>(json).unwrap(), k);
        }
        let e = serde_json::from_value::<Kind>(serde_json::json!("tip")).unwrap_err().to_string();
        assert!(e.contains("use one of gotcha, discovery, fix, workflow"), "{e}");
    }

    /// (text, the source; or the error)
    #[test]
    fn sources_parse() {
        let all = "use one of agent, historian, import, team, transcript";
        let cases: &[(&str, Result<Source, String>)] = &[
            ("agent", Ok(Source::Agent)),
            ("historian", Ok(Source::Historian)),
            ("import", Ok(Source::Import)),
            ("team", Ok(Source::Team)),
            ("transcript", Ok(Source::Transcript)),
            ("Agent", Err(format!("source \"Agent\" is not a note source; {all}"))),
            (" team", Err(format!("source \" team\" is not a note source; {all}"))),
            ("person", Err(format!("source \"person\" is not a note source; {all}"))),
        ];
        for (text, want) in cases {
            match (text.parse::<Source>(), want) {
                (Ok(s), Ok(w)) => assert_eq!(s, *w, "{text:?}"),
                (Err(e), Err(w)) => assert_eq!(e.to_string(), *w, "{text:?}"),
                (got, want) => panic!("{text:?}: got {got:?}, want {want:?}"),
            }
        }
        for s in Source::ALL {
            let json = serde_json::to_value(s).unwrap();
            assert_eq!(json, s.as_str());
            assert_eq!(serde_json::from_value::<Source>(json).unwrap(), s);
        }
        let e = serde_json::from_value::<Source>(serde_json::json!("person")).unwrap_err().to_string();
        assert!(e.contains(all), "{e}");
    }
}
