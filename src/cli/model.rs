//! `skillmem model fetch|status|distill`: the embedding model, one command away.

use std::path::PathBuf;

use anyhow::{Context, Result};
use clap::Subcommand;
use serde_json::json;

use super::{emit, Global};
use skillmem::config::{Config, EmbeddingConfig};
use skillmem::embed::fetch;

#[derive(Debug, Subcommand)]
pub enum ModelCommand {
    /// Download a sentence-embedding model into the Hugging Face cache ($HF_HOME/hub; $HF_ENDPOINT
    /// for a mirror), verify it, and print the configuration that selects it.
    Fetch {
        /// The model on the hub.
        #[arg(default_value = fetch::DEFAULT_MODEL)]
        name: String,
        /// A branch, tag or commit.
        #[arg(long, default_value = "main")]
        revision: String,
    },
    /// What embedder is configured, whether its model is present, and which one is in use.
    Status,
    /// Build a static embedding table from a model folder (local-model feature).
    #[cfg(feature = "local-model")]
    Distill {
        /// The model folder (config.json, tokenizer.json, model.safetensors).
        #[arg(long = "from", value_name = "DIR")]
        from: PathBuf,
        /// The table to write; its manifest (with the table's SHA-256) goes beside it as .json.
        #[arg(long, value_name = "FILE")]
        out: PathBuf,
        /// Dimensions kept by PCA.
        #[arg(long, default_value_t = 256)]
        dims: usize,
        /// The SIF coefficient.
        #[arg(long, default_value_t = 1e-4)]
        sif: f64,
        /// Tokens per forward pass.
        #[arg(long, default_value_t = 256)]
        batch: usize,
    },
}

