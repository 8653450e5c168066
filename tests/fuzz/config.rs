//! Config merge (crates/config/src/lib.rs): defaults ← `skillmem.toml` ← `initializationOptions`.
//!
//! Settings written in either layer (snake_case in TOML, camelCase in the options) resolve to
//! the value of the upper layer, else the lower, else the default; unknown keys are warnings
//! that name them; a value of the wrong type is an error that names its key. Arbitrary TOML
//! text and arbitrary option objects never panic and fail only with an error that names a key,
//! the file or the options.

use std::path::PathBuf;

use proptest::collection::vec;
use proptest::prelude::*;
use proptest::sample::select;
use serde::{Deserialize, Serialize};
use serde_json::{json, Map, Value};
use skillmem::config::{Config, EmbeddingConfig, WORKSPACE_FILE};
use skillmem::memory::Scope;

use super::{ensure, gen, Target};

pub const TARGET: Target = Target {
    name: "config",
    ci_cases: 600,
    run: |cases, seed| super::run(cases, seed, input(), property),
    replay: |t| super::replay(t, property),
};

/// One layer's known settings (`None`: not set in this layer).
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct Layer {
    pub max_tokens: Option<u32>,
    pub max_pinned_tokens: Option<u32>,
    pub dedup_threshold: Option<f64>,
    pub enabled_skills: Option<Vec<String>>,
    pub promote_scope: Option<bool>,
    pub project_id: Option<String>,
    pub provider: Option<u8>,
    /// Unknown keys, as (section or "", key).
    pub unknown: Vec<(String, String)>,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
pub enum Input {
    Layers { file: Option<Layer>, opts: Option<Layer> },
    Raw { toml: Option<String>, opts: Option<Value> },
}

const TOML_TOKENS: &[&str] = &[
    "[memory]\n",
    "[embedding]\n",
    "[historian]\n",
    "[[memory]]\n",
    "max_tokens = ",
    "dedup_threshold = ",
    "enabled_skills = ",
    "provider = ",
    "\"http\"",
    "\"off\"",
    "url = ",
    "promote_scope = ",
    "\"team\"",
    "data_dir = ",
    "1",
    "-1",
    "0.5",
    "1e400",
    "nan",
    "inf",
    "true",
    "\"x\"",
    "[\"a\", 2]",
    "{ a = 1 }",
    "\n",
    " = ",
    "\"\"\"",
    "'",
    "#",
    "key.dotted = 1\n",
    "1979-05-27T07:32:00Z",
];

fn layer() -> impl Strategy<Value = Layer> {
    (
        proptest::option::of(0..100_000u32),
        proptest::option::of(0..100_000u32),
        proptest::option::of((0..=1000u32).prop_map(|n| n as f64 / 1000.0)),
        proptest::option::of(vec("[a-z*?-]{1,8}", 0..3)),
        proptest::option::of(any::<bool>()),
        proptest::option::of("[a-zA-Z0-9 _-]{0,12}"),
        proptest::option::of(0..2u8),
        vec((select(&["", "memory", "historian"][..]).prop_map(str::to_string), "z[a-z]{1,6}"), 0..3),
    )
        .prop_map(
            |(
                max_tokens,
                max_pinned_tokens,
                dedup_threshold,
                enabled_skills,
                promote_scope,
                project_id,
                provider,
                unknown,
            )| {
                Layer {
                    max_tokens,
                    max_pinned_tokens,
                    dedup_threshold,
                    enabled_skills,
                    promote_scope,
                    project_id,
                    provider,
                    unknown,
                }
            },
        )
}

pub fn input() -> impl Strategy<Value = Input> {
    prop_oneof![
        3 => (proptest::option::of(layer()), proptest::option::of(layer())).prop_map(|(file, opts)| Input::Layers { file, opts }),
        1 => (proptest::option::of(gen::soup(TOML_TOKENS, 20)), proptest::option::of(gen::json_value()))
            .prop_map(|(toml, opts)| Input::Raw { toml, opts }),
        1 => (proptest::option::of(gen::chars(60)), proptest::option::of(config_json()))
            .prop_map(|(toml, opts)| Input::Raw { toml, opts }),
    ]
}

/// Option objects that reach the typed readers: known keys with values of any type.
fn config_json() -> impl Strategy<Value = Value> {
    let section = |keys: &'static [&'static str]| {
        vec((select(keys), gen::json_value()), 0..4)
            .prop_map(|kv| Value::Object(kv.into_iter().map(|(k, v)| (k.to_string(), v)).collect()))
    };
    vec(
        prop_oneof![
            section(&["maxTokens", "maxPinnedTokens", "dedupThreshold", "enabledSkills", "noteTool", "x"])
                .prop_map(|v| ("memory".to_string(), v)),
            section(&["provider", "url", "model", "apiKeyEnv", "dim", "path"])
                .prop_map(|v| ("embedding".to_string(), v)),
            section(&["promoteScope", "y"]).prop_map(|v| ("historian".to_string(), v)),
            gen::json_value().prop_map(|v| ("dataDir".to_string(), v)),
            gen::json_value().prop_map(|v| ("projectId".to_string(), v)),
        ],
        0..5,
    )
    .prop_map(|kv| Value::Object(kv.into_iter().collect::<Map<_, _>>()))
}

