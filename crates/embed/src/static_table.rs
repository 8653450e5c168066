//! The `static` embedder: a table of one vector per WordPiece token, distilled from
//! all-MiniLM-L6-v2 (`skillmem model distill`), compiled into the binary.
//!
//! Embedding a text is tokenize ([`super::wordpiece`]) → look up each token's row → average →
//! L2-normalise: microseconds, no model at run time, no download. The vectors carry meaning
//! (the model's, frozen per token), so they take the semantic path of recall (prose text,
//! cosine with the word-coverage boost, the HNSW index), like the model's.
//!
//! The table file (`crates/embed/src/static/minilm-l6-v2.bin`, little-endian):
//!
//! | bytes | what |
//! | --- | --- |
//! | 8 | magic `SKMSTAT1` |
//! | 4 + 4 + 4 | dim, rows, vocabulary length in bytes |
//! | vocabulary length | the tokens, `\n`-separated, in id order |
//! | 4 × rows | one f32 scale per row |
//! | dim × rows | the rows, int8 (a row's value is `scale × i8`) |
//!
//! Its manifest (`minilm-l6-v2.json`, written by the same command) records the table's
//! SHA-256 and how it was made; a test checks the two agree.

use std::borrow::Cow;
use std::sync::{Arc, OnceLock};

use super::wordpiece::WordPiece;
use super::{normalize, Embedder};
use skillmem_error::{Error, Result};

/// The magic bytes a table file starts with.
pub const MAGIC: &[u8; 8] = b"SKMSTAT1";

/// The table compiled in.
pub static BUILTIN_TABLE: &[u8] = include_bytes!("static/minilm-l6-v2.bin");
/// Its manifest (the SHA-256 the distillation recorded, and how it was made).
pub static BUILTIN_MANIFEST: &str = include_str!("static/minilm-l6-v2.json");
/// The name of the built-in table (the model id's stem).
pub const BUILTIN_NAME: &str = "minilm-l6-v2";

/// Tokens of one text that count (the model's own limit; longer texts are rare in notes).
pub const MAX_TOKENS: usize = 512;

/// A static embedding table in memory.
pub struct Table {
    pub dim: usize,
    pub vocab: Vec<String>,
    pub scales: Vec<f32>,
    rows: Cow<'static, [u8]>,
    /// 1 / the length of each int8 row (0 for a zero row), made on first use by
    /// [`Table::inv_norm`].
    inv_norms: OnceLock<Vec<f32>>,
}

impl Table {
    /// Parses a table file; an error says what is wrong with it.
    pub fn parse(bytes: Cow<'static, [u8]>) -> Result<Table> {
        let bad = |what: &str| Error::invalid(format!("not a static embedding table: {what}"));
        if bytes.len() < 20 || &bytes[..8] != MAGIC {
            return Err(bad("missing the SKMSTAT1 header"));
        }
        let u = |at: usize| u32::from_le_bytes([bytes[at], bytes[at + 1], bytes[at + 2], bytes[at + 3]]) as usize;
        let (dim, rows, vlen) = (u(8), u(12), u(16));
        let vocab_end = 20 + vlen;
        let scales_end = vocab_end + 4 * rows;
        if dim == 0 || bytes.len() != scales_end + dim * rows {
            return Err(bad("its length does not match its header"));
        }
        let vocab: Vec<String> = std::str::from_utf8(&bytes[20..vocab_end])
            .map_err(|_| bad("the vocabulary is not UTF-8"))?
            .split('\n')
            .map(str::to_owned)
            .collect();
        if vocab.len() != rows {
            return Err(bad("the vocabulary and the rows differ in number"));
        }
        let scales = bytes[vocab_end..scales_end]
            .chunks_exact(4)
            .map(|c| f32::from_le_bytes([c[0], c[1], c[2], c[3]]))
            .collect();
        let rows_bytes = match bytes {
            Cow::Borrowed(b) => Cow::Borrowed(&b[scales_end..]),
            Cow::Owned(b) => Cow::Owned(b[scales_end..].to_vec()),
        };
        Ok(Table { dim, vocab, scales, rows: rows_bytes, inv_norms: OnceLock::new() })
    }

    /// Encodes rows of f32 as a table file: each row scaled so that its largest magnitude is
    /// 127, rounded to int8.
    pub fn encode(vocab: &[String], rows: &[Vec<f32>]) -> Vec<u8> {
        let dim = rows.first().map_or(0, Vec::len);
        let joined = vocab.join("\n");
        let mut out = Vec::with_capacity(20 + joined.len() + rows.len() * (dim + 4));
        out.extend_from_slice(MAGIC);
        for n in [dim, rows.len(), joined.len()] {
            out.extend_from_slice(&(n as u32).to_le_bytes());
        }
        out.extend_from_slice(joined.as_bytes());
        let scales: Vec<f32> = rows.iter().map(|r| r.iter().fold(0f32, |m, x| m.max(x.abs())) / 127.0).collect();
        for s in &scales {
            out.extend_from_slice(&s.to_le_bytes());
        }
        for (r, s) in rows.iter().zip(&scales) {
            for x in r {
                let q = if *s > 0.0 { (x / s).round().clamp(-127.0, 127.0) as i8 } else { 0 };
                out.push(q as u8);
            }
        }
        out
    }

