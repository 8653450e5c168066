//! Skill names, sources, refs and seed targets (crates/skills/src/{validate,fetch,seed}.rs): the
//! strings a user or a repository gives that become paths or git lookups.
//!
//! Properties: `check_name` accepts exactly the Agent Skills rule (checked here against an
//! independent reading of it) and says why otherwise; an accepted source never reads as an
//! option and has no control characters; a ref resolves only to a commit of the repository, and
//! only by its name or a hex prefix (no revision syntax); an accepted seed target stays inside
//! the working folder.

use std::path::{Component, Path, PathBuf};
use std::sync::OnceLock;

use git2::{Oid, Repository, Signature};
use proptest::prelude::*;
use serde::{Deserialize, Serialize};
use skillmem::skillmd::name::check as check_name;
use skillmem::skills::fetch::{basename, normalize, resolve};
use skillmem::skills::seed::check_target;

use super::{ensure, gen, Target};

pub const TARGET: Target = Target {
    name: "skill-names",
    ci_cases: 1500,
    run: |cases, seed| super::run(cases, seed, input(), property),
    replay: |t| super::replay(t, property),
};

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Input {
    pub name: String,
    pub url: String,
    pub rref: String,
    pub target: String,
}

const NAME_TOKENS: &[&str] = &[
    "a", "z", "0", "9", "-", "--", "pdf", "com", "lpt", "1", "con", "nul", "aux", "prn", "synced", "A", "_", ".", "/",
    "é", "\u{131}", "\u{212a}", " ",
];

const URL_TOKENS: &[&str] = &[
    "https://",
    "http://",
    "ssh://",
    "git://",
    "file://",
    "ftp://",
    "ext::",
    "HTTPS://",
    "git@",
    "github.com",
    ":",
    "/",
    "//",
    "-",
    "--upload-pack=",
    "\n",
    "\t",
    "\u{7f}",
    ".git",
    "..",
    "~",
    "C:\\",
    "a",
    " ",
];

const REF_TOKENS: &[&str] = &[
    "main",
    "dev",
    "v1",
    "v2",
    "refs/heads/",
    "refs/tags/",
    "refs/remotes/origin/",
    "HEAD",
    "~1",
    "^",
    "^{tree}",
    "@{-1}",
    "..",
    ":",
    "-",
    "--",
    " ",
    "\n",
    "*",
    "?",
    "[",
    "main:SKILL.md",
];

fn with_oid_prefixes() -> BoxedStrategy<String> {
    // Prefixes of the fixture's commit ids, of every length, in either case.
    (0..3usize, 1..41usize, any::<bool>())
        .prop_map(|(i, n, upper)| {
            let id = fixture().commits[i].to_string();
            let p = &id[..n];
            if upper {
                p.to_ascii_uppercase()
            } else {
                p.to_string()
            }
        })
        .boxed()
}

pub fn input() -> impl Strategy<Value = Input> {
    (
        prop_oneof![2 => gen::soup(NAME_TOKENS, 10), 2 => gen::skill_name().boxed(), 1 => gen::skill_ref()],
        prop_oneof![gen::soup(URL_TOKENS, 8), gen::chars(20)],
        prop_oneof![2 => gen::soup(REF_TOKENS, 4), 2 => with_oid_prefixes(), 1 => gen::chars(12)],
        prop_oneof![
            gen::soup(&[".claude/skills", "/", "..", ".", "\0", "a", " ", "\\", "//", "~"][..], 5),
            gen::chars(12)
        ],
    )
        .prop_map(|(name, url, rref, target)| Input { name, url, rref, target })
}

/// The name rule, read independently: `^[a-z0-9]+(-[a-z0-9]+)*$`, 1 to 64 bytes, and not a
/// reserved or device name.
fn name_ok(n: &str) -> bool {
    let shape = !n.is_empty()
        && n.len() <= 64
        && n.bytes().all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-')
        && !n.starts_with('-')
        && !n.ends_with('-')
        && !n.contains("--");
    let device = (n.len() == 4)
        && (n.starts_with("com") || n.starts_with("lpt"))
        && n.as_bytes()[3].is_ascii_digit()
        && n.as_bytes()[3] != b'0';
    shape && !device && !["synced", "con", "nul", "aux", "prn"].contains(&n)
}

