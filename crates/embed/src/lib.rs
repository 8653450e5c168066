//! Embedders: text in, unit vector out, stamped with a model id.
//!
//! [`Embedder`] is the one trait. [`static_table::StaticEmbedder`] is the default: a table of
//! token vectors distilled from all-MiniLM-L6-v2, compiled in (no download, deterministic,
//! in-process); [`hash::HashEmbedder`] hashes words. Vectors are always L2-normalised so that cosine similarity is a
//! dot product. The model id of a vector travels with it: vectors of different model ids are
//! never compared.

pub mod cache;
#[cfg(feature = "local-model")]
pub mod distill_table;
pub mod fetch;
pub mod hash;
pub mod http;
#[cfg(feature = "local-model")]
pub mod model;
pub mod static_table;
pub mod tokens;
pub mod wordpiece;

use skillmem_error::Result;

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
    /// True when [`Embedder::embed_with_pieces`] gives each text's contextual word pieces
    /// (a local model: recall then ranks by token matching, see [`tokens`]).
    fn has_pieces(&self) -> bool {
        false
    }
    /// [`Embedder::embed`], and the pieces of each text whose `want` flag is set (from the
    /// same run of the model); `None` for the others, and always without
    /// [`Embedder::has_pieces`].
    fn embed_with_pieces(&self, texts: &[&str], want: &[bool]) -> Result<WithPieces> {
        let _ = want;
        Ok((self.embed(texts)?, vec![None; texts.len()]))
    }
}

/// Vectors of texts, and the pieces of those asked for ([`Embedder::embed_with_pieces`]).
pub type WithPieces = (Vec<Vec<f32>>, Vec<Option<Pieces>>);

/// A text's word pieces as the embedder read them in context: the piece ids (the tokenizer's
/// vocabulary), and one unit vector each, stored as int8 with one scale per piece (`row ≈
/// scale × int8`). Special tokens and lone punctuation are left out.
#[derive(Debug, Clone, PartialEq)]
pub struct Pieces {
    pub dim: usize,
    pub ids: Vec<u32>,
    pub scales: Vec<f32>,
    /// `ids.len() × dim` values.
    pub rows: Vec<i8>,
}

impl Pieces {
    /// Pieces from unit f32 rows (`ids.len() × dim` values), each quantised to int8.
    pub fn from_rows(dim: usize, ids: Vec<u32>, rows: &[f32]) -> Pieces {
        let mut scales = Vec::with_capacity(ids.len());
        let mut q = Vec::with_capacity(rows.len());
        for row in rows.chunks_exact(dim.max(1)).take(ids.len()) {
            let max = row.iter().fold(0f32, |m, x| m.max(x.abs()));
            let s = if max > 0.0 { max / 127.0 } else { 0.0 };
            scales.push(s);
            q.extend(row.iter().map(|x| if s > 0.0 { (x / s).round().clamp(-127.0, 127.0) as i8 } else { 0 }));
        }
        Pieces { dim, ids, scales, rows: q }
    }

    /// Piece `i`'s int8 row.
    pub fn row(&self, i: usize) -> &[i8] {
        &self.rows[i * self.dim..(i + 1) * self.dim]
    }

    /// Piece `i` as an f32 row.
    pub fn row_f32(&self, i: usize) -> Vec<f32> {
        self.row(i).iter().map(|x| f32::from(*x) * self.scales[i]).collect()
    }

    /// The stored form: `dim`, count (u32 LE each), the ids (u32 LE), the scales (f32 LE),
    /// the int8 rows.
    pub fn to_blob(&self) -> Vec<u8> {
        let mut out = Vec::with_capacity(8 + self.ids.len() * (8 + self.dim));
        out.extend_from_slice(&(self.dim as u32).to_le_bytes());
        out.extend_from_slice(&(self.ids.len() as u32).to_le_bytes());
        self.ids.iter().for_each(|id| out.extend_from_slice(&id.to_le_bytes()));
        self.scales.iter().for_each(|s| out.extend_from_slice(&s.to_le_bytes()));
        out.extend(self.rows.iter().map(|x| *x as u8));
        out
    }