    fn row(&self, id: usize) -> &[u8] {
        &self.rows[id * self.dim..(id + 1) * self.dim]
    }

    /// Row `id` as int8 (empty for an id out of range).
    pub fn row_i8(&self, id: u32) -> &[i8] {
        let id = id as usize;
        if id >= self.vocab.len() {
            return &[];
        }
        let row = self.row(id);
        // SAFETY: i8 and u8 have the same size and alignment; every bit pattern is valid.
        unsafe { std::slice::from_raw_parts(row.as_ptr().cast::<i8>(), row.len()) }
    }

    /// Requests row `id` and its length into the cache ahead of a read (nothing for an id out
    /// of range).
    pub fn prefetch_row(&self, id: u32) {
        let id = id as usize;
        if id >= self.vocab.len() {
            return;
        }
        #[cfg(target_arch = "x86_64")]
        {
            use std::arch::x86_64::{_mm_prefetch, _MM_HINT_T0};
            let row = self.row(id);
            for l in (0..row.len()).step_by(64) {
                // SAFETY: prefetching never faults; the address is inside the row.
                unsafe { _mm_prefetch::<_MM_HINT_T0>(row.as_ptr().add(l).cast::<i8>()) };
            }
            if let Some(inv) = self.inv_norms.get().and_then(|v| v.get(id)) {
                // SAFETY: as above.
                unsafe { _mm_prefetch::<_MM_HINT_T0>((inv as *const f32).cast::<i8>()) };
            }
        }
    }

    /// 1 / the length of int8 row `id` (0 for a zero row or an id out of range): the row's
    /// scale cancels out of a cosine, so `row_i8(a) · row_i8(b) × inv_norm(a) × inv_norm(b)`
    /// is the cosine of two rows. Made for every row on first use.
    pub fn inv_norm(&self, id: u32) -> f32 {
        let inv = self.inv_norms.get_or_init(|| {
            (0..self.vocab.len())
                .map(|i| {
                    let n: i32 = self.row(i).iter().map(|x| (*x as i8 as i32) * (*x as i8 as i32)).sum();
                    if n > 0 {
                        1.0 / (n as f32).sqrt()
                    } else {
                        0.0
                    }
                })
                .collect()
        });
        inv.get(id as usize).copied().unwrap_or(0.0)
    }

    /// Row `id`, de-quantised, added to `acc`.
    fn add_row(&self, id: usize, acc: &mut [f32]) {
        let s = self.scales[id];
        let row = &self.rows[id * self.dim..(id + 1) * self.dim];
        for (a, q) in acc.iter_mut().zip(row) {
            *a += s * (*q as i8) as f32;
        }
    }
}

/// The static embedder: a [`Table`] and the WordPiece tokenizer over its vocabulary.
pub struct StaticEmbedder {
    table: Table,
    tokenizer: WordPiece,
    model_id: String,
}

impl StaticEmbedder {
    /// An embedder over `table`, stamped `static:<name>#<dim>-<tag>+2v` (see [`super::VIEWS_TAG`]).
    pub fn new(table: Table, name: &str, tag: &str) -> Self {
        let tokenizer = WordPiece::new(&table.vocab);
        let model_id = format!("static:{name}#{}-{tag}{}", table.dim, super::VIEWS_TAG);
        StaticEmbedder { table, tokenizer, model_id }
    }

    /// The table compiled into the binary (parsed once per process).
    pub fn builtin() -> Result<Arc<StaticEmbedder>> {
        static CELL: OnceLock<std::result::Result<Arc<StaticEmbedder>, String>> = OnceLock::new();
        CELL.get_or_init(|| {
            let table = Table::parse(Cow::Borrowed(BUILTIN_TABLE)).map_err(|e| e.to_string())?;
            let sha = manifest_sha256(BUILTIN_MANIFEST).ok_or("the built-in table's manifest has no sha256")?;
            Ok(Arc::new(StaticEmbedder::new(table, BUILTIN_NAME, &sha[..8])))
        })
        .clone()
        .map_err(|e| Error::Storage(format!("the built-in static embedding table: {e}")))
    }

