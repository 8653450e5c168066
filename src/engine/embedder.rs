//! The embedder a configuration asks for: the one place that reads `embedding` and builds an
//! [`Embedder`], with the engine's policy for one that cannot be used now (the sidecar never
//! downloads, and a missing model falls back to the static embedder). Here, not in `embed`, so
//! that the embedders know nothing of the configuration.

use std::sync::Arc;

use crate::config::EmbeddingConfig;
use crate::embed::{self, Embedder};
use crate::error::{Error, Result};

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
