//! The `model` embedder: a local BERT-family sentence-embedding model run in-process with
//! candle (cargo feature `local-model`).
//!
//! A model folder holds `config.json`, `tokenizer.json` and `model.safetensors` (the layout
//! of sentence-transformers models such as all-MiniLM-L6-v2). Texts are tokenized (truncated
//! to [`MAX_TOKENS`]), run through the encoder on the CPU, mean-pooled over the attention
//! mask and L2-normalised. The model id is `model:<folder name>#<dim>-<hash of config.json>`.

use std::path::Path;

use candle_core::{DType, Device, Tensor};
use candle_nn::VarBuilder;
use candle_transformers::models::bert::{BertModel, Config};
use tokenizers::{PaddingParams, Tokenizer, TruncationParams};

use super::{normalize, Embedder, Pieces, WithPieces};
use skillmem_error::{Error, Result};

/// Tokens per text (all-MiniLM-L6-v2 was trained on 256).
pub const MAX_TOKENS: usize = 256;
/// Texts per forward pass.
pub const BATCH: usize = 16;

/// A sentence-embedding model loaded from a folder.
pub struct ModelEmbedder {
    model: BertModel,
    tokenizer: Tokenizer,
    dim: usize,
    model_id: String,
}

fn bad(path: &Path, what: String) -> Error {
    Error::invalid(format!("embedding.path {}: {what}", path.display()))
}

impl ModelEmbedder {
    /// Loads the model of folder `path`. A missing or unreadable file is an error that names
    /// it.
    pub fn load(path: &Path) -> Result<Self> {
        for f in ["config.json", "tokenizer.json", "model.safetensors"] {
            if !path.join(f).is_file() {
                return Err(bad(
                    path,
                    format!("{f} is missing; a model folder holds config.json, tokenizer.json and model.safetensors"),
                ));
            }
        }
        let cfg_bytes = std::fs::read(path.join("config.json")).map_err(|e| bad(path, format!("config.json: {e}")))?;
        let config: Config = serde_json::from_slice(&cfg_bytes)
            .map_err(|e| bad(path, format!("config.json is not a BERT config: {e}")))?;
        let mut tokenizer =
            Tokenizer::from_file(path.join("tokenizer.json")).map_err(|e| bad(path, format!("tokenizer.json: {e}")))?;
        tokenizer.with_padding(Some(PaddingParams::default()));
        tokenizer
            .with_truncation(Some(TruncationParams { max_length: MAX_TOKENS, ..Default::default() }))
            .map_err(|e| bad(path, format!("tokenizer.json: {e}")))?;
        let weights =
            std::fs::read(path.join("model.safetensors")).map_err(|e| bad(path, format!("model.safetensors: {e}")))?;
        let vb = VarBuilder::from_buffered_safetensors(weights, DType::F32, &Device::Cpu)
            .map_err(|e| bad(path, format!("model.safetensors: {e}")))?;
        let model = BertModel::load(vb, &config).map_err(|e| bad(path, format!("model.safetensors: {e}")))?;
        let dim = config.hidden_size;
        use sha2::{Digest, Sha256};
        let h = Sha256::digest(&cfg_bytes);
        let tag: String = h.iter().take(4).map(|b| format!("{b:02x}")).collect();
        let name = super::model_name(path);
        Ok(ModelEmbedder { model, tokenizer, dim, model_id: format!("model:{name}#{dim}-{tag}{}", super::VIEWS_TAG) })
    }

