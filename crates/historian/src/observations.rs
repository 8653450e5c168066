//! The historian's output: the first `<skill_observations>` block, one observation a line,
//! `* <skill> | <kind> | <lesson>` (with `| replaces #<id>` when the lesson corrects a note,
//! or `* <skill> | outdated | #<id> <why>` to retire one), and the instructions that ask a
//! historian for it.
//!
//! Pure text in, plain values out: nothing here writes a note (the engine promotes the
//! observations, `Engine::historian_result`) and nothing here can panic on any input.

use crate::memory::Kind;

use super::transcript::clean_skill_name;
use crate::skillmd::name;

/// The tag of the block a historian writes its observations in.
pub const TAG: &str = "skill_observations";

/// One valid observation line.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Observation {
    pub skill: String,
    pub kind: Kind,
    pub lesson: String,
    /// The note this lesson replaces (`| replaces #<id>`; the marker is not part of the lesson).
    pub replaces: Option<i64>,
}

/// A line that retires a note: `* <skill> | outdated | #<id> <why>`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Retirement {
    pub skill: String,
    pub id: i64,
    pub reason: String,
}

/// What one valid line asks for.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Line {
    Observation(Observation),
    Retirement(Retirement),
}

/// A line that was not an observation, and why.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RejectedLine {
    pub line: String,
    pub reason: String,
}

/// What a historian output held.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Parsed {
    /// False when the output has no `<skill_observations>` block at all.
    pub block_found: bool,
    pub observations: Vec<Observation>,
    pub retirements: Vec<Retirement>,
    pub rejected: Vec<RejectedLine>,
}

/// The body of the first `<skill_observations>` block (to its closing tag, or to the end of the
/// output when a truncated output never closes it).
pub fn first_block(output: &str) -> Option<&str> {
    let open = format!("<{TAG}");
    let mut from = 0;
    while let Some(at) = output[from..].find(&open) {
        let start = from + at + open.len();
        let rest = &output[start..];
        // `<skill_observations>` or `<skill_observations attr="...">`, not `<skill_observationsX>`.
        match rest.chars().next() {
            Some('>') => return Some(body(&rest[1..])),
            Some(c) if c.is_whitespace() => {
                if let Some(gt) = rest.find('>') {
                    if rest[..gt].ends_with('/') {
                        return Some(""); // a self-closing, empty block
                    }
                    return Some(body(&rest[gt + 1..]));
                }
                return None;
            }
            Some('/') if rest[1..].starts_with('>') => return Some(""),
            _ => from = start,
        }
    }
    None
}

fn body(rest: &str) -> &str {
    let close = format!("</{TAG}>");
    match rest.find(&close) {
        Some(end) => &rest[..end],
        None => rest,
    }
}

/// Parses the first block of `output`: valid observations and rejected lines with reasons.
/// Blank lines are ignored; a second block is ignored.
pub fn parse(output: &str) -> Parsed {
    let Some(block) = first_block(output) else { return Parsed::default() };
    let mut p = Parsed { block_found: true, ..Default::default() };
    for raw in block.lines() {
        let line = raw.trim();
        if line.is_empty() {
            continue;
        }
        match parse_any_line(line) {
            Ok(Line::Observation(o)) => p.observations.push(o),
            Ok(Line::Retirement(r)) => p.retirements.push(r),
            Err(reason) => p.rejected.push(RejectedLine { line: line.to_string(), reason }),
        }
    }
    p
}

/// Parses one observation line, `* <skill> | <kind> | <lesson>`; the lesson keeps any further
/// `|` but a last field `replaces #<id>`. XML entities are unescaped in every field.
pub fn parse_line(line: &str) -> Result<Observation, String> {
    match parse_any_line(line)? {
        Line::Observation(o) => Ok(o),
        Line::Retirement(_) => Err("an `outdated` line retires a note; it is not an observation".into()),
    }
}

