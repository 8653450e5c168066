//! A bounded cache of vectors in front of an embedder, keyed by the text.
//!
//! Recall's second opinion (see `memory::recall::SECOND_WEIGHT`) embeds the notes the
//! rungs found with the static table at every recall with a model: about 50 notes, 1–3 ms on
//! a 2-core VM, under the database lock. The same notes come back recall after recall of a
//! skill, so their vectors are kept. Two generations of at most `cap / 2` entries each: a hit
//! in the older one moves to the newer; when the newer is full, the older is dropped (an
//! approximate LRU in O(1)). Keys are a 64-bit hash of the text (a collision among a few
//! thousand texts is a 1-in-10¹² event, and would give one note another's vector in a ranking
//! boost); the embedder's output is returned unchanged.

use std::collections::HashMap;
use std::hash::{Hash, Hasher};
use std::sync::{Arc, Mutex};

use super::Embedder;
use skillmem_error::Result;

/// Entries the engine keeps for the second opinion (1 KB each with the 256-dimensional
/// static table: 4 MB at most).
pub const SECOND_OPINION_ENTRIES: usize = 4096;

/// A bounded map from the hash of a text to a value: two generations of at most `half`
/// entries each; a hit in the older one moves to the newer; when the newer is full, the older
/// is dropped (an approximate LRU in O(1)).
pub struct ByText<V> {
    half: usize,
    /// (newer, older)
    maps: Mutex<(HashMap<u64, V>, HashMap<u64, V>)>,
}

/// The key of a text (a 64-bit hash).
pub fn key(text: &str) -> u64 {
    let mut h = std::collections::hash_map::DefaultHasher::new();
    text.hash(&mut h);
    h.finish()
}

/// The key of several texts taken together, in order (`["a", "bc"]` and `["ab", "c"]` differ).
pub fn key_of(parts: &[&str]) -> u64 {
    let mut h = std::collections::hash_map::DefaultHasher::new();
    parts.hash(&mut h);
    h.finish()
}

impl<V: Clone> ByText<V> {
    /// Holds at most `cap` values (at least 2).
    pub fn new(cap: usize) -> ByText<V> {
        ByText { half: (cap / 2).max(1), maps: Mutex::new((HashMap::new(), HashMap::new())) }
    }

    /// Values held now.
    pub fn len(&self) -> usize {
        let m = self.lock();
        m.0.len() + m.1.len()
    }

    /// True when nothing is held.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, (HashMap<u64, V>, HashMap<u64, V>)> {
        self.maps.lock().unwrap_or_else(|e| e.into_inner())
    }

    fn insert_in(&self, maps: &mut (HashMap<u64, V>, HashMap<u64, V>), k: u64, v: V) {
        if maps.0.len() >= self.half {
            maps.1 = std::mem::take(&mut maps.0);
        }
        maps.0.insert(k, v);
    }

    /// The values of `keys` held now, in order (`None` where missing).
    pub fn get_many(&self, keys: &[u64]) -> Vec<Option<V>> {
        let mut maps = self.lock();
        keys.iter()
            .map(|k| {
                if let Some(v) = maps.0.get(k) {
                    return Some(v.clone());
                }
                let v = maps.1.remove(k)?;
                self.insert_in(&mut maps, *k, v.clone());
                Some(v)
            })
            .collect()
    }

    /// Holds `(key, value)` pairs.
    pub fn insert_many(&self, pairs: impl IntoIterator<Item = (u64, V)>) {
        let mut maps = self.lock();
        for (k, v) in pairs {
            self.insert_in(&mut maps, k, v);
        }
    }
}

/// An embedder whose vectors are remembered by text.
pub struct Cached {
    inner: Arc<dyn Embedder>,
    held: ByText<Arc<[f32]>>,
}

impl Cached {
    /// Remembers at most `cap` vectors of `inner` (at least 2).
    pub fn new(inner: Arc<dyn Embedder>, cap: usize) -> Cached {
        Cached { inner, held: ByText::new(cap) }
    }

    /// Vectors held now.
    pub fn len(&self) -> usize {
        self.held.len()
    }

    /// True when nothing is held.
    pub fn is_empty(&self) -> bool {
        self.held.is_empty()
    }
}

impl Embedder for Cached {
    fn model_id(&self) -> &str {
        self.inner.model_id()
    }

