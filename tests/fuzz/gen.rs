//! Generators shared by the targets: nasty characters and strings, token soups, JSON values,
//! skill names.

use proptest::collection::vec;
use proptest::prelude::*;
use proptest::sample::select;
use serde_json::{Map, Value};

/// Characters that break parsers: controls, line ends of every kind, XML and YAML
/// punctuation, non-characters, BOMs, zero-width joiners, combining marks, astral planes.
pub const NASTY_CHARS: &[char] = &[
    '\0',
    '\t',
    '\n',
    '\r',
    '\u{7}',
    '\u{b}',
    '\u{c}',
    '\u{1b}',
    '\u{7f}',
    '\u{85}',
    '\u{a0}',
    '\u{2028}',
    '\u{2029}',
    '\u{feff}',
    '\u{fffe}',
    '\u{ffff}',
    '\u{fffd}',
    '\u{200b}',
    '\u{200c}',
    '\u{200d}',
    '\u{301}',
    '\u{1f600}',
    '\u{10ffff}',
    '\u{e000}',
    '\u{d7ff}',
    '<',
    '>',
    '&',
    '"',
    '\'',
    ';',
    '#',
    '|',
    '*',
    '-',
    ':',
    '`',
    '/',
    '\\',
    '%',
    '.',
    '~',
    '$',
    '{',
    '}',
    '[',
    ']',
    '!',
    '?',
    '=',
    ',',
    ' ',
    'é',
    'ß',
    'İ',
    'K',
    'Σ',
];

/// One character: any, printable ASCII, or a nasty one.
pub fn any_char() -> impl Strategy<Value = char> {
    prop_oneof![
        3 => any::<char>(),
        5 => proptest::char::range(' ', '~'),
        3 => select(NASTY_CHARS),
    ]
}

/// A string of up to `max` characters from [`any_char`].
pub fn chars(max: usize) -> impl Strategy<Value = String> {
    vec(any_char(), 0..=max).prop_map(|v| v.into_iter().collect())
}

/// A string glued from `tokens` and random characters: reaches the parser's interesting
/// states much more often than random characters alone.
pub fn soup(tokens: &'static [&'static str], max_parts: usize) -> impl Strategy<Value = String> {
    vec(prop_oneof![3 => select(tokens).prop_map(str::to_string), 1 => chars(6)], 0..=max_parts)
        .prop_map(|v| v.concat())
}

/// Nasty text: random characters, or a soup of `tokens`, sometimes repeated to be long.
pub fn text(tokens: &'static [&'static str]) -> BoxedStrategy<String> {
    prop_oneof![
        4 => chars(40),
        4 => soup(tokens, 12),
        1 => (soup(tokens, 4), 1..600usize).prop_map(|(s, n)| s.repeat(n)),
    ]
    .boxed()
}

/// A text without line ends.
pub fn line(tokens: &'static [&'static str]) -> BoxedStrategy<String> {
    text(tokens).prop_map(|s| s.replace(['\n', '\r'], " ")).boxed()
}

/// A valid skill name (`^[a-z0-9]+(-[a-z0-9]+)*$`).
pub fn skill_name() -> impl Strategy<Value = String> {
    "[a-z0-9]{1,8}(-[a-z0-9]{1,5}){0,2}"
}

/// A skill reference as hosts write it: valid, plugin-prefixed, slashed, traversing, odd.
pub fn skill_ref() -> BoxedStrategy<String> {
    prop_oneof![
        4 => skill_name(),
        1 => skill_name().prop_map(|n| format!("plugin:{n}")),
        1 => skill_name().prop_map(|n| format!("/{n}")),
        1 => skill_name().prop_map(|n| format!(" {n} ")),
        2 => select(&["", "..", "../x", "../../etc", "a/b", "a\\b", "PDF", "pdf_tools", "pdf--x", "-pdf", "pdf-",
            "café", "con", "x:", ":", "a:b:c", "pdf\n", "\u{feff}pdf", "pdf\u{200b}"][..]).prop_map(str::to_string),
        1 => chars(12),
    ]
    .boxed()
}

/// Keys that the parsers of this crate look up, for JSON objects that hit real paths.
pub const KEYS: &[&str] = &[
    "type",
    "message",
    "content",
    "text",
    "tool_use_id",
    "id",
    "name",
    "input",
    "skill",
    "isMeta",
    "sourceToolUseID",
    "parts",
    "info",
    "role",
    "state",
    "tool",
    "output",
    "error",
    "status",
    "metadata",
    "dir",
    "is_error",
    "command",
    "hook_event_name",
    "tool_name",
    "tool_input",
    "tool_response",
    "session_id",
    "transcript_path",
    "cwd",
    "compact_summary",
    "memory",
    "embedding",
    "provider",
    "jsonrpc",
    "method",
    "params",
    "result",
    "ignored",
    "filename",
    "url",
    "description",
    "prompt",
    "file_path",
    "dataDir",
    "maxTokens",
];

/// Any JSON value, objects keyed mostly by [`KEYS`].
pub fn json_value() -> BoxedStrategy<Value> {
    let leaf = prop_oneof![
        Just(Value::Null),
        any::<bool>().prop_map(Value::Bool),
        any::<i64>().prop_map(Value::from),
        any::<u64>().prop_map(Value::from),
        // Numbers whose decimal form parses back exactly (serde_json's parser is not exact
        // for every double without its float_roundtrip feature).
        (any::<i32>(), 0..4i32).prop_map(|(m, e)| Value::from(m as f64 / 2f64.powi(e))),
        chars(16).prop_map(Value::String),
        select(KEYS).prop_map(|s| Value::String(s.to_string())),
    ];
    leaf.prop_recursive(4, 32, 5, |inner| {
        prop_oneof![
            vec(inner.clone(), 0..5).prop_map(Value::Array),
            vec((prop_oneof![4 => select(KEYS).prop_map(str::to_string), 1 => chars(8)], inner), 0..5)
                .prop_map(|kv| Value::Object(kv.into_iter().collect::<Map<_, _>>())),
        ]
    })
    .boxed()
}
