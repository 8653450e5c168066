//! The embedder a configuration asks for: the one place that reads `embedding` and builds an
//! [`Embedder`], with the engine's policy for one that cannot be used now (the sidecar never
//! downloads, and a missing model falls back to the static embedder). Here, not in `embed`, so
//! that the embedders know nothing of the configuration.
//!
//! And the engine's part that embeds, [`Embedding`]: the embedder, the vector index of its
//! vectors, what recall adds to the cosine, and whether notes wait to be re-embedded.

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering::SeqCst};
use std::sync::Arc;

use rusqlite::Connection;

use skillmem_config::{Config, EmbeddingConfig};
use skillmem_embed::{self as embed, Embedder};
use skillmem_error::{Error, Result};
use skillmem_index::{ExactIndex, HnswIndex, VectorIndex};
use skillmem_store::db;
use skillmem_store::memory::store;

/// The embedder in use and what goes with it.
pub(super) struct Embedding {
    pub(super) embedder: Option<Arc<dyn Embedder>>,
    /// The static table when `embedder` is another semantic embedder: recall's second
    /// opinion (see [`skillmem_store::memory::recall::SECOND_WEIGHT`]).
    pub(super) second: Option<Arc<dyn Embedder>>,
    /// Token matching, when `embedder` is the static table (see
    /// [`skillmem_store::memory::recall::TOKEN_WEIGHT`]).
    pub(super) tokens: Option<Arc<embed::tokens::TokenMatch>>,
    pub(super) index: Option<Arc<dyn VectorIndex>>,
    /// The same index when it is the HNSW one (readiness, flushing).
    pub(super) hnsw: Option<Arc<HnswIndex>>,
    /// Set once the notes without the model's pieces were counted (see
    /// [`super::Engine::other_model_count`]); cleared by the doors that store notes without
    /// them (import, team sync), so that the next count looks again.
    pieces_counted: AtomicBool,
    /// The catalog's generation plus one when the last count found no note to re-embed (0:
    /// never): while no note has changed since, there is none to count. The server asks
    /// after every request, and the count holds the connection.
    none_to_reembed_at: AtomicU64,
}

impl Embedding {
    /// `embedder` with its vector index (see [`open_index`]) and recall's second opinions.
    pub(super) fn open(conn: &Connection, config: &Config, embedder: Option<Arc<dyn Embedder>>) -> Result<Embedding> {
        let (index, hnsw) = open_index(conn, config, embedder.as_deref())?;
        Ok(Embedding {
            second: second_opinion_for(embedder.as_deref()),
            tokens: token_match_for(embedder.as_deref()),
            embedder,
            index,
            hnsw,
            pieces_counted: AtomicBool::new(false),
            none_to_reembed_at: AtomicU64::new(0),
        })
    }

    /// The model id the embedder stamps its vectors with.
    pub(super) fn model_id(&self) -> Option<String> {
        self.embedder.as_ref().map(|e| e.model_id().to_string())
    }

    /// Whether a count at the catalog's `generation` is known to find nothing: the last one
    /// found none, no note changed since, and the notes without pieces (when the model has
    /// them) were counted.
    pub(super) fn none_to_reembed(&self, generation: u64, has_pieces: bool) -> bool {
        let pieces_known = !has_pieces || self.pieces_counted.load(SeqCst);
        pieces_known && self.none_to_reembed_at.load(SeqCst) == generation + 1
    }

    /// Claims the count of the notes without pieces: true once after each
    /// [`Embedding::pieces_missing`] (and at first).
    pub(super) fn count_pieces(&self) -> bool {
        !self.pieces_counted.swap(true, SeqCst)
    }

    /// Records what a count at `generation` found.
    pub(super) fn counted(&self, generation: u64, n: usize) {
        self.none_to_reembed_at.store(if n == 0 { generation + 1 } else { 0 }, SeqCst);
    }

    /// Notes were stored without the model's pieces: the next count looks for them again.
    pub(super) fn pieces_missing(&self) {
        self.pieces_counted.store(false, SeqCst);
    }
}

/// Builds the embedder a configuration asks for. A configuration error (a bad URL, an unset
/// API key variable) is an error that names the key; a local model that cannot be used
/// ([`embed::load_model`]) is logged and the static embedder recalls meanwhile; an `http` endpoint
/// that cannot be reached to learn its dimension is logged and recall uses the lexical rungs
/// (notes are stored without vectors; `distill` embeds them later).
pub fn from_config(cfg: &EmbeddingConfig) -> Result<Option<Arc<dyn Embedder>>> {
    use EmbeddingConfig as C;
    match cfg {
        C::Static => Ok(Some(embed::static_table::StaticEmbedder::builtin()?)),
        C::Hash => Ok(Some(Arc::new(embed::hash::HashEmbedder::default()))),
        C::Off => Ok(None),
        C::Http { url, model, api_key_env, dim } => {
            match embed::http::HttpEmbedder::new(url, model, api_key_env.as_deref(), *dim, embed::http::TIMEOUT) {
                Ok(e) => Ok(Some(Arc::new(e))),
                Err(Error::Storage(why)) => {
                    tracing::warn!("{why}; recall uses the lexical rungs until the endpoint answers at a later start");
                    Ok(None)
                }
                Err(e) => Err(e),
            }
        }
        C::Model { path } => match embed::load_model(path) {
            Ok(e) => Ok(Some(e)),
            // Never download on a host's critical path, nor stop for a model that does not
            // load: the static embedder recalls until someone fetches or fixes it.
            Err(why) => {
                tracing::warn!(
                    "{why}; recall uses the built-in static embedder meanwhile. Run `skillmem model fetch` (it prints the embedding.path to set), or `skillmem model status` to see what is configured"
                );
                Ok(Some(embed::static_table::StaticEmbedder::builtin()?))
            }
        },
    }
}

