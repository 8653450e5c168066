//! What a note's showing led to: the one rule that decides whether a note shown in a session
//! was **used** there, or **ignored** (docs/protocol.md, "Use and trust").
//!
//! A shown note is used when a call of the session after the load contains one of the note's
//! specifics that no call of the session before the load contained. A specific is what the
//! note adds: a flag, a path or file name, a version, an identifier, an environment variable
//! ([`super::sameness::signature`] finds them), and of a code span that is a command, what the
//! span adds to the command (`aws s3 sync --exact-timestamps`: `--exact-timestamps`), or the
//! whole command when it adds nothing else (`npx prisma generate`: a step). The program a
//! call runs and its subcommands (the first words of each command) are not a use by
//! themselves, nor is what the note says not to do or warns about (a clause's subject that
//! does harm, `specifics::Subject`), nor the file a note's command that only reads names
//! (`grep -n x sympy/core/basic.py`: where it looked). A call of a tool that only reads applies nothing unless the note
//! says to look at what it names. A shown note is ignored when an error text the note names (a
//! quoted message, a message a failure comes with, an error code, an exception name) comes
//! back in the errors of a failed call after the load, before any use.
//!
//! Pure text: the calls come in as text; which session, which load, and counting a session
//! once are the engine's.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

mod errors;
pub mod holdout;
mod specifics;

pub use errors::error_texts;
use errors::mentions;
pub use specifics::{occurs, specifics, Specific};

/// A note's evidence, over the sessions that ended: how many were shown it, used it, ignored
/// it, and when it was last used.
#[derive(Debug, Clone, Copy, PartialEq, Default, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct Evidence {
    /// Sessions whose tool results showed the note (a block appended to a skill load).
    #[serde(default)]
    pub shown: i64,
    /// Sessions that used it: a later call carried a specific the note adds.
    #[serde(default)]
    pub used: i64,
    /// Sessions where an error the note names came back before it was used.
    #[serde(default)]
    pub ignored: i64,
    /// When a call last used it (ms since the epoch; the call's arrival); absent when never.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub used_at: Option<i64>,
    /// A person wrote, edited, pinned, accepted or confirmed it (the dashboard, a CLI in a
    /// person's terminal, the review queue).
    #[serde(default, skip_serializing_if = "is_false")]
    pub vouched: bool,
    /// Sessions other than the one that wrote it that used it (every session, for a note
    /// whose writing session is not known).
    #[serde(default, skip_serializing_if = "is_zero")]
    pub used_elsewhere: i64,
    /// Sessions whose load withheld the note from its block (the holdout, `memory.holdout`).
    #[serde(default, skip_serializing_if = "is_zero")]
    pub withheld: i64,
    /// Of the sessions that withheld it, those whose calls carried its distinctive specific
    /// anyway.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub appeared: i64,
    /// Derived ([`Evidence::with_trust`]): the use rate when shown minus the rate its specific
    /// appeared when withheld, smoothed ([`Evidence::lift`]).
    #[serde(default)]
    pub lift: f64,
    /// Derived ([`Evidence::with_trust`]): trusted by a person's act, or by a use in another
    /// session with lift behind it ([`Evidence::derived_trust`]).
    #[serde(default)]
    pub trust: Trust,
}

/// Whether a note has earned trust: a person's act, or a use in another session than the
/// writer's. Everything else (the historian's, the miner's, the agent's own notes) is
/// unverified until then.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum Trust {
    Trusted,
    #[default]
    Unverified,
}

impl Trust {
    pub fn as_str(self) -> &'static str {
        match self {
            Trust::Trusted => "trusted",
            Trust::Unverified => "unverified",
        }
    }

    pub fn parse(s: &str) -> Option<Trust> {
        match s.trim() {
            "trusted" => Some(Trust::Trusted),
            "unverified" => Some(Trust::Unverified),
            _ => None,
        }
    }
}

/// The lift a use in another session must have behind it to trust a note: the use rate when
/// shown at least this far above the rate its specific appears when withheld.
pub const LIFT_MIN: f64 = 0.25;
/// The sessions that withheld a note before its uses can trust it.
pub const LIFT_WITHHELD_MIN: i64 = 2;

