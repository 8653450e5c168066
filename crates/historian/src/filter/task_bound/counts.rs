//! Part of rule 7 (task-bound): numbers of this run: a count of this task's things ("48,213
//! rows", "all 63 workspaces"), a date, a day or a time.
//!
//! Must not take a number that holds for any project: a limit ("at most 5"), a default, a
//! unit ("30 seconds"), a rate ("20 jobs a page"), a version ("Python 3"), one thing named by
//! its number ("a 404", "HTTP 429 responses").

/// Nouns that, after a number, count this task's data.
const COUNTED: &[&str] = &[
    "row",
    "rows",
    "record",
    "records",
    "file",
    "files",
    "test",
    "tests",
    "field",
    "fields",
    "page",
    "pages",
    "line",
    "lines",
    "item",
    "items",
    "entry",
    "entries",
    "resource",
    "resources",
    "user",
    "users",
    "account",
    "accounts",
    "error",
    "errors",
    "failure",
    "failures",
    "warning",
    "warnings",
    "commit",
    "commits",
    "replica",
    "replicas",
    "container",
    "containers",
    "pod",
    "pods",
    "document",
    "documents",
    "customer",
    "customers",
    "order",
    "orders",
    "invoice",
    "invoices",
    "row(s)",
    "object",
    "objects",
    "table",
    "tables",
    "issue",
    "issues",
    "ticket",
    "tickets",
    "minute",
    "minutes",
    "hour",
    "hours",
];

/// Words before a number that make it a limit or a rule, not a count of this task.
const LIMITS: &[&str] = &[
    "most", "least", "to", "max", "maximum", "limit", "per", "first", "last", "every", "than", "over", "under",
    "default", "only", "top", "each", "about", "within", "after", "beyond", "n",
];

/// Month names and their abbreviations, before a day of a date.
const MONTHS: &[&str] = &[
    "january",
    "february",
    "march",
    "april",
    "june",
    "july",
    "august",
    "september",
    "october",
    "november",
    "december",
    "jan",
    "feb",
    "mar",
    "apr",
    "jun",
    "jul",
    "aug",
    "sep",
    "sept",
    "oct",
    "nov",
    "dec",
];

/// Plural nouns after a number that measure, not count this task's things.
const UNITS: &[&str] = &[
    "seconds",
    "secs",
    "minutes",
    "mins",
    "hours",
    "hrs",
    "days",
    "weeks",
    "months",
    "years",
    "ms",
    "bytes",
    "bits",
    "kilobytes",
    "megabytes",
    "gigabytes",
    "chars",
    "characters",
    "columns",
    "spaces",
    "tabs",
    "digits",
    "times",
    "levels",
    "frames",
    "pixels",
    "cores",
    "threads",
    "workers",
    "percent",
    "decimals",
    "args",
    "arguments",
    "retries",
    "attempts",
    "places",
    "dots",
    "dashes",
    "slashes",
    "backslashes",
    "quotes",
    "hex",
    "steps",
];

/// A number that names one thing rather than counting several: after "a"/"an" ("a 404
/// leaves no file", "a 3 GB file" is a size), or an HTTP status after the words that name
/// one ("status 503 means…", "HTTP 429 responses").
fn names_one(prev: &str, value: f64) -> bool {
    let status = (100.0..600.0).contains(&value) && value.fract() == 0.0;
    prev == "a"
        || prev == "an"
        || (status
            && ["http", "status", "code", "returns", "returned", "return", "got", "gives", "with"].contains(&prev))
}

