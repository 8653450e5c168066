//! The `<skill-memory>` block: well-formed XML, byte-identical for identical state and input,
//! filled greedily from the top of the ranking within the token budgets, the framing and the
//! guidance line included.

use super::recall::Ranked;
use super::{tokens, RecallMode};

/// Token budgets of one block.
#[derive(Debug, Clone, Copy)]
pub struct Budget {
    /// The whole block, framing and guidance included.
    pub max_tokens: usize,
    /// Pinned notes together.
    pub max_pinned_tokens: usize,
    /// At most this many notes.
    pub limit: Option<usize>,
    /// Unverified notes that are not pinned together (`memory.unverifiedShare` of
    /// `max_tokens`; 0 hides them, `usize::MAX` lifts the cap).
    pub max_unverified_tokens: usize,
}

impl Budget {
    /// The cap of unverified notes for `share` of `max_tokens` (at least 1 lifts the cap).
    pub fn unverified_cap(max_tokens: usize, share: f32) -> usize {
        if share >= 1.0 {
            usize::MAX
        } else {
            (max_tokens as f32 * share.max(0.0)) as usize
        }
    }
}

/// The tools the block's guidance names.
#[derive(Debug, Clone, Copy)]
pub struct Tools<'a> {
    /// Writes and corrects notes (`memory.noteTool`).
    pub note: &'a str,
    /// Says whether a note helped (`memory.feedbackTool`).
    pub feedback: &'a str,
}

/// A rendered block and the notes in it.
#[derive(Debug, Clone, PartialEq)]
pub struct Block {
    pub text: String,
    pub note_ids: Vec<i64>,
    pub tokens: usize,
    /// The tokens of the unverified notes not pinned, counted against
    /// [`Budget::max_unverified_tokens`].
    pub unverified_tokens: usize,
}

/// Escapes `& < > " '` for XML text. A carriage return is written `&#13;`, since an XML parser
/// turns a literal one into a line feed.
pub fn escape(s: &str) -> String {
    escape_xml(s, false)
}

/// [`escape`] for attribute values, which also writes tabs and line feeds as references: an
/// XML parser turns literal ones into spaces.
pub fn escape_attr(s: &str) -> String {
    escape_xml(s, true)
}

/// Whether byte `b` of a text is written as it is ([`escape`], or [`escape_attr`] with
/// `attr`); a text of such bytes only is copied whole (U+FFFE and U+FFFF start with 0xEF).
fn plain(b: u8, attr: bool) -> bool {
    match b {
        b'&' | b'<' | b'>' | b'"' | b'\'' | b'\r' | 0xEF => false,
        b'\t' | b'\n' => !attr,
        b => b >= 0x20,
    }
}

fn escape_xml(s: &str, attr: bool) -> String {
    // Most lessons need nothing escaped: copy them whole.
    if s.bytes().all(|b| plain(b, attr)) {
        return s.to_string();
    }
    let mut out = String::with_capacity(s.len());
    for c in s.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&apos;"),
            '\r' => out.push_str("&#13;"),
            '\t' if attr => out.push_str("&#9;"),
            '\n' if attr => out.push_str("&#10;"),
            '\t' | '\n' => out.push(c),
            // Characters XML 1.0 does not allow at all are dropped.
            c if (c as u32) < 0x20 || c == '\u{fffe}' || c == '\u{ffff}' => {}
            c => out.push(c),
        }
    }
    out
}

/// The line after the block that tells the agent when to write a note, how to correct one and
/// how to say one helped.
pub fn guidance(skill: &str, tools: Tools<'_>) -> String {
    let (note_tool, feedback_tool) = (tools.note, tools.feedback);
    format!(
        "Skill memory ({skill}): note only gotchas, discoveries, error fixes and must-not-skip steps, with {note_tool} (kind gotcha|discovery|fix|workflow); never routine progress, never a fix that weakens safety. To correct a note: replaces=<its id>. A note helped, or is wrong: {feedback_tool} (verdict useful|wrong)."
    )
}

