//! The wire contract (docs/protocol.md): one type per method, implementing [`Method`] (or
//! [`Notification`]), and the one table of them, [`for_each_method!`], from which everything
//! else is derived: the server's routing (`server::service`), the advertised method list
//! ([`METHODS`]), the generated schemas ([`all_schemas`], `schemas/*.json`) and the MCP tools'
//! input schemas (`hosts/mcp.rs`).
//!
//! A method's `run` reads its params (the wire's names and shapes: which argument names the
//! skill, where a host puts the skill's folder), calls the engine with domain types, and
//! returns the engine's result. Adding a method is one new type in its family's file (params,
//! `impl Method` with its `run`) plus its name in the table below.

pub mod curate;
pub mod historian;
pub mod memory;
pub mod skills;

use schemars::JsonSchema;
use serde::de::DeserializeOwned;
use serde::{Deserialize, Serialize};
use serde_json::Value;

use skillmem_engine::Engine;
use skillmem_error::{Error, Result};
use skillmem_skills::progress::Progress;

/// The protocol version advertised in `capabilities.experimental.skillmem`.
pub const PROTOCOL_VERSION: u32 = 1;

/// What a method may use besides the engine and its params.
pub struct Cx<'a> {
    /// Reports the progress of a long operation; the door forwards it (`$/progress` under the
    /// host's `workDoneToken`, MCP `notifications/progress`) or drops it.
    pub progress: &'a (dyn Fn(Progress) + Sync),
    /// Who acts through the door: a note a person writes, edits, pins or accepts is trusted
    /// (docs/protocol.md, "Use and trust"); the agent's are not.
    pub actor: Actor,
}

/// Who acts through a door. The door decides: the CLI in a person's terminal, the dashboard
/// and the review queue are a person; the sidecar's protocol, the MCP door, the hooks and a
/// CLI run from an agent's shell ([`Actor::of_shell`]) are the agent.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Actor {
    Agent,
    Person,
}

/// Variables the agent hosts set in the shells their tools run (and a few vendor-neutral
/// ones): a command run there is the agent's, not a person's.
pub const AGENT_SHELL_MARKERS: &[&str] = &[
    "CLAUDECODE",
    "CLAUDE_CODE_ENTRYPOINT",
    "GEMINI_CLI",
    "CODEX_SANDBOX",
    "CODEX_THREAD_ID",
    "CODEX_MANAGED_BY_NPM",
    "OPENCODE",
    "PI_CODING_AGENT",
    "COPILOT_CLI",
    "CURSOR_AGENT",
    "GOOSE_TERMINAL",
    "AI_AGENT",
    "AGENT",
];

impl Actor {
    /// The actor of a command line run with the environment `var`: `SKILLMEM_ACTOR`
    /// (`person` or `agent`) when set, else the agent when any of [`AGENT_SHELL_MARKERS`] is
    /// set to a non-empty value, else a person.
    pub fn of_shell(var: impl Fn(&str) -> Option<String>) -> Actor {
        match var("SKILLMEM_ACTOR").as_deref().map(str::trim) {
            Some("person") => return Actor::Person,
            Some("agent") => return Actor::Agent,
            _ => {}
        }
        let marked = AGENT_SHELL_MARKERS.iter().any(|k| var(k).is_some_and(|v| !v.trim().is_empty()));
        if marked {
            Actor::Agent
        } else {
            Actor::Person
        }
    }
}

impl Cx<'static> {
    /// A context that drops progress, for the agent.
    pub fn quiet() -> Cx<'static> {
        Cx { progress: &|_| {}, actor: Actor::Agent }
    }

    /// A context that drops progress, for `actor`.
    pub fn quiet_as(actor: Actor) -> Cx<'static> {
        Cx { progress: &|_| {}, actor }
    }
}

/// A request: a name, params, a result, and how to run it against the engine.
pub trait Method: 'static {
    /// The JSON-RPC method name.
    const NAME: &'static str;
    /// The stem of its schema files: `schemas/<STEM>.params.json` and `.result.json`.
    const STEM: &'static str;
    type Params: DeserializeOwned + JsonSchema + Clone + Send + 'static;
    type Result: Serialize + JsonSchema + Send + 'static;

    /// The params when the host sends `null`, for methods whose params are all optional;
    /// `None` makes `null` an error. (A request without a `params` member is refused by
    /// tower-lsp-server before it reaches the method: hosts send `{}` or `null`.)
    fn no_params() -> Option<Self::Params> {
        None
    }

    /// The host's `workDoneToken`, for methods that report progress, and the progress title.
    fn progress(_p: &Self::Params) -> Option<(ProgressToken, &'static str)> {
        None
    }

    /// Synchronous work done before the handler first yields (state a later message depends
    /// on: tower-lsp-server runs handlers concurrently).
    fn prologue(_engine: &Engine, _p: &mut Self::Params) {}

    /// Runs the method (blocking: the server calls it in `spawn_blocking`).
    fn run(engine: &Engine, p: Self::Params, cx: &Cx<'_>) -> Result<Self::Result>;
}

/// A notification: no result; handled synchronously before the handler first yields.
pub trait Notification: 'static {
    const NAME: &'static str;
    const STEM: &'static str;
    type Params: DeserializeOwned + JsonSchema + Send + 'static;
    fn handle(engine: &Engine, p: Self::Params);
}

