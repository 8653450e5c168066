//! Rule 10, **platitude or definition** (reason category `vague`): with nothing exact (no
//! code, flag, number, error or name) and no condition, cause or contrast, a claim that
//! something is good or a judgement ("Indexes help queries run faster", "rsync is fast"), a
//! warning with no content ("Watch out for…") or "X is a Y".
//!
//! Owns the words of a platitude ([`BENEFIT`], [`CAUTION`]) and of a rule ([`RULE_MARKS`]).
//! Must not refuse short advice ("Quote fields that hold commas." is a rule) nor anything
//! that names something exact. It is tried last, so that a report or a fact of the task gets
//! its own reason first.

use super::vague::GENERIC;
use super::Refusal;
use crate::text::{is_stop, stem, words};

/// Words that make a sentence a rule: a condition, a cause, a contrast, a negation, an
/// order of steps, a default.
const RULE_MARKS: &[&str] = &[
    "not",
    "no",
    "never",
    "only",
    "unless",
    "because",
    "since",
    "instead",
    "otherwise",
    "but",
    "without",
    "before",
    "after",
    "until",
    "when",
    "whenever",
    "if",
    "than",
    "rather",
    "default",
    "must",
    "so",
    "cannot",
    "except",
    "even",
    "first",
    "once",
    "while",
    "whereas",
    "although",
];

/// A word that names something exact although it is not in a code span: an error or
/// constant name (`ERESOLVE`, `CrashLoopBackOff`), a file or module (`pytest.ini`,
/// `set_need_appearances_writer`), or quoted text (`'Invalid numeric literal'`).
fn named_thing(lesson: &str) -> bool {
    let quoted = ['\'', '"'].iter().any(|q| {
        let parts: Vec<&str> = lesson.split(*q).collect();
        // a quote that opens after a space and closes before one: not an apostrophe
        parts.len() >= 3
            && parts
                .windows(2)
                .any(|p| (p[0].is_empty() || p[0].ends_with(' ')) && p[1].chars().any(char::is_alphabetic))
    });
    quoted
        || lesson.split_whitespace().any(|t| {
            let t = t.trim_matches(|c: char| !c.is_alphanumeric());
            let letters = t.chars().filter(|c| c.is_alphabetic()).count();
            let caps = t.chars().filter(|c| c.is_ascii_uppercase()).count();
            let inner_cap = t.chars().skip(1).any(|c| c.is_ascii_uppercase()) && t.chars().any(|c| c.is_lowercase());
            (letters >= 4 && (caps == letters || inner_cap))
                || (t.contains(['_', '.']) && t.split(['_', '.']).filter(|p| !p.is_empty()).count() >= 2)
        })
}

/// Words of a claim that something is good: the shape of a platitude.
const BENEFIT: &[&str] = &[
    "faster",
    "quicker",
    "easier",
    "simpler",
    "better",
    "safer",
    "cleaner",
    "nicer",
    "healthy",
    "healthier",
    "help",
    "helps",
    "improve",
    "improves",
    "matter",
    "matters",
    "essential",
    "crucial",
    "recommended",
    "best",
    "worth",
    "important",
    "useful",
    "helpful",
    "powerful",
    "great",
    // judgements with nothing to act on: "rsync is fast", "can be hard to read"
    "handy",
    "fast",
    "slow",
    "hard",
    "difficult",
    "tricky",
    "confusing",
    "easy",
    "clean",
    "tidy",
    "messy",
    "anything",
    "everything",
    "flexible",
    "versatile",
    "convenient",
    "straightforward",
    "annoying",
    "painful",
    "nice",
    "good",
    "bad",
    "clear",
    "meaningful",
    "readable",
    "sensible",
    "proper",
    "reliable",
    "super",
    "simple",
    "lean",
    "organized",
    "organised",
    "consistent",
    // qualities claimed with nothing to act on: "Makefiles can get complicated quickly",
    // "Infrastructure as code makes environments reproducible"
    "complicated",
    "complex",
    "reproducible",
    "maintainable",
    "robust",
    "scalable",
];

/// A warning with nothing to act on ("Watch out for resource limits."), or an answer that
/// names none of what it depends on ("Performance depends on many factors.").
const CAUTION: &[&str] = &[
    "watch out",
    "be careful",
    "be mindful",
    "pay attention",
    "keep an eye",
    "beware",
    "be aware",
    "many factors",
    "it depends",
    // a quality demanded with nothing to check it by: "Charts should be well structured"
    "be well ",
    "is well ",
    "are well ",
];