/// The line after a block that shows unverified notes: plain text like the guidance line, with
/// no double quote (hosts quote the block in JSON, and readers of it, the e2e tests among them,
/// take the lines after `</skill-memory>` up to the first quote).
pub const UNVERIFIED_LINE: &str =
    "Notes with trust=unverified are unproven: check that each applies before acting on it.";

/// `ranked` with the newer note of each conflicting pair `(older, newer)` moved right before
/// the older one when it ranked below it; returns, by older note, the newer note that leads it.
/// Pinned notes come first, always: a newer note that is not pinned never moves above a pinned
/// older one (which still names it).
pub fn lead_newer(ranked: &mut Vec<Ranked>, pairs: &[(i64, i64)]) -> std::collections::HashMap<i64, i64> {
    let mut newer_of = std::collections::HashMap::new();
    for &(older, newer) in pairs {
        let (Some(o), Some(n)) =
            (ranked.iter().position(|r| r.note.id == older), ranked.iter().position(|r| r.note.id == newer))
        else {
            continue;
        };
        // The newest version names the older one (a chain of three names the newest).
        newer_of.entry(older).and_modify(|cur: &mut i64| *cur = (*cur).max(newer)).or_insert(newer);
        if n > o && (ranked[n].note.pinned || !ranked[o].note.pinned) {
            let r = ranked.remove(n);
            ranked.insert(o, r);
        }
    }
    newer_of
}

/// No note costs fewer tokens than this in a block (its markup alone is more; tested): a
/// block with less room left than this is full.
pub const NOTE_TOKENS_MIN: usize = 16;

/// The characters of `s` once escaped ([`escape`], or [`escape_attr`] with `attr`), counted
/// without writing them.
fn escaped_chars(s: &str, attr: bool) -> usize {
    if s.bytes().all(|b| plain(b, attr)) {
        return s.chars().count();
    }
    s.chars()
        .map(|c| match c {
            '&' => 5,
            '<' | '>' => 4,
            '"' | '\'' => 6,
            '\r' => 5,
            '\t' if attr => 4,
            '\n' if attr => 5,
            '\t' | '\n' => 1,
            c if (c as u32) < 0x20 || c == '\u{fffe}' || c == '\u{ffff}' => 0,
            _ => 1,
        })
        .sum()
}

/// The digits of `n` (and its sign).
fn digits(n: i64) -> usize {
    let sign = usize::from(n < 0);
    let mut n = n.unsigned_abs();
    let mut d = 1;
    while n >= 10 {
        n /= 10;
        d += 1;
    }
    d + sign
}

/// The characters of `crate::db::day_of(ms)`: `YYYY-MM-DD` from 1970 to 9999.
fn day_chars(ms: i64) -> usize {
    const YEAR_10000: i64 = 253_402_300_800_000;
    if (0..YEAR_10000).contains(&ms) {
        10
    } else {
        crate::db::day_of(ms).chars().count()
    }
}

/// `tokens(&note_xml(r, older, newer))`, counted without writing the element: a recall ranks
/// dozens of notes, and a block shows the few its budget holds.
pub fn note_tokens(r: &Ranked, older: bool, newer: Option<i64>) -> usize {
    let n = &r.note;
    // The markup of `note_xml` without its values.
    const MARKUP: usize =
        "<note id=\"\" kind=\"\" intent=\"\" used=\"\" pinned=\"\" written=\"\">\n<delta></delta>\n</note>\n".len();
    let chars = MARKUP
        + digits(n.id)
        + escaped_chars(n.kind.as_str(), true)
        + escaped_chars(&n.intent, true)
        + digits(r.uses.used as i64)
        + if n.pinned { 4 } else { 5 }
        + day_chars(n.created_at)
        + if r.uses.trusted { 0 } else { " trust=\"unverified\"".len() }
        + if older { " skill_version=\"older\"".len() } else { 0 }
        + newer.map_or(0, |id| " newer=\"\"".len() + digits(id))
        + escaped_chars(&n.delta, false);
    chars.div_ceil(4)
}

/// The characters [`note_tokens`] counts for a note's intent and lesson (escaped).
pub fn text_chars(intent: &str, delta: &str) -> usize {
    escaped_chars(intent, true) + escaped_chars(delta, false)
}

