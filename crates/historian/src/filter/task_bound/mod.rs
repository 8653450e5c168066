//! Rule 7, **task-bound**: a lesson that names something of this task, this machine or this
//! user, which no other project that uses the skill has: a home or workspace path, a path
//! into a source tree, a host of one deployment (`places.rs`); an id or the name of one
//! instance (`names.rs`); a count of this task's things, a date or a time of this run
//! (`counts.rs`); a repository, "this ticket", "our registry", a fact of one project ("the
//! team uses…") or a person's wish (here).
//!
//! Owns the words of people and of the task at hand. Must not refuse what is the same on
//! every machine: system and API paths, standards (`ISO-8601`), limits, defaults, units and
//! versions, built-in names (`kube-system`), and what a tool needs ("Terraform needs…").

use std::collections::HashSet;

use crate::text::is_stop;

mod counts;
mod names;
mod places;

use counts::{count_of_this_run, count_or_date};
use names::{id_like, named_instance};
use places::path_like;

/// Who can want things of a task (a tool only needs them).
const PEOPLE: &[&str] = &[
    "user",
    "users",
    "client",
    "customer",
    "team",
    "reviewer",
    "reviewers",
    "maintainer",
    "maintainers",
    "manager",
    "lead",
    "boss",
    "stakeholder",
    "stakeholders",
    "owner",
];

/// What "this …" names when it points at the task at hand, not at the skill.
const THIS_TASK: &[&str] = &[
    "project",
    "codebase",
    "cluster",
    "account",
    "session",
    "task",
    "ticket",
    "sprint",
    "machine",
    "laptop",
    "team",
    "company",
    "organisation",
    "organization",
    "org",
    "customer",
    "client",
    "app",
    "pr",
    "monorepo",
    "incident",
    "environment",
];

