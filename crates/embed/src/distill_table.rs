//! `skillmem model distill`: builds the [`static_table`](super::static_table) from a
//! sentence-embedding model folder (cargo feature `local-model`).
//!
//! The recipe of model2vec: every vocabulary token is run through the model alone
//! (`[CLS] token [SEP]`) and its outputs mean-pooled; the vectors are reduced by PCA (the
//! eigen-decomposition of their covariance) to `dims` dimensions; each row is weighted by
//! SIF, `a / (a + p)`, where `p` is the token's probability estimated from its rank in the
//! vocabulary by Zipf's law (WordPiece vocabularies are ordered roughly by frequency); rows are
//! stored as int8 with one scale each. `[unused…]` tokens get zero rows and take no part.

use std::path::{Path, PathBuf};

use candle_core::{DType, Device, Tensor};
use candle_nn::VarBuilder;
use candle_transformers::models::bert::{BertModel, Config};
use nalgebra::{DMatrix, SymmetricEigen};
use serde::Serialize;
use sha2::{Digest, Sha256};
use tokenizers::Tokenizer;

use super::static_table::Table;
use super::wordpiece::WordPiece;
use skillmem_error::{Error, Result};

/// What to distill and how.
#[derive(Debug, Clone)]
pub struct Options {
    /// The model folder (`config.json`, `tokenizer.json`, `model.safetensors`).
    pub from: PathBuf,
    /// The table file to write; the manifest goes beside it with a `.json` extension.
    pub out: PathBuf,
    /// Dimensions kept by PCA.
    pub dims: usize,
    /// The SIF coefficient `a` (model2vec's default is 1e-4).
    pub sif: f64,
    /// Tokens per forward pass.
    pub batch: usize,
}

/// What the distillation records beside the table (its manifest).
#[derive(Debug, Clone, Serialize)]
pub struct Manifest {
    pub table: String,
    pub sha256: String,
    pub rows: usize,
    pub dims: usize,
    pub source: Source,
    pub recipe: Recipe,
}

/// The model a table was distilled from.
#[derive(Debug, Clone, Serialize)]
pub struct Source {
    pub folder: String,
    pub config_sha256: String,
    pub weights_sha256: String,
    pub vocab_sha256: String,
}

/// How a table was made.
#[derive(Debug, Clone, Serialize)]
pub struct Recipe {
    pub pooling: String,
    pub pca: String,
    pub sif_coefficient: f64,
    pub quantisation: String,
    pub explained_variance: f64,
}

fn hex(bytes: &[u8]) -> String {
    Sha256::digest(bytes).iter().map(|b| format!("{b:02x}")).collect()
}

fn bad(path: &Path, what: impl std::fmt::Display) -> Error {
    Error::invalid(format!("{}: {what}", path.display()))
}

/// Texts the built-in WordPiece must split exactly as the model's tokenizer does.
pub const AGREEMENT_TEXTS: &[&str] = &[
    "jq: Cannot iterate over null (null) when the key is missing",
    "Use `git rebase --onto` to move a branch; don't force-push main!",
    "Café naïve résumé — Ünïcode façade, 日本語のテキスト, emoji 🚀 and tabs\tand\nnewlines",
    "systemd unit restarts forever: set StartLimitBurst=5 in [Service]",
    "parse_csv_export() returned 42 rows; expected 1,024 (UTF-8 BOM?)",
    "ÀÉÎÕÜ ßtraße ﬁnance x86_64-unknown-linux-gnu https://example.com/a?b=c#d",
];