struct Fixture {
    _dir: tempfile::TempDir,
    repo_path: PathBuf,
    commits: Vec<Oid>,
}

/// A repository with three commits: `main` (HEAD), `dev`, an annotated tag `v1` and a
/// lightweight tag `v2`.
fn fixture() -> &'static Fixture {
    static F: OnceLock<Fixture> = OnceLock::new();
    F.get_or_init(|| {
        let dir = tempfile::tempdir().unwrap();
        let repo = Repository::init_bare(dir.path().join("r.git")).unwrap();
        let sig = Signature::new("F", "f@example.com", &git2::Time::new(0, 0)).unwrap();
        let tree = repo.treebuilder(None).unwrap().write().unwrap();
        let tree = repo.find_tree(tree).unwrap();
        let c1 = repo.commit(Some("refs/heads/main"), &sig, &sig, "one", &tree, &[]).unwrap();
        let p1 = repo.find_commit(c1).unwrap();
        let c2 = repo.commit(Some("refs/heads/main"), &sig, &sig, "two", &tree, &[&p1]).unwrap();
        let c3 = repo.commit(Some("refs/heads/dev"), &sig, &sig, "three", &tree, &[&p1]).unwrap();
        repo.set_head("refs/heads/main").unwrap();
        repo.tag("v1", &repo.find_object(c1, None).unwrap(), &sig, "v1", false).unwrap();
        repo.reference("refs/tags/v2", c3, true, "v2").unwrap();
        Fixture { repo_path: dir.path().join("r.git"), _dir: dir, commits: vec![c1, c2, c3] }
    })
}

pub fn property(input: &Input) -> Result<(), String> {
    // Names.
    match check_name(&input.name) {
        Ok(()) => ensure(name_ok(&input.name), || format!("{:?} accepted against the rule", input.name))?,
        Err(e) => {
            ensure(!name_ok(&input.name), || format!("{:?} refused: {e}", input.name))?;
            ensure(!e.trim().is_empty(), || "a name refused without a reason".into())?;
        }
    }
    // Sources.
    match normalize(&input.url) {
        Ok(u) => {
            ensure(!u.starts_with('-') && !u.chars().any(char::is_control), || format!("source accepted: {u:?}"))?;
            let scheme = u.split_once("://").map(|(s, _)| s.to_ascii_lowercase());
            let ok = match scheme {
                Some(s) => ["https", "http", "ssh", "git", "file"].contains(&s.as_str()),
                None => Path::new(&u).is_absolute() || u.contains(':'),
            };
            ensure(ok, || format!("{:?} accepted as {u:?}", input.url))?;
            let b = basename(&u);
            ensure(!b.contains('/'), || format!("basename {b:?}"))?;
        }
        Err(e) => ensure(e.to_string().contains("url"), || format!("the error does not name the url: {e}"))?,
    }
    // Refs: only a commit of the repository, by name or hex prefix.
    let f = fixture();
    let repo = Repository::open_bare(&f.repo_path).map_err(|e| e.to_string())?;
    match resolve(&repo, "r", Some(&input.rref)) {
        Ok(oid) => {
            ensure(f.commits.contains(&oid), || {
                format!("ref {:?} resolved to {oid}, no commit of the repository", input.rref)
            })?;
            let r = input.rref.trim();
            let by_name = ["main", "dev", "v1", "v2", "HEAD"].iter().any(|n| r == *n || r.ends_with(&format!("/{n}")));
            let by_hex = (4..=40).contains(&r.len()) && r.bytes().all(|b| b.is_ascii_hexdigit());
            ensure(by_name || by_hex || r.is_empty(), || format!("ref {:?} resolved by revision syntax", input.rref))?;
        }
        Err(e) => ensure(!e.to_string().trim().is_empty(), || "a ref refused without a reason".into())?,
    }
    // Seed targets stay inside the working folder.
    if let Ok(p) = check_target(&input.target) {
        let inside = p.components().all(|c| matches!(c, Component::Normal(_) | Component::CurDir));
        ensure(inside && !p.as_os_str().is_empty(), || format!("target {:?} leaves the working folder", input.target))?;
    }
    Ok(())
}