fn toml_str(s: &str) -> String {
    serde_json::to_string(s).unwrap() // a JSON string is a valid TOML basic string for these characters
}

fn to_toml(l: &Layer) -> String {
    let mut top = vec![];
    let mut memory = vec![];
    let mut historian = vec![];
    let mut embedding = vec![];
    if let Some(v) = l.max_tokens {
        memory.push(format!("max_tokens = {v}"));
    }
    if let Some(v) = l.max_pinned_tokens {
        memory.push(format!("max_pinned_tokens = {v}"));
    }
    if let Some(v) = l.dedup_threshold {
        memory.push(format!("dedup_threshold = {v:?}"));
    }
    if let Some(v) = &l.enabled_skills {
        memory.push(format!("enabled_skills = [{}]", v.iter().map(|s| toml_str(s)).collect::<Vec<_>>().join(", ")));
    }
    if let Some(g) = l.promote_scope {
        historian.push(format!("promote_scope = \"{}\"", if g { "global" } else { "project" }));
    }
    if let Some(p) = &l.project_id {
        top.push(format!("project_id = {}", toml_str(p)));
    }
    if let Some(p) = l.provider {
        embedding.push(format!("provider = \"{}\"", ["hash", "off"][p as usize % 2]));
    }
    let mut seen = std::collections::HashSet::new();
    // A key twice in one table is not TOML.
    for (sec, k) in l.unknown.iter().filter(|u| seen.insert((*u).clone())) {
        let line = format!("{k} = 1");
        match sec.as_str() {
            "memory" => memory.push(line),
            "historian" => historian.push(line),
            _ => top.push(line),
        }
    }
    let mut out = top.join("\n");
    for (name, lines) in [("memory", memory), ("historian", historian), ("embedding", embedding)] {
        if !lines.is_empty() {
            out.push_str(&format!("\n[{name}]\n{}\n", lines.join("\n")));
        }
    }
    out
}

fn to_json(l: &Layer) -> Value {
    let mut v = json!({});
    let mut memory = Map::new();
    if let Some(x) = l.max_tokens {
        memory.insert("maxTokens".into(), json!(x));
    }
    if let Some(x) = l.max_pinned_tokens {
        memory.insert("maxPinnedTokens".into(), json!(x));
    }
    if let Some(x) = l.dedup_threshold {
        memory.insert("dedupThreshold".into(), json!(x));
    }
    if let Some(x) = &l.enabled_skills {
        memory.insert("enabledSkills".into(), json!(x));
    }
    let mut historian = Map::new();
    if let Some(g) = l.promote_scope {
        historian.insert("promoteScope".into(), json!(if g { "global" } else { "project" }));
    }
    if let Some(p) = &l.project_id {
        v["projectId"] = json!(p);
    }
    if let Some(p) = l.provider {
        let provider = ["hash", "off"][p as usize % 2];
        v["embedding"] = json!({ "provider": provider });
    }
    for (sec, k) in &l.unknown {
        match sec.as_str() {
            "memory" => drop(memory.insert(k.clone(), json!(1))),
            "historian" => drop(historian.insert(k.clone(), json!(1))),
            _ => v[k.as_str()] = json!(1),
        }
    }
    if !memory.is_empty() {
        v["memory"] = Value::Object(memory);
    }
    if !historian.is_empty() {
        v["historian"] = Value::Object(historian);
    }
    v
}

fn says_what(e: &str) -> bool {
    [
        "memory.",
        "embedding.",
        "historian.",
        "dataDir",
        "projectId",
        "must be an object",
        WORKSPACE_FILE,
        "initializationOptions",
    ]
    .iter()
    .any(|k| e.contains(k))
}