/// The fewest tokens [`note_tokens`] can count for the note `u` not loaded yet, whatever its
/// kind: its markup, id, the shortest kind, uses, pin, day and trust mark, and the least its
/// text is known to count ([`Unloaded::text_chars`], 0 when not known).
///
/// [`Unloaded::text_chars`]: super::recall::Unloaded::text_chars
/// A block whose room is less than this for every note not loaded needs none of them.
pub fn note_tokens_at_least(u: &super::recall::Unloaded) -> usize {
    const MARKUP: usize =
        "<note id=\"\" kind=\"\" intent=\"\" used=\"\" pinned=\"\" written=\"\">\n<delta></delta>\n</note>\n".len();
    let shortest_kind = super::Kind::ALL.iter().map(|k| escaped_chars(k.as_str(), true)).min().unwrap_or(0);
    let chars = MARKUP
        + digits(u.id)
        + shortest_kind
        + digits(u.uses.used as i64)
        + if u.pinned { 4 } else { 5 }
        + day_chars(u.created_at)
        + if u.uses.trusted { 0 } else { " trust=\"unverified\"".len() }
        + u.text_chars;
    chars.div_ceil(4)
}

/// Renders one note element: `written` is the day it was written (UTC), `used` the sessions
/// that used it, `newer` the note of a conflicting pair that is a newer version of it, and
/// `trust="unverified"` marks a note not yet trusted (trusted notes carry no trust attribute).
pub fn note_xml(r: &Ranked, older: bool, newer: Option<i64>) -> String {
    let n = &r.note;
    let version = if older { " skill_version=\"older\"" } else { "" };
    let newer = newer.map(|id| format!(" newer=\"{id}\"")).unwrap_or_default();
    let trust = if r.uses.trusted { "" } else { " trust=\"unverified\"" };
    format!(
        "<note id=\"{}\" kind=\"{}\" intent=\"{}\" used=\"{}\" pinned=\"{}\" written=\"{}\"{trust}{version}{newer}>\n<delta>{}</delta>\n</note>\n",
        n.id,
        escape_attr(n.kind.as_str()),
        escape_attr(&n.intent),
        r.uses.used,
        n.pinned,
        crate::db::day_of(n.created_at),
        escape(&n.delta)
    )
}

/// The parts of a block, in order: pinned notes, trusted notes, unverified notes.
fn part(r: &Ranked) -> u8 {
    match (r.note.pinned, r.uses.trusted) {
        (true, _) => 0,
        (false, true) => 1,
        (false, false) => 2,
    }
}

/// `ranked` in the block's order: pinned notes first, then trusted, then unverified notes,
/// each part in ranked order; the older note of a conflicting pair (`newer_of`, by older note)
/// that is not pinned goes right after its newer note, in the newer's part.
pub fn in_parts<'a>(ranked: &'a [Ranked], newer_of: &std::collections::HashMap<i64, i64>) -> Vec<&'a Ranked> {
    if newer_of.is_empty() {
        // Each note is a group of its own (the usual case): the parts in ranked order.
        let mut out: Vec<&Ranked> = ranked.iter().collect();
        out.sort_by_key(|r| part(r));
        return out;
    }
    let at = |id: i64| ranked.iter().position(|r| r.note.id == id);
    // Each note's group: its newest version in the ranking (a chain followed to its end), or
    // itself; a pinned note leads its own.
    let lead = |i: usize| -> usize {
        if ranked[i].note.pinned {
            return i;
        }
        let mut g = i;
        for _ in 0..ranked.len() {
            match newer_of.get(&ranked[g].note.id).and_then(|n| at(*n)) {
                Some(j) if j != g && j != i => g = j,
                _ => break,
            }
        }
        g
    };
    let mut groups: Vec<(u8, usize, Vec<&Ranked>)> = vec![];
    for i in 0..ranked.len() {
        let g = lead(i);
        match groups.iter_mut().find(|(_, head, _)| *head == g) {
            Some((_, _, members)) => members.push(&ranked[i]),
            None => groups.push((part(&ranked[g]), g, vec![&ranked[i]])),
        }
    }
    // A group whose lead ranked below a member still starts at the lead.
    for (_, head, members) in &mut groups {
        if let Some(k) = members.iter().position(|r| r.note.id == ranked[*head].note.id) {
            let lead = members.remove(k);
            members.insert(0, lead);
        }
    }
    groups.sort_by_key(|(p, _, _)| *p);
    groups.into_iter().flat_map(|(_, _, m)| m).collect()
}