/// A note's lift from its counts: `(used + 1) / (shown + 2) − (appeared + 1) / (withheld + 2)`.
/// Shown in three sessions and used in three, withheld in one where the specific did not
/// appear: 0.8 − 0.333 = 0.467; a step the agent does anyway in half the sessions, shown or
/// not, stays near 0.
pub fn lift(shown: i64, used: i64, withheld: i64, appeared: i64) -> f64 {
    let rate = |k: i64, n: i64| (k.max(0) as f64 + 1.0) / (n.max(0) as f64 + 2.0);
    rate(used, shown) - rate(appeared, withheld)
}

/// Whether uses in other sessions trust a note: it was used in one, withheld in at least
/// [`LIFT_WITHHELD_MIN`], and its lift is at least [`LIFT_MIN`].
pub fn trusted_by_use(shown: i64, used: i64, used_elsewhere: i64, withheld: i64, appeared: i64) -> bool {
    used_elsewhere > 0 && withheld >= LIFT_WITHHELD_MIN && lift(shown, used, withheld, appeared) >= LIFT_MIN
}

impl Evidence {
    /// The note's trust, from its acts and uses: a person's act, or a use in another session
    /// with lift behind it ([`trusted_by_use`]).
    pub fn derived_trust(&self) -> Trust {
        if self.vouched || trusted_by_use(self.shown, self.used, self.used_elsewhere, self.withheld, self.appeared) {
            Trust::Trusted
        } else {
            Trust::Unverified
        }
    }

    /// The note's lift ([`lift`]).
    pub fn lift(&self) -> f64 {
        lift(self.shown, self.used, self.withheld, self.appeared)
    }

    /// `self` with [`Evidence::trust`] and [`Evidence::lift`] derived.
    pub fn with_trust(mut self) -> Evidence {
        self.trust = self.derived_trust();
        self.lift = (self.lift() * 1000.0).round() / 1000.0;
        self
    }

    /// What an import or a team pull keeps of evidence that came with a note: its counts and
    /// acts; a note that says it is trusted without saying why (an older export) keeps that as
    /// a person's act.
    pub fn carried(mut self) -> Evidence {
        if self.trust == Trust::Trusted && !self.vouched && self.used_elsewhere <= 0 {
            self.vouched = true;
        }
        self.with_trust()
    }
}

/// Why a note decays, if it does: it names specifics (so a use of it can be seen), it was
/// shown in at least `after` sessions (0: never decays) and used in none, and neither a pin
/// nor a person's act keeps it, and no error it names came back. Notes with no specifics stay unverified until feedback or a
/// person says more.
pub fn decay_reason(e: &Evidence, pinned: bool, delta: &str, after: u32) -> Option<String> {
    let due = after > 0 && e.shown >= i64::from(after) && e.used == 0;
    // An error the note names came back (ignored): the lesson bears on what happens here, even
    // though no session applied it yet; junk never meets its error.
    if !due || pinned || e.vouched || e.used_elsewhere > 0 || e.ignored > 0 || specifics(delta).is_empty() {
        return None;
    }
    Some(format!("unused: shown in {} sessions, never used", e.shown))
}

/// What recall's ranking and the block read of a note's evidence (the catalog keeps it per
/// note): the counts a use rate is made of, and its trust.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Uses {
    pub shown: u32,
    pub used: u32,
    pub ignored: u32,
    pub trusted: bool,
    /// Sessions that withheld it, and of those, sessions whose calls carried its specific.
    pub withheld: u32,
    pub appeared: u32,
}

/// The prior of [`Uses::rate`]: a note never shown counts as used in one of two sessions, so
/// a new note ranks as an even chance, neither buried nor lifted.
pub const PRIOR_USED: f32 = 1.0;
/// See [`PRIOR_USED`].
pub const PRIOR_SHOWN: f32 = 2.0;

impl Uses {
    pub fn of(e: &Evidence) -> Uses {
        let n = |x: i64| x.clamp(0, u32::MAX as i64) as u32;
        Uses {
            shown: n(e.shown),
            used: n(e.used),
            ignored: n(e.ignored),
            trusted: e.derived_trust() == Trust::Trusted,
            withheld: n(e.withheld),
            appeared: n(e.appeared),
        }
    }

