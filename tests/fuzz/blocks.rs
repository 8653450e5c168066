//! The `<skill-memory>` block renderer round trip (crates/store/src/memory/block.rs).
//!
//! Notes with any text (controls, every line end, XML punctuation, entity look-alikes,
//! `]]>`, non-characters, astral planes) in every field, any skill name, any budget: the block
//! is well-formed XML 1.0 by a strict reader written here (with the line-end and attribute-value
//! normalisation every conforming parser applies), and parses back to the same skill, kinds,
//! intents and deltas, less only the characters XML cannot carry. The header counts what it
//! holds, and the block stays within its token budget.

use proptest::collection::vec;
use proptest::prelude::*;
use serde::{Deserialize, Serialize};
use skillmem::memory::block::{render, Budget};
use skillmem::memory::recall::Ranked;
use skillmem::memory::{Kind, Note, RecallMode, Scope, Source};

use super::{ensure, gen, Target};

pub const TARGET: Target = Target {
    name: "block",
    ci_cases: 700,
    run: |cases, seed| super::run(cases, seed, input(), property),
    replay: |t| super::replay(t, property),
};

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct NoteIn {
    pub kind: String,
    pub intent: String,
    pub delta: String,
    pub pinned: bool,
    pub older: bool,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Input {
    pub skill: String,
    pub mode: u8,
    pub notes: Vec<NoteIn>,
    pub max_tokens: usize,
    pub max_pinned_tokens: usize,
    pub limit: Option<usize>,
    pub note_tool: String,
}

const TOKENS: &[&str] = &[
    "&",
    "&amp;",
    "&lt;",
    "&#13;",
    "&#x0;",
    "&#xFFFE;",
    "]]>",
    "<![CDATA[",
    "</delta>",
    "</note>",
    "<note id=\"9\">",
    "</skill-memory>",
    "<!--",
    "-->",
    "<?xml",
    "\"",
    "'",
    "<",
    ">",
    "\r\n",
    "\r",
    "\n",
    "\t",
    "\u{0}",
    "\u{1}",
    "\u{b}",
    "\u{fffe}",
    "\u{ffff}",
    "\u{feff}",
    "\u{85}",
    "\u{2028}",
    "\u{1f600}",
    "  ",
];

pub fn input() -> impl Strategy<Value = Input> {
    let note = (gen::text(TOKENS), gen::text(TOKENS), gen::text(TOKENS), any::<bool>(), any::<bool>())
        .prop_map(|(kind, intent, delta, pinned, older)| NoteIn { kind, intent, delta, pinned, older });
    (
        prop_oneof![gen::skill_name().boxed(), gen::text(TOKENS)],
        0..4u8,
        vec(note, 0..5),
        prop_oneof![Just(1_000_000usize), 0..3000usize],
        prop_oneof![Just(1_000_000usize), 0..3000usize],
        proptest::option::of(0..6usize),
        gen::text(TOKENS),
    )
        .prop_map(|(skill, mode, notes, max_tokens, max_pinned_tokens, limit, note_tool)| Input {
            skill,
            mode,
            notes,
            max_tokens,
            max_pinned_tokens,
            limit,
            note_tool,
        })
}

/// What XML 1.0 can carry of `s`: characters outside `Char` are gone.
pub fn xml_kept(s: &str) -> String {
    s.chars().filter(|c| is_xml_char(*c)).collect()
}

fn is_xml_char(c: char) -> bool {
    matches!(c as u32, 0x9 | 0xA | 0xD | 0x20..=0xD7FF | 0xE000..=0xFFFD | 0x10000..=0x10FFFF)
}

// ---- a strict XML 1.0 reader for elements, attributes, text and references ---------------

#[derive(Debug, Clone, PartialEq)]
pub enum Node {
    Element(Element),
    Text(String),
}

#[derive(Debug, Clone, PartialEq)]
pub struct Element {
    pub name: String,
    pub attrs: Vec<(String, String)>,
    pub children: Vec<Node>,
}

impl Element {
    pub fn attr(&self, k: &str) -> Option<&str> {
        self.attrs.iter().find(|(n, _)| n == k).map(|(_, v)| v.as_str())
    }
    pub fn elements(&self) -> impl Iterator<Item = &Element> {
        self.children.iter().filter_map(|n| if let Node::Element(e) = n { Some(e) } else { None })
    }
    pub fn text(&self) -> String {
        self.children.iter().filter_map(|n| if let Node::Text(t) = n { Some(t.as_str()) } else { None }).collect()
    }
}

struct Reader<'a> {
    s: &'a [char],
    i: usize,
}

fn is_name_start(c: char) -> bool {
    c.is_ascii_alphabetic() || c == '_' || c == ':' || (c as u32) >= 0xC0
}

fn is_name_char(c: char) -> bool {
    is_name_start(c) || c.is_ascii_digit() || c == '-' || c == '.'
}