fn resolve(toml: Option<&str>, opts: Option<&Value>) -> Result<skillmem::Result<skillmem::config::Resolved>, String> {
    let dir = tempfile::tempdir().map_err(|e| e.to_string())?;
    if let Some(t) = toml {
        std::fs::write(dir.path().join(WORKSPACE_FILE), t).map_err(|e| e.to_string())?;
    }
    Ok(Config::resolve(Some(dir.path()), opts))
}

pub fn property(input: &Input) -> Result<(), String> {
    match input {
        Input::Raw { toml, opts } => match resolve(toml.as_deref(), opts.as_ref())? {
            Ok(r) => ensure(r.warnings.iter().all(|w| w.contains("unknown configuration key")), || {
                format!("warnings {:?}", r.warnings)
            }),
            Err(e) => {
                let e = e.to_string();
                ensure(says_what(&e), || format!("the error names no key, file or option: {e:?}"))
            }
        },
        Input::Layers { file, opts } => {
            let toml = file.as_ref().map(to_toml);
            let json = opts.as_ref().map(to_json);
            let r = resolve(toml.as_deref(), json.as_ref())?
                .map_err(|e| format!("valid settings refused: {e}\n{toml:?}\n{json:?}"))?;
            let c = &r.config;
            let d = Config::default();
            let pick = |f: fn(&Layer) -> Option<u32>| -> Option<u32> {
                opts.as_ref().and_then(f).or_else(|| file.as_ref().and_then(f))
            };
            let want_max = pick(|l| l.max_tokens).map(|x| x as usize).unwrap_or(d.memory.max_tokens);
            ensure(c.memory.max_tokens == want_max, || format!("maxTokens {} want {want_max}", c.memory.max_tokens))?;
            let want = pick(|l| l.max_pinned_tokens).map(|x| x as usize).unwrap_or(d.memory.max_pinned_tokens);
            ensure(c.memory.max_pinned_tokens == want, || "maxPinnedTokens".into())?;
            let dedup = opts
                .as_ref()
                .and_then(|l| l.dedup_threshold)
                .or_else(|| file.as_ref().and_then(|l| l.dedup_threshold))
                .map(|x| x as f32)
                .unwrap_or(d.memory.dedup_threshold);
            ensure(c.memory.dedup_threshold == dedup, || {
                format!("dedupThreshold {} want {dedup}", c.memory.dedup_threshold)
            })?;
            let skills = opts
                .as_ref()
                .and_then(|l| l.enabled_skills.clone())
                .or_else(|| file.as_ref().and_then(|l| l.enabled_skills.clone()))
                .unwrap_or_default();
            ensure(c.memory.enabled_skills == skills, || "enabledSkills".into())?;
            let scope = opts
                .as_ref()
                .and_then(|l| l.promote_scope)
                .or_else(|| file.as_ref().and_then(|l| l.promote_scope))
                .map(|g| if g { Scope::Global } else { Scope::Project })
                .unwrap_or(d.historian.promote_scope);
            ensure(c.historian.promote_scope == scope, || "promoteScope".into())?;
            let pid = opts
                .as_ref()
                .and_then(|l| l.project_id.clone())
                .or_else(|| file.as_ref().and_then(|l| l.project_id.clone()));
            ensure(c.project_id == pid, || format!("projectId {:?} want {pid:?}", c.project_id))?;
            let provider = opts.as_ref().and_then(|l| l.provider).or_else(|| file.as_ref().and_then(|l| l.provider));
            let emb = match provider.map(|p| p % 2) {
                None => d.embedding.clone(),
                Some(0) => EmbeddingConfig::Hash,
                _ => EmbeddingConfig::Off,
            };
            ensure(c.embedding == emb, || format!("embedding {:?} want {emb:?}", c.embedding))?;
            ensure(c.data_dir == d.data_dir || c.data_dir != PathBuf::new(), || "dataDir".into())?;
            // Every unknown key is a warning that names it (once per merged key).
            let mut keys: Vec<String> = file
                .iter()
                .chain(opts.iter())
                .flat_map(|l| l.unknown.iter())
                .map(|(s, k)| if s.is_empty() { k.clone() } else { format!("{s}.{k}") })
                .collect();
            keys.sort();
            keys.dedup();
            ensure(r.warnings.len() == keys.len(), || format!("warnings {:?} for unknown keys {keys:?}", r.warnings))?;
            for k in &keys {
                ensure(r.warnings.iter().any(|w| w.contains(&format!("key {k} "))), || {
                    format!("no warning names {k}: {:?}", r.warnings)
                })?;
            }
            Ok(())
        }
    }
}
