//! Secret detection and redaction (crates/text/src/redact.rs).
//!
//! Arbitrary text around generated secrets of every shape the module knows: nothing panics;
//! every planted secret is found and its key characters are gone from the redacted text;
//! redacting is idempotent and a redacted text holds no secret; a text with nothing found
//! comes back unchanged.

use proptest::prelude::*;
use serde::{Deserialize, Serialize};
use skillmem_text::redact::{find_secret, leaves_a_lesson, redact, spans};

use super::{ensure, gen, Target};

pub const TARGET: Target = Target {
    name: "redact",
    ci_cases: 600,
    run: |cases, seed| super::run(cases, seed, input(), property),
    replay: |t| super::replay(t, property),
};

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Input {
    pub before: String,
    /// Which shape of secret to plant (see [`plant`]), or none.
    pub shape: Option<u8>,
    /// Key characters (letters and digits) of the secret.
    pub key: String,
    pub after: String,
}

const TOKENS: &[&str] = &[
    "sk-",
    "sk-ant-",
    "ghp_",
    "github_pat_",
    "AKIA",
    "xoxb-",
    "AIza",
    "eyJ",
    ".",
    "://",
    "@",
    ":",
    "=",
    "password",
    "token",
    "key",
    "secret",
    "Authorization",
    "Bearer ",
    "Basic ",
    "-----BEGIN ",
    "PRIVATE KEY-----",
    "-----END ",
    "[redacted: ",
    "]",
    "$",
    "<",
    "\"",
    "'",
    " ",
    "\n",
    "a1",
    "Z9",
    "é",
];

pub fn input() -> impl Strategy<Value = Input> {
    (gen::text(TOKENS), proptest::option::of(0..10u8), "[a-z][0-9][A-Za-z0-9]{28,40}", gen::text(TOKENS))
        .prop_map(|(before, shape, key, after)| Input { before, shape, key, after })
}

/// A secret of one shape built around `key` (letters and digits, mixed).
fn plant(shape: u8, key: &str) -> String {
    match shape {
        0 => format!("sk-ant-{key}"),
        1 => format!("ghp_{key}"),
        2 => format!("AKIA{}", key[..16].to_ascii_uppercase()),
        3 => format!("xoxb-{key}"),
        4 => format!("Authorization: Bearer {key}"),
        5 => format!("postgres://app:{key}@db.internal/app"),
        6 => format!("-----BEGIN RSA PRIVATE KEY-----\n{key}\n-----END RSA PRIVATE KEY-----"),
        7 => format!("password={key}"),
        8 => format!("token={key}"),
        _ => format!("sk_live_{key}"),
    }
}

fn property(i: &Input) -> Result<(), String> {
    let planted = i.shape.map(|s| plant(s, &i.key));
    // Spaces keep the planted secret a word of its own.
    let text = match &planted {
        Some(p) => format!("{} {p} {}", i.before, i.after),
        None => i.before.clone(),
    };
    let (red, what) = redact(&text);
    for s in spans(&text) {
        ensure(s.start < s.end && text.is_char_boundary(s.start) && text.is_char_boundary(s.end), || {
            format!("span {s:?} is not a range of whole characters of {text:?}")
        })?;
    }
    ensure(what.is_empty() == (red == text), || format!("found {what:?} but {red:?} vs {text:?}"))?;
    ensure(find_secret(&text).is_some() != what.is_empty(), || format!("find_secret and redact disagree on {text:?}"))?;
    ensure(find_secret(&red).is_none(), || format!("{red:?}, redacted from {text:?}, still holds a secret"))?;
    let (again, what2) = redact(&red);
    ensure(again == red && what2.is_empty(), || format!("redacting {red:?} again changed it to {again:?}"))?;
    let _ = leaves_a_lesson(&red);
    if planted.is_some() {
        ensure(!what.is_empty(), || format!("the planted secret in {text:?} was not found"))?;
        let core = &i.key[..16];
        let core_found = red.contains(core) || red.to_ascii_uppercase().contains(&core.to_ascii_uppercase());
        ensure(!core_found, || format!("the key {core:?} survived redaction: {red:?}"))?;
    }
    Ok(())
}