/// Fills a block from `ranked` (best first, pinned first) in its parts ([`in_parts`]).
/// `current_skill_hash` marks notes written for another version of the skill; `newer_of`
/// names, by older note, the newer note of its conflicting pair ([`lead_newer`]). `None` when
/// no note fits or there are none.
pub fn render(
    skill: &str,
    mode: RecallMode,
    ranked: &[Ranked],
    budget: Budget,
    tools: Tools<'_>,
    current_skill_hash: Option<&str>,
    newer_of: &std::collections::HashMap<i64, i64>,
) -> Option<Block> {
    let guide = guidance(skill, tools);
    let older_line = "Notes marked skill_version=\"older\" were written for an earlier version of this skill; check them against the current SKILL.md.";
    // The framing at its largest, so that the final header can never overflow the budget; the
    // lines about older and unverified notes are counted once the first such note is in.
    let frame = tokens(&header(skill, mode, 9999, 9999)) + tokens("</skill-memory>\n") + tokens(&guide) + 1;
    let older_cost = tokens(older_line) + 1;
    let unverified_cost = tokens(UNVERIFIED_LINE) + 1;
    let mut used = frame;
    let (mut any_older, mut any_unverified) = (false, false);
    let mut pinned_used = 0;
    let mut unverified_used: usize = 0;
    let mut chosen: Vec<(String, bool, i64)> = vec![];
    let limit = budget.limit.unwrap_or(usize::MAX);
    for r in in_parts(ranked, newer_of) {
        if chosen.len() >= limit {
            break;
        }
        let older = matches!((current_skill_hash, r.note.skill_hash.as_deref()), (Some(c), Some(h)) if c != h);
        let unverified = !r.uses.trusted;
        let newer = newer_of.get(&r.note.id).copied();
        let note = note_tokens(r, older, newer);
        let t = note
            + if older && !any_older { older_cost } else { 0 }
            + if unverified && !any_unverified { unverified_cost } else { 0 };
        if used + t > budget.max_tokens {
            continue;
        }
        if r.note.pinned {
            if pinned_used + t > budget.max_pinned_tokens {
                continue;
            }
            pinned_used += t;
        } else if unverified {
            if unverified_used.saturating_add(note) > budget.max_unverified_tokens {
                continue;
            }
            unverified_used += note;
        }
        used += t;
        any_older |= older;
        any_unverified |= unverified;
        chosen.push((note_xml(r, older, newer), older, r.note.id));
    }
    if chosen.is_empty() {
        return None;
    }
    let pinned = ranked.iter().filter(|r| r.note.pinned && chosen.iter().any(|c| c.2 == r.note.id)).count();
    let mut text = header(skill, mode, chosen.len(), pinned);
    for (xml, _, _) in &chosen {
        text.push_str(xml);
    }
    text.push_str("</skill-memory>\n");
    if any_older {
        text.push_str(older_line);
        text.push('\n');
    }
    if any_unverified {
        text.push_str(UNVERIFIED_LINE);
        text.push('\n');
    }
    text.push_str(&guide);
    let total = tokens(&text);
    Some(Block {
        text,
        note_ids: chosen.into_iter().map(|c| c.2).collect(),
        tokens: total,
        unverified_tokens: unverified_used,
    })
}