    /// The smoothed use rate in (0, 1): sessions that used the note over sessions shown it,
    /// with a session that ignored it (an error the note names came back) counted against it
    /// once more, and the prior [`PRIOR_USED`] / [`PRIOR_SHOWN`]. Never shown: 1/2; shown in
    /// six sessions and never used: 1/8; used in three of three: 4/5.
    pub fn rate(&self) -> f32 {
        (self.used as f32 + PRIOR_USED) / (self.shown as f32 + self.ignored as f32 + PRIOR_SHOWN)
    }
}

fn is_false(b: &bool) -> bool {
    !*b
}

fn is_zero(n: &i64) -> bool {
    *n == 0
}

/// A call of the session, as judged: its arguments as text, its error lines when it failed
/// (empty otherwise), and whether its tool only reads ([`super::calls::reads_only`]).
#[derive(Debug, Clone, Copy, Default)]
pub struct Later<'a> {
    pub args: &'a str,
    pub errors: &'a str,
    pub read_only: bool,
}

impl Later<'_> {
    /// Whether the call carries `s` as a use: a call that only reads applies nothing, unless
    /// the note says to look at what it names ("see `tests/schemas.rs`").
    fn carries(&self, s: &Specific) -> bool {
        (!self.read_only || s.look) && occurs(self.args, s)
    }
}

/// What a session's calls say of a note shown there.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Verdict {
    /// The first later call that used the note (its index among the calls after the load).
    pub used: Option<usize>,
    /// An error the note names came back before any use.
    pub ignored: bool,
}

/// The most of the reference sessions a specific may appear in and still be evidence of use:
/// a specific that more sessions type without the note shown (`reproduce_issue.py`, `-n` of
/// `grep`, `/testbed`) tells nothing of the note.
pub const COMMON_SHARE: f64 = 0.05;

/// In how many of the `reference` sessions (each its calls after the skill's load) a call
/// carries `s`, of how many. A flag means something only to its program, so only that
/// program's calls count; a path, a file, a name or a value names the same thing whatever
/// program touches it, so a call of any program counts (`sympy/core/basic.py` that sessions
/// `sed`, `cat` and `python` anyway is no rarer for never having been `grep`ped).
pub fn base_rate<'a, R: AsRef<[Later<'a>]>>(s: &Specific, reference: &[R]) -> (usize, usize) {
    let anywhere;
    let s = if s.program.is_some() && !s.text.starts_with('-') {
        anywhere = Specific { program: None, ..s.clone() };
        &anywhere
    } else {
        s
    };
    let k = reference.iter().filter(|calls| calls.as_ref().iter().any(|c| c.carries(s))).count();
    (k, reference.len())
}

/// Whether `s` is distinctive: it appears in at most [`COMMON_SHARE`] of the `reference`
/// sessions (none: every specific is).
pub fn distinctive<'a, R: AsRef<[Later<'a>]>>(s: &Specific, reference: &[R]) -> bool {
    let (k, n) = base_rate(s, reference);
    k <= 1 || k as f64 <= COMMON_SHARE * n as f64
}