    fn dim(&self) -> usize {
        self.inner.dim()
    }

    fn lexical(&self) -> bool {
        self.inner.lexical()
    }

    fn embed(&self, texts: &[&str]) -> Result<Vec<Vec<f32>>> {
        let keys: Vec<u64> = texts.iter().map(|t| key(t)).collect();
        let mut out: Vec<Option<Vec<f32>>> =
            self.held.get_many(&keys).into_iter().map(|v| v.map(|v| v.to_vec())).collect();
        let missing: Vec<usize> = (0..texts.len()).filter(|&i| out[i].is_none()).collect();
        if !missing.is_empty() {
            // Embedded without the lock: other callers' hits do not wait for it.
            let refs: Vec<&str> = missing.iter().map(|&i| texts[i]).collect();
            let vs = self.inner.embed(&refs)?;
            self.held.insert_many(missing.iter().zip(&vs).map(|(&i, v)| (keys[i], Arc::from(v.as_slice()))));
            for (&i, v) in missing.iter().zip(vs) {
                out[i] = Some(v);
            }
        }
        Ok(out.into_iter().map(Option::unwrap_or_default).collect())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::{AtomicUsize, Ordering};

    #[test]
    fn keys_of_parts_keep_the_boundaries() {
        // (parts, parts, same key)
        let cases: Vec<(&[&str], &[&str], bool)> = vec![
            (&["m", "a", "bc"], &["m", "a", "bc"], true),
            (&["m", "a", "bc"], &["m", "ab", "c"], false),
            (&["m", "a", ""], &["m", "", "a"], false),
            (&["m1", "a", "b"], &["m2", "a", "b"], false),
        ];
        for (a, b, same) in cases {
            assert_eq!(key_of(a) == key_of(b), same, "{a:?} {b:?}");
        }
    }

    /// Counts the texts it embeds; a text's vector is its length and first byte.
    #[derive(Default)]
    struct Counting(AtomicUsize);

    impl Embedder for Counting {
        fn model_id(&self) -> &str {
            "count"
        }
        fn dim(&self) -> usize {
            2
        }
        fn embed(&self, texts: &[&str]) -> Result<Vec<Vec<f32>>> {
            self.0.fetch_add(texts.len(), Ordering::SeqCst);
            Ok(texts.iter().map(|t| vec![t.len() as f32, t.bytes().next().unwrap_or(0) as f32]).collect())
        }
    }

    #[test]
    fn same_vectors_in_order_and_each_text_embedded_once() {
        let inner = Arc::new(Counting::default());
        let c = Cached::new(inner.clone(), 100);
        let first = c.embed(&["a", "bb", "ccc"]).unwrap();
        assert_eq!(first, inner.embed(&["a", "bb", "ccc"]).unwrap());
        let seen = inner.0.load(Ordering::SeqCst);
        // Hits and misses mixed: the order is the texts', only the new one is embedded.
        let again = c.embed(&["ccc", "dddd", "a"]).unwrap();
        assert_eq!(again, vec![vec![3.0, b'c' as f32], vec![4.0, b'd' as f32], vec![1.0, b'a' as f32]]);
        assert_eq!(inner.0.load(Ordering::SeqCst), seen + 1);
        assert_eq!(c.embed_one("bb").unwrap(), vec![2.0, b'b' as f32]);
        assert_eq!(inner.0.load(Ordering::SeqCst), seen + 1);
        assert_eq!((c.model_id(), c.dim(), c.lexical()), ("count", 2, false));
    }

    #[test]
    fn bounded_and_keeps_what_is_used() {
        let inner = Arc::new(Counting::default());
        let c = Cached::new(inner.clone(), 10);
        let texts: Vec<String> = (0..100).map(|i| format!("text {i}")).collect();
        for t in &texts {
            c.embed_one(t).unwrap();
            // A text used all along stays.
            c.embed_one("kept").unwrap();
            assert!(c.len() <= 10, "{}", c.len());
        }
        let before = inner.0.load(Ordering::SeqCst);
        c.embed_one("kept").unwrap();
        c.embed_one("text 99").unwrap();
        assert_eq!(inner.0.load(Ordering::SeqCst), before, "recent texts are held");
        c.embed_one("text 0").unwrap();
        assert_eq!(inner.0.load(Ordering::SeqCst), before + 1, "old ones are dropped");
    }
}