pub fn run(g: &Global, what: ModelCommand) -> Result<()> {
    match what {
        ModelCommand::Fetch { name, revision } => {
            let cache = fetch::hub_cache();
            let endpoint = fetch::endpoint();
            let mut last_pct = u64::MAX;
            let quiet = g.json;
            let r = fetch::fetch(&cache, &endpoint, &name, &revision, &mut |file, got, size| {
                if let Some(s) = size.filter(|s| *s > 0) {
                    let pct = got * 100 / s;
                    if pct / 10 != last_pct / 10 && !quiet {
                        eprintln!("skillmem: {file}: {pct}% of {s} bytes");
                        last_pct = pct;
                    }
                }
            })?;
            let line = fetch::config_line(&r.path);
            emit(g, &json!({ "fetched": r, "config": line, "localModel": cfg!(feature = "local-model") }), |_| {
                let mut t = String::new();
                for f in &r.files {
                    let how = if f.downloaded { "downloaded" } else { "already present" };
                    t.push_str(&format!("{} {} bytes, verified ({how})\n", f.file, f.bytes));
                }
                t.push_str(&format!("{} at commit {} is in {}\n", r.repo, r.commit, r.path.display()));
                t.push_str("Add to skillmem.toml (or pass as initializationOptions):\n\n");
                t.push_str(&line);
                if !cfg!(feature = "local-model") {
                    t.push_str(
                        "\n\nThis build has no local-model feature; install one that has: cargo install skillmem --features local-model",
                    );
                }
                t
            })?;
        }
        ModelCommand::Status => {
            let workspace = match &g.workspace {
                Some(w) => w.clone(),
                None => std::env::current_dir().context("cannot read the current folder")?,
            };
            let mut opts = serde_json::Map::new();
            if let Some(d) = &g.data_dir {
                opts.insert("dataDir".into(), json!(d.display().to_string()));
            }
            let resolved = Config::resolve(Some(&workspace), Some(&serde_json::Value::Object(opts)))?;
            let cfg = &resolved.config.embedding;
            let (configured, present, path): (&str, bool, Option<PathBuf>) = match cfg {
                EmbeddingConfig::Static => ("static", true, None),
                EmbeddingConfig::Hash => ("hash", true, None),
                EmbeddingConfig::Off => ("off", true, None),
                EmbeddingConfig::Http { .. } => ("http", true, None),
                EmbeddingConfig::Model { path } => ("model", fetch::is_model_folder(path), Some(path.clone())),
            };
            // Why the configured model is not the one in use, if it is not.
            let (in_use, problem) = match cfg {
                EmbeddingConfig::Model { path } => match skillmem::embed::load_model(path) {
                    Ok(e) => (Some(e.model_id().to_string()), None),
                    Err(why) => {
                        let fallback: std::sync::Arc<dyn skillmem::embed::Embedder> =
                            skillmem::embed::static_table::StaticEmbedder::builtin()?;
                        (Some(fallback.model_id().to_string()), Some(why))
                    }
                },
                _ => (skillmem::engine::embedder::from_config(cfg)?.map(|e| e.model_id().to_string()), None),
            };
            let cached = fetch::cached(&fetch::hub_cache(), fetch::DEFAULT_MODEL, "main");
            let stale = match skillmem::db::open(&resolved.config.data_dir) {
                Ok(conn) => skillmem::memory::store::unembedded(&conn, in_use.as_deref()).ok(),
                Err(_) => None,
            };
            let v = json!({
                "configured": configured,
                "path": path,
                "present": present,
                "inUse": in_use,
                "localModel": cfg!(feature = "local-model"),
                "cachedDefaultModel": cached,
                "notesToReembed": stale,
                "problem": problem,
            });
            emit(g, &v, |_| {
                let mut t = format!("configured: {configured}");
                if let Some(p) = &path {
                    t.push_str(&format!(" ({}, {})", p.display(), if present { "present" } else { "missing" }));
                }
                t.push_str(&format!("\nin use: {}", in_use.as_deref().unwrap_or("none (embedding off)")));
                if let Some(why) = &problem {
                    t.push_str(&format!("\nnot the configured model: {why}"));
                }
                t.push_str(&format!(
                    "\nlocal-model feature: {}",
                    if cfg!(feature = "local-model") { "yes" } else { "no" }
                ));
                if let Some(n) = stale {
                    t.push_str(&format!("\nnotes not yet embedded by it: {n}"));
                }
                match (&cached, configured) {
                    (Some(c), "model") if path.as_ref() == Some(c) => {}
                    (Some(c), _) => t.push_str(&format!(
                        "\n{} is in the cache; to use it:\n\n{}",
                        fetch::DEFAULT_MODEL,
                        fetch::config_line(c)
                    )),
                    (None, "model") if !present => t.push_str(
                        "\nthe configured model is missing: run `skillmem model fetch` and set the path it prints",
                    ),
                    (None, _) => t.push_str(&format!(
                        "\nfor better recall: skillmem model fetch (downloads {}, about 90 MB)",
                        fetch::DEFAULT_MODEL
                    )),
                }
                t
            })?;
        }
        #[cfg(feature = "local-model")]
        ModelCommand::Distill { from, out, dims, sif, batch } => {
            use skillmem::embed::distill_table;
            let opts = distill_table::Options { from, out, dims, sif, batch };
            let mut last = 0;
            let started = std::time::Instant::now();
            let m = distill_table::distill(&opts, &mut |done, total| {
                if done * 10 / total.max(1) != last {
                    last = done * 10 / total.max(1);
                    eprintln!("skillmem: {done}/{total} tokens through the model");
                }
            })?;
            emit(g, &m, |m| {
                format!(
                    "wrote {} ({} rows × {} dims, sha256 {}) and {} in {:.0} s; PCA keeps {:.1}% of the variance",
                    opts.out.display(),
                    m.rows,
                    m.dims,
                    m.sha256,
                    distill_table::manifest_path(&opts.out).display(),
                    started.elapsed().as_secs_f64(),
                    m.recipe.explained_variance * 100.0
                )
            })?;
        }
    }
    Ok(())
}
