//! Rule 9, **narration**: routine progress: what the agent did ("Ran the tests, all passed",
//! "Planned and applied the change", "Drained X, upgraded it and…", "I squashed the
//! branch"), a plan or a summary of the session, what the task was, what a change did in
//! this run.
//!
//! Owns the words of a report (past tenses, progress phrases, plans) and of what lets a
//! report off, and [`IMPERATIVE`], which `features.rs` also reads. Must not refuse a report
//! that gives a rule a later session can follow (a cause, a condition, a present-tense fact,
//! a modal, a clause of advice), nor a fact told with a participle as an adjective ("Linked
//! packages keep their own `node_modules`").

use super::text::{sentences, split_all};

/// Past-tense verbs a progress report starts with.
const DID: &[&str] = &[
    "ran",
    "reran",
    "re-ran",
    "used",
    "loaded",
    "created",
    "generated",
    "completed",
    "finished",
    "updated",
    "installed",
    "applied",
    "added",
    "wrote",
    "opened",
    "converted",
    "merged",
    "extracted",
    "compressed",
    "checked",
    "restarted",
    "scaled",
    "brought",
    "fixed",
    "worked",
    "deployed",
    "built",
    "downloaded",
    "tested",
    "verified",
    "confirmed",
    "implemented",
    "refactored",
    "removed",
    "deleted",
    "moved",
    "renamed",
    "reviewed",
    "filtered",
    "saved",
    "processed",
    "analyzed",
    "analysed",
    "summarized",
    "summarised",
    "called",
    "executed",
    "tried",
    "started",
    "stopped",
    "edited",
    "changed",
    "wired",
    "configured",
    "migrated",
    "exported",
    "imported",
    "cleaned",
    "launched",
    "investigated",
    "debugged",
    "resolved",
    "handled",
    "managed",
    "produced",
    "looked",
    "went",
    "spent",
    "succeeded",
    "proceeded",
    "continued",
    "performed",
    "followed",
    // irregular past tenses that no -ed test finds
    "gave",
    "took",
    "made",
    "got",
    "kept",
    "left",
    "sent",
    "began",
    "chose",
    "rewrote",
    "rebuilt",
    "undid",
    "redid",
    "broke",
    "spun",
    "drove",
    "dug",
    "threw",
    "caught",
    "bought",
    "taught",
    "told",
    "thought",
    "drew",
    "flew",
    "spoke",
    "rode",
    "woke",
    "shook",
    "tore",
    "forgot",
    "withdrew",
    "overrode",
    "overwrote",
    "stole",
    "swapped",
];

/// Verbs a fact about a tool is often told with, in the present ("…go to", "…belongs in",
/// "…show with", "…stay listed"): after a participle and its noun they make the participle
/// an adjective ("Generated code belongs in `OUT_DIR`").
const COMMON_PRESENT: &[&str] = &[
    "go",
    "goes",
    "show",
    "stay",
    "keep",
    "need",
    "take",
    "fail",
    "break",
    "appear",
    "remain",
    "belong",
    "point",
    "reach",
    "land",
    "end",
    "lose",
    "count",
    "live",
    "trigger",
    "become",
    "match",
    "survive",
    "skip",
    "hang",
    "leave",
    "get",
    "cause",
    "contain",
    "hold",
    "carry",
    "win",
    "override",
    "ignore",
    "inherit",
    "expire",
    "disappear",
    "drift",
    "behave",
    "look",
    "sort",
    "fire",
    "resolve",
    "load",
    "come",
    "comes",
    "does",
    "do",
];

/// Verbs whose past tense is their base form ("Hit the endpoint…" is a report, "Hit `q` to
/// quit" advice): read as a report only when the sentence tells of another past action
/// ("…until it returned 200") and states nothing in the present.
const SAME_PAST: &[&str] =
    &["hit", "set", "put", "cut", "read", "shut", "split", "spread", "let", "quit", "reset", "upset", "cast"];

/// Verbs of finding out: "Learned that…", "We found that…" introduce a fact, not a report.
const LEARNED: &[&str] =
    &["learned", "learnt", "found", "noticed", "realised", "realized", "discovered", "observed", "figured", "saw"];

/// Phrases of a progress report, anywhere in the text.
const PROGRESS: &[&str] = &[
    "all tests passed",
    "all tests pass",
    "tests passed",
    "everything was green",
    "everything is green",
    "the build passed",
    "build is green",
    "as expected",
    "successfully",
    "the task was",
    "the task is",
    "the goal was",
    "as the user requested",
    "as requested",
    "for the user",
    "the user asked",
    "without errors",
    "without any errors",
    "it works",
    "it worked",
    "is now working",
    "now works",
    "was completed",
    "is complete",
    "done.",
    "everything builds",
    "everything works",
    "everything passes",
    "everything is fine",
    "all good",
    "looks fine now",
    "looks good now",
    // the state of this run after a fix: "Build succeeds now after the include fix"
    "works now",
    "succeeds now",
    "passes now",
    "builds now",
    "runs now",
    "loads now",
    "compiles now",
    "fixed now",
];