    /// A table from a file (to measure a freshly distilled one before committing it), stamped
    /// with the first 8 hex digits of its SHA-256.
    pub fn from_file(path: &std::path::Path) -> Result<StaticEmbedder> {
        use sha2::{Digest, Sha256};
        let bytes = std::fs::read(path).map_err(|e| Error::invalid(format!("static table {}: {e}", path.display())))?;
        let tag: String = Sha256::digest(&bytes).iter().take(4).map(|b| format!("{b:02x}")).collect();
        let name = path.file_stem().map(|s| s.to_string_lossy().to_string()).unwrap_or_default();
        let table = Table::parse(Cow::Owned(bytes))
            .map_err(|e| Error::invalid(format!("static table {}: {e}", path.display())))?;
        Ok(StaticEmbedder::new(table, &name, &tag))
    }

    /// The tokenizer (the distillation checks it against the model's).
    pub fn tokenizer(&self) -> &WordPiece {
        &self.tokenizer
    }

    /// The table.
    pub fn table(&self) -> &Table {
        &self.table
    }

    /// The word pieces of `text` that token matching compares ([`super::tokens`]): `[UNK]` and
    /// lone punctuation left out, at most [`MAX_TOKENS`].
    pub fn match_ids(&self, text: &str) -> Vec<u32> {
        let unk = self.tokenizer.unk();
        let punct = |id: u32| {
            let t = self.table.vocab.get(id as usize).map(String::as_bytes).unwrap_or_default();
            t.len() == 1 && t[0].is_ascii_punctuation()
        };
        self.tokenizer.encode(text).into_iter().filter(|id| Some(*id) != unk && !punct(*id)).take(MAX_TOKENS).collect()
    }

    fn one(&self, text: &str) -> Vec<f32> {
        let mut v = vec![0f32; self.table.dim];
        let unk = self.tokenizer.unk();
        for id in self.tokenizer.encode(text).into_iter().filter(|id| Some(*id) != unk).take(MAX_TOKENS) {
            self.table.add_row(id as usize, &mut v);
        }
        normalize(&mut v);
        v
    }
}

/// The `sha256` of a manifest's JSON.
pub fn manifest_sha256(manifest: &str) -> Option<String> {
    let v: serde_json::Value = serde_json::from_str(manifest).ok()?;
    v.get("sha256")?.as_str().filter(|s| s.len() >= 8).map(str::to_owned)
}

impl Embedder for StaticEmbedder {
    fn model_id(&self) -> &str {
        &self.model_id
    }

    fn dim(&self) -> usize {
        self.table.dim
    }

    fn embed(&self, texts: &[&str]) -> Result<Vec<Vec<f32>>> {
        Ok(texts.iter().map(|t| self.one(t)).collect())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::dot;

    #[test]
    fn committed_table_matches_its_manifest() {
        use sha2::{Digest, Sha256};
        let got: String = Sha256::digest(BUILTIN_TABLE).iter().map(|b| format!("{b:02x}")).collect();
        assert_eq!(Some(got), manifest_sha256(BUILTIN_MANIFEST), "rebuild with skillmem model distill");
    }

    #[test]
    fn builtin_embeds_meaning() {
        let e = StaticEmbedder::builtin().unwrap();
        assert_eq!(e.dim(), 256);
        assert!(e.model_id().starts_with("static:minilm-l6-v2#256-"), "{}", e.model_id());
        let vs =
            e.embed(&["parse a CSV export", "read comma separated values file", "the cat sat on the mat"]).unwrap();
        assert!(vs.iter().all(|v| (dot(v, v) - 1.0).abs() < 1e-4));
        let (near, far) = (dot(&vs[0], &vs[1]), dot(&vs[0], &vs[2]));
        assert!(near > far + 0.1, "{near} vs {far}");
    }

    #[test]
    fn round_trip_and_bad_tables() {
        let vocab = vec!["[UNK]".to_string(), "a".into(), "b".into()];
        let rows = vec![vec![0.0, 0.0], vec![1.0, -0.5], vec![0.25, 0.25]];
        let bytes = Table::encode(&vocab, &rows);
        let t = Table::parse(Cow::Owned(bytes.clone())).unwrap();
        assert_eq!((t.dim, t.vocab.len()), (2, 3));
        let e = StaticEmbedder::new(t, "t", "x");
        let v = e.embed_one("A").unwrap();
        assert!((v[0] - 0.894).abs() < 0.01 && (v[1] + 0.447).abs() < 0.01, "{v:?}");
        assert_eq!(e.embed_one("zzz").unwrap(), vec![0.0, 0.0]);
        for cut in [bytes[..10].to_vec(), bytes[..bytes.len() - 1].to_vec(), b"nope".to_vec()] {
            assert!(Table::parse(Cow::Owned(cut)).is_err());
        }
    }
}