/// What in `lesson` binds it to this task, or `None`.
pub fn task_bound(lesson: &str) -> Option<String> {
    let prose = crate::text::prose(lesson);
    let lower = lesson.to_ascii_lowercase();
    let prose_lower = prose.to_ascii_lowercase();
    let toks: Vec<&str> =
        lesson.split(|c: char| c.is_whitespace() || "\"'`()[]{}<>,;".contains(c)).filter(|t| !t.is_empty()).collect();
    for t in &toks {
        let t = t.trim_end_matches(['.', ':', '!', '?']);
        if let Some(what) = path_like(t) {
            return Some(what);
        }
    }
    let in_prose: HashSet<&str> =
        prose.split(|c: char| c.is_whitespace() || "\"'`()[]{}<>,;".contains(c)).filter(|t| !t.is_empty()).collect();
    for t in &toks {
        if let Some(what) = id_like(t, in_prose.contains(t)) {
            return Some(what);
        }
    }
    if let Some(what) = count_or_date(&lower) {
        return Some(what);
    }
    // People, repositories and this task's own places (outside code spans).
    for (needle, what) in
        [("github.com/", "a repository"), ("gitlab.com/", "a repository"), ("bitbucket.org/", "a repository")]
    {
        if prose_lower.contains(needle) {
            return Some(what.into());
        }
    }
    if let Some(what) = count_of_this_run(&prose) {
        return Some(what);
    }
    if let Some(what) = named_instance(&prose) {
        return Some(what);
    }
    let pw: Vec<&str> = prose.split_whitespace().collect();
    let low: Vec<String> =
        pw.iter().map(|w| w.trim_matches(|c: char| !c.is_alphanumeric()).to_ascii_lowercase()).collect();
    for (i, w) in pw.iter().enumerate() {
        let wl = low[i].clone();
        let next = low.get(i + 1).cloned();
        let wish = |n: &Option<String>| {
            n.as_deref().is_some_and(|n| {
                ["wants", "wanted", "prefers", "preferred", "asked", "requested", "likes", "insists", "decided"]
                    .contains(&n)
            })
        };
        let wants = |n: &Option<String>| wish(n) || n.as_deref().is_some_and(|n| n == "needs" || n == "needed");
        // "the user wants", "the team prefers": a person's wish, not the skill's behaviour.
        if PEOPLE.contains(&wl.as_str()) && wants(&next) {
            return Some(format!("what the {wl} wanted"));
        }
        // "Jordan prefers" (not "Terraform needs": a tool needs things, only a person wishes).
        if w.starts_with(char::is_uppercase) && wl.len() > 2 && !is_stop(&wl) && wish(&next) && i == 0 {
            return Some(format!("what {w} wanted"));
        }
        // "this ticket", "this session", "this repo": the task at hand.
        if wl == "this" {
            if let Some(n) = next.as_deref().filter(|n| THIS_TASK.iter().any(|t| n == t || n.starts_with("repo"))) {
                return Some(format!("this task's own {n}"));
            }
        }
        // "our registry", "my laptop": one team's or one person's setup.
        if (wl == "our" || wl == "my") && next.as_deref().is_some_and(|n| !n.is_empty()) {
            return Some(format!("one team's own setup (\"{wl} {}\")", next.unwrap_or_default()));
        }
        // "the project uses pnpm", "the team pins Node 18": a fact of one project.
        if i > 0
            && (low[i - 1] == "the" || pw[i - 1].ends_with("'s") || pw[i - 1].ends_with("\u{2019}s"))
            && ["project", "codebase", "team", "monorepo", "company"].contains(&wl.as_str())
            && next.as_deref().is_some_and(|n| {
                ["uses", "has", "is", "runs", "pins", "relies", "deploys", "keeps", "stores", "prefers"].contains(&n)
            })
        {
            return Some(format!("a fact of one project (\"the {wl} {}\")", next.unwrap_or_default()));
        }
        // `@handle` (outside code: `@csv` in a code span is jq, `@pytest.mark` a decorator).
        if let Some(h) = w.strip_prefix('@') {
            let h = h.trim_end_matches(|c: char| !c.is_alphanumeric());
            if h.len() >= 2 && h.chars().all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_') {
                return Some(format!("a person (@{h})"));
            }
        }
        // `owner/name repo`, `repository owner/name`.
        let slug = w.trim_matches(|c: char| !c.is_alphanumeric() && c != '/');
        let near_repo = next.as_deref().is_some_and(|n| n.starts_with("repo"))
            || (i > 0 && pw[i - 1].to_ascii_lowercase().starts_with("repo"));
        if near_repo && slug.split('/').count() == 2 && slug.split('/').all(|p| !p.is_empty()) {
            return Some(format!("a repository ({slug})"));
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use crate::filter::table_of;

    #[test]
    fn things_of_this_task_are_task_bound() {
        table_of(&[
            ("ffmpeg", "Transcoded 317 lectures to 720p for the archive.", "task-bound"),
            ("kubectl", "All 12 deployments in staging point at the old config map.", "task-bound"),
            ("npm", "Our CI caches node_modules, so `npm ci` is slow there.", "task-bound"),
            ("git", "This ticket needs the fix backported to the 2.x branch.", "task-bound"),
            ("docker-compose", "The team prefers one compose file per service.", "task-bound"),
            ("terraform", "The project uses Terraform 1.5 with a remote backend.", "task-bound"),
            ("psql", "The nightly load failed at 03:10 UTC on the reporting schema.", "task-bound"),
            ("pytest", "The suite must be green by Thursday for the release.", "task-bound"),
            ("rsync", "The sync copies all 317 raw clips again every night.", "task-bound"),
            // numbers that are limits, defaults, units or versions, and tools that need things
            ("kubectl", "`kubectl logs --tail` shows the last 10 lines by default; `--tail=-1` shows all of them.", ""),
            ("git", "Git keeps reflog entries 90 days by default before `gc` prunes them.", ""),
            ("ffmpeg", "Two-pass encoding takes about twice the time of one pass at the same bitrate.", ""),
            ("npm", "Node 18 binaries built with node-gyp crash on Node 20; rebuild them.", ""),
            (
                "playwright",
                "Playwright needs its browsers installed with `npx playwright install` after every upgrade.",
                "",
            ),
            ("psql", "`pg_restore -j 4` restores with 4 parallel jobs, but only from a custom-format dump.", ""),
        ]);
    }

    #[test]
    fn names_of_one_deployment_are_task_bound() {
        table_of(&[
            ("kubectl", "The api-gateway service in namespace payments-live has no readiness probe.", "task-bound"),
            ("kubectl", "Pods on node-12 keep getting evicted for disk pressure.", "task-bound"),
            ("psql", "Vacuum never finishes on the events_2023_h2 table.", "task-bound"),
            ("docker-compose", "The ledger-staging stack needs the VPN to reach its broker.", "task-bound"),
            ("ffmpeg", "The customer's scanner writes interlaced video that needs `yadif`.", "task-bound"),
            ("git", "On Marek's laptop the hooks path points at an old folder.", "task-bound"),
            // kinds of things, built-in names and code spans are not one deployment's
            ("kubectl", "Pods in the kube-system namespace are skipped by `kubectl get pods` without `-A`.", ""),
            (
                "kubectl",
                "A read-only replica rejects writes with `ERROR: cannot execute in a read-only transaction`.",
                "",
            ),
            (
                "docker-compose",
                "Non-prod stacks can share one `.env` file, but `docker compose --env-file` picks another.",
                "",
            ),
            ("psql", "`pg_dump -t 'logs_*'` dumps every table whose name matches the pattern.", ""),
            ("docker-compose", "A production-ready stack sets `restart: unless-stopped` on every service.", ""),
            (
                "psql",
                "Japanese mail in iso-2022-jp needs `convert_from(data, 'ISO_2022_JP')` before it is searchable.",
                "",
            ),
            ("git", "Git's index keeps the staged content, so `git diff --cached` shows it.", ""),
            ("npm", "Node 20's fetch ignores `HTTPS_PROXY`; pass an agent or use `undici`'s `ProxyAgent`.", ""),
        ]);
    }

    #[test]
    fn numbers_and_paths_that_are_not_this_task() {
        table_of(&[
            // a status or one thing after "a", not a count
            ("curl", "With `-f` a 500 leaves the exit code at 22, so scripts can branch on it.", ""),
            ("curl", "A 429 carries `Retry-After`; `--retry` honours it since 7.66.", ""),
            ("kubectl", "A 3 GB image pull counts against the startup probe's time, so widen `failureThreshold`.", ""),
            // an API's URL path is not a path on this machine
            ("kubectl", "`kubectl get --raw /apis/apps/v1/deployments` lists every deployment as JSON.", ""),
            ("curl", "GitLab answers `/api/v4/projects/:id/jobs` with 20 jobs a page unless `per_page` is given.", ""),
            // while a machine's path and a count still are
            ("rsync", "The copy into /srv/media/clips/raw took all night.", "task-bound"),
            ("psql", "The import loaded 52 invoices twice.", "task-bound"),
        ]);
    }
}