/// Words that turn a report into a rule: a cause, a condition, an instead, a must.
const RULE: &[&str] = &[
    "because",
    "unless",
    "instead",
    "otherwise",
    "must",
    "needs",
    "need",
    "only",
    "means",
    "never",
    "always",
    "cannot",
    "can't",
    "doesn't",
    "does",
    "requires",
    "found",
    "turns",
    "so that",
    "rather",
];

/// Present-tense words that make a report of an action also state how the tool behaves
/// ("Fixed X by passing `--y`, which is needed when…"): a report with one of these is let off.
const PRESENT: &[&str] = &["is", "are", "isn't", "aren't", "means", "mean", "needed", "required", "has", "have"];

/// Said of a plan or of the session itself: never a lesson.
const PLANS: &[&str] = &[
    "session summary",
    "summary of the session",
    // the session itself: a lesson is for later sessions and never places itself in one
    "this session",
    "next session",
    "throughout the session",
    "rest of the session",
    "earlier in the session",
    // time this run took: "Spent a while in the log before spotting…"
    "spent a while",
    "spent an hour",
    "spent hours",
    "spent some time",
    "next step",
    "todo:",
    "to do:",
    "to-do:",
    "still need to",
    "still needs to",
    "left to do",
    "remaining work",
    "will continue",
    "follow up on",
    "follow-up:",
];

/// Verbs a clause of advice starts with.
pub const IMPERATIVE: &[&str] = &[
    "use", "run", "pass", "add", "set", "put", "call", "check", "keep", "avoid", "prefer", "wrap", "quote", "escape",
    "install", "pin", "give", "write", "delete", "remove", "make", "start", "stop", "rerun", "restart", "drop",
    "convert", "strip", "guard", "read", "look", "increase", "raise", "lower", "skip", "disable", "enable",
];

