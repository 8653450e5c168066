//! A large skill's token-matching pieces, held in memory: what recall reads of the ~100 notes
//! its rungs found in a skill of tens of thousands (their pieces, for token matching), without
//! reading the notes.
//!
//! A small skill's notes are held whole by the catalog. A large skill's are not (90,000
//! notes would take 80 MB), so each load read the notes its rungs found from SQLite, one
//! positioned read of a page each, scattered over the file: at 90,000 notes about 0.35 ms on
//! each of the two threads a load runs on (docs/benchmarks.md). Token matching reads only a
//! note's pieces (`match_pieces`: the static table's rows of its words), and scores a note by
//! the *set* of them (each intent piece's best match in the note; a piece's IDF counts the
//! notes that hold it), so a note's distinct pieces, sorted and stored as the gaps between
//! them (one byte for most), are all it needs: about 80 bytes a note.
//!
//! Read in one pass over the skill's notes off the recalls' path (by whoever builds the
//! skills' bm25 indexes, after answering), and valid while no note's text changes or a note
//! is deleted ([`store::text_changes`]: a changed text would change its pieces); a note
//! written since is not held (recall reads it). A note whose stored pieces are missing or of
//! another table is not held either.

use rusqlite::Connection;

use super::super::store;
use crate::error::Result;

/// A skill's notes' distinct pieces (see the module docs).
#[derive(Debug, Default)]
pub struct SkillPieces {
    skill: String,
    /// [`store::text_changes`] before the pass: the pieces are valid while it stays.
    changes: i64,
    /// The highest note id of the store before the pass.
    last: i64,
    /// The table's tag the pieces were stored with (`TokenMatch::stored`'s first four bytes).
    tag: [u8; 4],
    /// The notes held, by id.
    ids: IdSlots,
    /// Where each note's pieces end in `gaps`.
    ends: Vec<u32>,
    /// Each note's distinct pieces, ascending, as varint gaps (the first from 0).
    gaps: Vec<u8>,
    /// What each note's intent and lesson count in a block ([`block::text_chars`], at most
    /// 65,535): the head loads only the notes a block may have room for.
    ///
    /// [`block::text_chars`]: crate::memory::block::text_chars
    chars: Vec<u16>,
}

impl SkillPieces {
    /// Reads the pieces of `skill`'s current notes stored with table `tag`, through `conn`;
    /// room is made for about `notes` notes at once (megabytes grown by doubling left the
    /// allocator holding the smaller copies).
    pub fn read(conn: &Connection, skill: &str, tag: [u8; 4], notes: usize) -> Result<SkillPieces> {
        let (changes, last) = store::text_changes_and_last(conn)?;
        let mut out = SkillPieces {
            skill: skill.to_string(),
            changes,
            last,
            tag,
            ids: IdSlots::default(),
            ends: Vec::with_capacity(notes),
            gaps: Vec::with_capacity(notes * GAP_BYTES_A_NOTE),
            chars: Vec::with_capacity(notes),
        };
        let mut held: Vec<i64> = Vec::with_capacity(notes);
        let mut ids: Vec<u16> = vec![];
        store::scan_match_pieces(conn, skill, |id, blob, intent, delta| {
            let Some(rest) = blob.strip_prefix(&tag[..]).filter(|r| r.len() % 2 == 0) else { return };
            ids.clear();
            ids.extend(rest.chunks_exact(2).map(|b| u16::from_le_bytes([b[0], b[1]])));
            ids.sort_unstable();
            ids.dedup();
            let mut prev = 0u32;
            for piece in &ids {
                push_varint(&mut out.gaps, u32::from(*piece) - prev);
                prev = u32::from(*piece);
            }
            held.push(id);
            out.ends.push(out.gaps.len() as u32);
            let chars = crate::memory::block::text_chars(intent, delta);
            out.chars.push(chars.min(u16::MAX as usize) as u16);
        })?;
        out.ids = IdSlots::new(held);
        out.chars.shrink_to_fit();
        out.ends.shrink_to_fit();
        out.gaps.shrink_to_fit();
        Ok(out)
    }

    /// The skill they are of.
    pub fn skill(&self) -> &str {
        &self.skill
    }

    /// The table's tag they were stored with.
    pub fn tag(&self) -> [u8; 4] {
        self.tag
    }

    /// Whether they are still the notes' own: no note's text changed, no note was deleted
    /// since they were read (`changes` is [`store::text_changes`] now).
    pub fn valid_at(&self, changes: i64) -> bool {
        changes == self.changes
    }

    /// How many notes were written since (ids above the highest when read), of the store's
    /// highest id `last` now.
    pub fn newer_than_held(&self, last: i64) -> i64 {
        (last - self.last).max(0)
    }

    /// Notes held.
    pub fn len(&self) -> usize {
        self.ends.len()
    }