/// Distills `opts.from` into `opts.out`, calling `progress(done, total)` as tokens pass
/// through the model. Returns the manifest it wrote.
pub fn distill(opts: &Options, progress: &mut dyn FnMut(usize, usize)) -> Result<Manifest> {
    let dir = &opts.from;
    let read = |f: &str| std::fs::read(dir.join(f)).map_err(|e| bad(&dir.join(f), e));
    let cfg_bytes = read("config.json")?;
    let tok_bytes = read("tokenizer.json")?;
    let weights = read("model.safetensors")?;
    let config: Config = serde_json::from_slice(&cfg_bytes).map_err(|e| bad(dir, format!("config.json: {e}")))?;
    let mut tokenizer = Tokenizer::from_bytes(&tok_bytes).map_err(|e| bad(dir, format!("tokenizer.json: {e}")))?;
    // The model's file pads to 128 tokens; compare the pieces alone.
    tokenizer.with_padding(None);
    tokenizer.with_truncation(None).map_err(|e| bad(dir, format!("tokenizer.json: {e}")))?;
    let mut by_id: Vec<(u32, String)> = tokenizer.get_vocab(true).into_iter().map(|(t, i)| (i, t)).collect();
    by_id.sort();
    if by_id.iter().enumerate().any(|(i, (id, t))| *id as usize != i || t.contains('\n')) {
        return Err(bad(dir, "the vocabulary's ids are not 0..n, or a token holds a newline"));
    }
    let vocab: Vec<String> = by_id.into_iter().map(|(_, t)| t).collect();
    let ours = WordPiece::new(&vocab);
    for text in AGREEMENT_TEXTS {
        let theirs = tokenizer.encode(*text, false).map_err(|e| bad(dir, format!("tokenizer: {e}")))?;
        if ours.encode(text) != theirs.get_ids() {
            return Err(bad(
                dir,
                format!(
                    "the built-in WordPiece splits {text:?} differently from tokenizer.json: {:?} against {:?}",
                    ours.encode(text),
                    theirs.get_ids()
                ),
            ));
        }
    }
    let id_of = |t: &str| vocab.iter().position(|v| v == t).map(|i| i as u32);
    let (cls, sep) = match (id_of("[CLS]"), id_of("[SEP]")) {
        (Some(c), Some(s)) => (c, s),
        _ => return Err(bad(dir, "the vocabulary has no [CLS] or [SEP]")),
    };
    let vb = VarBuilder::from_buffered_safetensors(weights.clone(), DType::F32, &Device::Cpu)
        .map_err(|e| bad(dir, format!("model.safetensors: {e}")))?;
    let model = BertModel::load(vb, &config).map_err(|e| bad(dir, format!("model.safetensors: {e}")))?;
    let hidden = config.hidden_size;
    if opts.dims == 0 || opts.dims > hidden {
        return Err(Error::invalid(format!("--dims must be between 1 and {hidden}, got {}", opts.dims)));
    }

    // 1. Each kept token alone through the model, mean-pooled.
    let unused = |t: &str| t.starts_with("[unused") && t.ends_with(']');
    let kept: Vec<u32> = (0..vocab.len() as u32).filter(|i| !unused(&vocab[*i as usize])).collect();
    let mut raw: Vec<Vec<f32>> = Vec::with_capacity(kept.len());
    let model_err = |e: candle_core::Error| Error::Storage(format!("model: {e}"));
    for chunk in kept.chunks(opts.batch.max(1)) {
        let ids: Vec<u32> = chunk.iter().flat_map(|t| [cls, *t, sep]).collect();
        let ids = Tensor::from_vec(ids, (chunk.len(), 3), &Device::Cpu).map_err(model_err)?;
        let types = ids.zeros_like().map_err(model_err)?;
        let mask = ids.ones_like().map_err(model_err)?;
        let out = model.forward(&ids, &types, Some(&mask)).map_err(model_err)?;
        let pooled = out.mean(1).and_then(|t| t.to_vec2::<f32>()).map_err(model_err)?;
        raw.extend(pooled);
        progress(raw.len(), kept.len());
    }

    // 2. PCA: centre, eigen-decompose the covariance, keep the largest components.
    let n = raw.len();
    let mut mean = vec![0f64; hidden];
    for r in &raw {
        for (m, x) in mean.iter_mut().zip(r) {
            *m += *x as f64 / n as f64;
        }
    }
    let centred = DMatrix::<f64>::from_fn(n, hidden, |i, j| raw[i][j] as f64 - mean[j]);
    let cov = (centred.transpose() * &centred) / (n.saturating_sub(1).max(1) as f64);
    let eig = SymmetricEigen::new(cov);
    let mut order: Vec<usize> = (0..hidden).collect();
    order.sort_by(|a, b| eig.eigenvalues[*b].total_cmp(&eig.eigenvalues[*a]));
    let total: f64 = eig.eigenvalues.iter().sum();
    let explained: f64 = order[..opts.dims].iter().map(|i| eig.eigenvalues[*i]).sum::<f64>() / total;
    let mut basis = DMatrix::<f64>::zeros(hidden, opts.dims);
    for (k, i) in order[..opts.dims].iter().enumerate() {
        let mut col = eig.eigenvectors.column(*i).into_owned();
        // A fixed sign per component, so that the table does not depend on the solver's.
        let (at, _) = col.iter().enumerate().fold((0, 0f64), |m, (j, x)| if x.abs() > m.1 { (j, x.abs()) } else { m });
        if col[at] < 0.0 {
            col.neg_mut();
        }
        basis.set_column(k, &col);
    }
    let projected = centred * basis;

    // 3. SIF by Zipf rank among the kept tokens, then the rows in vocabulary order.
    let harmonic: f64 = (0..n).map(|r| 1.0 / (r as f64 + 2.0)).sum();
    let mut rows = vec![vec![0f32; opts.dims]; vocab.len()];
    for (rank, id) in kept.iter().enumerate() {
        let p = (1.0 / (rank as f64 + 2.0)) / harmonic;
        let w = opts.sif / (opts.sif + p);
        rows[*id as usize] = projected.row(rank).iter().map(|x| (x * w) as f32).collect();
    }

    // 4. int8 with a scale per row; the manifest beside it.
    let bytes = Table::encode(&vocab, &rows);
    std::fs::write(&opts.out, &bytes).map_err(|e| bad(&opts.out, e))?;
    let manifest = Manifest {
        table: opts.out.file_name().map(|f| f.to_string_lossy().to_string()).unwrap_or_default(),
        sha256: hex(&bytes),
        rows: vocab.len(),
        dims: opts.dims,
        source: Source {
            folder: crate::model_name(dir),
            config_sha256: hex(&cfg_bytes),
            weights_sha256: hex(&weights),
            vocab_sha256: hex(vocab.join("\n").as_bytes()),
        },
        recipe: Recipe {
            pooling: "mean over the outputs of [CLS] token [SEP]".into(),
            pca: format!("eigen-decomposition of the {hidden}x{hidden} covariance of the centred token vectors; the {} largest components", opts.dims),
            sif_coefficient: opts.sif,
            quantisation: "int8, one f32 scale per row (largest magnitude = 127)".into(),
            explained_variance: (explained * 1e4).round() / 1e4,
        },
    };
    let path = manifest_path(&opts.out);
    let json = serde_json::to_string_pretty(&manifest).map_err(|e| Error::Storage(e.to_string()))? + "\n";
    std::fs::write(&path, json).map_err(|e| bad(&path, e))?;
    Ok(manifest)
}

