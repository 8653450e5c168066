//! Rule 8, **hypothesis**: a guess ("probably", "might be caused by", "I think", "seems to"
//! left unexplained, "might be slow because…") or an open question: a later session would
//! take it for a fact.
//!
//! Owns the hedge words ([`HEDGES`]). Reads the prose only: it must not count a hedge inside a
//! code span or a quoted error, a comparison ("more likely"), a hedge word bound into a
//! compound ("possibly-corrupt"), nor a possibility under a condition ("if … might …"), which
//! is a rule of when.

use super::text::split_all;

/// Words of a guess: the summariser saw a symptom and wrote what it might mean.
const HEDGES: &[&str] = &[
    "probably",
    "possibly",
    "perhaps",
    "maybe",
    "presumably",
    "seemingly",
    "apparently",
    "i think",
    "we think",
    "i believe",
    "we believe",
    "i suspect",
    "we suspect",
    "suspected",
    "not sure",
    "not clear why",
    "unclear why",
    "unclear whether",
    "unsure",
    "no idea",
    "my guess",
    "best guess",
    "hypothesis",
    "most likely",
    "is likely",
    "are likely",
    "was likely",
    "likely caused",
    "likely due",
    "likely because",
    "may have",
    "might have",
    "could have",
    "not confirmed",
    "unconfirmed",
    "not verified",
    "unverified",
    "to be confirmed",
    "not yet known",
    "root cause unknown",
    "still investigating",
    "needs investigation",
    "to investigate",
    "i guess",
    "i'd guess",
    "we'd guess",
    "i assume",
    "we assume",
    "i'd say",
    "my hunch",
];

/// What in `lesson` is a guess or a question, or `None`. A hedge inside a code span or a
/// quoted error does not count; "more likely", "less likely" are comparisons, not hedges.
pub fn hypothesis(lesson: &str) -> Option<String> {
    let prose = crate::text::prose(lesson).to_ascii_lowercase();
    let prose = prose.replace(['\u{2019}'], "'");
    let word_at = |h: &str| {
        prose.match_indices(h).any(|(at, _)| {
            let before = prose[..at].chars().last();
            let after = prose[at + h.len()..].chars().next();
            // A hyphen binds the word into a compound ("apparently-idle processes" names a
            // kind of process, it does not hedge the sentence).
            let part = |c: char| c.is_alphanumeric() || c == '-';
            !before.is_some_and(part) && !after.is_some_and(part)
        })
    };
    if let Some(h) = HEDGES.iter().find(|h| word_at(h)) {
        return Some(format!("\"{h}\""));
    }
    // "seems to", "looks like": an impression. One the sentence explains ("appears to hang
    // until it gets `\.`", "looks stuck but is waiting for input") or tells of a trap
    // ("…, which looks like the pods are gone") is a gotcha, not a guess.
    let explained = crate::text::words(&prose).iter().any(|w| {
        ["until", "but", "unless", "because", "although", "though", "since", "actually"].contains(&w.as_str())
    });
    if !explained {
        for h in ["it seems", "seems to", "seems like", "seemed to", "appears to", "appeared to", "looks like"] {
            let guessed = prose.match_indices(h).any(|(at, _)| {
                let before = prose[..at].trim_end();
                !before.ends_with("which") && !before.ends_with("that") && !before.ends_with("what")
            });
            if word_at(h) && guessed {
                return Some(format!("\"{h}\""));
            }
        }
    }
    // "might be caused by", "could be a race": a cause offered, not shown; "might be running
    // out of addresses": a state guessed, unless the sentence says what to do about it then
    // ("may be starting, so retry").
    let conditional = crate::text::words(&prose).iter().any(|w| ["if", "when", "unless", "so"].contains(&w.as_str()));
    for m in ["might be", "could be", "may be"] {
        for (at, _) in prose.match_indices(m) {
            let rest = prose[at + m.len()..].trim_start();
            let next = rest.split(|c: char| !c.is_alphanumeric()).next().unwrap_or("");
            let state = next.len() > 4 && next.ends_with("ing") && !conditional;
            if state
                || ["caused", "due", "related", "because", "the cause", "the reason", "a race", "a bug", "the culprit"]
                    .iter()
                    .any(|c| rest.starts_with(c))
            {
                return Some(format!("\"{m} {}\"", rest.split_whitespace().next().unwrap_or("")));
            }
        }
    }
    // "might be slow because of the VPN", "could fail due to the proxy": a possibility with
    // a cause offered for it is a guess at the cause. Not "could not … because" (a report
    // of what failed), and not a condition ("if … might …": a rule of when).
    for clause in split_all(&prose, &["; ", ": ", ". "]).into_iter().filter(|_| !conditional) {
        let ws = crate::text::words(clause);
        for (k, w) in ws.iter().enumerate() {
            if (w == "might" || w == "could") && ws.get(k + 1).is_none_or(|n| n != "not" && n != "only" && n != "t") {
                let rest = &ws[k + 1..];
                let cause = rest.iter().enumerate().any(|(j, r)| {
                    r == "because" || (r == "due" && rest.get(j + 1).is_some_and(|n| n == "to")) || r == "caused"
                });
                if cause {
                    return Some(format!("\"{w} … because\": a cause guessed"));
                }
            }
        }
    }
    // An open question is not a finding.
    if prose.trim_end().ends_with('?') {
        return Some("an open question".into());
    }
    None
}

