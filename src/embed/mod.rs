//! Embedders: text in, unit vector out, stamped with a model id.
//!
//! [`Embedder`] is the one trait. [`static_table::StaticEmbedder`] is the default: a table of
//! token vectors distilled from all-MiniLM-L6-v2, compiled in (no download, deterministic,
//! in-process); [`hash::HashEmbedder`] hashes words. Vectors are always L2-normalised so that cosine similarity is a
//! dot product. The model id of a vector travels with it: vectors of different model ids are
//! never compared.

#[cfg(feature = "local-model")]
pub mod distill_table;
pub mod fetch;
pub mod hash;
pub mod http;
#[cfg(feature = "local-model")]
pub mod model;
pub mod static_table;
pub mod wordpiece;

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
        C::Static => Ok(Some(static_table::StaticEmbedder::builtin()?)),
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
        C::Model { path } => {
            // Never download on a host's critical path: a missing model is replaced by the
            // static embedder until someone fetches it.
            let fallback = |why: String| -> Result<Option<std::sync::Arc<dyn Embedder>>> {
                tracing::warn!(
                    "{why}; recall uses the built-in static embedder meanwhile. Run `skillmem model fetch` (it prints the embedding.path to set), or `skillmem model status` to see what is configured"
                );
                Ok(Some(static_table::StaticEmbedder::builtin()?))
            };
            if !cfg!(feature = "local-model") {
                return fallback(format!(
                    "embedding.provider \"model\" ({}) needs a build with the local-model feature (cargo install skillmem --features local-model)",
                    path.display()
                ));
            }
            if !fetch::is_model_folder(path) {
                return fallback(format!(
                    "embedding.path {} is not a model folder (it needs {})",
                    path.display(),
                    fetch::FILES.join(", ")
                ));
            }
            model_embedder(path)
        }
    }
}

#[cfg(feature = "local-model")]
fn model_embedder(path: &std::path::Path) -> Result<Option<std::sync::Arc<dyn Embedder>>> {
    Ok(Some(std::sync::Arc::new(model::ModelEmbedder::load(path)?)))
}

#[cfg(not(feature = "local-model"))]
fn model_embedder(_: &std::path::Path) -> Result<Option<std::sync::Arc<dyn Embedder>>> {
    unreachable!("checked by from_config")
}

/// The name a model folder goes by: its own name, or its parent's for the pip package's
/// `<package>/model` layout, or the repository's for the Hugging Face cache's
/// `models--org--name/snapshots/<rev>` layout.
pub fn model_name(path: &std::path::Path) -> String {
    let name = |p: &std::path::Path| p.file_name().map(|n| n.to_string_lossy().to_string()).unwrap_or_default();
    let own = name(path);
    let parent = path.parent();
    let grand = parent.and_then(|p| p.parent());
    if own == "model" {
        if let Some(p) = parent {
            return name(p);
        }
    }
    if parent.is_some_and(|p| name(p) == "snapshots") {
        if let Some(repo) = grand.map(name).and_then(|g| g.strip_prefix("models--").map(str::to_owned)) {
            return repo.rsplit("--").next().unwrap_or(&repo).to_string();
        }
    }
    own
}

/// The text a note is embedded by: its intent and its lesson.
pub fn note_text(intent: &str, delta: &str) -> String {
    if intent.is_empty() {
        delta.to_string()
    } else {
        format!("{intent}\n{delta}")
    }
}

/// The text `embedder` embeds a note by. A lexical embedder sees [`note_text`] (code words are
/// exactly what it matches on); a semantic one sees the intent and the lesson's prose, its
/// inline code spans left out ([`crate::text::prose`]): a sentence model reads code as noise. Measured on
/// `recall-dev.json` with all-MiniLM-L6-v2, pure cosine: paraphrase MRR@10 0.680 → 0.715,
/// recall@5 0.872 → 0.962 (docs/index.md).
pub fn embed_text(embedder: &dyn Embedder, intent: &str, delta: &str) -> String {
    if embedder.lexical() {
        note_text(intent, delta)
    } else {
        note_text(intent, &crate::text::prose(delta))
    }
}

#[cfg(test)]
mod text_tests {
    use super::*;

    #[test]
    fn lexical_embedders_see_the_code() {
        let hash = crate::embed::hash::HashEmbedder::default();
        assert_eq!(embed_text(&hash, "i", "use `x`"), "i\nuse `x`");
    }
}