/// Where the manifest of table `out` goes: the same path with a `.json` extension.
pub fn manifest_path(out: &Path) -> PathBuf {
    out.with_extension("json")
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The built-in WordPiece agrees with the model's tokenizer.json on the agreement texts
    /// and on every note and query of the dev set, when `SKILLMEM_TEST_MODEL_DIR` is set.
    #[test]
    fn wordpiece_agrees_with_tokenizers_when_a_model_is_present() {
        let Ok(dir) = std::env::var("SKILLMEM_TEST_MODEL_DIR") else { return };
        let mut tokenizer = Tokenizer::from_file(Path::new(&dir).join("tokenizer.json")).unwrap();
        tokenizer.with_padding(None);
        tokenizer.with_truncation(None).unwrap();
        let mut by_id: Vec<(u32, String)> = tokenizer.get_vocab(true).into_iter().map(|(t, i)| (i, t)).collect();
        by_id.sort();
        let vocab: Vec<String> = by_id.into_iter().map(|(_, t)| t).collect();
        let ours = WordPiece::new(&vocab);
        let mut texts: Vec<String> = AGREEMENT_TEXTS.iter().map(|s| s.to_string()).collect();
        if let Ok(set) =
            std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/../../../shared/bench/recall-dev.json"))
        {
            texts.extend(set.lines().map(str::to_owned));
        }
        for t in &texts {
            assert_eq!(ours.encode(t), tokenizer.encode(t.as_str(), false).unwrap().get_ids(), "{t:?}");
        }
    }
}
