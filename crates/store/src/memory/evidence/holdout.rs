//! The holdout (docs/protocol.md, "Use and trust"): with probability `memory.holdout`, a load
//! withholds one eligible unverified note from its block, so that a note's lift can compare
//! the sessions shown it with sessions not shown it at random. Pure and seeded: a draw is a
//! function of the seed, the session and the skill (a session that loads a skill twice
//! withholds the same note), never of the clock, so a replay and a test withhold the same
//! notes.

use super::Uses;

/// A number in [0, 1) from `seed` and the words: FNV-1a over them, then splitmix64.
fn unit(seed: u64, words: &[&str]) -> f64 {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325 ^ seed;
    for w in words {
        for b in w.bytes().chain(std::iter::once(0xff)) {
            h ^= u64::from(b);
            h = h.wrapping_mul(0x0100_0000_01b3);
        }
    }
    let mut z = h.wrapping_add(0x9e37_79b9_7f4a_7c15);
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    z ^= z >> 31;
    (z >> 11) as f64 / (1u64 << 53) as f64
}

/// Whether `session`'s loads of `skill` withhold a note: with probability `p`.
pub fn draws(seed: u64, session: &str, skill: &str, p: f32) -> bool {
    p > 0.0 && unit(seed, &[session, skill]) < f64::from(p)
}

/// Which of the block's eligible notes (`(id, pinned, uses)`: unverified and not pinned) a
/// load that draws withholds: a note that was used (a candidate for trust by use) before one
/// that was not; of those, one still short of [`super::LIFT_WITHHELD_MIN`] withheld sessions
/// first, the most used (by its smoothed rate) first, so that the holdout completes the
/// evidence of the likeliest candidates; then by the seeded draw. None when none is eligible.
pub fn pick(seed: u64, session: &str, notes: &[(i64, bool, Uses)]) -> Option<i64> {
    notes
        .iter()
        .filter(|(_, pinned, u)| !pinned && !u.trusted)
        .min_by(|a, b| {
            let key = |(id, _, u): &(i64, bool, Uses)| {
                (
                    u.used == 0,
                    i64::from(u.withheld) >= super::LIFT_WITHHELD_MIN,
                    -u.rate(),
                    unit(seed, &[session, &id.to_string()]),
                )
            };
            key(a).partial_cmp(&key(b)).unwrap_or(std::cmp::Ordering::Equal)
        })
        .map(|(id, _, _)| *id)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn draws_are_seeded_and_near_their_rate() {
        let n = 10_000;
        for (p, seed) in [(0.1, 0), (0.5, 7), (0.0, 1), (1.0, 3)] {
            let hits = (0..n).filter(|i| draws(seed, &format!("s{i}"), "jq", p)).count();
            let again = (0..n).filter(|i| draws(seed, &format!("s{i}"), "jq", p)).count();
            assert_eq!(hits, again, "the same seed draws the same");
            assert!((hits as f32 / n as f32 - p).abs() < 0.02, "p {p}: {hits} of {n}");
        }
        // Another seed draws other sessions.
        let a: Vec<bool> = (0..200).map(|i| draws(1, &format!("s{i}"), "jq", 0.5)).collect();
        let b: Vec<bool> = (0..200).map(|i| draws(2, &format!("s{i}"), "jq", 0.5)).collect();
        assert_ne!(a, b);
    }

    #[test]
    fn pick_table() {
        let u = |used, withheld, trusted| Uses { used, withheld, trusted, shown: 3, ..Default::default() };
        // (notes, picked)
        type Notes<'a> = &'a [(i64, bool, Uses)];
        let cases: &[(Notes, Option<i64>)] = &[
            (&[], None),
            (&[(1, true, u(0, 0, false)), (2, false, u(1, 0, true))], None),
            (&[(1, false, u(0, 0, false)), (2, false, u(2, 0, false))], Some(2)),
            (&[(1, false, u(2, 1, false)), (2, false, u(2, 0, false))], Some(1)),
            (&[(1, false, u(2, 2, false)), (2, false, u(1, 0, false))], Some(2)),
            (&[(1, true, u(2, 0, false)), (2, false, u(0, 0, false))], Some(2)),
        ];
        for (notes, want) in cases {
            assert_eq!(pick(0, "s", notes), *want, "{notes:?}");
        }
    }
}