    /// Embeds a batch; the pieces of the texts whose `want` flag is set come from the same run
    /// (see [`super::Pieces`]).
    fn batch(&self, texts: &[&str], want: &[bool]) -> std::result::Result<WithPieces, String> {
        let enc = self.tokenizer.encode_batch(texts.to_vec(), true).map_err(|e| format!("tokenizer: {e}"))?;
        let ids: Vec<Tensor> = enc
            .iter()
            .map(|e| Tensor::new(e.get_ids(), &Device::Cpu))
            .collect::<candle_core::Result<_>>()
            .map_err(|e| e.to_string())?;
        let masks: Vec<Tensor> = enc
            .iter()
            .map(|e| Tensor::new(e.get_attention_mask(), &Device::Cpu))
            .collect::<candle_core::Result<_>>()
            .map_err(|e| e.to_string())?;
        let any_pieces = want.iter().any(|w| *w);
        // The pooled vectors, and every token's output when pieces are asked for.
        type Run = (Vec<Vec<f32>>, Option<Vec<Vec<Vec<f32>>>>);
        let run = || -> candle_core::Result<Run> {
            let ids = Tensor::stack(&ids, 0)?;
            let mask = Tensor::stack(&masks, 0)?;
            let types = ids.zeros_like()?;
            let out = self.model.forward(&ids, &types, Some(&mask))?;
            // Mean over the tokens the mask keeps.
            let m = mask.to_dtype(DType::F32)?.unsqueeze(2)?;
            let summed = out.broadcast_mul(&m)?.sum(1)?;
            let counts = m.sum(1)?;
            let pooled = summed.broadcast_div(&counts)?.to_vec2::<f32>()?;
            let states = if any_pieces { Some(out.to_vec3::<f32>()?) } else { None };
            Ok((pooled, states))
        };
        let (mut vs, states) = run().map_err(|e| format!("model: {e}"))?;
        for v in &mut vs {
            normalize(v);
        }
        let mut pieces = vec![None; texts.len()];
        if let Some(states) = states {
            for (i, (e, rows)) in enc.iter().zip(states).enumerate() {
                if !want.get(i).copied().unwrap_or(false) {
                    continue;
                }
                let mut kept_ids = vec![];
                let mut kept = vec![];
                for (t, mut row) in rows.into_iter().enumerate() {
                    let keep = e.get_attention_mask().get(t) == Some(&1)
                        && e.get_special_tokens_mask().get(t) == Some(&0)
                        && !e
                            .get_tokens()
                            .get(t)
                            .is_some_and(|tok| tok.len() == 1 && tok.as_bytes()[0].is_ascii_punctuation());
                    if keep {
                        normalize(&mut row);
                        kept_ids.push(e.get_ids()[t]);
                        kept.extend(row);
                    }
                }
                pieces[i] = Some(Pieces::from_rows(self.dim, kept_ids, &kept));
            }
        }
        Ok((vs, pieces))
    }
}

impl Embedder for ModelEmbedder {
    fn model_id(&self) -> &str {
        &self.model_id
    }

    fn dim(&self) -> usize {
        self.dim
    }

    fn embed(&self, texts: &[&str]) -> Result<Vec<Vec<f32>>> {
        Ok(self.embed_with_pieces(texts, &vec![false; texts.len()])?.0)
    }

    fn has_pieces(&self) -> bool {
        true
    }

    fn embed_with_pieces(&self, texts: &[&str], want: &[bool]) -> Result<WithPieces> {
        let mut out = Vec::with_capacity(texts.len());
        let mut pieces = Vec::with_capacity(texts.len());
        for (chunk, w) in texts.chunks(BATCH).zip(want.chunks(BATCH).chain(std::iter::repeat(&[][..]))) {
            let w: Vec<bool> = (0..chunk.len()).map(|i| w.get(i).copied().unwrap_or(false)).collect();
            let (v, p) =
                self.batch(chunk, &w).map_err(|e| Error::Storage(format!("embedding model {}: {e}", self.model_id)))?;
            out.extend(v);
            pieces.extend(p);
        }
        Ok((out, pieces))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn missing_files_are_named() {
        let d = tempfile::tempdir().unwrap();
        std::fs::write(d.path().join("config.json"), "{}").unwrap();
        let err = ModelEmbedder::load(d.path()).err().unwrap().to_string();
        assert!(err.contains("tokenizer.json is missing"), "{err}");
    }

    /// Runs when `SKILLMEM_TEST_MODEL_DIR` points at a model folder (see docs/embedders.md).
    #[test]
    fn embeds_with_a_real_model_when_present() {
        let Ok(dir) = std::env::var("SKILLMEM_TEST_MODEL_DIR") else { return };
        let m = ModelEmbedder::load(Path::new(&dir)).unwrap();
        let vs = m.embed(&["parse a CSV export", "read comma separated values", "the cat sat on the mat"]).unwrap();
        assert_eq!(vs.len(), 3);
        assert!(vs.iter().all(|v| v.len() == m.dim() && (super::super::dot(v, v) - 1.0).abs() < 1e-4));
        let near = super::super::dot(&vs[0], &vs[1]);
        let far = super::super::dot(&vs[0], &vs[2]);
        assert!(near > far + 0.2, "{near} vs {far}");
        // Pieces from the same run: the same vectors, word pieces only ([CLS], [SEP] and the
        // comma left out), unit rows.
        let (same, pieces) = m.embed_with_pieces(&["parse a CSV export", "x, y"], &[true, false]).unwrap();
        assert!(same[0].iter().zip(&vs[0]).all(|(a, b)| (a - b).abs() < 1e-5));
        assert_eq!(pieces[1], None);
        let p = pieces[0].as_ref().unwrap();
        assert!((4..=6).contains(&p.ids.len()), "{:?}", p.ids);
        for i in 0..p.ids.len() {
            let r = p.row_f32(i);
            assert!((super::super::dot(&r, &r) - 1.0).abs() < 0.02);
        }
        let (_, comma) = m.embed_with_pieces(&["x, y"], &[true]).unwrap();
        assert_eq!(comma[0].as_ref().unwrap().ids.len(), 2);
    }
}
