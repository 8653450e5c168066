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

use crate::engine::Engine;
use crate::error::{Error, Result};
use crate::progress::Progress;

/// The protocol version advertised in `capabilities.experimental.skillmem`.
pub const PROTOCOL_VERSION: u32 = 1;

/// What a method may use besides the engine and its params.
pub struct Cx<'a> {
    /// Reports the progress of a long operation; the door forwards it (`$/progress` under the
    /// host's `workDoneToken`, MCP `notifications/progress`) or drops it.
    pub progress: &'a (dyn Fn(Progress) + Sync),
}

impl Cx<'static> {
    /// A context that drops progress.
    pub fn quiet() -> Cx<'static> {
        Cx { progress: &|_| {} }
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
                $crate::protocol::memory::ToolDefinition,
                $crate::protocol::memory::ToolAfter,
                $crate::protocol::memory::Note,
                $crate::protocol::memory::Recall,
                $crate::protocol::memory::Pin,
                $crate::protocol::memory::Forget,
                $crate::protocol::memory::Restore,
                $crate::protocol::memory::Purge,
                $crate::protocol::memory::VersionsOf,
                $crate::protocol::memory::Edit,
                $crate::protocol::memory::Stats,
                $crate::protocol::curate::Notes,
                $crate::protocol::curate::Preview,
                $crate::protocol::curate::Move,
                $crate::protocol::curate::Merge,
                $crate::protocol::curate::Review,
                $crate::protocol::curate::ReviewDecide,
                $crate::protocol::historian::TranscriptChunk,
                $crate::protocol::historian::HistorianResult,
                $crate::protocol::historian::Distill,
                $crate::protocol::skills::Install,
                $crate::protocol::skills::Update,
                $crate::protocol::skills::Remove,
                $crate::protocol::skills::List,
                $crate::protocol::skills::Resolve,
                $crate::protocol::skills::Seed
            ],
            notifications: [$crate::protocol::memory::ToolBefore]
        )
    };
}
pub use for_each_method;

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
