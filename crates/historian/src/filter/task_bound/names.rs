//! Part of rule 7 (task-bound): names of one thing: a UUID, a commit hash, a ticket or an
//! issue number, a long number, an instance's name by its shape (`shop-prod`, `node-7`,
//! `orders_2024_q3`) or by its place in the prose ("namespace payments-live"), one person's
//! things ("Dana's laptop").
//!
//! Must not take a name every project shares for one instance: a standard (`ISO-8601`,
//! `SHA-256`), a kind of environment (`non-prod`), an English compound (`production-ready`),
//! a built-in name (`kube-system`); nor read an identifier inside a code span as an
//! instance's name by its shape (ids are found there, names only in the prose).

/// Hyphenated standard names that look like ticket ids.
const STANDARDS: &[&str] = &["iso", "utf", "sha", "rfc", "pep", "ecma", "ieee", "cve", "x", "md", "crc", "aes", "rsa"];

/// A run that reads as a commit hash or an id: seven or more hexadecimal characters, at
/// least two of them digits and one a letter.
fn is_hex_id(run: &str) -> bool {
    run.len() >= 7
        && run.chars().all(|c| c.is_ascii_hexdigit())
        && run.chars().filter(|c| c.is_ascii_digit()).count() >= 2
        && run.chars().any(|c| c.is_ascii_alphabetic())
}

/// UUIDs, commit hashes, ticket and issue numbers, long numbers, instance names.
pub(super) fn id_like(t: &str, in_prose: bool) -> Option<String> {
    let t = t.trim_matches(|c: char| !c.is_alphanumeric() && c != '#');
    // UUID 8-4-4-4-12.
    let parts: Vec<&str> = t.split('-').collect();
    if parts.len() == 5
        && [8, 4, 4, 4, 12].iter().zip(&parts).all(|(n, p)| p.len() == *n && p.chars().all(|c| c.is_ascii_hexdigit()))
    {
        return Some(format!("an id ({t})"));
    }
    for run in t.split(|c: char| !c.is_ascii_alphanumeric()) {
        if is_hex_id(run) {
            return Some(format!("an id or commit ({t})"));
        }
        if run.len() >= 6 && run.chars().all(|c| c.is_ascii_digit()) {
            return Some(format!("a number that names one thing ({t})"));
        }
    }
    // `#1234`: an issue or pull request.
    if let Some(n) = t.strip_prefix('#') {
        if n.len() >= 2 && n.chars().all(|c| c.is_ascii_digit()) {
            return Some(format!("an issue or pull request ({t})"));
        }
    }
    // `INV-20931`, `JIRA-123`: a ticket (not `ISO-8601`, `SHA-256`).
    if let Some((a, b)) = t.split_once('-') {
        if a.len() >= 2
            && a.chars().all(|c| c.is_ascii_uppercase())
            && b.len() >= 2
            && b.chars().all(|c| c.is_ascii_digit())
            && !STANDARDS.contains(&a.to_ascii_lowercase().as_str())
        {
            return Some(format!("a ticket ({t})"));
        }
    }
    // `billing_worker_1`, `gke_acme-prod_europe-west1_main`: one instance's generated name.
    let seps = t.chars().filter(|c| *c == '_' || *c == '-').count();
    let lowerish = t.chars().all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '_' || c == '-');
    if in_prose && lowerish && !t.starts_with('-') {
        let tail_number =
            t.rsplit(['_', '-']).next().is_some_and(|p| !p.is_empty() && p.chars().all(|c| c.is_ascii_digit()));
        if (seps >= 2 && tail_number) || seps >= 4 {
            return Some(format!("an instance name ({t})"));
        }
        let parts: Vec<&str> = t.split(['_', '-']).filter(|p| !p.is_empty()).collect();
        // `shop-prod`, `eks-prod-eu-central-1`, `billing_staging`: named for one environment
        // (not `non-prod`, `pre-production`: kinds of environment).
        // (not `production-ready`, `staging-only`: English compounds, nor `iso-2022-jp`.)
        let english = parts.iter().any(|p| {
            ["ready", "grade", "like", "only", "safe", "quality", "level", "scale", "worthy", "style", "wide"]
                .contains(p)
        }) || STANDARDS.contains(&parts.first().copied().unwrap_or(""));
        let env = parts.len() >= 2
            && !english
            && !["non", "pre", "post"].contains(&parts[0])
            && parts.iter().any(|p| ENVIRONMENTS.contains(p));
        // `node-7`, `worker-03`, `db-2`: one numbered machine of a fleet.
        let numbered = parts.len() == 2
            && INSTANCES.contains(&parts[0])
            && parts[1].len() <= 3
            && parts[1].chars().all(|c| c.is_ascii_digit());
        // `orders_2024_q3`, `logs-2023`: named for a year of one data set.
        let year = parts.len() >= 2
            && !english
            && parts.iter().any(|p| p.chars().any(|c| c.is_ascii_alphabetic()))
            && parts.iter().any(|p| {
                p.len() == 4 && (p.starts_with("19") || p.starts_with("20")) && p.chars().all(|c| c.is_ascii_digit())
            });
        if env || numbered || year {
            return Some(format!("an instance name ({t})"));
        }
    }
    None
}