/// Parses one line of either form: an observation, or `* <skill> | outdated | #<id> <why>`.
pub fn parse_any_line(line: &str) -> Result<Line, String> {
    let no_match =
        || format!("does not match the observation format \"* <skill> | <kind> | <lesson>\" (kinds: {})", kinds_list());
    let line = line.trim();
    let rest = line
        .strip_prefix('*')
        .or_else(|| line.strip_prefix('-'))
        .or_else(|| line.strip_prefix('•'))
        .ok_or_else(no_match)?;
    let mut fields = rest.splitn(3, '|');
    let (Some(skill), Some(kind), Some(lesson)) = (fields.next(), fields.next(), fields.next()) else {
        return Err(no_match());
    };
    let skill_raw = unescape(skill.trim()).trim().trim_matches('`').trim().to_string();
    let kind_raw = unescape(kind.trim()).trim().trim_matches('`').to_string();
    let lesson = unescape(lesson.trim()).trim().to_string();
    if skill_raw.is_empty() {
        return Err("the skill name is empty".into());
    }
    // A name as written in the transcript: hosts allow capitals and `_`, so this is the lenient
    // reading, and the error says what it accepts.
    let skill = match clean_skill_name(&skill_raw) {
        Some(s) => s,
        None => {
            return Err(name::check_lenient(&skill_raw)
                .err()
                .unwrap_or_else(|| format!("{skill_raw:?} is not a skill name")))
        }
    };
    if kind_raw.trim().eq_ignore_ascii_case("outdated") {
        let rest = lesson.trim_start();
        let digits = rest.strip_prefix('#').unwrap_or(rest);
        let n = digits.chars().take_while(char::is_ascii_digit).count();
        let id = digits[..n].parse::<i64>().map_err(|_| {
            "an `outdated` line names the note it retires: * <skill> | outdated | #<id> <why>".to_string()
        })?;
        let reason = digits[n..].trim().trim_start_matches([':', '-', '—']).trim().to_string();
        if reason.is_empty() {
            return Err(format!("say why note {id} is outdated: * {skill} | outdated | #{id} <why>"));
        }
        return Ok(Line::Retirement(Retirement { skill, id, reason }));
    }
    let kind: Kind = kind_raw.parse().map_err(|e| format!("{e} (or outdated, to retire a note)"))?;
    let (lesson, replaces) = match lesson.rsplit_once('|') {
        Some((head, tail)) => match replaces_marker(tail) {
            Some(Ok(id)) => (head.trim().to_string(), Some(id)),
            Some(Err(e)) => return Err(e),
            None => (lesson.clone(), None),
        },
        None => (lesson.clone(), None),
    };
    if lesson.is_empty() {
        return Err("the lesson is empty".into());
    }
    Ok(Line::Observation(Observation { skill, kind, lesson, replaces }))
}

/// `replaces #<id>` (the `#` optional): `Some(Ok(id))`; `replaces #` with no number after
/// it: `Some(Err(..))`; anything else is part of the lesson (`None`).
fn replaces_marker(field: &str) -> Option<Result<i64, String>> {
    let f = field.trim();
    let rest = f.get(..8).filter(|p| p.eq_ignore_ascii_case("replaces")).map(|_| f[8..].trim())?;
    if !rest.starts_with('#') && !rest.starts_with(|c: char| c.is_ascii_digit()) {
        return None;
    }
    let digits = rest.strip_prefix('#').unwrap_or(rest).trim();
    Some(
        digits
            .parse::<i64>()
            .map_err(|_| format!("`| {f}` names no note: write `| replaces #<id>` with the id shown for the note")),
    )
}

fn kinds_list() -> String {
    Kind::ALL.iter().map(|k| k.as_str()).collect::<Vec<_>>().join(", ")
}

