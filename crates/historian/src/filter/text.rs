//! The text helpers the rules share: the units a lesson is compared by (lines, sentences,
//! clauses), a SKILL.md's body and its pairs of adjacent sentences, and whole-word search.
//!
//! Owns how text is split, so that every rule splits alike: nothing inside a code span splits
//! and an ellipsis (`COPY ... FROM`) ends no sentence. Must not judge a lesson: nothing here
//! knows a rule, a word list or a [`super::Refusal`].

/// Each two sentences of a SKILL.md body that follow each other (headings left out), joined:
/// a summariser that merges two instructions into one lesson restates the pair, and neither
/// sentence alone is close enough.
pub fn pairs(body: &str) -> Vec<String> {
    let ss: Vec<&str> = body
        .lines()
        .filter(|l| !l.trim().is_empty() && !l.trim_start().starts_with('#'))
        .flat_map(sentences)
        .map(str::trim)
        .filter(|s| !s.is_empty())
        .collect();
    ss.windows(2).map(|w| format!("{} {}", w[0], w[1])).collect()
}

/// A SKILL.md without its frontmatter.
pub fn body(md: &str) -> &str {
    let t = md.trim_start_matches('\u{feff}');
    if let Some(rest) = t.strip_prefix("---") {
        if let Some(end) = rest.find("\n---") {
            let after = &rest[end + 4..];
            return after.split_once('\n').map(|(_, b)| b).unwrap_or("");
        }
    }
    t
}

/// The units a text is compared by: each line when it holds more than one sentence, each
/// sentence (`. ` / `! ` / `? ` ends), and each clause of a sentence (split at `;` and `:`
/// followed by a space, and `, so`). Nothing inside a code span splits, and an ellipsis
/// (`COPY ... FROM`) ends no sentence.
pub fn units(text: &str) -> impl Iterator<Item = &str> {
    text.lines().flat_map(|line| {
        let ss = sentences(line);
        let whole = if ss.len() > 1 { Some(line) } else { None };
        whole.into_iter().chain(ss.into_iter().flat_map(|s| {
            let clauses: Vec<&str> = split_all(s, &["; ", ": ", ", so "]);
            let whole = if clauses.len() > 1 { Some(s) } else { None };
            whole.into_iter().chain(clauses)
        }))
    })
}

/// The sentences of one line, by the same split as [`units`].
pub(super) fn sentences(line: &str) -> Vec<&str> {
    split_all(line, &[". ", "! ", "? "])
}

/// How many sentences `text` holds, by the same split as [`units`].
pub fn sentence_count(text: &str) -> usize {
    text.lines().map(|l| sentences(l).len()).sum()
}

/// `s` split at every occurrence of any of `seps` (kept out) outside code spans, without
/// empty parts. A `. ` after another `.` (an ellipsis) is not a separator.
pub(super) fn split_all<'a>(s: &'a str, seps: &[&str]) -> Vec<&'a str> {
    let mut out = vec![];
    let mut start = 0;
    let mut i = 0;
    let mut in_code = false;
    while i < s.len() {
        if s[i..].starts_with('`') {
            in_code = !in_code;
        } else if let Some(sep) = seps.iter().find(|sep| s[i..].starts_with(**sep)).filter(|_| !in_code) {
            if !(sep.starts_with('.') && s[..i].ends_with('.')) {
                out.push(&s[start..i]);
                i += sep.len();
                start = i;
                continue;
            }
        }
        i += s[i..].chars().next().map(char::len_utf8).unwrap_or(1);
    }
    out.push(&s[start..]);
    out.into_iter().filter(|p| !p.trim().is_empty()).collect()
}

/// `w` in `text` with no word character (or `-`) just before it and no word character just
/// after it: `-1` is in "(-1: no expiry", `2` in "Poetry 2.0", `run` not in "rerun".
pub(super) fn has_word(text: &str, w: &str) -> bool {
    let word = |c: char| c.is_alphanumeric() || c == '_';
    text.match_indices(w).any(|(i, _)| {
        let before = text[..i].chars().next_back().is_none_or(|c| !word(c) && c != '-');
        let after = text[i + w.len()..].chars().next().is_none_or(|c| !word(c));
        before && after
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn units_and_body() {
        assert_eq!(body("---\nname: x\n---\nbody\n"), "body\n");
        assert_eq!(body("no frontmatter"), "no frontmatter");
        assert_eq!(body("---\nunclosed"), "---\nunclosed");
        let u: Vec<&str> = units("One. Two; three: four, so five").collect();
        assert_eq!(
            u,
            vec!["One. Two; three: four, so five", "One", "Two; three: four, so five", "Two", "three", "four", "five"]
        );
        // No split inside a code span, nor at an ellipsis.
        let u: Vec<&str> = units("Run `a. b` then. `SELECT ... FROM t` is fine").collect();
        assert_eq!(
            u,
            vec!["Run `a. b` then. `SELECT ... FROM t` is fine", "Run `a. b` then", "`SELECT ... FROM t` is fine"]
        );
    }

    #[test]
    fn pairs_join_each_two_adjacent_sentences_headings_left_out() {
        let pairs = pairs("# a\n- One. Two.\n\n## b\n- Three.\n");
        assert_eq!(pairs, vec!["- One Two.".to_string(), "Two. - Three.".to_string()]);
    }
}