impl Reader<'_> {
    fn peek(&self) -> Option<char> {
        self.s.get(self.i).copied()
    }
    fn starts(&self, lit: &str) -> bool {
        lit.chars().enumerate().all(|(k, c)| self.s.get(self.i + k) == Some(&c))
    }
    fn expect(&mut self, lit: &str) -> Result<(), String> {
        if !self.starts(lit) {
            return Err(format!("expected {lit:?} at {}", self.i));
        }
        self.i += lit.chars().count();
        Ok(())
    }
    fn space(&mut self) -> bool {
        let start = self.i;
        while matches!(self.peek(), Some(' ' | '\t' | '\n' | '\r')) {
            self.i += 1;
        }
        self.i > start
    }
    fn name(&mut self) -> Result<String, String> {
        let start = self.i;
        match self.peek() {
            Some(c) if is_name_start(c) => self.i += 1,
            _ => return Err(format!("expected a name at {}", self.i)),
        }
        while self.peek().is_some_and(is_name_char) {
            self.i += 1;
        }
        Ok(self.s[start..self.i].iter().collect())
    }
    /// `&...;` at the cursor: the character it stands for.
    fn reference(&mut self) -> Result<char, String> {
        self.expect("&")?;
        let start = self.i;
        while self.peek().is_some_and(|c| c != ';') {
            if self.i - start > 12 {
                return Err("an unterminated reference".into());
            }
            self.i += 1;
        }
        let body: String = self.s[start..self.i].iter().collect();
        self.expect(";")?;
        let c = match body.as_str() {
            "amp" => '&',
            "lt" => '<',
            "gt" => '>',
            "quot" => '"',
            "apos" => '\'',
            b => {
                let n = if let Some(h) = b.strip_prefix("#x") {
                    u32::from_str_radix(h, 16).ok()
                } else if let Some(d) = b.strip_prefix('#') {
                    d.parse().ok()
                } else {
                    None
                };
                n.and_then(char::from_u32).ok_or_else(|| format!("unknown reference &{b};"))?
            }
        };
        if !is_xml_char(c) {
            return Err(format!("a reference to a character XML does not allow: {:?}", c));
        }
        Ok(c)
    }
    fn element(&mut self) -> Result<Element, String> {
        self.expect("<")?;
        let name = self.name()?;
        let mut attrs: Vec<(String, String)> = vec![];
        loop {
            let spaced = self.space();
            if self.starts("/>") {
                self.i += 2;
                return Ok(Element { name, attrs, children: vec![] });
            }
            if self.starts(">") {
                self.i += 1;
                break;
            }
            if !spaced {
                return Err(format!("expected a space before an attribute at {}", self.i));
            }
            let k = self.name()?;
            self.space();
            self.expect("=")?;
            self.space();
            let q = self.peek().filter(|c| *c == '"' || *c == '\'').ok_or("an unquoted attribute value")?;
            self.i += 1;
            let mut v = String::new();
            loop {
                match self.peek() {
                    None => return Err("an unterminated attribute value".into()),
                    Some(c) if c == q => {
                        self.i += 1;
                        break;
                    }
                    Some('<') => return Err(format!("a raw < in attribute {k}")),
                    Some('&') => v.push(self.reference()?),
                    // Attribute-value normalisation: literal white space becomes a space.
                    Some('\t' | '\n' | '\r') => {
                        v.push(' ');
                        self.i += 1;
                    }
                    Some(c) => {
                        v.push(c);
                        self.i += 1;
                    }
                }
            }
            if attrs.iter().any(|(n, _)| *n == k) {
                return Err(format!("attribute {k} given twice"));
            }
            attrs.push((k, v));
        }
        let mut children = vec![];
        let mut text = String::new();
        loop {
            match self.peek() {
                None => return Err(format!("element {name} is not closed")),
                Some('<') if self.starts("</") => {
                    self.i += 2;
                    let end = self.name()?;
                    self.space();
                    self.expect(">")?;
                    if end != name {
                        return Err(format!("</{end}> closes <{name}>"));
                    }
                    if !text.is_empty() {
                        children.push(Node::Text(text));
                    }
                    return Ok(Element { name, attrs, children });
                }
                Some('<') => {
                    if !text.is_empty() {
                        children.push(Node::Text(std::mem::take(&mut text)));
                    }
                    children.push(Node::Element(self.element()?));
                }
                Some('&') => text.push(self.reference()?),
                Some(_) if self.starts("]]>") => return Err("a literal ]]> in text".into()),
                Some(c) => {
                    text.push(c);
                    self.i += 1;
                }
            }
        }
    }
}

/// Reads the element at the start of `doc` (what follows it is not looked at). Line ends are
/// normalised first, as XML 1.0 §2.11 requires.
pub fn read_element(doc: &str) -> Result<Element, String> {
    if let Some(c) = doc.chars().find(|c| !is_xml_char(*c)) {
        return Err(format!("a character XML does not allow: {c:?}"));
    }
    let normalised = doc.replace("\r\n", "\n").replace('\r', "\n");
    let chars: Vec<char> = normalised.chars().collect();
    let mut r = Reader { s: &chars, i: 0 };
    r.element()
}

fn mode_of(n: u8) -> RecallMode {
    [RecallMode::Vector, RecallMode::Fts, RecallMode::Recent, RecallMode::None][n as usize % 4]
}

