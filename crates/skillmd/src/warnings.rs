//! What in a SKILL.md deserves a warning when a skill is installed: a missing or long
//! description, a name that differs from its folder, and keys or blocks that run things
//! unattended. Warnings never refuse a skill; they are kept with it and returned to whoever
//! installs it. (An editor gets the same findings, with ranges, from [`super::diagnostics`].)

use serde_norway::Value;

use super::frontmatter::Frontmatter;

/// The longest description that does not draw a warning (the Agent Skills limit).
pub const MAX_DESCRIPTION: usize = 1024;

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
    fn warnings() {
        let fm = |t: &str| super::super::frontmatter::parse(t).unwrap();
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