/// Unescapes the XML entities `&amp; &lt; &gt; &quot; &apos;` and numeric references; an
/// unknown or malformed entity is kept as written.
pub fn unescape(s: &str) -> String {
    if !s.contains('&') {
        return s.to_string();
    }
    let mut out = String::with_capacity(s.len());
    let mut rest = s;
    while let Some(at) = rest.find('&') {
        out.push_str(&rest[..at]);
        let tail = &rest[at..];
        let decoded = tail.find(';').filter(|semi| *semi <= 12).and_then(|semi| {
            let ent = &tail[1..semi];
            let c = match ent {
                "amp" => Some('&'),
                "lt" => Some('<'),
                "gt" => Some('>'),
                "quot" => Some('"'),
                "apos" => Some('\''),
                _ => {
                    let code = if let Some(hex) = ent.strip_prefix("#x").or_else(|| ent.strip_prefix("#X")) {
                        u32::from_str_radix(hex, 16).ok()
                    } else if let Some(dec) = ent.strip_prefix('#') {
                        dec.parse::<u32>().ok()
                    } else {
                        None
                    };
                    code.and_then(char::from_u32)
                }
            };
            c.map(|c| (c, semi))
        });
        match decoded {
            Some((c, semi)) => {
                out.push(c);
                rest = &tail[semi + 1..];
            }
            None => {
                out.push('&');
                rest = &tail[1..];
            }
        }
    }
    out.push_str(rest);
    out
}

/// A current note of a skill, shown to the historian so that it can correct it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CurrentNote {
    pub id: i64,
    pub kind: Kind,
    pub delta: String,
}

/// [`instructions_with`] without any note to show.
pub fn instructions(skills: &[String]) -> String {
    let none: Vec<(String, Vec<CurrentNote>)> = skills.iter().map(|s| (s.clone(), vec![])).collect();
    instructions_with(&none)
}