#[cfg(test)]
mod tests {
    use crate::filter::table_of;

    #[test]
    fn guesses_are_not_findings() {
        table_of(&[
            ("docker-compose", "The worker probably crashed because Redis was not ready yet.", "hypothesis"),
            ("pytest", "It seems the flaky test depends on the system clock.", "hypothesis"),
            ("npm", "The install failure might be caused by the proxy rewriting the registry URL.", "hypothesis"),
            ("terraform", "I think the provider caches credentials between runs.", "hypothesis"),
            ("git", "The rebase may have dropped the merge commits.", "hypothesis"),
            ("ffmpeg", "Not sure whether `-preset slow` actually shrinks the file.", "hypothesis"),
            ("kubectl", "Why does the rollout stall at 50% with no events?", "hypothesis"),
            ("psql", "The slowdown is most likely lock contention on the sequence.", "hypothesis"),
            // comparisons and conditions are not hedges; a quoted error may ask a question
            (
                "playwright",
                "Animations make `click()` more likely to hit the wrong element; wait for `toBeStable`.",
                "",
            ),
            ("jq", "When a field may be missing, `//` gives a default but also replaces false.", ""),
            ("npm", "`npm init` asks 'Is this OK? (yes)' and `-y` answers it for every prompt.", ""),
            ("psql", "A column may be NULL even with a default, so `COALESCE` it in reports.", ""),
            ("docker-compose", "The database might be running out of connections.", "hypothesis"),
            ("docker-compose", "The database may be starting when the app connects, so retry on `ECONNREFUSED`.", ""),
        ]);
    }

    #[test]
    fn guesses_without_hedge_words() {
        table_of(&[
            ("docker-compose", "The healthcheck could fail because the port is bound late.", "hypothesis"),
            ("npm", "The install might hang due to the mirror being slow.", "hypothesis"),
            ("kubectl", "I'd guess the webhook times out before the pod is admitted.", "hypothesis"),
            // a compound with a hedge word is not a hedge, and a rule of when is not a guess
            ("ffmpeg", "Possibly-corrupt inputs decode with `-err_detect ignore_err` instead of stopping.", ""),
            ("curl", "A request could fail because of DNS if `--resolve` is not given; pin the address with it.", ""),
            ("git", "A push could not go through because the hook rejected it: `pre-receive` output says why.", ""),
        ]);
    }
}
