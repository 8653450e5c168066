//! Rule 2, **empty or vague**: no words, or fewer than three words that say something
//! specific (not a stop word, not the skill's name, not a word such as "careful", "useful",
//! "works") and no code span, flag or number to anchor them.
//!
//! Owns [`GENERIC`], the words that say nothing specific, which rule 10 (`truism.rs`) counts
//! by too. Must not refuse a lesson with an anchor however few its words ("`-r` prints raw
//! strings"), nor judge what a lesson of enough words claims: that is rule 10's, tried last.

use super::Refusal;
use crate::text::{is_stop, stem, words};

/// Words that say nothing specific about how to use a skill.
pub(super) const GENERIC: &[&str] = &[
    "careful",
    "carefully",
    "useful",
    "helpful",
    "important",
    "good",
    "great",
    "well",
    "work",
    "works",
    "worked",
    "working",
    "tool",
    "tools",
    "skill",
    "skills",
    "thing",
    "things",
    "stuff",
    "make",
    "sure",
    "always",
    "never",
    "remember",
    "check",
    "double",
    "output",
    "properly",
    "correctly",
    "really",
    "lot",
    "lots",
    "many",
    "much",
    "option",
    "options",
    "flag",
    "flags",
    "complex",
    "tricky",
    "confusing",
    "powerful",
    "kind",
    "task",
    "done",
    "fine",
    "nice",
    "easy",
    "hard",
    "may",
    "might",
    "must",
    "need",
    "needs",
    "also",
    "like",
    "way",
    "ways",
    "right",
    "wrong",
    "expected",
    "n",
    "na",
    "none",
    "nothing",
    "ok",
    "okay",
    "etc",
    "job",
    "try",
    "tried",
    "help",
    "helps",
    "lesson",
    "note",
    "notes",
    "learned",
    "problem",
    "problems",
    "issue",
    "issues",
    "handle",
    "handled",
    "very",
    "quite",
];

/// Rule 2: `Err` when `lesson` has no words, or too few specific ones and nothing to anchor them.
pub(super) fn vague(skill: &str, lesson: &str) -> Result<(), Refusal> {
    let has_code = lesson.contains('`');
    let skill_l = skill.to_ascii_lowercase();
    let ws = words(lesson);
    let anchored = has_code
        || lesson
            .split_whitespace()
            .any(|w| w.len() > 1 && w.starts_with('-') && w[1..].starts_with(char::is_alphabetic))
        || ws.iter().any(|w| w.chars().any(|c| c.is_ascii_digit()));
    let specific = ws
        .iter()
        .filter(|w| !is_stop(w) && !GENERIC.contains(&w.as_str()))
        .filter(|w| *w != &skill_l && stem(w) != skill_l.as_str())
        .filter(|w| w.chars().count() > 1)
        .count();
    if specific == 0 && !anchored {
        return Err(if ws.is_empty() { Refusal::Empty } else { Refusal::Vague(0) });
    }
    if specific < 3 && !anchored {
        return Err(Refusal::Vague(specific));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn words_that_say_something_specific_or_an_anchor() {
        for (lesson, want) in [
            ("", Err(Refusal::Empty)),
            ("...", Err(Refusal::Empty)),
            ("jq is very useful.", Err(Refusal::Vague(0))),
            ("Always double-check the output.", Err(Refusal::Vague(0))),
            ("Be careful with jq filters.", Err(Refusal::Vague(1))),
            ("JQ filters nest.", Err(Refusal::Vague(2))),
            // three specific words, or one anchor: a code span, a flag, a number
            ("Filters nest arrays deeply.", Ok(())),
            ("Use `-r`.", Ok(())),
            ("Pass -r always.", Ok(())),
            ("Works with 1.7.", Ok(())),
        ] {
            assert_eq!(vague("jq", lesson), want, "{lesson:?}");
        }
    }
}