/// A note's kind is one of the enum's: the generated text picks one.
fn kind_of(text: &str) -> Kind {
    text.parse().unwrap_or(Kind::ALL[text.len() % Kind::ALL.len()])
}

pub fn property(input: &Input) -> Result<(), String> {
    let ranked: Vec<Ranked> = input
        .notes
        .iter()
        .enumerate()
        .map(|(i, n)| Ranked {
            note: std::sync::Arc::new(Note {
                id: i as i64 + 1,
                skill: input.skill.clone(),
                scope: Scope::Project,
                origin_project: "p".into(),
                source: Source::Agent,
                kind: kind_of(&n.kind),
                intent: n.intent.clone(),
                delta: n.delta.clone(),
                tags: vec![],
                hits: i as i64,
                recalls: 0,
                pinned: n.pinned,
                skill_hash: Some(if n.older { "old" } else { "now" }.into()),
                // Days apart, so that `written` varies.
                created_at: i as i64 * 86_400_000 * 37,
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
            matched: i % 2 == 0,
            uses: skillmem::memory::evidence::Uses {
                shown: i as u32 + 1,
                used: i as u32,
                ignored: 0,
                trusted: i % 3 != 0,
                ..Default::default()
            },
        })
        .collect();
    let budget = Budget {
        max_tokens: input.max_tokens,
        max_pinned_tokens: input.max_pinned_tokens,
        limit: input.limit,
        max_unverified_tokens: input.max_tokens / 4,
    };
    let mode = mode_of(input.mode);
    // Every other note is an older version of the one after it.
    let newer_of: std::collections::HashMap<i64, i64> =
        ranked.windows(2).step_by(2).map(|w| (w[0].note.id, w[1].note.id)).collect();
    let Some(block) = render(
        &input.skill,
        mode,
        &ranked,
        budget,
        skillmem::memory::block::Tools { note: &input.note_tool, feedback: &input.note_tool },
        Some("now"),
        &newer_of,
    ) else {
        return Ok(());
    };
    ensure(block.tokens <= input.max_tokens, || {
        format!("{} tokens over a budget of {}", block.tokens, input.max_tokens)
    })?;
    ensure(input.limit.is_none_or(|l| block.note_ids.len() <= l), || "more notes than the limit".into())?;
    // The element ends at the first literal end tag (inside it, every `<` is escaped); the
    // guidance line after it is plain text for the agent.
    let end = block.text.find("</skill-memory>").ok_or("no </skill-memory> end tag")? + "</skill-memory>".len();
    let root = read_element(&block.text[..end]).map_err(|e| format!("not well-formed XML: {e}\n{}", block.text))?;
    ensure(root.name == "skill-memory", || format!("root element {}", root.name))?;
    // The line after the root element: nothing of it is inside the element.
    let want_skill = xml_kept(&input.skill);
    ensure(root.attr("skill") == Some(want_skill.as_str()), || {
        format!("skill attribute {:?}, want {want_skill:?}", root.attr("skill"))
    })?;
    ensure(root.attr("mode") == Some(mode.as_str()), || "mode attribute".into())?;
    let notes: Vec<&Element> = root.elements().collect();
    ensure(root.attr("count") == Some(notes.len().to_string().as_str()), || "count attribute".into())?;
    ensure(notes.len() == block.note_ids.len(), || "notes in the XML differ from note_ids".into())?;
    let pinned = notes.iter().filter(|n| n.attr("pinned") == Some("true")).count();
    ensure(root.attr("pinned") == Some(pinned.to_string().as_str()), || "pinned attribute".into())?;
    for (el, id) in notes.iter().zip(&block.note_ids) {
        ensure(el.name == "note", || format!("element {} in the block", el.name))?;
        ensure(el.attr("id") == Some(id.to_string().as_str()), || format!("note id {:?}, want {id}", el.attr("id")))?;
        let n = &input.notes[*id as usize - 1];
        ensure(el.attr("kind") == Some(kind_of(&n.kind).as_str()), || {
            format!("kind {:?}, want {:?}", el.attr("kind"), kind_of(&n.kind))
        })?;
        ensure(el.attr("intent") == Some(xml_kept(&n.intent).as_str()), || {
            format!("intent {:?}, want {:?}", el.attr("intent"), xml_kept(&n.intent))
        })?;
        ensure(el.attr("pinned") == Some(if n.pinned { "true" } else { "false" }), || "pinned".into())?;
        ensure(el.attr("skill_version") == n.older.then_some("older"), || "skill_version".into())?;
        let i = *id as usize - 1;
        ensure(el.attr("trust") == i.is_multiple_of(3).then_some("unverified"), || {
            format!("trust {:?}", el.attr("trust"))
        })?;
        ensure(el.attr("used") == Some(i.to_string().as_str()), || format!("used {:?}", el.attr("used")))?;
        let deltas: Vec<&Element> = el.elements().collect();
        ensure(deltas.len() == 1 && deltas[0].name == "delta", || "a note without exactly one <delta>".into())?;
        let want = xml_kept(&n.delta);
        ensure(deltas[0].text() == want, || format!("delta {:?}, want {want:?}", deltas[0].text()))?;
    }
    Ok(())
}
