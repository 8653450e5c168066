//! Skill names and paths from git trees (crates/skills/src/{validate,layout,fetch,store,seed}.rs).
//!
//! Real git repositories in a temporary folder whose trees are written object by object, so
//! that they hold what `git add` would refuse: `..`, `.git` in every case and with trailing
//! dots, spaces and ignorable characters, NTFS short names, names with slashes and
//! backslashes, non-UTF-8 names, NFC and NFD spellings of one name, names that differ only in
//! case, duplicate entries, symlinks out of the tree, submodules, wrong modes, deep nesting,
//! and skill folders and frontmatter names that traverse. Each is installed from its path and,
//! when installed, seeded into a workspace. Properties: nothing is written outside the data
//! directory and the seed target; no symlink is ever written; nothing a filesystem could take
//! for `.git` lands on disk; a refused install (or a skill refused alone) leaves nothing of it in the store and
//! says why; every installed name is valid.

use std::collections::BTreeSet;
use std::path::{Component, Path};

use git2::{ObjectType, Oid, Repository};
use proptest::collection::vec;
use proptest::prelude::*;
use proptest::sample::select;
use serde::{Deserialize, Serialize};
use skillmem::config::{Config, EmbeddingConfig};
use skillmem::engine::Engine;
use skillmem::skillmd::name::check as check_name;

use super::{ensure, gen, Target};

pub const TARGET: Target = Target {
    name: "skills-tree",
    ci_cases: 40,
    run: |cases, seed| super::run(cases, seed, input(), property),
    replay: |t| super::replay(t, property),
};