/// Name parts that say which deployment a thing belongs to.
const ENVIRONMENTS: &[&str] = &["prod", "production", "staging", "stg", "uat", "preprod"];

/// Things a fleet numbers (`node-7`, `runner-2`).
const INSTANCES: &[&str] = &[
    "node", "worker", "runner", "server", "srv", "host", "db", "replica", "shard", "web", "app", "broker", "nas", "vm",
    "box", "agent", "instance", "machine", "master", "minion", "ci",
];

/// Things of one deployment that are named: a name right after one ("namespace shop-prod",
/// "cluster eks-main") is that deployment's own.
const RESOURCES: &[&str] = &[
    "namespace",
    "cluster",
    "node",
    "bucket",
    "database",
    "db",
    "schema",
    "table",
    "partition",
    "host",
    "server",
    "deployment",
    "container",
    "volume",
    "queue",
    "topic",
    "instance",
    "pod",
    "stack",
    "environment",
    "vpc",
    "account",
    "project",
    "workspace",
    "index",
];

/// Namespaces every cluster has.
const BUILTIN_NAMES: &[&str] = &["kube-system", "kube-public", "kube-node-lease"];

/// Things of one person: "Dana's laptop".
const PERSONAL: &[&str] = &[
    "laptop",
    "machine",
    "computer",
    "desktop",
    "workstation",
    "mac",
    "pc",
    "box",
    "fork",
    "account",
    "home",
    "dotfiles",
];

/// A name of one instance, told by its place in the prose: after the noun it names
/// ("namespace shop-prod"), or an identifier with `_` before one ("the `orders_q3`
/// partition" written without backticks); "Dana's laptop", "the client's camera".
pub(super) fn named_instance(prose: &str) -> Option<String> {
    let pw: Vec<&str> = prose.split_whitespace().collect();
    let clean = |w: &str| w.trim_matches(|c: char| !c.is_alphanumeric() && c != '-' && c != '_').to_string();
    let ident = |w: &str| {
        w.len() >= 3
            && !w.starts_with('-')
            && w.contains(['-', '_'])
            && w.chars().any(|c| c.is_ascii_alphabetic())
            && w.chars().all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '-' || c == '_')
            && !BUILTIN_NAMES.contains(&w)
    };
    for (i, w) in pw.iter().enumerate() {
        let wl = clean(w).to_ascii_lowercase();
        let next = pw.get(i + 1).map(|n| clean(n)).unwrap_or_default();
        // the noun must not end its phrase ("…in the namespace, read-only…")
        if RESOURCES.contains(&wl.as_str()) && !w.ends_with([',', '.', ';', ':']) && ident(&next) {
            return Some(format!("an instance name ({wl} {next})"));
        }
        if ident(&wl) && wl.contains('_') && RESOURCES.contains(&next.to_ascii_lowercase().as_str()) {
            return Some(format!("an instance name ({wl} {next})"));
        }
        let possessor = w.strip_suffix("'s").or_else(|| w.strip_suffix("\u{2019}s"));
        if let Some(who) = possessor.map(|p| p.trim_start_matches(|c: char| !c.is_alphanumeric())) {
            let whol = who.to_ascii_lowercase();
            let person = who.starts_with(char::is_uppercase) && PERSONAL.contains(&next.to_ascii_lowercase().as_str());
            let client = ["customer", "colleague", "manager", "boss"].contains(&whol.as_str());
            if person || client {
                return Some(format!("one person's own things (\"{who}'s {next}\")"));
            }
        }
    }
    None
}
