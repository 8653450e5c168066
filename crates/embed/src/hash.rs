//! The default embedder: signed feature hashing of normalised text.
//!
//! Features are word unigrams (lower-cased, light suffix stripping, stop words dropped),
//! word bigrams, and character trigrams of each word, each hashed (FNV-1a) to a bucket with a
//! sign, weighted by kind, then L2-normalised. Deterministic across runs and platforms; no
//! model, no download. It is lexical: it finds shared words and word pieces, not synonyms.

use super::{normalize, Embedder};
use skillmem_error::Result;
use skillmem_text::{is_stop, stem, words};

/// Hash embedder with a fixed dimension.
#[derive(Debug, Clone)]
pub struct HashEmbedder {
    dim: usize,
    model_id: String,
}

impl Default for HashEmbedder {
    fn default() -> Self {
        Self::new(512)
    }
}

impl HashEmbedder {
    /// A hash embedder of `dim` buckets.
    pub fn new(dim: usize) -> Self {
        Self { dim, model_id: format!("hash-v1-{dim}") }
    }

    fn add(&self, v: &mut [f32], feature: &str, salt: u64, weight: f32) {
        let h = fnv1a(feature.as_bytes(), salt);
        let bucket = (h % self.dim as u64) as usize;
        let sign = if (h >> 63) & 1 == 1 { -1.0 } else { 1.0 };
        v[bucket] += sign * weight;
    }

    /// The vector of one text (before normalisation).
    fn raw(&self, text: &str) -> Vec<f32> {
        let mut v = vec![0.0f32; self.dim];
        let words = words(text);
        let content: Vec<&str> = words.iter().map(String::as_str).filter(|w| !is_stop(w)).collect();
        for w in &content {
            let stem = stem(w);
            self.add(&mut v, stem, 1, 1.0);
            let padded = format!("<{stem}>");
            let chars: Vec<char> = padded.chars().collect();
            if chars.len() > 4 {
                let grams = chars.len() - 2;
                let weight = 0.6 / (grams as f32).sqrt();
                for g in chars.windows(3) {
                    let s: String = g.iter().collect();
                    self.add(&mut v, &s, 2, weight);
                }
            }
        }
        for pair in content.windows(2) {
            let f = format!("{} {}", stem(pair[0]), stem(pair[1]));
            self.add(&mut v, &f, 3, 0.5);
        }
        v
    }
}

impl Embedder for HashEmbedder {
    fn model_id(&self) -> &str {
        &self.model_id
    }

    fn dim(&self) -> usize {
        self.dim
    }

    fn lexical(&self) -> bool {
        true
    }

    fn embed(&self, texts: &[&str]) -> Result<Vec<Vec<f32>>> {
        Ok(texts
            .iter()
            .map(|t| {
                let mut v = self.raw(t);
                normalize(&mut v);
                v
            })
            .collect())
    }
}

/// FNV-1a 64 with a salt folded in first.
pub fn fnv1a(bytes: &[u8], salt: u64) -> u64 {
    let mut h: u64 = 0xcbf29ce484222325 ^ salt.wrapping_mul(0x100000001b3);
    for b in bytes {
        h ^= *b as u64;
        h = h.wrapping_mul(0x100000001b3);
    }
    // final avalanche so that the sign bit is well mixed
    h ^= h >> 33;
    h = h.wrapping_mul(0xff51afd7ed558ccd);
    h ^= h >> 33;
    h
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::dot;

    #[test]
    fn deterministic_and_unit_length() {
        let e = HashEmbedder::default();
        let a = e.embed_one("jq prints quoted strings").unwrap();
        let b = e.embed_one("jq prints quoted strings").unwrap();
        assert_eq!(a, b);
        assert!((dot(&a, &a) - 1.0).abs() < 1e-5);
    }

    #[test]
    fn shared_words_score_higher_than_unrelated() {
        let e = HashEmbedder::default();
        let q = e.embed_one("cannot iterate over null").unwrap();
        let near = e.embed_one("error Cannot iterate over null when key missing").unwrap();
        let far = e.embed_one("systemd unit restarts forever").unwrap();
        assert!(dot(&q, &near) > dot(&q, &far) + 0.3);
    }

    #[test]
    fn empty_text_is_the_zero_vector() {
        let e = HashEmbedder::default();
        let v = e.embed_one("  the of  ").unwrap();
        assert!(v.iter().all(|x| *x == 0.0));
    }
}