/// Judges a note (its lesson's text) shown in a session, by the session's calls before the
/// load and after it, and the `reference` sessions: the store's sessions of the skill that
/// were not shown the note (nor wrote it), each its calls after the skill's load. Only a
/// distinctive specific ([`distinctive`]) is evidence of use.
pub fn judge(note: &str, before: &[Later<'_>], after: &[Later<'_>], reference: &[Vec<Later<'_>>]) -> Verdict {
    judge_in(note, before, after, &[reference])
}

/// [`judge`] with several reference sets (the skill's sessions, and the store's others when
/// the skill has few): a specific is evidence only when it is distinctive in each.
pub fn judge_in<'a, R: AsRef<[Later<'a>]>>(
    note: &str,
    before: &[Later<'_>],
    after: &[Later<'_>],
    references: &[&[R]],
) -> Verdict {
    let new: Vec<Specific> = specifics(note)
        .into_iter()
        .filter(|s| !before.iter().any(|b| b.carries(s)) && references.iter().all(|r| distinctive(s, r)))
        .collect();
    let used = if new.is_empty() { None } else { after.iter().position(|c| new.iter().any(|s| c.carries(s))) };
    let errors = error_texts(note);
    let until = used.unwrap_or(after.len());
    let ignored = after[..until].iter().any(|c| !c.errors.is_empty() && errors.iter().any(|e| mentions(c.errors, e)));
    Verdict { used, ignored }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// (what it shows, note, calls before the load, calls after it as (args, errors), used at,
    /// ignored)
    type Case<'a> = (&'a str, &'a str, &'a [&'a str], &'a [(&'a str, &'a str)], Option<usize>, bool);

    /// A note decays when it names specifics, was shown in `after` sessions or more and never
    /// used, and no pin or person keeps it.
    #[test]
    fn decay_table() {
        let ev = |shown, used, vouched, used_elsewhere| Evidence {
            shown,
            used,
            vouched,
            used_elsewhere,
            ..Default::default()
        };
        let flag = "aws s3 sync skips same-size files; pass `--exact-timestamps`.";
        let prose = "Ask before deleting anything in the shared bucket.";
        // (evidence, pinned, delta, after, decays)
        let cases = [
            (ev(6, 0, false, 0), false, flag, 6, true),
            (ev(9, 0, false, 0), false, flag, 6, true),
            (ev(5, 0, false, 0), false, flag, 6, false),
            (ev(6, 1, false, 0), false, flag, 6, false),
            (ev(6, 0, true, 0), false, flag, 6, false),
            (ev(6, 0, false, 0), true, flag, 6, false),
            (ev(6, 0, false, 0), false, prose, 6, false),
            (ev(6, 0, false, 0), false, flag, 0, false),
            (ev(2, 0, false, 0), false, flag, 2, true),
            (Evidence { shown: 6, ignored: 1, ..Default::default() }, false, flag, 6, false),
        ];
        for (e, pinned, delta, after, want) in cases {
            let got = decay_reason(&e, pinned, delta, after);
            assert_eq!(got.is_some(), want, "{e:?} pinned {pinned} {delta:?} after {after}");
            if let Some(r) = got {
                assert_eq!(r, format!("unused: shown in {} sessions, never used", e.shown));
            }
        }
    }

    /// The smoothed use rate and trust of a note's counts.
    #[test]
    fn uses_table() {
        // (shown, used, ignored, vouched, used elsewhere) → (rate, trusted)
        for (e, rate, trusted) in [
            ((0, 0, 0, false, 0), 0.5, false),
            ((6, 0, 0, false, 0), 0.125, false),
            ((3, 3, 0, false, 0), 0.8, false),
            // Used elsewhere, but never withheld: no lift behind it.
            ((3, 3, 0, false, 1), 0.8, false),
            ((2, 0, 2, false, 0), 1.0 / 6.0, false),
            ((0, 0, 0, true, 0), 0.5, true),
        ] {
            let ev = Evidence {
                shown: e.0,
                used: e.1,
                ignored: e.2,
                vouched: e.3,
                used_elsewhere: e.4,
                ..Default::default()
            };
            let u = Uses::of(&ev);
            assert!((u.rate() - rate).abs() < 1e-6, "{e:?}: {}", u.rate());
            assert_eq!(u.trusted, trusted, "{e:?}");
            assert_eq!(ev.with_trust().trust == Trust::Trusted, trusted, "{e:?}");
        }
        // A never-used note shown in many sessions ranks below one used in several.
        let never = Uses { shown: 10, ..Default::default() };
        let used = Uses { shown: 4, used: 3, ..Default::default() };
        assert!(used.rate() > never.rate());
        // An older export that says trusted without why keeps it as a person's act.
        let e = Evidence { trust: Trust::Trusted, ..Default::default() }.carried();
        assert!(e.vouched && e.trust == Trust::Trusted);
        let e = Evidence { trust: Trust::Unverified, ..Default::default() }.carried();
        assert!(!e.vouched && e.trust == Trust::Unverified);
    }

    #[test]
    fn judge_table() {
        let cases: &[Case] = &[
            (
                "aws: the flag the note adds is a use",
                "aws s3 sync skips files whose size did not change; pass `--exact-timestamps` after a rebuild.",
                &["ls dist"],
                &[("aws s3 sync dist s3://site --exact-timestamps", "")],
                Some(0),
                false,
            ),
            (
                "aws: the bare program is not",
                "aws s3 sync skips files whose size did not change; pass `--exact-timestamps` after a rebuild.",
                &[],
                &[("aws s3 sync dist s3://site", ""), ("aws s3 ls s3://site", "")],
                None,
                false,
            ),
            (
                "aws: a command span's program is not a use either",
                "Use `aws s3 sync --exact-timestamps` for rebuilt sites.",
                &[],
                &[("aws s3 sync dist s3://site --delete", "")],
                None,
                false,
            ),
            (
                "aws: the span's flag is",
                "Use `aws s3 sync --exact-timestamps` for rebuilt sites.",
                &[],
                &[("aws s3 ls", ""), ("aws s3 sync dist s3://site --exact-timestamps --delete", "")],
                Some(1),
                false,
            ),
            (
                "npm: the flag was there before the load",
                "Run `npm ci --legacy-peer-deps`: the lockfile has peer conflicts.",
                &["npm ci --legacy-peer-deps"],
                &[("npm ci --legacy-peer-deps", "")],
                None,
                false,
            ),
            (
                "npm: the named error came back, the note unapplied",
                "npm ci fails with ERESOLVE on the peer deps; run `npm ci --legacy-peer-deps`.",
                &[],
                &[("npm ci", "npm ERR! code ERESOLVE\nnpm ERR! ERESOLVE unable to resolve dependency tree")],
                None,
                true,
            ),
            (
                "npm: the error, then the note applied",
                "npm ci fails with ERESOLVE on the peer deps; run `npm ci --legacy-peer-deps`.",
                &[],
                &[("npm ci", "npm ERR! code ERESOLVE"), ("npm ci --legacy-peer-deps", "")],
                Some(1),
                true,
            ),
            (
                "pnpm: an error code outside a failure is no ignore",
                "In CI pnpm stops with ERR_PNPM_OUTDATED_LOCKFILE; use `pnpm install --no-frozen-lockfile` locally.",
                &["git status"],
                &[("pnpm install --no-frozen-lockfile", "")],
                Some(0),
                false,
            ),
            (
                "docker: a step the note adds",
                "After changing the Dockerfile run `docker compose build api` before `docker compose up`.",
                &["docker compose up"],
                &[("docker compose build api", "")],
                Some(0),
                false,
            ),
            (
                "docker: the step already run before the load",
                "After changing the Dockerfile run `docker compose build api` before `docker compose up`.",
                &["docker compose build api && docker compose up"],
                &[("docker compose build api", "")],
                None,
                false,
            ),
            (
                "git: a flag, case kept",
                "Push release branches with `git push --force-with-lease`, never --force.",
                &["git fetch origin"],
                &[("git push --force-with-lease origin release", "")],
                Some(0),
                false,
            ),
            (
                "git: what the note forbids is no use",
                "Never pass --no-verify to git commit here: the hooks build the schemas.",
                &[],
                &[("git commit --no-verify -m wip", "")],
                None,
                false,
            ),
            (
                "kubectl: a resource path and the failure it names",
                "If the api pod is in CrashLoopBackOff, check `kubectl logs deploy/api --previous`.",
                &["kubectl get pods"],
                &[("kubectl get pods", "api-7f9 0/1 CrashLoopBackOff 4 2m")],
                None,
                true,
            ),
            (
                "kubectl: used",
                "If the api pod is in CrashLoopBackOff, check `kubectl logs deploy/api --previous`.",
                &["kubectl get pods"],
                &[("kubectl logs deploy/api --previous", "")],
                Some(0),
                false,
            ),
            (
                "pytest: an env var and an exception",
                "Tests need PYTHONPATH=src or pytest stops with ModuleNotFoundError.",
                &["pytest -q"],
                &[("pytest -q", "E   ModuleNotFoundError: No module named 'app'"), ("PYTHONPATH=src pytest -q", "")],
                Some(1),
                true,
            ),
            (
                "pytest: the program only",
                "Run `pytest` from the repository root, not from tests/.",
                &[],
                &[("pytest -q", "")],
                None,
                false,
            ),
            (
                "cargo: a flag and a file name, in a read tool's args",
                "The schema test rewrites schemas with UPDATE_SCHEMAS=1; see tests/schemas.rs.",
                &["cargo test"],
                &[("/work/r/tests/schemas.rs\n200", "")],
                Some(0),
                false,
            ),
            (
                "cargo: a version is not part of a longer one",
                "Pin clap to 4.5 in Cargo.toml.",
                &["cat Cargo.toml"],
                &[("cargo add clap@4.5.1", ""), ("cargo add clap@4.5", "")],
                Some(1),
                false,
            ),
            (
                "a quoted message comes back",
                "\"database is locked\" means another sidecar holds the write lock; wait and retry.",
                &[],
                &[("sqlite3 x.db 'insert ...'", "Error: database is locked")],
                None,
                true,
            ),
            (
                "a clause's subject that does harm is what the note warns about",
                "Skip the slow integration tests with `-DskipITs`; `-DskipTests` skips the unit tests as well.",
                &[],
                &[("mvn -q verify -DskipTests", ""), ("mvn -q verify -DskipITs", "")],
                Some(1),
                false,
            ),
            (
                "a plain command that does harm",
                "Use `uv sync --frozen` in CI; plain `uv sync` rewrites uv.lock.",
                &[],
                &[("uv sync", "")],
                None,
                false,
            ),
            (
                "a subject said to be against policy",
                "Calls to the internal API need `--cacert /etc/corp/ca.pem`; `-k` is against policy.",
                &[],
                &[
                    ("curl -k https://internal.api/health", ""),
                    ("curl --cacert /etc/corp/ca.pem https://internal.api", ""),
                ],
                Some(1),
                false,
            ),
            (
                "a command that needs a flag is where the flag goes, not a step",
                "`aws s3 sync` of the static site needs `--exact-timestamps`; size-only misses edits.",
                &[],
                &[("aws s3 sync dist/ s3://site --delete", "")],
                None,
                false,
            ),
            (
                "a command that does something good is still a step",
                "`pdftotext -layout` keeps the two columns apart.",
                &[],
                &[("pdftotext -layout report.pdf -", "")],
                Some(0),
                false,
            ),
            (
                "a version that breaks is no use of the pin",
                "Pin yamlparse to 0.8; 0.9 breaks the loader.",
                &["pip list"],
                &[("pip install yamlparse==0.9", ""), ("pip install yamlparse==0.8", "")],
                Some(1),
                false,
            ),
            (
                "a message a failure comes with, and runs of spaces",
                "psql against the replica needs `sslmode=require`, or it fails with `FATAL: no pg_hba.conf entry`.",
                &[],
                &[
                    ("psql postgres://ro@replica/app", "FATAL:  no pg_hba.conf entry for host"),
                    ("psql 'postgres://ro@replica/app?sslmode=require'", ""),
                ],
                Some(1),
                true,
            ),
            (
                "a message the tool quotes otherwise",
                "The musl build fails with `undefined reference to SSL_CTX_new` without the feature.",
                &[],
                &[("cargo build --release", "  = note: /usr/bin/ld: undefined reference to `SSL_CTX_new'")],
                None,
                true,
            ),
            (
                "a message without an error word, after fails with",
                "Connect with `--user app`, or commands fail with `NOAUTH Authentication required`.",
                &[],
                &[("redis-cli info", "NOAUTH Authentication required.")],
                None,
                true,
            ),
            ("no calls after the load", "Pass `--exact-timestamps`.", &[], &[], None, false),
            (
                "a note without specifics is never used",
                "Be careful with the sync.",
                &[],
                &[("aws s3 sync a b", "")],
                None,
                false,
            ),
        ];
        for (what, note, before, after, used, ignored) in cases {
            let before: Vec<Later> = before.iter().map(|args| Later { args, ..Default::default() }).collect();
            let later: Vec<Later> =
                after.iter().map(|(args, errors)| Later { args, errors, read_only: false }).collect();
            let v = judge(note, &before, &later, &[]);
            assert_eq!(
                v,
                Verdict { used: *used, ignored: *ignored },
                "{what}: {note:?} specifics {:?}",
                specifics(note)
            );
        }
    }

    /// A call that only reads applies nothing, unless the note says to look at what it names;
    /// nor does a read before the load make a specific old. What a note's own command that only
    /// reads names (`grep … sympy/core/basic.py`) is where it looked, not what it adds.
    #[test]
    fn reads_table() {
        let read = |args| Later { args, errors: "", read_only: true };
        let run = |args| Later { args, errors: "", read_only: false };
        let strip = "Set `strip = true` under `[profile.release]` in Cargo.toml to shrink the binary.";
        let see = "The schema test rewrites schemas with UPDATE_SCHEMAS=1; see tests/schemas.rs.";
        let grep = "`grep -n \"def __ne__\" sympy/core/numbers.py` fails; `grep -A 5 \"def atoms\" sympy/core/basic.py` works.";
        let check = "When nginx answers 502, check `tail -n 50 /var/log/nginx/error.log` for the upstream.";
        let write = "twine needs the token in a config: `cat > ~/.pypirc` with a [pypi] section.";
        // (what, note, before, after, used at)
        type ReadCase<'a> = (&'a str, &'a str, Vec<Later<'a>>, Vec<Later<'a>>, Option<usize>);
        let cases: &[ReadCase] = &[
            ("a file the note names only read", strip, vec![], vec![read("/w/Cargo.toml")], None),
            (
                "the file then edited",
                strip,
                vec![],
                vec![read("/w/Cargo.toml"), run("/w/Cargo.toml\nstrip = true")],
                Some(1),
            ),
            (
                "read before the load, edited after",
                strip,
                vec![read("/w/Cargo.toml")],
                vec![run("/w/Cargo.toml")],
                Some(0),
            ),
            ("a file the note says to see, read", see, vec![], vec![read("/w/tests/schemas.rs")], Some(0)),
            ("a shell read is a call like any other", strip, vec![], vec![run("cat Cargo.toml")], Some(0)),
            // A note's own command that only reads: the file it reads is where it looked.
            (
                "the file a note's search read, touched",
                grep,
                vec![],
                vec![run("sed -n 1,80p sympy/core/basic.py")],
                None,
            ),
            (
                "the file a note's search read, searched",
                grep,
                vec![],
                vec![run("grep -n atoms sympy/core/basic.py")],
                None,
            ),
            ("the flag a note's search adds", grep, vec![], vec![run("grep -A 5 atoms sympy/core/basic.py")], Some(0)),
            ("a log the note says to check", check, vec![], vec![run("tail -n 200 /var/log/nginx/error.log")], Some(0)),
            ("a file a note's `cat` writes", write, vec![], vec![run("cat > ~/.pypirc <<EOF")], Some(0)),
        ];
        for (what, note, before, after, used) in cases {
            assert_eq!(judge(note, before, after, &[]).used, *used, "{what}: {:?}", specifics(note));
        }
        assert!(calls_reads_only("Read") && calls_reads_only("read_file") && calls_reads_only("view"));
        assert!(!calls_reads_only("Bash") && !calls_reads_only("edit") && !calls_reads_only("write"));
    }

    fn calls_reads_only(tool: &str) -> bool {
        super::super::calls::reads_only(tool)
    }

    /// A specific most sessions without the note type anyway is no evidence of its use: it
    /// must appear in at most one of the reference sessions, or at most [`COMMON_SHARE`] of
    /// them.
    #[test]
    fn distinctive_table() {
        let run = |args| Later { args, errors: "", read_only: false };
        let sessions = |n: usize, with: usize, call: &'static str| -> Vec<Vec<Later<'static>>> {
            (0..n).map(|i| vec![run(if i < with { call } else { "ls" })]).collect()
        };
        let note = "`python reproduce_issue.py` fails with `ImportError`; `python3 reproduce_issue.py --fast` works.";
        let after = [run("python3 reproduce_issue.py --fast")];
        // (what, reference, used)
        type Reference<'a> = Vec<Vec<Later<'a>>>;
        let cases: Vec<(&str, Reference, Option<usize>)> = vec![
            ("no reference: every specific counts", vec![], Some(0)),
            ("one other session typed it", sessions(5, 1, "python reproduce_issue.py --fast"), Some(0)),
            ("most sessions type both anyway", sessions(20, 15, "python reproduce_issue.py --fast"), None),
            ("one is common, the other rare", sessions(20, 15, "python reproduce_issue.py"), Some(0)),
            ("5 of 100 is rare", sessions(100, 5, "python reproduce_issue.py --fast"), Some(0)),
            ("6 of 100 is not", sessions(100, 6, "python reproduce_issue.py --fast"), None),
            ("another program's flag is no base rate", sessions(20, 20, "grep --fast reproduce_issue.py"), Some(0)),
        ];
        for (what, reference, used) in cases {
            assert_eq!(judge(note, &[], &after, &reference).used, used, "{what}: {:?}", specifics(note));
        }

        // A path names the same file whatever program touches it: the sessions that `sed` it
        // anyway make it common for `python` too (a flag stays its program's own, above).
        let note = "`python sympy/core/numbers.py` fails with `ImportError`; `python sympy/core/basic.py` works.";
        let after = [run("python sympy/core/basic.py")];
        let cases: Vec<(&str, Reference, Option<usize>)> = vec![
            ("never typed", sessions(20, 0, ""), Some(0)),
            ("run anyway", sessions(20, 15, "python sympy/core/basic.py"), None),
            ("read with other programs anyway", sessions(20, 15, "sed -n 1,80p sympy/core/basic.py"), None),
        ];
        for (what, reference, used) in cases {
            assert_eq!(judge(note, &[], &after, &reference).used, used, "{what}: {:?}", specifics(note));
        }

        // Several reference sets (the skill's few sessions, the store's others): rare in each.
        let skill = sessions(4, 2, "sed -n 1,80p sympy/core/basic.py");
        let store = sessions(90, 2, "sed -n 1,80p sympy/core/basic.py");
        assert_eq!(judge_in(note, &[], &after, &[&store]).used, Some(0), "2 of 90: rare in the store");
        assert_eq!(judge_in(note, &[], &after, &[&skill, &store]).used, None, "2 of the skill's 4: common");
        let once = sessions(4, 1, "sed -n 1,80p sympy/core/basic.py");
        assert_eq!(judge_in(note, &[], &after, &[&once, &store]).used, Some(0), "1 of 4: no base rate yet");
    }

    /// Trust by use needs lift: used in another session, withheld in two, and used when shown
    /// at least [`LIFT_MIN`] more often than its specific appears when withheld.
    #[test]
    fn lift_table() {
        // (shown, used, used elsewhere, withheld, appeared) → (lift, trusted by use)
        let cases = [
            ((0, 0, 0, 0, 0), 0.0, false),
            ((3, 3, 1, 0, 0), 0.3, false),
            // One withheld session is not enough.
            ((3, 3, 1, 1, 0), 0.8 - 1.0 / 3.0, false),
            ((3, 3, 1, 2, 0), 0.8 - 0.25, true),
            ((1, 1, 1, 2, 0), 2.0 / 3.0 - 0.25, true),
            // A step done anyway: it appears when withheld as often as it is used when shown.
            ((6, 3, 3, 2, 1), 0.5 - 0.5, false),
            ((6, 6, 6, 2, 2), 7.0 / 8.0 - 3.0 / 4.0, false),
            // Rarely used when shown: no lift.
            ((6, 1, 1, 2, 0), 0.25 - 0.25, false),
            // Withheld, never used elsewhere (the writer's session only).
            ((3, 3, 0, 2, 0), 0.8 - 0.25, false),
        ];
        for ((shown, used, elsewhere, withheld, appeared), want_lift, want) in cases {
            let got = lift(shown, used, withheld, appeared);
            assert!((got - want_lift).abs() < 1e-9, "{shown} {used} {withheld} {appeared}: {got}");
            assert_eq!(
                trusted_by_use(shown, used, elsewhere, withheld, appeared),
                want,
                "{shown} {used} {elsewhere} {withheld} {appeared}"
            );
            let e = Evidence { shown, used, used_elsewhere: elsewhere, withheld, appeared, ..Default::default() }
                .with_trust();
            assert_eq!(e.trust == Trust::Trusted, want);
        }
    }
}