    /// Reads [`Pieces::to_blob`]'s form; `None` when the blob is not one.
    pub fn from_blob(b: &[u8]) -> Option<Pieces> {
        let u = |at: usize| -> Option<u32> { Some(u32::from_le_bytes(b.get(at..at + 4)?.try_into().ok()?)) };
        let (dim, n) = (u(0)? as usize, u(4)? as usize);
        let rows_at = n.checked_mul(8)?.checked_add(8)?;
        if dim == 0 || b.len() != rows_at.checked_add(n.checked_mul(dim)?)? {
            return None;
        }
        let ids = (0..n).map(|i| u(8 + 4 * i)).collect::<Option<Vec<u32>>>()?;
        let scales = (0..n).map(|i| u(8 + 4 * n + 4 * i).map(f32::from_bits)).collect::<Option<Vec<f32>>>()?;
        let rows = b[rows_at..].iter().map(|x| *x as i8).collect();
        Some(Pieces { dim, ids, scales, rows })
    }
}

/// The end of a semantic embedder's model id: which recipe ([`embed_notes`]) made its note
/// vectors. A store whose vectors carry an id without it (made from the prose view alone)
/// re-embeds them in the background, and finds those notes by their words meanwhile.
pub const VIEWS_TAG: &str = "+2v";

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

/// The local model in `path`, or why it cannot be used: a build without the local-model
/// feature, a folder without the model's files, or files that do not load.
pub fn load_model(path: &std::path::Path) -> std::result::Result<std::sync::Arc<dyn Embedder>, String> {
    if !cfg!(feature = "local-model") {
        return Err(format!(
            "embedding.provider \"model\" ({}) needs a build with the local-model feature (cargo install skillmem --features local-model)",
            path.display()
        ));
    }
    if !fetch::is_model_folder(path) {
        return Err(format!(
            "embedding.path {} is not a model folder (it needs {})",
            path.display(),
            fetch::FILES.join(", ")
        ));
    }
    model_embedder(path).map_err(|e| format!("the model in {} does not load ({e})", path.display()))
}

#[cfg(feature = "local-model")]
fn model_embedder(path: &std::path::Path) -> Result<std::sync::Arc<dyn Embedder>> {
    Ok(std::sync::Arc::new(model::ModelEmbedder::load(path)?))
}