/// What in `lesson` is routine progress, or `None`.
pub fn narration(lesson: &str) -> Option<String> {
    let lower = lesson.to_ascii_lowercase();
    let ws: Vec<String> = lower
        .split_whitespace()
        .map(|w| w.trim_matches(|c: char| !c.is_alphanumeric() && c != '-' && c != '\'').to_string())
        .filter(|w| !w.is_empty())
        .collect();
    for p in PLANS {
        if lower.contains(p) {
            return Some(format!("a plan or summary of this session (\"{p}\")"));
        }
    }
    // A clause that tells what to do ("…; use `keys[]` for the keys") gives a rule.
    let advice = split_all(&lower, &["; ", ", so ", ": "]).iter().skip(1).any(|c| {
        let first = c.split_whitespace().next().unwrap_or("").trim_matches(|c: char| !c.is_alphanumeric());
        IMPERATIVE.contains(&first)
    });
    let has_rule = RULE.iter().any(|r| if r.contains(' ') { lower.contains(r) } else { ws.iter().any(|w| w == r) })
        || lower.contains("n't ")
        || advice;
    // A progress phrase in a sentence that gives a cause or a rule is the story of a fix
    // ("passed locally but timed out in CI because…"), not a report.
    for p in PROGRESS {
        if lower.contains(p) && !has_rule {
            return Some(format!("\"{p}\""));
        }
    }
    // "`make -j` made the build faster", "the cache was quicker": what a change did in this
    // run, in the past, with no comparison ("than") or rule that would make it hold again.
    let better = ["faster", "quicker", "slower", "easier", "simpler", "better", "worse", "smaller", "cleaner"];
    let outcome = ws.iter().enumerate().find(|(k, w)| {
        ["made", "got", "became", "was", "were"].contains(&w.as_str())
            && ws.iter().skip(k + 1).take(3).any(|b| better.contains(&b.as_str()))
    });
    if let Some((_, w)) = outcome {
        if !has_rule && !ws.iter().any(|w| w == "than") {
            return Some(format!("what a change did in this run (\"{w} … \")"));
        }
    }
    // A present-tense statement ("…, which is needed when…") generalises a report; "is now"
    // ("…, which is now live") does not.
    let past = |w: &str| DID.contains(&w) || (w.len() > 4 && w.ends_with("ed"));
    let present = ws.iter().enumerate().any(|(k, w)| {
        PRESENT.contains(&w.as_str())
            && ws.get(k + 1).is_none_or(|n| n != "now" && n != "been" && !(w.starts_with('h') && past(n)))
    }) || ws.iter().any(|w| {
        // "Merged branches can be listed…": a modal states what is possible, any time.
        ["can", "cannot", "will", "won't", "should", "shouldn't"].contains(&w.as_str())
    }) || sentences(&lower).iter().skip(1).any(|s| {
        // "Ran into X? It comes from the remote shell": a sentence of its own in the present
        // (a pronoun and a verb in -s); not a relative clause ("confirmed it posts…").
        let mut sw = s.split_whitespace();
        let (a, b) = (sw.next().unwrap_or(""), sw.next().unwrap_or(""));
        ["it", "this", "that"].contains(&a)
            && b.len() > 3
            && b.ends_with('s')
            && !b.ends_with("ss")
            && !["was", "has", "its", "thus", "always", "perhaps"].contains(&b)
    });
    // "Ran X", "The agent ran X", "I used X", "Then merged X": a report of an action.
    let mut i = 0;
    while i < ws.len()
        && ["the", "agent", "assistant", "i", "we", "then", "first", "finally", "next", "also", "so"]
            .contains(&ws[i].as_str())
    {
        i += 1;
    }
    // A verb of the list, or any word in -ed followed by a determiner ("Rebased the branch",
    // "Queried the orders table") or by another verb ("Planned and applied the change"): an
    // action done to one thing of this task.
    let determiner = |w: Option<&String>| {
        w.is_some_and(|w| {
            ["the", "a", "an", "all", "this", "that", "these", "those", "our", "its", "their", "every", "both", "my"]
                .contains(&w.as_str())
        })
    };
    // "Rolled back the deployment": a particle between the verb and its object.
    let particle = |k: usize| {
        ws.get(k).is_some_and(|p| ["up", "back", "out", "down", "over", "off", "in", "through"].contains(&p.as_str()))
    };
    let first_did = ws.get(i).is_some_and(|w| {
        DID.contains(&w.as_str())
            || (w.len() > 4
                && w.ends_with("ed")
                && (determiner(ws.get(i + 1))
                    || particle(i + 1)
                    || (ws.get(i + 1).is_some_and(|a| a == "and" || a == "then")
                        && ws.get(i + 2).is_some_and(|v| past(v)))))
    });
    // "Drained node-7, upgraded it and uncordoned it", "Upgraded X from 4 to 5 and fixed the
    // config": a chain of past actions, the second after "and"/"then" or a comma.
    let raw: Vec<&str> = lower.split_whitespace().collect();
    let chained = |from: usize| {
        (from + 1..ws.len().min(raw.len())).any(|k| {
            let joined = ["and", "then"].contains(&ws[k - 1].as_str()) || raw[k - 1].ends_with(',');
            joined && past(&ws[k]) && ws.get(k + 1).is_none_or(|n| n != "by")
        })
    };
    // Alignment of `ws` and `raw` holds while no token was dropped as all punctuation.
    let aligned = ws.len() == raw.len();
    let first_past = ws.get(i).is_some_and(|w| DID.contains(&w.as_str()) || (w.len() > 4 && w.ends_with("ed")));
    let first_did = first_did || (aligned && first_past && chained(i));
    // "Hit the health endpoint until it returned 200": a verb whose past is its base form,
    // with another past action in the sentence.
    let first_did = first_did
        || (aligned
            && ws.get(i).is_some_and(|w| SAME_PAST.contains(&w.as_str()))
            && i == 0
            && (1..ws.len()).any(|k| {
                // a past verb with its own subject or joined to the first ("…until it
                // returned", "…and reconnected"), not an adjective ("the failed tests")
                past(&ws[k])
                    && ["and", "then", "it", "they", "we", "i", "which", "he", "she"].contains(&ws[k - 1].as_str())
            }));
    // "Installed binaries go to the prefix", "Sent headers show with `-v`": the participle is
    // an adjective of a noun that a present-tense verb follows; a fact, not a report.
    // A participle followed by a preposition is a verb ("Port-forwarded to grafana and…").
    let adjective = i == 0
        && ws.get(1).is_some_and(|n| {
            !determiner(Some(n))
                && !particle(1)
                && !["it", "them", "and", "then", "to", "into", "from", "with", "for", "via", "onto"]
                    .contains(&n.as_str())
        })
        && ws.iter().skip(2).any(|w| {
            let base = w.strip_suffix('s').filter(|b| b.len() > 2 && !b.ends_with('s')).unwrap_or(w);
            COMMON_PRESENT.contains(&base) || COMMON_PRESENT.contains(&w.as_str())
        });
    let first_did = first_did && !adjective;
    // "I ran", "we've updated", "the agent has fixed": the first person's report.
    let agent_did = ws.windows(3).any(|p| {
        let subject = ["agent", "assistant", "i", "we", "claude"].contains(&p[0].as_str());
        let perfect = ["i've", "we've"].contains(&p[0].as_str()) && past(&p[1]);
        let aux = ["have", "has", "had"].contains(&p[1].as_str());
        perfect || (subject && (past(&p[1]) || (aux && past(&p[2]))))
    });
    // "Learned that…", "we found that…", "figured out that…": a finding, told as one.
    let learned = ws.windows(2).any(|p| LEARNED.contains(&p[0].as_str()) && (p[1] == "that" || p[1] == "out"));
    if (first_did || agent_did) && !has_rule && !present && !learned {
        let verb = if first_did { ws[i].clone() } else { "the agent did".into() };
        return Some(format!("a report of what was done (\"{verb} …\")"));
    }
    None
}

