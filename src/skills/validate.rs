//! What a skill may be called, and what in a skill deserves a warning.
//!
//! A name is the only part of a skill that becomes a path outside the store (the seeded folder
//! `<cwd>/<target>/<name>`), so it is checked before anything is written: the Agent Skills rule
//! `^[a-z0-9]+(-[a-z0-9]+)*$`, at most 64 characters, and no reserved or device name. Warnings
//! never refuse a skill; they are kept with it and returned to whoever installs it.

use serde_norway::Value;

use crate::memory::frontmatter::Frontmatter;

/// The longest name allowed.
pub const MAX_NAME: usize = 64;
/// The longest description that does not draw a warning.
pub const MAX_DESCRIPTION: usize = 1024;

const RESERVED: &[&str] = &["synced", "con", "nul", "aux", "prn"];

/// `Err` says why `name` is not a valid skill name.
pub fn check_name(name: &str) -> Result<(), String> {
    if name.is_empty() {
        return Err("the name is empty".into());
    }
    if name.len() > MAX_NAME {
        return Err(format!("the name is {} characters long; at most {MAX_NAME} are allowed", name.len()));
    }
    let shape_ok = name
        .split('-')
        .all(|part| !part.is_empty() && part.bytes().all(|b| b.is_ascii_lowercase() || b.is_ascii_digit()));
    if !shape_ok {
        return Err(
            "a name must be lowercase letters and digits in words joined by single hyphens (^[a-z0-9]+(-[a-z0-9]+)*$)"
                .into(),
        );
    }
    let device = |prefix: &str| {
        name.strip_prefix(prefix).is_some_and(|d| d.len() == 1 && (b'1'..=b'9').contains(&d.as_bytes()[0]))
    };
    if RESERVED.contains(&name) || device("com") || device("lpt") {
        return Err(format!("{name:?} is a reserved or device name"));
    }
    Ok(())
}

/// The warnings of one skill's SKILL.md: description, name against its folder, and keys or
/// blocks that run things unattended.
pub fn frontmatter_warnings(fm: &Frontmatter, text: &str, folder: Option<&str>) -> Vec<String> {
    let mut w = vec![];
    match fm.description.as_deref().map(str::trim) {
        None | Some("") => w.push("SKILL.md has no description; agents pick skills by their description".into()),
        Some(d) if d.chars().count() > MAX_DESCRIPTION => w.push(format!(
            "the description is {} characters long; hosts may cut it at {MAX_DESCRIPTION}",
            d.chars().count()
        )),
        _ => {}
    }
    if let (Some(folder), Some(name)) = (folder, fm.name.as_deref()) {
        if name != folder {
            w.push(format!(
                "the frontmatter name {name:?} differs from its folder {folder:?}; it is installed as {folder:?}"
            ));
        }
    }
    if let Some(raw) = &fm.raw {
        for key in ["allowed-tools", "hooks"] {
            if raw.get(Value::String(key.into())).is_some() {
                w.push(format!("the frontmatter sets `{key}`, which takes effect unattended in headless sessions"));
            }
        }
    }
    if has_command_block(text) {
        w.push("SKILL.md has !`command` blocks, which hosts run when the skill loads".into());
    }
    w
}

/// True when the text has a `` !`command` `` block (a shell command run at skill load).
pub fn has_command_block(text: &str) -> bool {
    text.match_indices("!`").any(|(i, _)| text[i + 2..].find('`').is_some_and(|end| end > 0))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names() {
        let long = "a".repeat(64);
        let too_long = "a".repeat(65);
        let cases: &[(&str, bool)] = &[
            ("pdf", true),
            ("pdf-tools", true),
            ("a1-b2-c3", true),
            ("7zip", true),
            (&long, true),
            (&too_long, false),
            ("", false),
            ("PDF", false),
            ("pdf_tools", false),
            ("pdf--tools", false),
            ("-pdf", false),
            ("pdf-", false),
            ("..", false),
            ("../etc", false),
            ("a/b", false),
            ("a\\b", false),
            (".git", false),
            ("café", false),
            ("pdf tools", false),
            ("synced", false),
            ("con", false),
            ("nul", false),
            ("aux", false),
            ("prn", false),
            ("com1", false),
            ("com9", false),
            ("lpt1", false),
            ("lpt9", false),
            ("com0", true),
            ("com10", true),
            ("console", true),
            ("lpt", true),
        ];
        for (name, ok) in cases {
            assert_eq!(check_name(name).is_ok(), *ok, "{name:?}: {:?}", check_name(name));
        }
    }

    #[test]
    fn warnings() {
        let fm = |t: &str| crate::memory::frontmatter::parse(t).unwrap();
        let cases: &[(&str, Option<&str>, &[&str])] = &[
            ("---\nname: a\ndescription: ok\n---\nbody", Some("a"), &[]),
            ("---\nname: a\n---\nbody", Some("a"), &["no description"]),
            ("---\nname: b\ndescription: ok\n---\n", Some("a"), &["differs from its folder"]),
            ("---\nname: a\ndescription: ok\nallowed-tools: Bash\n---\n", Some("a"), &["allowed-tools"]),
            ("---\nname: a\ndescription: ok\nhooks: {}\n---\n", Some("a"), &["hooks"]),
            ("---\nname: a\ndescription: ok\n---\nRun !`git status` first", Some("a"), &["!`command`"]),
            ("---\nname: a\ndescription: ok\n---\nsay hi!", None, &[]),
        ];
        for (text, folder, want) in cases {
            let w = frontmatter_warnings(&fm(text), text, *folder);
            assert_eq!(w.len(), want.len(), "{text:?}: {w:?}");
            for (got, want) in w.iter().zip(want.iter()) {
                assert!(got.contains(want), "{got:?} should mention {want:?}");
            }
        }
        let long = format!("---\nname: a\ndescription: {}\n---\n", "x".repeat(1025));
        assert!(frontmatter_warnings(&fm(&long), &long, None)[0].contains("1025"));
    }
}
