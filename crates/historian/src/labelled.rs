//! A labelled historian set (`bench/historian/*.jsonl`): skills with their SKILL.md and notes,
//! rendered chunks with the skills they used (and their text, which lessons are grounded in),
//! and observation lines labelled `promote` or `reject` by category. `skillmem eval historian`
//! judges every line with the filter; `cargo xtask study historian-features` dumps what a
//! learned judge would read. Parsing only: the caller reads the files.

use std::collections::HashMap;

use serde::Deserialize;

use super::filter::{self, Context, Similarity};

/// One record of a set (one JSON object a line).
#[derive(Deserialize)]
#[serde(tag = "type", rename_all = "camelCase")]
enum Record {
    /// A skill: its SKILL.md (relative to the set's folder) and the notes it already has.
    #[serde(rename_all = "camelCase")]
    Skill {
        name: String,
        #[serde(default)]
        skill_md: Option<String>,
        #[serde(default)]
        notes: Vec<Note>,
    },
    /// A rendered chunk and the skills it used; `skills: null` when no chunk was rendered.
    /// `text`: the chunk as the historian read it, which lessons are grounded in (absent: the
    /// grounding rule does not apply, as for a session whose chunks are unknown).
    Chunk {
        id: String,
        skills: Option<Vec<String>>,
        #[serde(default)]
        text: Option<String>,
    },
    /// One observation line, its chunk, and whether it should be promoted.
    Observation { chunk: String, line: String, label: String, category: String },
}

#[derive(Deserialize)]
struct Note {
    id: i64,
    delta: String,
}

/// A skill of a set: its SKILL.md and its notes (id, lesson).
type SkillFacts = (Option<String>, Vec<(i64, String)>);

/// One labelled observation line.
#[derive(Debug, Clone)]
pub struct LabelledLine {
    /// The chunk it was observed in.
    pub chunk: String,
    /// The observation as the historian wrote it.
    pub line: String,
    /// Whether it should be promoted (`promote`) or refused (`reject`).
    pub want: bool,
    /// The labeller's category (`lesson`, `narration`, `secret`, ...).
    pub category: String,
}

/// A parsed set: its lines, and what the filter needs to judge each.
#[derive(Debug, Default)]
pub struct LabelledSet {
    skills: HashMap<String, SkillFacts>,
    chunks: HashMap<String, Option<Vec<String>>>,
    texts: HashMap<String, String>,
    /// The observation lines, in the set's order.
    pub lines: Vec<LabelledLine>,
}

impl LabelledSet {
    /// Parses the set `text`, named `name` in errors (`name:LINE: why`); `read` reads a
    /// SKILL.md by the path a skill record gives (relative to the set's folder).
    pub fn parse(
        name: &str,
        text: &str,
        read: &dyn Fn(&str) -> std::io::Result<String>,
    ) -> Result<LabelledSet, String> {
        let mut set = LabelledSet::default();
        for (n, l) in text.lines().enumerate().filter(|(_, l)| !l.trim().is_empty()) {
            let at = format!("{name}:{}", n + 1);
            let r: Record =
                serde_json::from_str(l).map_err(|e| format!("{at}: not a record of a historian set: {e}"))?;
            match r {
                Record::Skill { name, skill_md, notes } => {
                    let md = match skill_md {
                        Some(p) => Some(read(&p).map_err(|e| format!("{at}: reading {p}: {e}"))?),
                        None => None,
                    };
                    set.skills.insert(name, (md, notes.into_iter().map(|x| (x.id, x.delta)).collect()));
                }
                Record::Chunk { id, skills, text } => {
                    if let Some(t) = text.filter(|t| !t.trim().is_empty()) {
                        set.texts.insert(id.clone(), filter::grounded::searchable(&t));
                    }
                    set.chunks.insert(id, skills);
                }
                Record::Observation { chunk, line, label, category } => {
                    let want = match label.as_str() {
                        "promote" => true,
                        "reject" => false,
                        other => return Err(format!("{at}: label {other:?} is neither promote nor reject")),
                    };
                    if !set.chunks.contains_key(&chunk) {
                        return Err(format!("{at}: no chunk {chunk:?} above"));
                    }
                    set.lines.push(LabelledLine { chunk, line, want, category });
                }
            }
        }
        Ok(set)
    }