#[cfg(test)]
mod tests {
    use crate::filter::table_of;

    #[test]
    fn reports_of_this_run_are_narration() {
        table_of(&[
            ("terraform", "Imported and tagged the existing buckets.", "narration"),
            ("git", "I squashed the branch and force-pushed it.", "narration"),
            ("npm", "We've upgraded the lock file and rebuilt the container.", "narration"),
            ("docker-compose", "The agent has restarted the queue service.", "narration"),
            ("pytest", "Refactored the fixtures into conftest, which made the tests shorter.", "narration"),
            ("make", "`make -j` made the build faster.", "narration"),
            ("npm", "The build works now with the new lock file.", "narration"),
            ("gh", "gh was used throughout the session to label new issues.", "narration"),
            ("gh", "Spent a while in the Actions log before spotting that the step never got its env var.", "narration"),
            ("kubectl", "Port-forwarded to grafana and confirmed the dashboard loads.", "narration"),
            // a comparison holds again
            ("make", "`make -j` was faster than `make -j1` only when the recipes are independent.", ""),
            ("kubectl", "Next steps: roll the change out to the other regions.", "narration"),
            ("jq", "TODO: handle the paginated responses as well.", "narration"),
            // a report that states how the tool behaves is let off
            ("git", "Fixed 'detected dubious ownership' by adding the folder to `safe.directory`, which is required for repos owned by another user.", ""),
            ("npm", "Switched to `npm ci` in CI because `npm install` rewrote the lock file.", ""),
            // an adjective in -ed before a noun is not a report
            ("psql", "Quoted identifiers keep their case; unquoted ones are folded to lower case.", ""),
        ]);
    }

    #[test]
    fn chains_of_past_actions_are_narration() {
        table_of(&[
            // past verbs no list knows, chained by a comma or "and"
            ("kubectl", "Cordoned worker-b, patched its kubelet and rejoined it.", "narration"),
            ("npm", "Bumped eslint from 8 to 9 and rewrote the flat config.", "narration"),
            ("git", "Spun off a branch for the hotfix, then tagged it.", "narration"),
            // a verb whose past is its base form, with another past action
            ("curl", "Hit the login route twice until it answered with a cookie.", "narration"),
            ("psql", "Set the role's search path and reconnected.", "narration"),
            ("docker-compose", "Wiped out stale networks to get the stack back.", "narration"),
            // a participle that is an adjective of a noun a present verb follows
            ("npm", "Linked packages keep their own `node_modules`, so two copies of React load.", ""),
            ("cargo", "Vendored crates go in `vendor/` and need a `[source]` entry in `.cargo/config.toml`.", ""),
            ("git", "Stashed changes survive a checkout of another branch and come back with `git stash pop`.", ""),
            // a question answered in the present is a lesson
            (
                "rsync",
                "Got 'connection unexpectedly closed'? It means the far side died; run it with `-vvv` to see why.",
                "",
            ),
            // a modal says what can be done any time
            ("git", "Deleted branches can be brought back from `git reflog` for 90 days.", ""),
            // lessons that start the same way but state a rule or a present fact
            ("curl", "Hit `Ctrl-C` once to stop a transfer; `--max-time` stops it for you.", ""),
            ("psql", "Set `statement_timeout` per role, not per database, when only one role runs reports.", ""),
            ("git", "Detached heads are left behind by `git checkout TAG`, and commits made there need a branch.", ""),
            (
                "rsync",
                "Renamed files are copied again in full, and `--fuzzy` finds a similar file to diff against.",
                "",
            ),
        ]);
    }
}
