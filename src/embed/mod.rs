//! Embedders: text in, unit vector out, stamped with a model id.
//!
//! [`Embedder`] is the one trait; [`hash::HashEmbedder`] is the embedded default (no download,
//! deterministic, in-process). Vectors are always L2-normalised so that cosine similarity is a
//! dot product. The model id of a vector travels with it: vectors of different model ids are
//! never compared.

pub mod hash;
pub mod http;
#[cfg(feature = "local-model")]
pub mod model;

use crate::error::Result;

/// Turns texts into unit vectors of a fixed dimension.
pub trait Embedder: Send + Sync {
    /// A stable identifier of the model and its settings; vectors are stamped with it.
    fn model_id(&self) -> &str;
    /// The dimension of every vector this embedder returns.
    fn dim(&self) -> usize;
    /// Embeds a batch of texts, one unit vector each, in order.
    fn embed(&self, texts: &[&str]) -> Result<Vec<Vec<f32>>>;
    /// True when the embedder only sees words (no meaning): recall then weighs its rung
    /// below bm25's in the fusion.
    fn lexical(&self) -> bool {
        false
    }
    /// Embeds one text.
    fn embed_one(&self, text: &str) -> Result<Vec<f32>> {
        Ok(self.embed(&[text])?.pop().unwrap_or_default())
    }
}

/// Dot product of two vectors of the same length (cosine for unit vectors).
pub fn dot(a: &[f32], b: &[f32]) -> f32 {
    a.iter().zip(b).map(|(x, y)| x * y).sum()
}

/// Scales `v` to unit length in place (a zero vector stays zero).
pub fn normalize(v: &mut [f32]) {
    let n = v.iter().map(|x| x * x).sum::<f32>().sqrt();
    if n > 0.0 {
        v.iter_mut().for_each(|x| *x /= n);
    }
}

/// Encodes a vector as little-endian f32 bytes for storage.
pub fn to_blob(v: &[f32]) -> Vec<u8> {
    v.iter().flat_map(|x| x.to_le_bytes()).collect()
}

/// Decodes a stored vector; `None` when the blob is not a whole number of f32s.
pub fn from_blob(b: &[u8]) -> Option<Vec<f32>> {
    if !b.len().is_multiple_of(4) {
        return None;
    }
    Some(b.chunks_exact(4).map(|c| f32::from_le_bytes([c[0], c[1], c[2], c[3]])).collect())
}

/// Builds the embedder a configuration asks for. A configuration error (a bad URL, an unset
/// API key variable, a model folder without its files) is an error that names the key; an
/// `http` endpoint that cannot be reached to learn its dimension is logged and recall uses
/// the lexical rungs (notes are stored without vectors; `distill` embeds them later).
pub fn from_config(cfg: &crate::config::EmbeddingConfig) -> Result<Option<std::sync::Arc<dyn Embedder>>> {
    use crate::config::EmbeddingConfig as C;
    match cfg {
        C::Hash => Ok(Some(std::sync::Arc::new(hash::HashEmbedder::default()))),
        C::Off => Ok(None),
        C::Http { url, model, api_key_env, dim } => {
            match http::HttpEmbedder::new(url, model, api_key_env.as_deref(), *dim, http::TIMEOUT) {
                Ok(e) => Ok(Some(std::sync::Arc::new(e))),
                Err(crate::error::Error::Storage(why)) => {
                    tracing::warn!("{why}; recall uses the lexical rungs until the endpoint answers at a later start");
                    Ok(None)
                }
                Err(e) => Err(e),
            }
        }
        C::Model { path } => model_embedder(path),
    }
}

#[cfg(feature = "local-model")]
fn model_embedder(path: &std::path::Path) -> Result<Option<std::sync::Arc<dyn Embedder>>> {
    Ok(Some(std::sync::Arc::new(model::ModelEmbedder::load(path)?)))
}

#[cfg(not(feature = "local-model"))]
fn model_embedder(path: &std::path::Path) -> Result<Option<std::sync::Arc<dyn Embedder>>> {
    Err(crate::error::Error::invalid(format!(
        "embedding.provider \"model\" ({}) needs a build with the local-model feature: cargo install skillmem --features local-model",
        path.display()
    )))
}