/// The index in use, and the same index when it is the HNSW one.
type OpenedIndex = (Option<Arc<dyn VectorIndex>>, Option<Arc<HnswIndex>>);

/// The static table, as recall's second opinion, for a semantic embedder other than itself.
fn second_opinion_for(embedder: Option<&dyn Embedder>) -> Option<Arc<dyn Embedder>> {
    let e = embedder?;
    if e.lexical() || e.model_id().starts_with("static:") {
        return None;
    }
    match embed::static_table::StaticEmbedder::builtin() {
        // Kept by text: the same notes come back recall after recall of a skill.
        Ok(s) => {
            Some(Arc::new(embed::cache::Cached::new(s, embed::cache::SECOND_OPINION_ENTRIES)) as Arc<dyn Embedder>)
        }
        Err(why) => {
            tracing::warn!("{why}; recall ranks by {} alone", e.model_id());
            None
        }
    }
}

/// Token matching over the static table, when `embedder` is the built-in table.
fn token_match_for(embedder: Option<&dyn Embedder>) -> Option<Arc<embed::tokens::TokenMatch>> {
    let table = embed::static_table::StaticEmbedder::builtin().ok()?;
    (embedder?.model_id() == table.model_id()).then(|| Arc::new(embed::tokens::TokenMatch::new(table)))
}

/// Opens the vector index for `embedder`: the column-major exact index for the hash
/// embedder, the HNSW index persisted under the data dir for the others (vectors and graph
/// loaded in the background). `SKILLMEM_INDEX=exact|columns|hnsw` forces one.
/// `SKILLMEM_INDEX_BLOCKING=1` waits until the graph is ready (benchmarks, tests).
fn open_index(conn: &Connection, config: &Config, embedder: Option<&dyn Embedder>) -> Result<OpenedIndex> {
    let Some(e) = embedder else { return Ok((None, None)) };
    if std::env::var("SKILLMEM_INDEX").is_ok_and(|v| v == "exact") {
        let ix = ExactIndex::new(e.model_id());
        store::load_index(conn, &ix)?;
        return Ok((Some(Arc::new(ix)), None));
    }
    let data_dir = config.data_dir.clone();
    let model = e.model_id().to_string();
    let loader: skillmem_index::hnsw::Loader = Box::new(move |sink: &mut dyn FnMut(i64, Vec<f32>)| {
        let c = db::open(&data_dir)?;
        // One pass over every vector: a page is read once, so SQLite's default cache does
        // (the connection's 16 MiB were a start's transient peak at 100k notes).
        c.pragma_update(None, "cache_size", -2048)?;
        store::stream_vectors(&c, &model, sink)
    });
    let choice = std::env::var("SKILLMEM_INDEX").unwrap_or_default();
    // The hash embedder's vectors are hashed words: nearly orthogonal, no neighbourhoods for
    // a graph to walk, and sparse queries; they get the column-major exact index.
    if choice == "columns" || (choice != "hnsw" && e.lexical()) {
        let ix = Arc::new(skillmem_index::ColumnIndex::new(e.model_id(), e.dim()));
        ix.start(Some(loader));
        if std::env::var("SKILLMEM_INDEX_BLOCKING").is_ok_and(|v| v == "1") {
            ix.wait_ready();
        }
        return Ok((Some(ix), None));
    }
    let dir = skillmem_index::hnsw::index_dir(&config.data_dir, e.model_id());
    let mut params = skillmem_index::HnswParams::default();
    if let Some(n) = std::env::var("SKILLMEM_INDEX_EXACT_MAX").ok().and_then(|v| v.parse().ok()) {
        // Tests set 0 to send every search through the graph.
        params.exact_max = n;
        params.min_selectivity = 0.0;
    }
    if let Some(n) = std::env::var("SKILLMEM_INDEX_EF").ok().and_then(|v| v.parse().ok()) {
        // Benchmarks: the candidates a search keeps (a rung asks for at least twice its depth).
        params.ef_search = n;
    }
    if let Some(n) = std::env::var("SKILLMEM_INDEX_EF_CONSTRUCTION").ok().and_then(|v| v.parse().ok()) {
        // Benchmarks: the candidates an insert compares (default 64); a graph keeps the
        // links it was built with.
        params.ef_construction = n;
    }
    let ix = Arc::new(HnswIndex::new(e.model_id(), e.dim(), Some(dir), params));
    ix.start(Some(loader));
    if std::env::var("SKILLMEM_INDEX_BLOCKING").is_ok_and(|v| v == "1") {
        ix.wait_ready();
    }
    let dynix: Arc<dyn VectorIndex> = ix.clone();
    Ok((Some(dynix), Some(ix)))
}