/// Reads a method's params: `null` is [`Method::no_params`] when the method has one.
/// `label` names the method (or the MCP tool) in the error.
pub fn parse<M: Method>(label: &str, params: Value) -> Result<M::Params> {
    if params.is_null() {
        if let Some(p) = M::no_params() {
            return Ok(p);
        }
    }
    serde_json::from_value(params).map_err(|e| Error::invalid(format!("{label}: invalid params: {e}")))
}

/// A `workDoneToken`: a string or an integer, as LSP says.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(untagged)]
pub enum ProgressToken {
    Number(i32),
    String(String),
}

/// The table: every request and notification of the protocol. Calls `$callback!` with the
/// request types and the notification types:
/// `$callback!(requests: [A, B, ...], notifications: [N, ...])`.
#[macro_export]
#[doc(hidden)]
macro_rules! for_each_method {
    ($callback:ident) => {
        $callback!(
            requests: [
                $crate::memory::ToolDefinition,
                $crate::memory::ToolAfter,
                $crate::memory::SessionEnd,
                $crate::memory::Note,
                $crate::memory::Recall,
                $crate::memory::Pin,
                $crate::memory::Forget,
                $crate::memory::Restore,
                $crate::memory::Purge,
                $crate::memory::VersionsOf,
                $crate::memory::Edit,
                $crate::memory::Feedback,
                $crate::memory::Stats,
                $crate::curate::Notes,
                $crate::curate::Preview,
                $crate::curate::Move,
                $crate::curate::Merge,
                $crate::curate::Review,
                $crate::curate::ReviewDecide,
                $crate::historian::TranscriptChunk,
                $crate::historian::HistorianResult,
                $crate::historian::Distill,
                $crate::skills::Install,
                $crate::skills::Update,
                $crate::skills::Remove,
                $crate::skills::List,
                $crate::skills::Resolve,
                $crate::skills::Seed,
                $crate::skills::Audit,
                $crate::skills::Verify,
                $crate::skills::Lock,
                $crate::skills::InstallLocked
            ],
            notifications: [$crate::memory::ToolBefore]
        )
    };
}

macro_rules! names {
    (requests: [$($m:ty),*], notifications: [$($n:ty),*]) => {
        &[$(<$m as Method>::NAME,)* $(<$n as Notification>::NAME,)*]
    };
}

/// Every custom method the server answers (requests, then notifications), as advertised in
/// `capabilities.experimental.skillmem.methods`.
pub const METHODS: &[&str] = for_each_method!(names);

fn schema<T: JsonSchema>() -> Value {
    serde_json::to_value(schemars::schema_for!(T)).unwrap_or(Value::Null)
}

macro_rules! schemas {
    (requests: [$($m:ty),*], notifications: [$($n:ty),*]) => {{
        let mut v: Vec<(String, Value)> = vec![];
        $(
            v.push((format!("{}.params", <$m as Method>::STEM), schema::<<$m as Method>::Params>()));
            v.push((format!("{}.result", <$m as Method>::STEM), schema::<<$m as Method>::Result>()));
        )*
        $( v.push((format!("{}.params", <$n as Notification>::STEM), schema::<<$n as Notification>::Params>())); )*
        v
    }};
}

/// The JSON Schema of every request's params and result, every notification's params, and
/// the `initialize` capability, by file stem (`schemas/<stem>.json`).
pub fn all_schemas() -> Vec<(String, Value)> {
    let mut v = for_each_method!(schemas);
    v.push(("initialize.skillmemCapability".into(), schema::<SkillmemCapability>()));
    v
}

/// `capabilities.experimental.skillmem` of the `initialize` result.
#[derive(Debug, Clone, Serialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct SkillmemCapability {
    pub protocol_version: u32,
    /// Every custom method the server answers.
    pub methods: Vec<String>,
    /// The project identity notes are written and read under.
    pub project_id: String,
    pub data_dir: String,
    /// The embedder's model id, or null when embedding is off.
    pub embedding_model: Option<String>,
}

#[cfg(test)]
mod actor_tests {
    use super::Actor;

    #[test]
    fn the_shell_says_who_acts() {
        let cases: &[(&[(&str, &str)], Actor)] = &[
            (&[], Actor::Person),
            (&[("CLAUDECODE", "1")], Actor::Agent),
            (&[("GEMINI_CLI", "1")], Actor::Agent),
            (&[("CODEX_SANDBOX", "seatbelt")], Actor::Agent),
            (&[("PI_CODING_AGENT", "true")], Actor::Agent),
            (&[("AGENT", "goose")], Actor::Agent),
            (&[("AGENT", "")], Actor::Person),
            (&[("HOME", "/root")], Actor::Person),
            (&[("CLAUDECODE", "1"), ("SKILLMEM_ACTOR", "person")], Actor::Person),
            (&[("SKILLMEM_ACTOR", "agent")], Actor::Agent),
            (&[("SKILLMEM_ACTOR", "robot")], Actor::Person),
        ];
        for (env, want) in cases {
            let got = Actor::of_shell(|k| env.iter().find(|(n, _)| *n == k).map(|(_, v)| v.to_string()));
            assert_eq!(got, *want, "{env:?}");
        }
    }
}