/// "42 clips", "all 63 workspaces": a number of this task's things, in prose (any plural
/// noun: the list of [`COUNTED`] nouns cannot know them all). Not a limit ("up to 10
/// items", "at most 5 retries"), a default ("keeps 10 revisions by default"), a unit ("30
/// seconds") or a version ("Python 3 scripts").
pub(super) fn count_of_this_run(prose: &str) -> Option<String> {
    let lower = prose.to_ascii_lowercase();
    if lower.contains("default") {
        return None;
    }
    let ws: Vec<&str> = prose.split_whitespace().collect();
    let clean = |w: &str| w.trim_matches(|c: char| !c.is_alphanumeric()).to_string();
    for i in 0..ws.len().saturating_sub(1) {
        let w = clean(ws[i]).replace(',', "");
        if w.is_empty() || !w.chars().all(|c| c.is_ascii_digit()) || w.parse::<u64>().map_or(true, |v| v < 2) {
            continue;
        }
        // "42." or "42," ends the phrase: the number is not before its noun.
        if ws[i].ends_with(['.', ',', ';', ':', ')']) {
            continue;
        }
        let prev_raw = if i > 0 { clean(ws[i - 1]) } else { String::new() };
        let prev = prev_raw.to_ascii_lowercase();
        // "all 312 .pb.go files": after "all" the noun counted may follow a word of its own.
        let is_plural = |n: &str| {
            n.len() >= 4
                && n.ends_with('s')
                && !n.ends_with("ss")
                && n.chars().all(|c| c.is_ascii_lowercase())
                && !UNITS.contains(&n)
        };
        let mut next = clean(ws[i + 1]).to_ascii_lowercase();
        if prev == "all" && !is_plural(&next) {
            if let Some(n) = ws.get(i + 2).map(|w| clean(w).to_ascii_lowercase()).filter(|n| is_plural(n)) {
                next = n;
            }
        }
        let plural = next.len() >= 4
            && next.ends_with('s')
            && !next.ends_with("ss")
            && next.chars().all(|c| c.is_ascii_lowercase())
            && !UNITS.contains(&next.as_str());
        // "Node 18 binaries" names a version; "Transcoded 317 lectures" counts them.
        let version = prev_raw.starts_with(char::is_uppercase) && prev != "all" && !prev.ends_with("ed");
        let value: f64 = w.parse().unwrap_or(0.0);
        // "20 jobs a page", "5 requests per second": a rate, which a tool sets, not a count.
        let rate =
            ws.get(i + 2).is_some_and(|r| ["a", "an", "per", "each"].contains(&clean(r).to_ascii_lowercase().as_str()));
        if rate {
            continue;
        }
        if plural && !LIMITS.contains(&prev.as_str()) && !version && !names_one(&prev, value) {
            return Some(format!("a count of this task's data ({} {next})", clean(ws[i])));
        }
    }
    None
}

/// A count of this task's data (`48,213 rows`) or a date.
pub(super) fn count_or_date(lower: &str) -> Option<String> {
    let ws: Vec<&str> = lower.split_whitespace().collect();
    let clean = |w: &str| w.trim_matches(|c: char| !c.is_alphanumeric() && c != ',' && c != '.').to_string();
    for (i, w) in ws.iter().enumerate() {
        let w = clean(w);
        let w = w.trim_end_matches([',', '.']);
        if !w.is_empty()
            && w.chars().all(|c| c.is_ascii_digit() || c == ',' || c == '.')
            && w.starts_with(|c: char| c.is_ascii_digit())
        {
            let next = ws.get(i + 1).map(|n| clean(n)).unwrap_or_default();
            let next = next.trim_end_matches([',', '.']);
            let prev = if i > 0 { clean(ws[i - 1]) } else { String::new() };
            let value: f64 = w.replace(',', "").parse().unwrap_or(0.0);
            if COUNTED.contains(&next) && !LIMITS.contains(&prev.as_str()) && value >= 2.0 && !names_one(&prev, value) {
                return Some(format!("a count of this task's data ({w} {next})"));
            }
            if MONTHS.contains(&prev.as_str()) && (1.0..=31.0).contains(&value) {
                return Some(format!("a date ({} {w})", ws[i - 1]));
            }
        }
        // 2026-11-28
        let b = w.as_bytes();
        if b.len() >= 10 {
            for s in 0..=b.len() - 10 {
                let d = &b[s..s + 10];
                if d[4] == b'-'
                    && d[7] == b'-'
                    && d.iter().enumerate().all(|(k, c)| k == 4 || k == 7 || c.is_ascii_digit())
                {
                    return Some(format!("a date ({})", &w[s..s + 10]));
                }
            }
        }
    }
    for p in [
        "yesterday",
        "this morning",
        "this afternoon",
        "this evening",
        "last week",
        "last night",
        "earlier today",
        "tomorrow",
        "this week",
        "next week",
        "this sprint",
        "next sprint",
        "end of day",
    ] {
        if lower.contains(p) {
            return Some(format!("a date ({p})"));
        }
    }
    const DAYS: &[&str] =
        &["today", "tonight", "monday", "tuesday", "wednesday", "thursday", "friday", "saturday", "sunday"];
    for (i, w) in ws.iter().enumerate() {
        let w = w.trim_matches(|c: char| !c.is_alphanumeric() && c != ':');
        if DAYS.contains(&w) || DAYS.contains(&w.strip_suffix('s').unwrap_or("")) {
            return Some(format!("a date ({w})"));
        }
        // "14:32 UTC", "3pm", "10:15am": a time of this run.
        let zone = |z: &str| ["am", "pm", "utc", "gmt", "cet", "cest", "pst", "pdt", "est", "edt"].contains(&z);
        let (num, suffix) = w.split_at(w.find(|c: char| c.is_ascii_alphabetic()).unwrap_or(w.len()));
        let clock = !num.is_empty()
            && num.split(':').all(|p| !p.is_empty() && p.len() <= 2 && p.chars().all(|c| c.is_ascii_digit()));
        let next = ws.get(i + 1).map(|n| n.trim_matches(|c: char| !c.is_alphanumeric())).unwrap_or("");
        if clock && ((num.contains(':') && zone(next)) || zone(suffix)) {
            return Some(format!("a time of this run ({w})"));
        }
    }
    None
}
