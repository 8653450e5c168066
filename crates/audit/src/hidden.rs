//! Text a person reviewing a skill does not see but a model reads: Unicode tag characters
//! (an invisible copy of ASCII), bidi controls (text shown in another order than it is read),
//! and runs of zero-width characters.

/// A character that belongs to the Unicode tag block (U+E0000–U+E007F).
pub fn is_tag(c: char) -> bool {
    ('\u{E0000}'..='\u{E007F}').contains(&c)
}

/// A bidi embedding, override or isolate control.
pub fn is_bidi(c: char) -> bool {
    matches!(c, '\u{202A}'..='\u{202E}' | '\u{2066}'..='\u{2069}' | '\u{200E}' | '\u{200F}' | '\u{061C}')
}

/// A zero-width character (a byte-order mark at the very start of a file is not one).
pub fn is_zero_width(c: char) -> bool {
    matches!(c, '\u{200B}' | '\u{200C}' | '\u{200D}' | '\u{2060}' | '\u{FEFF}' | '\u{180E}')
}

/// What of `line` is hidden: (rule, count) for tag characters, bidi controls, and the longest
/// zero-width run when it is 2 or longer (a single joiner is how emoji are written).
pub fn scan(line: &str) -> Vec<(&'static str, usize)> {
    let (mut tags, mut bidi, mut run, mut longest) = (0, 0, 0, 0);
    let mut prev_emoji = false;
    for c in line.chars() {
        if is_tag(c) {
            tags += 1;
        }
        if is_bidi(c) {
            bidi += 1;
        }
        if is_zero_width(c) && !(c == '\u{200D}' && prev_emoji) {
            run += 1;
            longest = longest.max(run);
        } else if !is_zero_width(c) {
            run = 0;
        }
        // A zero-width joiner between emoji (and a variation selector) is how they are spelled.
        prev_emoji = (c as u32) >= 0x1F000 || c == '\u{FE0F}' || ('\u{2600}'..='\u{27BF}').contains(&c);
    }
    let mut out = vec![];
    // Tag characters after an emoji flag (U+1F3F4) spell a subdivision flag: only a run of
    // several that is not such a flag hides text.
    if tags > 0 && !(line.contains('\u{1F3F4}') && tags <= 7) {
        out.push(("hidden-unicode-tags", tags));
    }
    if bidi > 0 {
        out.push(("hidden-bidi-control", bidi));
    }
    if longest >= 2 {
        out.push(("hidden-zero-width", longest));
    }
    out
}

/// `s` with every hidden character written as `\u{...}` (tag characters decoded as the ASCII
/// they encode, in `⟦…⟧`), so an excerpt shows what a reviewer could not see.
pub fn reveal(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    let mut in_tags = false;
    for c in s.chars() {
        if is_tag(c) {
            if !in_tags {
                out.push('⟦');
                in_tags = true;
            }
            let a = (c as u32 - 0xE0000) as u8;
            if (0x20..0x7f).contains(&a) {
                out.push(a as char);
            }
            continue;
        }
        if in_tags {
            out.push('⟧');
            in_tags = false;
        }
        if is_bidi(c) || is_zero_width(c) {
            out.push_str(&format!("\\u{{{:X}}}", c as u32));
        } else {
            out.push(c);
        }
    }
    if in_tags {
        out.push('⟧');
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn emoji_spelled_with_joiners_are_not_hidden_text() {
        assert!(scan("family 👨\u{200D}👩\u{200D}👧 ok").is_empty());
        assert!(scan("\u{FEFF}# title").is_empty(), "one BOM is not a run");
    }

    #[test]
    fn reveal_decodes_tag_characters() {
        let hidden: String = "run x".chars().map(|c| char::from_u32(0xE0000 + c as u32).unwrap()).collect();
        assert_eq!(reveal(&format!("ok{hidden}.")), "ok⟦run x⟧.");
        assert_eq!(reveal("a\u{202E}b"), "a\\u{202E}b");
    }
}
