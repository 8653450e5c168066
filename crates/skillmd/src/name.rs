//! What a skill may be called: one rule, and one wider reading for names hosts accept.
//!
//! [`check`] is the Agent Skills rule: `^[a-z0-9]+(-[a-z0-9]+)*$`, at most 64 characters, and
//! no reserved or device name. It guards everything that becomes a path (a name is the only part
//! of a skill that becomes a path outside the store: the seeded folder `<cwd>/<target>/<name>`)
//! and is what an author is told to write.
//!
//! [`check_lenient`] is wider, and says so: some hosts load skills whose names have capitals or
//! underscores, and a transcript or an agent's observation names them as written. It is for
//! reading such names back (the historian's markers and observations), never for naming a
//! folder.

/// The longest name allowed (both rules).
pub const MAX_NAME: usize = 64;

const RESERVED: &[&str] = &["synced", "con", "nul", "aux", "prn"];

/// The Agent Skills rule. `Err` says why `name` breaks it and what a name must be.
pub fn check(name: &str) -> Result<(), String> {
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

/// A name that follows the rule, made from one that does not (lowercased, runs of other
/// characters made single hyphens, cut at 64); `None` when nothing valid comes of it or it is
/// the same name.
pub fn suggest(name: &str) -> Option<String> {
    let mut out = String::new();
    for c in name.trim().chars() {
        let c = c.to_ascii_lowercase();
        if c.is_ascii_lowercase() || c.is_ascii_digit() {
            out.push(c);
        } else if !out.is_empty() && !out.ends_with('-') {
            out.push('-');
        }
    }
    out.truncate(MAX_NAME);
    let out = out.trim_end_matches('-').to_string();
    (out != name && check(&out).is_ok()).then_some(out)
}

/// The wider reading for names as hosts accept them: 1 to 64 ASCII letters of either case,
/// digits, `_` and `-`, not starting or ending with `-` and without `--`; reserved and device
/// names are not refused (such a name is never made a path). Every name [`check`] accepts is
/// accepted here. `Err` says what this reading accepts.
pub fn check_lenient(name: &str) -> Result<(), String> {
    let ok = !name.is_empty()
        && name.len() <= MAX_NAME
        && !name.starts_with('-')
        && !name.ends_with('-')
        && !name.contains("--")
        && name.chars().all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_');
    if ok {
        Ok(())
    } else {
        Err(format!(
            "{name:?} is not a valid skill name: 1 to {MAX_NAME} ASCII letters (either case), digits, `_` and single `-` between them"
        ))
    }
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
            assert_eq!(check(name).is_ok(), *ok, "{name:?}: {:?}", check(name));
            // The lenient reading accepts every strict name.
            if *ok {
                assert!(check_lenient(name).is_ok(), "{name:?}");
            }
        }
    }

    #[test]
    fn suggestions() {
        let cases: &[(&str, Option<&str>)] = &[
            ("PDF_Tools", Some("pdf-tools")),
            ("pdf--tools", Some("pdf-tools")),
            (" My Skill! ", Some("my-skill")),
            ("pdf", None),
            ("---", None),
            ("café", Some("caf")),
            ("CON", None),
        ];
        for (name, want) in cases {
            assert_eq!(suggest(name).as_deref(), *want, "{name:?}");
        }
        assert_eq!(suggest(&"ab-".repeat(40)).map(|s| s.len()), Some(64));
    }

    #[test]
    fn lenient_names() {
        let long = "A".repeat(64);
        let too_long = "a".repeat(65);
        let cases: &[(&str, bool)] = &[
            ("pdf", true),
            ("PDF", true),
            ("pdf_tools", true),
            ("My-Skill_2", true),
            ("con", true),
            (&long, true),
            (&too_long, false),
            ("", false),
            ("-pdf", false),
            ("pdf-", false),
            ("pdf--tools", false),
            ("../etc", false),
            ("a/b", false),
            ("pdf tools", false),
            ("café", false),
            ("a:b", false),
        ];
        for (name, ok) in cases {
            assert_eq!(check_lenient(name).is_ok(), *ok, "{name:?}: {:?}", check_lenient(name));
        }
        assert!(check_lenient("a b").unwrap_err().contains("ASCII letters (either case), digits, `_`"));
    }
}