    /// What the filter knows of an observation of `skill` in `chunk`: the skill's SKILL.md and
    /// notes (none when the set does not describe it), the skills the chunk used, its text.
    pub fn context<'a>(&'a self, skill: &str, chunk: &str, similarity: Option<Similarity<'a>>) -> Context<'a> {
        const NONE: &SkillFacts = &(None, vec![]);
        let (md, notes) = self.skills.get(skill).unwrap_or(NONE);
        Context {
            skill_md: md.as_deref(),
            notes,
            chunk_skills: self.chunks.get(chunk).and_then(|c| c.as_deref()),
            similarity,
            chunk_text: self.texts.get(chunk).map(String::as_str),
        }
    }

    /// Whether `chunk` has text, so that the grounding rule applies to its lines.
    pub fn has_text(&self, chunk: &str) -> bool {
        self.texts.contains_key(chunk)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sets_and_their_errors() {
        let read = |p: &str| match p {
            "jq.md" => Ok("---\nname: jq\n---\nUse jq.".to_string()),
            _ => Err(std::io::Error::new(std::io::ErrorKind::NotFound, "no such file")),
        };
        let good = concat!(
            "{\"type\":\"skill\",\"name\":\"jq\",\"skillMd\":\"jq.md\",\"notes\":[{\"id\":1,\"delta\":\"a\"}]}\n",
            "\n",
            "{\"type\":\"chunk\",\"id\":\"c\",\"skills\":[\"jq\"],\"text\":\"$ jq -r .x\"}\n",
            "{\"type\":\"chunk\",\"id\":\"d\",\"skills\":null}\n",
            "{\"type\":\"observation\",\"chunk\":\"c\",\"line\":\"* jq | fix | b\",\"label\":\"promote\",\"category\":\"lesson\"}\n",
            "{\"type\":\"observation\",\"chunk\":\"d\",\"line\":\"* x | fix | y\",\"label\":\"reject\",\"category\":\"vague\"}\n",
        );
        let set = LabelledSet::parse("s.jsonl", good, &read).unwrap();
        let lines: Vec<(&str, bool, &str)> =
            set.lines.iter().map(|l| (l.chunk.as_str(), l.want, l.category.as_str())).collect();
        assert_eq!(lines, [("c", true, "lesson"), ("d", false, "vague")]);
        let ctx = set.context("jq", "c", None);
        assert_eq!(ctx.skill_md, Some("---\nname: jq\n---\nUse jq."));
        assert_eq!(ctx.notes, [(1, "a".to_string())]);
        assert_eq!(ctx.chunk_skills, Some(&["jq".to_string()][..]));
        assert!(ctx.chunk_text.is_some() && set.has_text("c") && !set.has_text("d"));
        let other = set.context("other", "d", None);
        assert_eq!((other.skill_md, other.notes.len(), other.chunk_skills), (None, 0, None));

        // (set, the error's start, a word it names)
        let chunk = "{\"type\":\"chunk\",\"id\":\"c\",\"skills\":null}\n";
        let bad = [
            (format!("{chunk}{{\"type\":\"observation\",\"chunk\":\"c\",\"line\":\"l\",\"label\":\"maybe\",\"category\":\"x\"}}\n"), "s.jsonl:2: label", "maybe"),
            ("{\"type\":\"observation\",\"chunk\":\"z\",\"line\":\"l\",\"label\":\"reject\",\"category\":\"x\"}\n".to_string(), "s.jsonl:1: no chunk", "\"z\""),
            (format!("{chunk}not json\n"), "s.jsonl:2: not a record", "historian set"),
            ("{\"type\":\"skill\",\"name\":\"x\",\"skillMd\":\"gone.md\"}\n".to_string(), "s.jsonl:1: reading gone.md", "no such file"),
        ];
        for (text, start, word) in bad {
            let e = LabelledSet::parse("s.jsonl", &text, &read).unwrap_err();
            assert!(e.starts_with(start) && e.contains(word), "{text}: {e}");
        }
    }
}