/// With nothing exact to act on (no command, flag, number, error text or name) and no
/// condition, cause or contrast, a claim that something is good is a platitude ("Indexes
/// help queries run faster", "Good commit messages matter"), and "X is a Y" is a definition
/// any manual gives ("npm is the package manager for Node"). Short advice is not refused:
/// "Quote fields that hold commas." is a rule. Tried last, so that a report or a fact of the
/// task gets its own reason.
pub(super) fn truism(skill: &str, lesson: &str) -> Result<(), Refusal> {
    let ws = words(lesson);
    let anchored = lesson.contains('`')
        || lesson
            .split_whitespace()
            .any(|w| w.len() > 1 && w.starts_with('-') && w[1..].starts_with(char::is_alphabetic))
        || ws.iter().any(|w| w.chars().any(|c| c.is_ascii_digit()));
    // The skill's own name (`FFmpeg` for ffmpeg) is no exact thing to act on.
    let skill_l = skill.to_ascii_lowercase();
    let without_skill: String = lesson
        .split_whitespace()
        .filter(|w| w.trim_matches(|c: char| !c.is_alphanumeric()).to_ascii_lowercase() != skill_l)
        .collect::<Vec<_>>()
        .join(" ");
    if anchored || named_thing(&without_skill) {
        return Ok(());
    }
    let rule = ws.iter().any(|w| RULE_MARKS.contains(&w.as_str())) || lesson.to_ascii_lowercase().contains("n't");
    let specific = ws
        .iter()
        .filter(|w| !is_stop(w) && !GENERIC.contains(&w.as_str()))
        .filter(|w| *w != &skill_l && stem(w) != skill_l.as_str())
        .filter(|w| w.chars().count() > 1)
        .count();
    let lower = lesson.to_ascii_lowercase();
    let platitude = ws.iter().any(|w| BENEFIT.contains(&w.as_str())) || CAUTION.iter().any(|c| lower.contains(c));
    if !rule && (platitude || definition(&ws)) {
        return Err(Refusal::Truism(specific));
    }
    Ok(())
}

/// `X is a …`, `X Y are the …`: a definition (one to three words, a copula, an article).
fn definition(ws: &[String]) -> bool {
    (1..=3).any(|n| {
        ws.get(n).is_some_and(|w| w == "is" || w == "are")
            && ws.get(n + 1).is_some_and(|w| w == "a" || w == "an" || w == "the")
    })
}

#[cfg(test)]
mod tests {
    use crate::filter::table_of;

    #[test]
    fn truisms_and_definitions_are_vague() {
        table_of(&[
            ("psql", "Vacuuming keeps tables healthy.", "vague"),
            ("kubectl", "Kubernetes is a container orchestration platform.", "vague"),
            ("terraform", "Terraform modules are the building blocks of reusable infrastructure code.", "vague"),
            ("git", "Good commit messages matter.", "vague"),
            ("psql", "Migrations are important to get right.", "vague"),
            // short advice is a rule, and so is a fact with a condition
            ("git", "Sign release tags with a key the team can verify.", ""),
            ("docker-compose", "Quote port mappings in YAML.", ""),
            // terse but a rule: a negation, a default, a condition
            ("git", "Tags are not pushed by default.", ""),
            ("docker-compose", "Containers on the default network resolve each other by service name.", ""),
            ("pytest", "Fixtures run once per test unless their scope is widened.", ""),
            // names something exact outside a code span
            ("npm", "ERESOLVE errors come from conflicting peer dependencies.", ""),
            ("kubectl", "OOMKilled pods were given less memory than they use.", ""),
            ("pytest", "Markers must be registered in pytest.ini to silence the warning.", ""),
            ("psql", "The error 'permission denied for schema public' appears on Postgres 15 for new roles.", ""),
            // long enough to say something
            ("playwright", "Traces recorded on the first retry show the network calls, console messages and DOM snapshots of the failing step.", ""),
        ]);
    }

    #[test]
    fn judgements_and_warnings_with_nothing_to_act_on_are_vague() {
        table_of(&[
            ("git", "Keep the branches tidy.", "vague"),
            ("kubectl", "Be mindful of network policies.", "vague"),
            ("ffmpeg", "FFmpeg filters can be confusing.", "vague"),
            ("npm", "Lock files are handy.", "vague"),
            ("docker-compose", "Keep compose files simple and consistent.", "vague"),
            ("terraform", "Read plans carefully.", "vague"),
            ("make", "Makefiles can get complicated quickly.", "vague"),
            ("psql", "Query performance depends on many factors.", "vague"),
            ("helm", "Charts should be well structured and documented.", "vague"),
            // a judgement with a condition or something exact is a lesson
            ("rsync", "rsync is slow on many small files unless `-W` skips the delta algorithm.", ""),
            ("ffmpeg", "FFmpeg's `-hwaccel auto` is fast but falls back to software without a warning.", ""),
            ("git", "Keep commits small when bisecting, since each step tests one commit.", ""),
        ]);
    }
}