#[cfg(not(feature = "local-model"))]
fn model_embedder(_: &std::path::Path) -> Result<std::sync::Arc<dyn Embedder>> {
    unreachable!("checked by load_model")
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

/// The text `embedder` embeds a note by when it sees one text: [`note_text`] for a lexical
/// embedder (code words are exactly what it matches on), the intent and the lesson's prose
/// (inline code spans left out, [`skillmem_text::prose`]) for a semantic one. A semantic
/// embedder's note vector has a second view: see [`embed_notes`].
pub fn embed_text(embedder: &dyn Embedder, intent: &str, delta: &str) -> String {
    if embedder.lexical() {
        note_text(intent, delta)
    } else {
        note_text(intent, &skillmem_text::prose(delta))
    }
}

/// The vectors notes are stored and ranked by, one unit vector per `(intent, delta)`.
///
/// A lexical embedder embeds [`note_text`]. A semantic embedder sees a lesson two ways, and
/// its vector is the normalised sum of both: the prose view ([`embed_text`]: a sentence model
/// reads code as noise, so the prose finds paraphrases) and the whole note with its code (an
/// intent that names a flag, a key or an error finds it there). A note without a code span
/// has one view. Measured with all-MiniLM-L6-v2, MRR@10 of the two views against the prose
/// view alone: `recall-dev.json` 0.790 / 0.780, and on three sets made apart from it 0.899 /
/// 0.816, 0.905 / 0.890, 0.786 / 0.752; with the static table 0.654 / 0.638, 0.781 / 0.729,
/// 0.716 / 0.660, 0.654 / 0.650 (docs/research/local-model.md, "Two views of a note").
pub fn embed_notes(embedder: &dyn Embedder, notes: &[(&str, &str)]) -> Result<Vec<Vec<f32>>> {
    Ok(embed_notes_with_pieces(embedder, notes)?.into_iter().map(|(v, _)| v).collect())
}

/// [`embed_notes`], with the pieces of each note's whole text ([`note_text`]) when the
/// embedder has them ([`Embedder::has_pieces`]): they come from the same run of the model as
/// the vector (the last view embedded: the whole note when it has code; its prose, the same
/// word pieces, when it has none).
pub fn embed_notes_with_pieces(
    embedder: &dyn Embedder,
    notes: &[(&str, &str)],
) -> Result<Vec<(Vec<f32>, Option<Pieces>)>> {
    let two = |delta: &str| !embedder.lexical() && delta.contains('`');
    let mut texts: Vec<String> = Vec::with_capacity(notes.len() * 2);
    let mut want: Vec<bool> = Vec::with_capacity(notes.len() * 2);
    for (intent, delta) in notes {
        texts.push(embed_text(embedder, intent, delta));
        want.push(!two(delta));
        if two(delta) {
            texts.push(note_text(intent, delta));
            want.push(true);
        }
    }
    if !embedder.has_pieces() {
        want.iter_mut().for_each(|w| *w = false);
    }
    let refs: Vec<&str> = texts.iter().map(String::as_str).collect();
    let (vectors, pieces) = embedder.embed_with_pieces(&refs, &want)?;
    let mut vectors = vectors.into_iter();
    let mut pieces = pieces.into_iter();
    let mut out = Vec::with_capacity(notes.len());
    for (_, delta) in notes {
        let (Some(mut v), Some(mut p)) = (vectors.next(), pieces.next()) else { break };
        if two(delta) {
            let (Some(code), Some(cp)) = (vectors.next(), pieces.next()) else { break };
            p = cp;
            if code.len() == v.len() {
                v.iter_mut().zip(&code).for_each(|(a, b)| *a += b);
                normalize(&mut v);
            }
        }
        out.push((v, p));
    }
    Ok(out)
}

/// [`embed_notes`] for one note.
pub fn embed_note(embedder: &dyn Embedder, intent: &str, delta: &str) -> Result<Vec<f32>> {
    Ok(embed_notes(embedder, &[(intent, delta)])?.pop().unwrap_or_default())
}

#[cfg(test)]
mod text_tests {
    use super::*;

    #[test]
    fn lexical_embedders_see_the_code() {
        let hash = crate::hash::HashEmbedder::default();
        assert_eq!(embed_text(&hash, "i", "use `x`"), "i\nuse `x`");
        let v = embed_note(&hash, "i", "use `x`").unwrap();
        assert_eq!(v, hash.embed_one("i\nuse `x`").unwrap());
    }

    #[test]
    fn a_semantic_note_vector_sums_its_prose_and_its_code() {
        let e = crate::static_table::StaticEmbedder::builtin().unwrap();
        let e = e.as_ref();
        let cases = [("run the job", "use `cron -e` to edit"), ("plain", "no code here"), ("", "`only code`")];
        let got = embed_notes(e, &cases).unwrap();
        assert_eq!(got.len(), 3);
        for ((intent, delta), v) in cases.iter().zip(&got) {
            let prose = e.embed_one(&embed_text(e, intent, delta)).unwrap();
            let want = if delta.contains('`') {
                let code = e.embed_one(&note_text(intent, delta)).unwrap();
                let mut s: Vec<f32> = prose.iter().zip(&code).map(|(a, b)| a + b).collect();
                normalize(&mut s);
                s
            } else {
                prose
            };
            assert_eq!(v.len(), want.len());
            assert!(v.iter().zip(&want).all(|(a, b)| (a - b).abs() < 1e-6), "{intent:?} {delta:?}");
            assert!((dot(v, v) - 1.0).abs() < 1e-4, "unit length");
        }
        assert_eq!(embed_note(e, cases[0].0, cases[0].1).unwrap(), got[0]);
    }
}