fn header(skill: &str, mode: RecallMode, count: usize, pinned: usize) -> String {
    format!(
        "<skill-memory skill=\"{}\" mode=\"{}\" count=\"{count}\" pinned=\"{pinned}\">\n",
        escape_attr(skill),
        mode.as_str()
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::memory::{Note, Scope};
    use std::sync::Arc;

    fn ranked(id: i64, delta: &str, pinned: bool) -> Ranked {
        Ranked {
            note: Arc::new(Note {
                id,
                skill: "s".into(),
                scope: Scope::Project,
                origin_project: "p".into(),
                source: crate::memory::Source::Agent,
                kind: crate::memory::Kind::Gotcha,
                intent: "i".into(),
                delta: delta.into(),
                tags: vec![],
                hits: 0,
                recalls: 0,
                pinned,
                skill_hash: Some("h1".into()),
                created_at: 0,
                updated_at: 0,
                retired_at: None,
                superseded_by: None,
                reason: None,
                session_id: None,
                origin: Default::default(),
                origin_source: None,
                pending: false,
                review_replaces: None,
                match_pieces: None,
            }),
            score: 1.0,
            matched: true,
            uses: crate::memory::evidence::Uses { trusted: true, ..Default::default() },
        }
    }

    fn unverified(id: i64, delta: &str, pinned: bool) -> Ranked {
        let mut r = ranked(id, delta, pinned);
        r.uses.trusted = false;
        r
    }

    const TOOLS: Tools<'static> = Tools { note: "t", feedback: "f" };

    fn budget(max_tokens: usize) -> Budget {
        Budget { max_tokens, max_pinned_tokens: max_tokens, limit: None, max_unverified_tokens: usize::MAX }
    }

    #[test]
    fn no_note_costs_fewer_tokens_than_the_minimum() {
        let mut r = ranked(1, "x", false);
        Arc::make_mut(&mut r.note).intent = String::new();
        Arc::make_mut(&mut r.note).kind = crate::memory::Kind::Fix;
        assert!(tokens(&note_xml(&r, false, None)) >= NOTE_TOKENS_MIN);
    }

    /// The least a note not loaded could cost is never more than what it costs, whatever its
    /// kind and text, and is what the shortest such note costs; with its text known, what the
    /// note of the shortest kind costs.
    #[test]
    fn a_note_costs_at_least_what_its_facts_alone_cost_table() {
        use crate::memory::Kind;
        // (id, sessions that used it, pinned, trusted, written at)
        let facts: &[(i64, u32, bool, bool, i64)] = &[
            (1, 0, false, false, 0),
            (7, 0, true, false, 1_765_000_000_000),
            (123_456, 12, false, true, 1_765_000_000_000),
            (99_999_999, 1000, true, true, -86_400_000),
            (-5, 3, false, false, 300_000_000_000_000),
        ];
        let shortest = *Kind::ALL.iter().min_by_key(|k| k.as_str().len()).unwrap();
        for &(id, used, pinned, trusted, created_at) in facts {
            let uses = crate::memory::evidence::Uses { used, trusted, ..Default::default() };
            let u = crate::memory::recall::Unloaded {
                id,
                score: 0.0,
                matched: false,
                uses,
                pinned,
                created_at,
                text_chars: 0,
            };
            let least = note_tokens_at_least(&u);
            let mut cheapest = usize::MAX;
            for kind in Kind::ALL {
                for (intent, delta) in [("", ""), ("", "x"), ("i", "\u{1}\u{1b}"), ("quote <it>", "a & b \"c\"")] {
                    for (older, newer) in [(false, None), (true, Some(42))] {
                        let mut r = ranked(id, delta, pinned);
                        Arc::make_mut(&mut r.note).kind = kind;
                        Arc::make_mut(&mut r.note).intent = intent.into();
                        Arc::make_mut(&mut r.note).created_at = created_at;
                        r.uses = uses;
                        let t = note_tokens(&r, older, newer);
                        assert_eq!(t, tokens(&note_xml(&r, older, newer)), "{id} {kind:?} {delta:?}");
                        assert!(least <= t, "{id} {kind:?} {intent:?} {delta:?}: {least} > {t}");
                        cheapest = cheapest.min(t);
                        // Its text known too: still at most what it costs, and what it costs
                        // when only the kind and the attributes a block adds are left out.
                        let known = crate::memory::recall::Unloaded { text_chars: text_chars(intent, delta), ..u };
                        let least_known = note_tokens_at_least(&known);
                        assert!(least_known <= t, "{id} {kind:?} {intent:?} {delta:?}: {least_known} > {t}");
                        if kind == shortest && (older, newer) == (false, None) {
                            assert_eq!(least_known, t, "{id} {intent:?} {delta:?}");
                        }
                    }
                }
            }
            assert_eq!(least, cheapest, "{id}: the shortest note costs the least");
        }
    }

    #[test]
    fn a_note_is_counted_as_its_markup_is_table() {
        let texts = [
            "",
            "x",
            "plain text, nothing to escape",
            "a&b <x> \"q\" 'a'",
            "tab\tline\nfeed\r\nreturn",
            "bell\u{7} non\u{fffe}char\u{ffff} nul\u{0}",
            "café ünïcode – fine \u{fffd} 日本語",
            &"long ".repeat(97),
        ];
        for (i, intent) in texts.iter().enumerate() {
            for (j, delta) in texts.iter().enumerate() {
                for (id, used, created, pinned, trusted) in [
                    (1, 0, 0, false, true),
                    (1234567, 42, 1_780_000_000_000, true, false),
                    (9, 10, -86_400_000, false, false),
                ] {
                    let mut r = ranked(id, delta, pinned);
                    Arc::make_mut(&mut r.note).intent = intent.to_string();
                    Arc::make_mut(&mut r.note).created_at = created;
                    Arc::make_mut(&mut r.note).kind =
                        if (i + j) % 2 == 0 { crate::memory::Kind::Workflow } else { crate::memory::Kind::Fix };
                    r.uses.used = used;
                    r.uses.trusted = trusted;
                    for (older, newer) in [(false, None), (true, Some(7)), (false, Some(123_456_789_012))] {
                        assert_eq!(
                            note_tokens(&r, older, newer),
                            tokens(&note_xml(&r, older, newer)),
                            "intent {intent:?}, delta {delta:?}, id {id}, older {older}, newer {newer:?}"
                        );
                    }
                }
            }
        }
    }

    #[test]
    fn escape_table() {
        for (a, b) in [
            ("a&b", "a&amp;b"),
            ("<x>", "&lt;x&gt;"),
            ("\"q\" 'a'", "&quot;q&quot; &apos;a&apos;"),
            ("bell\u{7}", "bell"),
            ("tab\tok", "tab\tok"),
            ("cr\r\nlf", "cr&#13;\nlf"),
            ("non\u{fffe}char\u{ffff}", "nonchar"),
            ("plain text, nothing to escape", "plain text, nothing to escape"),
            ("café ünïcode – fine \u{fffd}", "café ünïcode – fine \u{fffd}"),
            ("", ""),
        ] {
            assert_eq!(escape(a), b);
        }
        assert_eq!(escape_attr("a\tb\nc\r"), "a&#9;b&#10;c&#13;");
        assert_eq!(escape_attr("plain"), "plain");
    }

    #[test]
    fn budget_table() {
        let long = "x".repeat(400); // ~100 tokens each
        let notes: Vec<Ranked> =
            vec![ranked(1, &long, true), ranked(2, &long, true), ranked(3, &long, false), ranked(4, "short", false)];
        let cases = [
            // (max_tokens, max_pinned, limit, expected ids)
            (10_000, 10_000, None, vec![1, 2, 3, 4]),
            (10_000, 150, None, vec![1, 3, 4]),
            (10_000, 10_000, Some(2), vec![1, 2]),
            (290, 10_000, None, vec![1, 4]),
            (50, 10_000, None, vec![]),
        ];
        for (max, pinned, limit, want) in cases {
            let b = render(
                "s",
                RecallMode::Vector,
                &notes,
                Budget { max_tokens: max, max_pinned_tokens: pinned, limit, max_unverified_tokens: usize::MAX },
                TOOLS,
                None,
                &Default::default(),
            );
            let ids = b.as_ref().map(|b| b.note_ids.clone()).unwrap_or_default();
            assert_eq!(ids, want, "max {max} pinned {pinned} limit {limit:?}");
            if let Some(b) = b {
                assert!(b.tokens <= max, "{} > {max}", b.tokens);
            }
        }
    }

    #[test]
    fn older_versions_are_marked() {
        let notes = vec![ranked(1, "a", false)];
        let b = render("s", RecallMode::Fts, &notes, budget(1000), TOOLS, Some("h2"), &Default::default()).unwrap();
        assert!(b.text.contains("skill_version=\"older\""));
        assert!(b.text.contains("earlier version"));
        let b = render("s", RecallMode::Fts, &notes, budget(1000), TOOLS, Some("h1"), &Default::default()).unwrap();
        assert!(!b.text.contains("older"));
    }

    /// The newer note of a conflicting pair moves before the older, which names it; every
    /// note says the day it was written.
    #[test]
    fn the_newer_version_leads_and_is_named() {
        type Case<'a> = (&'a [i64], &'a [(i64, i64)], &'a [i64], &'a [(i64, i64)]);
        let cases: &[Case] = &[
            // (ranked ids, pairs (older, newer), ids after, newer_of)
            (&[1, 2, 3], &[(1, 3)], &[3, 1, 2], &[(1, 3)]),
            (&[3, 1, 2], &[(1, 3)], &[3, 1, 2], &[(1, 3)]),
            (&[1, 2], &[(1, 9)], &[1, 2], &[]),
            (&[1, 2, 3], &[(1, 2), (1, 3)], &[2, 3, 1], &[(1, 3)]),
            (&[1, 2, 3], &[(1, 2), (2, 3)], &[3, 2, 1], &[(1, 2), (2, 3)]),
            (&[], &[], &[], &[]),
        ];
        for (ids, pairs, after, newer) in cases {
            let mut notes: Vec<Ranked> = ids.iter().map(|i| ranked(*i, "x", false)).collect();
            let got = lead_newer(&mut notes, pairs);
            assert_eq!(notes.iter().map(|r| r.note.id).collect::<Vec<_>>(), *after, "{ids:?} {pairs:?}");
            assert_eq!(got, newer.iter().copied().collect(), "{ids:?} {pairs:?}");
        }
        // Pinned first, always: a pinned older note keeps its place above an unpinned newer
        // one (and names it); a pinned newer one leads a pinned older one.
        type Pinned<'a> = (&'a [(i64, bool)], &'a [(i64, i64)], &'a [i64]);
        let pinned: &[Pinned] = &[
            (&[(1, true), (2, false), (3, false)], &[(1, 3)], &[1, 2, 3]),
            (&[(1, true), (3, true), (2, false)], &[(1, 3)], &[3, 1, 2]),
            (&[(3, true), (1, true), (2, false)], &[(1, 3)], &[3, 1, 2]),
            (&[(1, true), (3, false)], &[(1, 3)], &[1, 3]),
        ];
        for (ids, pairs, after) in pinned {
            let mut notes: Vec<Ranked> = ids.iter().map(|(i, p)| ranked(*i, "x", *p)).collect();
            let got = lead_newer(&mut notes, pairs);
            assert_eq!(notes.iter().map(|r| r.note.id).collect::<Vec<_>>(), *after, "{ids:?} {pairs:?}");
            assert_eq!(got.get(&1), Some(&3), "{ids:?}");
        }
        let mut notes = vec![ranked(1, "always", false), ranked(2, "never", false)];
        Arc::make_mut(&mut notes[1].note).created_at = 1_764_547_200_000; // 2025-12-01
        let newer_of = lead_newer(&mut notes, &[(1, 2)]);
        let b = render("s", RecallMode::Fts, &notes, budget(1000), TOOLS, None, &newer_of).unwrap();
        assert_eq!(b.note_ids, vec![2, 1]);
        assert!(
            b.text.contains(
                "<note id=\"2\" kind=\"gotcha\" intent=\"i\" used=\"0\" pinned=\"false\" written=\"2025-12-01\">"
            ),
            "{}",
            b.text
        );
        assert!(b.text.contains("id=\"1\"") && b.text.contains("written=\"1970-01-01\" newer=\"2\">"), "{}", b.text);
        assert!(b.text.contains("replaces=<its id>"), "{}", b.text);
    }

    /// The block's parts: pinned, then trusted, then unverified notes (which say so), each in
    /// ranked order; the older note of a conflicting pair right after its newer one, in the
    /// newer's part; a pinned older note keeps the pinned part.
    #[test]
    fn parts_table() {
        // (id, pinned, trusted) in ranked order, pairs (older, newer), block order
        type Case<'a> = (&'a [(i64, bool, bool)], &'a [(i64, i64)], &'a [i64]);
        let cases: &[Case] = &[
            (&[(1, false, false), (2, false, true), (3, true, false)], &[], &[3, 2, 1]),
            (&[(1, false, true), (2, false, false), (3, false, true)], &[], &[1, 3, 2]),
            // A trusted older note follows its unverified newer one into the unverified part.
            (&[(3, false, false), (1, false, true), (2, false, true)], &[(1, 3)], &[2, 3, 1]),
            // An unverified older note follows its trusted newer one.
            (&[(3, false, true), (4, false, true), (1, false, false)], &[(1, 3)], &[3, 1, 4]),
            // A chain ends at its newest: 1 → 2 → 3.
            (
                &[(3, false, true), (2, false, false), (5, false, true), (1, false, true)],
                &[(1, 2), (2, 3)],
                &[3, 2, 1, 5],
            ),
            // A pinned older note stays pinned, above its newer note.
            (&[(1, true, false), (3, false, true)], &[(1, 3)], &[1, 3]),
            // An older note follows a pinned newer one into the pinned part.
            (&[(3, true, true), (2, false, true), (1, false, false)], &[(1, 3)], &[3, 1, 2]),
            (&[], &[], &[]),
        ];
        for (notes, pairs, want) in cases {
            let mut ranked: Vec<Ranked> =
                notes.iter().map(|(i, p, t)| if *t { ranked(*i, "x", *p) } else { unverified(*i, "x", *p) }).collect();
            let newer_of = lead_newer(&mut ranked, pairs);
            let got: Vec<i64> = in_parts(&ranked, &newer_of).iter().map(|r| r.note.id).collect();
            assert_eq!(got, *want, "{notes:?} {pairs:?}");
            let b = render("s", RecallMode::Fts, &ranked, budget(10_000), TOOLS, None, &newer_of);
            assert_eq!(b.map(|b| b.note_ids).unwrap_or_default(), *want);
        }
    }

    /// Unverified notes that are not pinned share `max_unverified_tokens`; 0 hides them;
    /// pinned notes are exempt; the block says what unverified means only when it shows one.
    #[test]
    fn unverified_share_table() {
        let long = "x".repeat(400); // ~100 tokens each
        let notes = vec![
            ranked(1, &long, false),
            unverified(2, &long, true),
            unverified(3, &long, false),
            unverified(4, &long, false),
            unverified(5, "short", false),
        ];
        // (cap, block)
        let cases: &[(usize, &[i64])] = &[
            (usize::MAX, &[2, 1, 3, 4, 5]),
            (0, &[2, 1]),
            (200, &[2, 1, 3, 5]),
            (Budget::unverified_cap(1000, 0.25), &[2, 1, 3, 5]),
            (Budget::unverified_cap(1000, 1.0), &[2, 1, 3, 4, 5]),
        ];
        for (cap, want) in cases {
            let b = render(
                "s",
                RecallMode::Fts,
                &notes,
                Budget { max_unverified_tokens: *cap, ..budget(10_000) },
                TOOLS,
                None,
                &Default::default(),
            )
            .unwrap();
            assert_eq!(b.note_ids, *want, "cap {cap}");
            assert!(b.text.contains(UNVERIFIED_LINE));
        }
        assert_eq!(Budget::unverified_cap(1000, 0.0), 0);
        assert_eq!(Budget::unverified_cap(1000, 0.25), 250);
        let b = render("s", RecallMode::Fts, &notes[..1], budget(1000), TOOLS, None, &Default::default()).unwrap();
        assert!(!b.text.contains("unverified"), "{}", b.text);
        assert!(b.text.contains("wrong: f (verdict useful|wrong)."), "{}", b.text);
        let b = render("s", RecallMode::Fts, &notes[2..3], budget(1000), TOOLS, None, &Default::default()).unwrap();
        assert!(b.text.contains("<note id=\"3\" kind=\"gotcha\" intent=\"i\" used=\"0\" pinned=\"false\" written=\"1970-01-01\" trust=\"unverified\">"), "{}", b.text);
    }
}