    /// True when no note is held.
    pub fn is_empty(&self) -> bool {
        self.ends.is_empty()
    }

    /// Bytes held (for logs).
    pub fn heap_bytes(&self) -> usize {
        self.ids.heap_bytes()
            + self.ends.capacity() * 4
            + self.chars.capacity() * 2
            + self.gaps.capacity()
            + self.skill.capacity()
    }

    /// The least note `id`'s intent and lesson count in a block ([`crate::memory::block::text_chars`]);
    /// `None` when it is not held.
    pub fn text_chars(&self, id: i64) -> Option<usize> {
        self.ids.slot(id).map(|i| usize::from(self.chars[i]))
    }

    /// Note `id`'s distinct pieces, ascending; `None` when it is not held.
    pub fn get(&self, id: i64) -> Option<Vec<u32>> {
        let i = self.ids.slot(id)?;
        let start = if i == 0 { 0 } else { self.ends[i - 1] as usize };
        let mut b = &self.gaps[start..self.ends[i] as usize];
        let mut out = Vec::with_capacity(b.len());
        let mut prev = 0u32;
        while let Some((gap, used)) = read_varint(b) {
            prev += gap;
            out.push(prev);
            b = &b[used..];
        }
        Some(out)
    }
}

/// Where each held note is among them: a note's id, less the least, indexes a table of
/// positions when the ids are dense (a skill's notes are most of the store's ids: 4 bytes a
/// note, one memory read a lookup, where a binary search over 90,000 ids missed the cache
/// at most of its 17 steps, two-thirds of a lookup's time), else the ids, sorted.
#[derive(Debug)]
enum IdSlots {
    Dense { least: i64, at: Vec<u32> },
    Sorted(Vec<i64>),
}

impl Default for IdSlots {
    fn default() -> Self {
        IdSlots::Sorted(vec![])
    }
}

impl IdSlots {
    /// `ids`, ascending and distinct.
    fn new(mut ids: Vec<i64>) -> IdSlots {
        let (Some(&least), Some(&most)) = (ids.first(), ids.last()) else { return IdSlots::default() };
        let span = most.abs_diff(least).saturating_add(1);
        // Dense when the table takes no more than the ids would.
        if span > 2 * ids.len() as u64 || ids.len() >= u32::MAX as usize {
            ids.shrink_to_fit();
            return IdSlots::Sorted(ids);
        }
        let mut at = vec![u32::MAX; span as usize];
        for (i, id) in ids.iter().enumerate() {
            at[(id - least) as usize] = i as u32;
        }
        IdSlots::Dense { least, at }
    }

    /// Where `id` is; `None` when it is not held.
    fn slot(&self, id: i64) -> Option<usize> {
        match self {
            IdSlots::Dense { least, at } => {
                let i = usize::try_from(id.checked_sub(*least)?).ok()?;
                at.get(i).filter(|s| **s != u32::MAX).map(|s| *s as usize)
            }
            IdSlots::Sorted(ids) => ids.binary_search(&id).ok(),
        }
    }

    #[cfg(test)]
    fn len(&self) -> usize {
        match self {
            IdSlots::Dense { at, .. } => at.iter().filter(|s| **s != u32::MAX).count(),
            IdSlots::Sorted(ids) => ids.len(),
        }
    }

    fn heap_bytes(&self) -> usize {
        match self {
            IdSlots::Dense { at, .. } => at.capacity() * 4,
            IdSlots::Sorted(ids) => ids.capacity() * 8,
        }
    }
}

/// About what a note's pieces take as gaps (77 bytes on average at 90,000 notes of the
/// benchmark's fill: `docs/benchmarks.md`), with room to spare.
const GAP_BYTES_A_NOTE: usize = 96;

fn push_varint(out: &mut Vec<u8>, mut v: u32) {
    while v >= 0x80 {
        out.push((v as u8) | 0x80);
        v >>= 7;
    }
    out.push(v as u8);
}