#[derive(Debug, Clone, Serialize, Deserialize)]
pub enum Node {
    /// A file: content and mode (0 regular, 1 executable, 2 symlink, 3 a tree's mode on a blob).
    File {
        content: String,
        mode: u8,
    },
    Dir(Vec<Entry>),
    /// A submodule: a commit that is not in the repository.
    Submodule,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Entry {
    pub name: Vec<u8>,
    pub node: Node,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Input {
    pub root: Vec<Entry>,
}

/// Names a filesystem or git may take for something else.
pub const NASTY_NAMES: &[&str] = &[
    "..",
    ".",
    ".git",
    ".GIT",
    ".Git",
    ".gIt",
    "git~1",
    "GIT~1",
    ".git ",
    ".git.",
    ".git..",
    ".git . ",
    ".g\u{200c}it",
    ".git\u{200d}",
    "\u{feff}.git",
    ".gi\u{200b}t",
    ".git::$INDEX_ALLOCATION",
    "a/b",
    "../../x",
    "/abs",
    "a\\b",
    "..\\..\\x",
    "",
    "SKILL.md",
    "skill.md",
    "SKILL.MD",
    "Skill.md",
    "café",
    "cafe\u{301}",
    "CAFÉ",
    "con",
    "nul",
    "aux.txt",
    "x:y",
    "COM1",
    "lpt9",
    ".gitmodules",
    ".gitattributes",
    "~",
    "-rf",
    ".skillmem-seeded",
    ".gitignore",
    ".skillmem-tmp-x",
    "scripts",
    "K",
    "\u{212a}",
];

fn name() -> BoxedStrategy<Vec<u8>> {
    prop_oneof![
        4 => select(NASTY_NAMES).prop_map(|s| s.as_bytes().to_vec()),
        3 => "[a-zA-Z0-9._-]{1,10}".prop_map(String::into_bytes),
        1 => vec(any::<u8>().prop_filter("NUL ends a tree entry's name", |b| *b != 0), 1..8),
        1 => (200..300usize).prop_map(|n| "n".repeat(n).into_bytes()),
    ]
    .boxed()
}

fn skill_md() -> BoxedStrategy<String> {
    prop_oneof![
        3 => Just("---\nname: x\ndescription: a skill\n---\n# body\n".to_string()),
        2 => gen::skill_ref().prop_map(|n| format!("---\nname: {n:?}\ndescription: d\n---\n")),
        1 => select(NASTY_NAMES).prop_map(|n| format!("---\nname: {n:?}\ndescription: d\n---\n")),
        1 => Just("---\nname: [unclosed\n---\n".to_string()),
        1 => gen::chars(30),
    ]
    .boxed()
}

fn file() -> impl Strategy<Value = Node> {
    (gen::chars(20), prop_oneof![6 => Just(0u8), 2 => Just(1u8), 3 => Just(2u8), 1 => Just(3u8)])
        .prop_map(|(content, mode)| Node::File { content, mode })
}

fn entries() -> BoxedStrategy<Vec<Entry>> {
    let leaf = prop_oneof![5 => file(), 1 => Just(Node::Submodule)];
    let node = leaf.prop_recursive(4, 24, 4, |inner| {
        vec((name(), inner).prop_map(|(name, node)| Entry { name, node }), 0..4).prop_map(Node::Dir)
    });
    vec((name(), node).prop_map(|(name, node)| Entry { name, node }), 0..5).boxed()
}

fn skill_dir() -> BoxedStrategy<Vec<Entry>> {
    (skill_md(), prop_oneof![6 => Just(0u8), 1 => Just(1u8), 1 => Just(2u8)], entries())
        .prop_map(|(md, mode, mut rest)| {
            rest.push(Entry { name: b"SKILL.md".to_vec(), node: Node::File { content: md, mode } });
            rest
        })
        .boxed()
}

fn folder_name() -> BoxedStrategy<Vec<u8>> {
    prop_oneof![3 => gen::skill_name().prop_map(String::into_bytes), 1 => name()].boxed()
}

pub fn input() -> impl Strategy<Value = Input> {
    prop_oneof![
        // A bundle: skills/<folder>/SKILL.md, with more at the root.
        2 => (vec((folder_name(), skill_dir()), 1..4), entries()).prop_map(|(folders, mut root)| {
            let skills = folders.into_iter().map(|(name, e)| Entry { name, node: Node::Dir(e) }).collect();
            root.push(Entry { name: b"skills".to_vec(), node: Node::Dir(skills) });
            Input { root }
        }),
        // A single skill at the root.
        2 => skill_dir().prop_map(|root| Input { root }),
        // Anything.
        1 => entries().prop_map(|root| Input { root }),
    ]
}

// ---- writing the repository -------------------------------------------------------------

const MODE_TREE: u32 = 0o040000;

/// Writes a tree object as git stores it (entries sorted the git way), bypassing the checks
/// of `git add` and the tree builder.
fn write_tree(repo: &Repository, entries: &[Entry]) -> Result<Oid, git2::Error> {
    let mut rows: Vec<(Vec<u8>, u32, Oid)> = vec![];
    for e in entries {
        let (mode, oid) = match &e.node {
            Node::File { content, mode } => {
                let oid = repo.blob(content.as_bytes())?;
                let m = match mode {
                    0 => 0o100644,
                    1 => 0o100755,
                    2 => 0o120000,
                    _ => MODE_TREE,
                };
                (m, oid)
            }
            Node::Dir(children) => (MODE_TREE, write_tree(repo, children)?),
            Node::Submodule => (0o160000, Oid::from_str("0123456789abcdef0123456789abcdef01234567")?),
        };
        rows.push((e.name.clone(), mode, oid));
    }
    // Git sorts a tree's entries by name, a tree's name compared as if it ended in '/'.
    let key = |r: &(Vec<u8>, u32, Oid)| {
        let mut k = r.0.clone();
        if r.1 == MODE_TREE {
            k.push(b'/');
        }
        k
    };
    rows.sort_by_key(key);
    let mut raw = vec![];
    for (name, mode, oid) in rows {
        raw.extend_from_slice(format!("{mode:o} ").as_bytes());
        raw.extend_from_slice(&name);
        raw.push(0);
        raw.extend_from_slice(oid.as_bytes());
    }
    repo.odb()?.write(ObjectType::Tree, &raw)
}

fn write_repo(dir: &Path, input: &Input) -> Result<(), git2::Error> {
    let repo = Repository::init_bare(dir)?;
    let tree = write_tree(&repo, &input.root)?;
    let commit = format!(
        "tree {tree}\nauthor Fuzz <fuzz@example.com> 0 +0000\ncommitter Fuzz <fuzz@example.com> 0 +0000\n\nadversarial tree\n"
    );
    let oid = repo.odb()?.write(ObjectType::Commit, commit.as_bytes())?;
    repo.reference("refs/heads/main", oid, true, "fuzz")?;
    repo.set_head("refs/heads/main")?;
    Ok(())
}

// ---- checking what is on disk -----------------------------------------------------------

/// True when some filesystem may take `name` for `.git`: case folded, trailing dots and
/// spaces dropped (Windows), ignorable code points dropped (HFS+), or the NTFS short name.
pub fn looks_like_dot_git(name: &str) -> bool {
    let folded: String = name
        .chars()
        .filter(|c| !matches!(*c as u32, 0x200C..=0x200F | 0x202A..=0x202E | 0x206A..=0x206F | 0xFEFF))
        .collect::<String>()
        .to_lowercase();
    let trimmed = folded.trim_end_matches(['.', ' ']);
    let stream = trimmed.split(':').next().unwrap_or(trimmed);
    stream == ".git" || stream == "git~1"
}

#[derive(Default)]
struct Walk {
    paths: BTreeSet<String>,
    links: Vec<String>,
}

fn walk(root: &Path, dir: &Path, out: &mut Walk) {
    let Ok(rd) = std::fs::read_dir(dir) else { return };
    for e in rd.flatten() {
        let p = e.path();
        let rel = p.strip_prefix(root).unwrap_or(&p).to_string_lossy().into_owned();
        let Ok(meta) = std::fs::symlink_metadata(&p) else { continue };
        if meta.file_type().is_symlink() {
            out.links.push(rel.clone());
        } else if meta.is_dir() {
            walk(root, &p, out);
        }
        out.paths.insert(rel);
    }
}

fn engine(data: &Path, ws: &Path) -> Result<Engine, String> {
    let config = Config { data_dir: data.to_path_buf(), embedding: EmbeddingConfig::Off, ..Config::default() };
    Engine::open(config, Some(ws.to_path_buf())).map_err(|e| format!("cannot open the store: {e}"))
}

pub fn property(input: &Input) -> Result<(), String> {
    let t = tempfile::tempdir().map_err(|e| e.to_string())?;
    let repo_dir = t.path().join("repo.git");
    if write_repo(&repo_dir, input).is_err() {
        return Ok(()); // git itself cannot hold this tree: nothing to install
    }
    let world = t.path().join("world");
    let data = world.join("data");
    let ws = world.join("ws");
    std::fs::create_dir_all(&ws).map_err(|e| e.to_string())?;
    std::fs::write(world.join("sentinel"), "outside").map_err(|e| e.to_string())?;
    let engine = engine(&data, &ws)?;
    let mut before = Walk::default();
    walk(&world, &world, &mut before);

    let skills = engine.skills();
    let installed = skills.install(&repo_dir.display().to_string(), None, &Default::default(), &|_| {});
    let mut names = vec![];
    match &installed {
        Ok(o) => {
            for i in &o.skills {
                ensure(check_name(&i.name).is_ok(), || format!("installed under an invalid name {:?}", i.name))?;
                let p = Path::new(&i.path);
                ensure(p.starts_with(data.join("store")), || format!("stored outside the store: {}", i.path))?;
                names.push(i.name.clone());
            }
            // A skill refused alone left nothing of it in the store.
            for r in &o.refused {
                let stored = check_name(&r.name).is_ok() && data.join("store").join(&r.name).exists();
                ensure(names.contains(&r.name) || !stored, || {
                    format!("refused skill {:?} ({}) is in the store", r.name, r.reason)
                })?;
                ensure(!r.reason.trim().is_empty(), || "a skill refused without a reason".into())?;
            }
            let seeded = skills.seed(&ws, &names, None, false);
            if let Err(e) = &seeded {
                ensure(!e.to_string().trim().is_empty(), || "a seed failed without a reason".into())?;
            }
        }
        Err(e) => {
            let msg = e.to_string();
            ensure(!msg.trim().is_empty(), || "an install refused without a reason".into())?;
            // Nothing was stored: every name is checked before anything is written.
            let store = data.join("store");
            let mut left = Walk::default();
            walk(&store, &store, &mut left);
            let stray: Vec<&String> = left
                .paths
                .iter()
                .filter(|p| !(p.as_str() == ".staging" || p.as_str() == ".lock" || p.ends_with(".lock")))
                .collect();
            ensure(stray.is_empty(), || format!("a refused install ({msg}) left {stray:?} in the store"))?;
        }
    }
    drop(skills);

    let mut after = Walk::default();
    walk(&world, &world, &mut after);
    ensure(after.links.is_empty(), || format!("symlinks written: {:?}", after.links))?;
    let seed_root = Path::new("ws/.claude/skills");
    for p in after.paths.difference(&before.paths) {
        let path = Path::new(p);
        let allowed = path.starts_with("data")
            || path == Path::new("ws/.claude")
            || path == seed_root
            || (path.starts_with(seed_root)
                && path.strip_prefix(seed_root).ok().and_then(|r| r.components().next()).is_some_and(|c| {
                    let c = c.as_os_str().to_string_lossy();
                    names.iter().any(|n| *n == c) || c.starts_with(".skillmem-tmp-")
                }));
        ensure(allowed, || format!("written outside the store and the seed target: {p}"))?;
        for c in path.components() {
            if let Component::Normal(s) = c {
                let s = s.to_string_lossy();
                ensure(!looks_like_dot_git(&s), || format!("a path a filesystem may take for .git: {p}"))?;
            } else {
                return Err(format!("a path with a {c:?} component: {p}"));
            }
        }
    }
    ensure(std::fs::read_to_string(world.join("sentinel")).ok().as_deref() == Some("outside"), || {
        "the file outside was changed".into()
    })?;
    Ok(())
}