/// The text a host adds to its historian prompt so that the historian emits observations
/// about `skills` (the skills with memory enabled that were used in the chunk), each with the
/// current notes a load of it shows, by id, so that the historian can replace or retire one
/// that the chunk proved wrong. Empty when `skills` is empty: then there is nothing to ask for.
pub fn instructions_with(skills: &[(String, Vec<CurrentNote>)]) -> String {
    if skills.is_empty() {
        return String::new();
    }
    let names = skills.iter().map(|s| s.0.as_str()).collect::<Vec<_>>().join(", ");
    let mut known = String::new();
    for (skill, notes) in skills.iter().filter(|s| !s.1.is_empty()) {
        known.push_str(&format!("\n{skill} already remembers:\n"));
        for n in notes {
            let one_line = n.delta.split_whitespace().collect::<Vec<_>>().join(" ");
            known.push_str(&format!("- #{} ({}) {}\n", n.id, n.kind.as_str(), one_line));
        }
    }
    let corrections = if known.is_empty() {
        String::new()
    } else {
        format!(
            "
What these skills already remember (do not write these again):
{known}
When this chunk showed one of these notes to be wrong or outdated, correct it instead of \
writing a second note: end the corrected lesson with `| replaces #<id>`, or retire the note \
with a line `* <skill> | outdated | #<id> <why>`.
"
        )
    };
    format!(
        "## Skill observations

In this part of the session the agent used these skills, which keep a memory of lessons for \
future sessions: {names}. (Each use is a line `TC: skill(<name>)` in the transcript.)

After your summary, write a <{TAG}> block with the lessons about these skills that a future \
agent using them should know. A good observation:
- is about one of the skills above, and about how to use that skill;
- is universal and reusable: true for any project and any task that uses the skill, not a \
fact about this repository, this user or this task (no file names, paths, ids or secrets);
- was learned from what happened in this chunk: an error and what fixed it (lines starting \
`E:`), a trap that looked right and was not, a fact the skill's instructions do not say, a \
correction from the user, a step that must not be skipped;
- stands on its own in one or two sentences.

Write one observation a line, exactly in this format:
* <skill> | <kind> | <lesson>
where <skill> is the skill's name as listed above and <kind> is one of:
- gotcha: a trap, something that looks right and is not
- discovery: a useful fact found out while working
- fix: an error and what fixed it
- workflow: a step that must not be skipped
{corrections}
Zero observations is the normal case: most chunks teach nothing new about a skill. When \
nothing is worth keeping, write the block empty. Never record routine progress or what the \
task was about.

<{TAG}>
* <skill> | <kind> | <lesson>
</{TAG}>
"
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    fn obs(skill: &str, kind: Kind, lesson: &str) -> Result<Observation, String> {
        Ok(Observation { skill: skill.into(), kind, lesson: lesson.into(), replaces: None })
    }

    fn replacing(skill: &str, kind: Kind, lesson: &str, id: i64) -> Result<Line, String> {
        Ok(Line::Observation(Observation { skill: skill.into(), kind, lesson: lesson.into(), replaces: Some(id) }))
    }

    fn retiring(skill: &str, id: i64, reason: &str) -> Result<Line, String> {
        Ok(Line::Retirement(Retirement { skill: skill.into(), id, reason: reason.into() }))
    }

    /// The two correction forms: `| replaces #<id>` after a lesson, and `outdated` lines.
    #[test]
    fn correction_line_table() {
        let cases: Vec<(&str, Result<Line, String>)> = vec![
            ("* jq | fix | use --immutable | replaces #12", replacing("jq", Kind::Fix, "use --immutable", 12)),
            ("* jq | fix | use --immutable | Replaces 12", replacing("jq", Kind::Fix, "use --immutable", 12)),
            ("* jq | fix | a | b | replaces #3", replacing("jq", Kind::Fix, "a | b", 3)),
            (
                "* jq | fix | a | replaces are fine",
                obs("jq", Kind::Fix, "a | replaces are fine").map(Line::Observation),
            ),
            (
                "* jq | fix | a | replaces #x",
                Err("`| replaces #x` names no note: write `| replaces #<id>` with the id shown for the note".into()),
            ),
            ("* jq | fix | | replaces #3", Err("the lesson is empty".into())),
            ("* jq | outdated | #7 jq 1.7 fixed this", retiring("jq", 7, "jq 1.7 fixed this")),
            ("* jq | Outdated | 7: no longer true", retiring("jq", 7, "no longer true")),
            ("* jq | outdated | #7", Err("say why note 7 is outdated: * jq | outdated | #7 <why>".into())),
            (
                "* jq | outdated | the old note",
                Err("an `outdated` line names the note it retires: * <skill> | outdated | #<id> <why>".into()),
            ),
        ];
        for (line, want) in cases {
            assert_eq!(parse_any_line(line), want, "{line:?}");
        }
        let p = parse(
            "<skill_observations>\n* jq | fix | new | replaces #4\n* jq | outdated | #5 wrong\n</skill_observations>",
        );
        assert_eq!(p.observations.len(), 1);
        assert_eq!(p.observations[0].replaces, Some(4));
        assert_eq!(p.retirements, vec![Retirement { skill: "jq".into(), id: 5, reason: "wrong".into() }]);
    }

    #[test]
    fn instructions_show_the_current_notes_and_the_correction_forms() {
        let t = instructions_with(&[
            ("jq".into(), vec![CurrentNote { id: 12, kind: Kind::Gotcha, delta: "use -r\nfor raw".into() }]),
            ("pdf".into(), vec![]),
        ]);
        for want in ["jq, pdf", "- #12 (gotcha) use -r for raw", "| replaces #<id>", "| outdated | #<id> <why>"] {
            assert!(t.contains(want), "{want}: {t}");
        }
        assert!(parse(&t).observations.is_empty() && parse(&t).retirements.is_empty());
        assert!(!instructions(&["jq".into()]).contains("already remembers"));
    }

    #[test]
    fn line_table() {
        let cases: Vec<(&str, Result<Observation, String>)> = vec![
            ("* jq | gotcha | Use -r for raw strings", obs("jq", Kind::Gotcha, "Use -r for raw strings")),
            ("*jq|fix|a|b | c", obs("jq", Kind::Fix, "a|b | c")),
            ("- pdf | Workflow | Check fonts first", obs("pdf", Kind::Workflow, "Check fonts first")),
            ("* `pdf` | discovery | x", obs("pdf", Kind::Discovery, "x")),
            ("* plug:pdf | discovery | x", obs("pdf", Kind::Discovery, "x")),
            (
                "* jq | fix | use `.[]?` when a field may be null &amp; check &lt;null&gt; &#124; &#x41;",
                obs("jq", Kind::Fix, "use `.[]?` when a field may be null & check <null> | A"),
            ),
            (
                "* jq | tip | x",
                Err("kind \"tip\" is not a note kind; use one of gotcha, discovery, fix, workflow (or outdated, to retire a note)".into()),
            ),
            ("* jq | gotcha |   ", Err("the lesson is empty".into())),
            ("* jq | gotcha | &#32;", Err("the lesson is empty".into())),
            (
                "* j q | gotcha | x",
                Err("\"j q\" is not a valid skill name: 1 to 64 ASCII letters (either case), digits, `_` and single `-` between them".into()),
            ),
            (
                "* ../etc | gotcha | x",
                Err("\"../etc\" is not a valid skill name: 1 to 64 ASCII letters (either case), digits, `_` and single `-` between them".into()),
            ),
            ("*  | gotcha | x", Err("the skill name is empty".into())),
        ];
        for (line, want) in cases {
            assert_eq!(parse_line(line), want, "{line:?}");
        }
        for bad in ["jq | gotcha | x", "* jq | gotcha", "* just text", "No observations."] {
            let e = parse_line(bad).unwrap_err();
            assert!(e.starts_with("does not match"), "{bad:?}: {e}");
        }
    }

    #[test]
    fn blocks() {
        let out = "Summary text.\n<skill_observations>\n\n* jq | fix | one\n\n  * jq | gotcha | two  \nnope\n</skill_observations>\n<skill_observations>\n* jq | fix | ignored\n</skill_observations>";
        let p = parse(out);
        assert!(p.block_found);
        assert_eq!(p.observations.len(), 2);
        assert_eq!(p.observations[1].lesson, "two");
        assert_eq!(p.rejected.len(), 1);
        assert_eq!(p.rejected[0].line, "nope");

        assert_eq!(parse("no block here * jq | fix | x"), Parsed::default());
        assert_eq!(parse("<skill_observationsx>\n* jq | fix | x\n</skill_observationsx>"), Parsed::default());
        assert!(parse("<skill_observations/>").observations.is_empty());
        assert!(parse("<skill_observations/>").block_found);
        let attr = parse("<skill_observations version=\"1\">\n* jq | fix | x\n</skill_observations>");
        assert_eq!(attr.observations.len(), 1);
        let unclosed = parse("<skill_observations>\n* jq | fix | x");
        assert_eq!(unclosed.observations.len(), 1);
        assert_eq!(parse("<skill_observations>\n</skill_observations>").observations.len(), 0);
    }

    #[test]
    fn unescape_table() {
        for (a, b) in [
            ("a &amp; b", "a & b"),
            ("&lt;&gt;&quot;&apos;", "<>\"'"),
            ("&#65;&#x42;", "AB"),
            ("& alone", "& alone"),
            ("&bogus; &#xZZ; &#99999999;", "&bogus; &#xZZ; &#99999999;"),
            ("tail &", "tail &"),
            ("&amp;amp;", "&amp;"),
        ] {
            assert_eq!(unescape(a), b, "{a:?}");
        }
    }

    #[test]
    fn instructions_name_the_format_and_kinds() {
        assert_eq!(instructions(&[]), "");
        let t = instructions(&["jq".into(), "pdf".into()]);
        for want in
            ["jq, pdf", "* <skill> | <kind> | <lesson>", "gotcha", "discovery", "fix", "workflow", "Zero observations"]
        {
            assert!(t.contains(want), "{want}");
        }
        // The instructions' own example parses to nothing valid.
        assert!(parse(&t).observations.is_empty());
    }
}