/// The varint at the start of `b` and its length; `None` when `b` is empty or ends in one.
fn read_varint(b: &[u8]) -> Option<(u32, usize)> {
    let mut v = 0u32;
    for (i, byte) in b.iter().enumerate().take(5) {
        v |= u32::from(byte & 0x7f) << (7 * i);
        if byte & 0x80 == 0 {
            return Some((v, i + 1));
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Ids dense and sparse: every held id finds its place, every other id none.
    #[test]
    fn id_slots_find_each_held_id_and_no_other() {
        // (ids held, whether they are held as a table)
        let cases: Vec<(Vec<i64>, bool)> = vec![
            (vec![], false),
            (vec![7], true),
            (vec![1, 2, 3, 4], true),
            (vec![10, 12, 14, 15], true),
            (vec![1, 3, 5, 7, 9], true),
            (vec![1, 100, 10_000], false),
            (vec![-5, -4, 0], true),
            (vec![i64::MIN, 0, i64::MAX], false),
        ];
        for (ids, dense) in cases {
            let slots = IdSlots::new(ids.clone());
            assert_eq!(matches!(slots, IdSlots::Dense { .. }), dense, "{ids:?}");
            assert_eq!(slots.len(), ids.len(), "{ids:?}");
            for (i, id) in ids.iter().enumerate() {
                assert_eq!(slots.slot(*id), Some(i), "{ids:?} {id}");
            }
            for id in [i64::MIN + 1, -6, -1, 0, 2, 8, 11, 13, 16, 99, 10_001, i64::MAX - 1] {
                if !ids.contains(&id) {
                    assert_eq!(slots.slot(id), None, "{ids:?} {id}");
                }
            }
        }
    }

    #[test]
    fn varints_round_trip() {
        // (value, encoded length)
        for (v, len) in
            [(0u32, 1usize), (1, 1), (127, 1), (128, 2), (16_383, 2), (16_384, 3), (65_535, 3), (u32::MAX, 5)]
        {
            let mut b = vec![];
            push_varint(&mut b, v);
            assert_eq!(b.len(), len, "{v}");
            assert_eq!(read_varint(&b), Some((v, len)), "{v}");
        }
        assert_eq!(read_varint(&[]), None);
        assert_eq!(read_varint(&[0x80]), None, "a varint cut short");
    }

    /// The pieces come back as each note's distinct ones, ascending; notes of another table's
    /// pieces, without pieces, of another skill, retired, and written later are not held; a
    /// changed text makes them stale.
    #[test]
    fn a_skills_pieces_round_trip_and_go_stale_when_a_text_changes() {
        let dir = tempfile::tempdir().unwrap();
        let mut conn = crate::db::open(dir.path()).unwrap();
        let tag = *b"TAG1";
        let blob = |tag: &[u8], ids: &[u16]| -> Vec<u8> {
            let mut b = tag.to_vec();
            for id in ids {
                b.extend_from_slice(&id.to_le_bytes());
            }
            b
        };
        // (skill, stored pieces, held as)
        type Case<'a> = (&'a str, Option<Vec<u8>>, Option<Vec<u32>>);
        let cases: Vec<Case<'_>> = vec![
            ("jq", Some(blob(&tag, &[300, 5, 65_535, 5, 0, 300])), Some(vec![0, 5, 300, 65_535])),
            ("jq", Some(blob(&tag, &[])), Some(vec![])),
            ("jq", Some(blob(b"OTHR", &[1, 2])), None),
            ("jq", Some(b"TAG1\x01".to_vec()), None),
            ("jq", None, None),
            ("git", Some(blob(&tag, &[7])), None),
        ];
        let mut ids = vec![];
        for (i, (skill, pieces, _)) in cases.iter().enumerate() {
            let new = crate::memory::NewNote::gotcha(skill, "", &format!("lesson {i}"));
            let (id, _) = store::write(&mut conn, "p", &new, None, 0.9, None).unwrap();
            conn.execute("UPDATE notes SET match_pieces = ?2 WHERE id = ?1", rusqlite::params![id, pieces]).unwrap();
            ids.push(id);
        }
        let retired = {
            let new = crate::memory::NewNote::gotcha("jq", "", "a retired lesson");
            let (id, _) = store::write(&mut conn, "p", &new, None, 0.9, None).unwrap();
            conn.execute("UPDATE notes SET match_pieces = ?2 WHERE id = ?1", rusqlite::params![id, blob(&tag, &[1])])
                .unwrap();
            store::retire(&mut conn, id, "p", None, None).unwrap();
            id
        };
        let held = SkillPieces::read(&conn, "jq", tag, 4).unwrap();
        for (id, (_, _, want)) in ids.iter().zip(&cases) {
            assert_eq!(held.get(*id), *want, "note {id}");
        }
        assert_eq!(held.get(retired), None);
        assert_eq!(held.len(), 2);
        let (changes, last) = store::text_changes_and_last(&conn).unwrap();
        assert!(held.valid_at(changes));
        assert_eq!(held.newer_than_held(last), 0);
        let (later, _) =
            store::write(&mut conn, "p", &crate::memory::NewNote::gotcha("jq", "", "written later"), None, 0.9, None)
                .unwrap();
        assert_eq!(held.get(later), None);
        let (changes, last) = store::text_changes_and_last(&conn).unwrap();
        assert!(held.valid_at(changes), "an insert leaves the held pieces valid");
        assert_eq!(held.newer_than_held(last), 1);
        conn.execute("UPDATE notes SET delta = 'changed' WHERE id = ?1", [ids[0]]).unwrap();
        assert!(!held.valid_at(store::text_changes(&conn).unwrap()), "a changed text makes them stale");
    }
}
