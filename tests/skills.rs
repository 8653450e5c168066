//! Session skills end to end: repositories built on the fly with the `git` CLI, installed by
//! `file://` URL or local path through a real `skillmem serve`, and seeded into plain folders,
//! main checkouts and linked worktrees that `git add -A` must not pick up.

mod common;

use std::path::{Path, PathBuf};

use common::*;
use serde_json::{json, Value};
use skillmem::client::Client;

fn git_in(home: &Path, dir: &Path, args: &[&str]) -> String {
    let out = std::process::Command::new("git")
        .args(["-c", "user.name=Test", "-c", "user.email=test@example.com", "-c", "init.defaultBranch=main"])
        .args(["-c", "commit.gpgsign=false", "-c", "tag.gpgsign=false"])
        .args(args)
        .current_dir(dir)
        .env("HOME", home)
        .env("GIT_CONFIG_NOSYSTEM", "1")
        .output()
        .unwrap();
    assert!(out.status.success(), "git {args:?} in {}: {}", dir.display(), String::from_utf8_lossy(&out.stderr));
    String::from_utf8_lossy(&out.stdout).trim().to_string()
}

fn md(name: &str) -> String {
    format!("---\nname: {name}\ndescription: The {name} skill.\n---\n# {name}\n")
}

/// Writes files (`@target` makes a symlink, `!body` an executable; `-` deletes).
fn write_files(dir: &Path, files: &[(&str, &str)]) {
    use std::os::unix::fs::PermissionsExt;
    for (path, content) in files {
        let p = dir.join(path);
        std::fs::create_dir_all(p.parent().unwrap()).unwrap();
        if *content == "-" {
            let _ = std::fs::remove_dir_all(&p);
            let _ = std::fs::remove_file(&p);
        } else if let Some(target) = content.strip_prefix('@') {
            std::os::unix::fs::symlink(target, &p).unwrap();
        } else if let Some(body) = content.strip_prefix('!') {
            std::fs::write(&p, body).unwrap();
            std::fs::set_permissions(&p, std::fs::Permissions::from_mode(0o755)).unwrap();
        } else {
            std::fs::write(&p, content).unwrap();
        }
    }
}

struct T {
    w: World,
}

impl T {
    fn new() -> T {
        T { w: World::new() }
    }

    fn git(&self, dir: &Path, args: &[&str]) -> String {
        git_in(&self.w.home, dir, args)
    }

    /// A repository under the temp dir with one commit of `files`; returns its folder.
    fn repo(&self, name: &str, files: &[(&str, &str)]) -> PathBuf {
        let dir = self.w.tmp.path().join("repos").join(name);
        std::fs::create_dir_all(&dir).unwrap();
        self.git(&dir, &["init", "-q"]);
        self.commit(&dir, files, "first");
        dir
    }

    /// Commits `files` (changes) in `dir`; returns the new HEAD.
    fn commit(&self, dir: &Path, files: &[(&str, &str)], msg: &str) -> String {
        write_files(dir, files);
        self.git(dir, &["add", "-A"]);
        self.git(dir, &["commit", "-q", "--allow-empty", "-m", msg]);
        self.git(dir, &["rev-parse", "HEAD"])
    }

    fn store_dirs(&self) -> Vec<String> {
        let mut out = vec![];
        let Ok(names) = std::fs::read_dir(self.w.data.join("store")) else { return out };
        for n in names.flatten() {
            let name = n.file_name().to_string_lossy().into_owned();
            if name.starts_with('.') {
                continue;
            }
            for v in std::fs::read_dir(n.path()).unwrap().flatten() {
                out.push(format!("{name}/{}", v.file_name().to_string_lossy()));
            }
        }
        out.sort();
        out
    }
}

fn url(dir: &Path) -> String {
    format!("file://{}", dir.display())
}

fn install(c: &mut Client, url: &str, r#ref: Option<&str>) -> Value {
    let mut p = json!({ "url": url });
    if let Some(r) = r#ref {
        p["ref"] = json!(r);
    }
    c.request("skillmem/skills/install", p).unwrap()
}

fn names(skills: &Value) -> Vec<String> {
    skills.as_array().unwrap().iter().map(|s| s["name"].as_str().unwrap().to_string()).collect()
}

fn seed(c: &mut Client, cwd: &Path, skills: &[&str], extra: Value) -> Value {
    let mut p = json!({ "cwd": cwd.display().to_string(), "skills": skills });
    if let Value::Object(m) = extra {
        for (k, v) in m {
            p[k] = v;
        }
    }
    c.request("skillmem/skills/seed", p).unwrap()
}

fn ops(result: &Value) -> Vec<(String, String)> {
    result["actions"]
        .as_array()
        .unwrap()
        .iter()
        .map(|a| (a["op"].as_str().unwrap().to_string(), a["skill"].as_str().unwrap().to_string()))
        .collect()
}

fn op(o: &str, s: &str) -> (String, String) {
    (o.to_string(), s.to_string())
}

fn assert_err(r: Value, code: i64, kind: &str, mentions: &[&str]) -> String {
    let e = err(r);
    assert_eq!(e["code"], json!(code), "{e}");
    assert_eq!(e["data"]["kind"], json!(kind), "{e}");
    let msg = e["message"].as_str().unwrap().to_string();
    for m in mentions {
        assert!(msg.contains(m), "{msg:?} should mention {m:?}");
    }
    msg
}

fn list(c: &mut Client) -> Value {
    ok(c.request("skillmem/skills/list", json!({})).unwrap())
}

// ---- install, layouts, refs --------------------------------------------------------------

#[test]
fn bundle_is_installed_pinned_and_stored_without_symlinks_or_git() {
    let t = T::new();
    let repo = t.repo(
        "bundle",
        &[
            ("skills/pdf/SKILL.md", &md("pdf")),
            ("skills/pdf/scripts/run.sh", "!#!/bin/sh\necho hi\n"),
            ("skills/pdf/reference.md", "ref"),
            ("skills/jq/SKILL.md", &md("jq")),
            ("skills/jq/pw", "@/etc/passwd"),
            ("skills/jq/up", "@../../.."),
            ("skills/deep/inner/SKILL.md", &md("inner")),
            (".openclaw/skills/ghost/SKILL.md", &md("ghost")),
            ("README.md", "a bundle"),
        ],
    );
    let head = t.git(&repo, &["rev-parse", "HEAD"]);
    let mut c = t.w.spawn();
    let r = ok(install(&mut c, &url(&repo), None));
    assert_eq!(names(&r["skills"]), ["jq", "pdf"]);
    let pdf = &r["skills"][1];
    assert_eq!(pdf["pinnedRef"], json!(head));
    assert_eq!(pdf["subpath"], json!("skills/pdf"));
    assert_eq!(pdf["source"], json!(url(&repo)));
    assert_eq!(pdf["description"], json!("The pdf skill."));
    assert_eq!(pdf["contentHash"].as_str().unwrap().len(), 64);
    assert!(pdf["warnings"].to_string().contains("executable files: scripts/run.sh"), "{pdf}");
    let jq = &r["skills"][0];
    assert!(jq["warnings"].to_string().contains("pw is a symlink"), "{jq}");
    assert!(jq["warnings"].to_string().contains("up is a symlink"), "{jq}");

    let dir = PathBuf::from(pdf["path"].as_str().unwrap());
    assert!(dir.starts_with(t.w.data.join("store/pdf")));
    assert!(dir.ends_with(pdf["contentHash"].as_str().unwrap()));
    use std::os::unix::fs::PermissionsExt;
    let mode = std::fs::metadata(dir.join("scripts/run.sh")).unwrap().permissions().mode();
    assert_eq!(mode & 0o111, 0o111, "the executable bit is kept");
    assert!(!dir.join(".git").exists());
    let jq_dir = PathBuf::from(jq["path"].as_str().unwrap());
    assert!(jq_dir.join("SKILL.md").is_file());
    assert!(std::fs::symlink_metadata(jq_dir.join("pw")).is_err(), "symlinks are not copied");
    assert!(std::fs::symlink_metadata(jq_dir.join("up")).is_err());

    let l = list(&mut c);
    assert_eq!(l["sources"].as_array().unwrap().len(), 1);
    assert_eq!(l["sources"][0]["source"], json!(url(&repo)));
    assert_eq!(l["sources"][0]["pinnedRef"], json!(head));
    assert_eq!(names(&l["sources"][0]["skills"]), ["jq", "pdf"]);
    assert_eq!(c.shutdown().unwrap(), 0);
}

#[test]
fn single_by_local_path_and_bundle_wins_over_root() {
    let t = T::new();
    let single = t.repo("solo-repo", &[("SKILL.md", &md("solo")), ("notes/more.md", "x")]);
    let both = t.repo("both", &[("SKILL.md", &md("rooted")), ("skills/inner/SKILL.md", &md("inner"))]);
    let mut c = t.w.spawn();
    let r = ok(install(&mut c, &single.display().to_string(), None));
    assert_eq!(names(&r["skills"]), ["solo"]);
    assert_eq!(r["skills"][0]["subpath"], json!(""));
    assert_eq!(r["skills"][0]["source"], json!(single.canonicalize().unwrap().display().to_string()));
    assert!(PathBuf::from(r["skills"][0]["path"].as_str().unwrap()).join("notes/more.md").is_file());
    let r = ok(install(&mut c, &url(&both), None));
    assert_eq!(names(&r["skills"]), ["inner"], "the bundle wins over the root SKILL.md");
    // A single skill without a name in its frontmatter takes the repository's name.
    let unnamed = t.repo("unnamed-skill.git", &[("SKILL.md", "---\ndescription: d\n---\n")]);
    let r = ok(install(&mut c, &url(&unnamed), None));
    assert_eq!(names(&r["skills"]), ["unnamed-skill"]);
}

#[test]
fn no_layout_is_invalid_skill_repo_and_writes_nothing() {
    let t = T::new();
    let none = t.repo("none", &[("README.md", "x"), ("node_modules/dep/SKILL.md", &md("dep")), ("docs/skill.md", "x")]);
    let mut c = t.w.spawn();
    assert_err(install(&mut c, &url(&none), None), -32005, "invalidSkillRepo", &["skills/<name>/SKILL.md"]);
    let linked = t.repo("linked", &[("SKILL.md", "@/etc/passwd")]);
    assert_err(install(&mut c, &url(&linked), None), -32005, "invalidSkillRepo", &["not a regular file"]);
    assert_eq!(list(&mut c)["sources"], json!([]));
    assert!(t.store_dirs().is_empty());
}

#[test]
fn annotated_tags_commits_and_branches_pin_full_commits() {
    let t = T::new();
    let repo = t.repo("refs", &[("skills/a/SKILL.md", &md("a")), ("skills/a/v.txt", "1")]);
    let c1 = t.git(&repo, &["rev-parse", "HEAD"]);
    t.git(&repo, &["tag", "-a", "v1", "-m", "release 1"]);
    let c2 = t.commit(&repo, &[("skills/a/v.txt", "2")], "two");
    t.git(&repo, &["checkout", "-q", "-b", "dev"]);
    let c3 = t.commit(&repo, &[("skills/a/v.txt", "3")], "three");
    t.git(&repo, &["checkout", "-q", "main"]);
    let mut c = t.w.spawn();
    let v = |r: &Value| {
        std::fs::read_to_string(PathBuf::from(r["skills"][0]["path"].as_str().unwrap()).join("v.txt")).unwrap()
    };

    let r = ok(install(&mut c, &url(&repo), Some("v1")));
    assert_eq!(r["skills"][0]["pinnedRef"], json!(c1), "the annotated tag is peeled to its commit");
    assert_eq!(v(&r), "1");
    let r = ok(install(&mut c, &url(&repo), None));
    assert_eq!(r["skills"][0]["pinnedRef"], json!(c2), "HEAD by default; reinstalling updates");
    assert_eq!(v(&r), "2");
    let r = ok(install(&mut c, &url(&repo), Some("dev")));
    assert_eq!(r["skills"][0]["pinnedRef"], json!(c3));
    let r = ok(install(&mut c, &url(&repo), Some(&c1)));
    assert_eq!(r["skills"][0]["pinnedRef"], json!(c1), "a full commit id");
    let r = ok(install(&mut c, &url(&repo), Some(&c2[..10])));
    assert_eq!(r["skills"][0]["pinnedRef"], json!(c2), "an abbreviated commit id");
    assert_eq!(t.store_dirs().len(), 1, "old versions leave the store: {:?}", t.store_dirs());

    assert_err(install(&mut c, &url(&repo), Some("no-such-ref")), -32004, "git", &["no-such-ref"]);
    assert_err(install(&mut c, &url(&repo), Some("--upload-pack=x")), -32602, "invalidParams", &[]);
    let l = list(&mut c);
    assert_eq!(l["sources"][0]["pinnedRef"], json!(c2), "a failed install changes nothing");
}

#[test]
fn a_name_from_another_source_is_a_collision_naming_both() {
    let t = T::new();
    let a = t.repo("a", &[("skills/shared/SKILL.md", &md("shared")), ("skills/only-a/SKILL.md", &md("only-a"))]);
    let b = t.repo(
        "b",
        &[
            ("skills/shared/SKILL.md", "---\nname: shared\ndescription: other\n---\n"),
            ("skills/only-b/SKILL.md", &md("only-b")),
        ],
    );
    let mut c = t.w.spawn();
    ok(install(&mut c, &url(&a), None));
    let before = t.store_dirs();
    // The name both offer is refused, naming both places and the way out; the rest installs.
    let r = ok(install(&mut c, &url(&b), None));
    assert_eq!(names(&r["skills"]), ["only-b"]);
    assert_eq!(r["refused"].as_array().unwrap().len(), 1, "{r}");
    assert_eq!(r["refused"][0]["name"], json!("shared"));
    let why = r["refused"][0]["reason"].as_str().unwrap();
    for m in [url(&a).as_str(), "skills/shared", "--skill skills/shared --as NEW-NAME"] {
        assert!(why.contains(m), "{why:?} should mention {m:?}");
    }
    assert_eq!(list(&mut c)["sources"][0]["skills"][1]["name"], json!("shared"));
    // A source whose every skill clashes installs nothing.
    let c2 = t.repo("c2", &[("skills/shared/SKILL.md", &md("shared"))]);
    assert_err(install(&mut c, &url(&c2), None), -32003, "nameCollision", &[&url(&a), &url(&c2), "shared"]);
    let l = list(&mut c);
    assert_eq!(l["sources"].as_array().unwrap().len(), 2);
    let mut after = t.store_dirs();
    after.retain(|d| !d.starts_with("only-b/"));
    assert_eq!(after, before, "nothing of the clashing skill was stored");
}

#[test]
fn update_reports_new_skills_and_removes_dropped_ones_then_remove() {
    let t = T::new();
    let repo = t.repo("up", &[("skills/a/SKILL.md", &md("a")), ("skills/b/SKILL.md", &md("b"))]);
    let mut c = t.w.spawn();
    let first = ok(install(&mut c, &url(&repo), None));
    let again = ok(install(&mut c, &url(&repo), None));
    assert_eq!(again, first, "a reinstall at the same commit changes nothing");
    std::fs::remove_dir_all(first["skills"][0]["path"].as_str().unwrap()).unwrap();
    let again = ok(install(&mut c, &url(&repo), None));
    assert!(
        PathBuf::from(again["skills"][0]["path"].as_str().unwrap()).join("SKILL.md").is_file(),
        "a lost store folder is restored"
    );
    let head = t.commit(&repo, &[("skills/b", "-"), ("skills/c/SKILL.md", &md("c"))], "swap b for c");
    let r = ok(c.request("skillmem/skills/update", json!({ "source": url(&repo) })).unwrap());
    assert_eq!(names(&r["skills"]), ["a", "c"]);
    assert_eq!(r["removed"], json!(["b"]));
    assert_eq!(r["skills"][0]["pinnedRef"], json!(head));
    assert!(t.store_dirs().iter().all(|d| !d.starts_with("b/")), "{:?}", t.store_dirs());
    let r =
        ok(c.request("skillmem/skills/resolve", json!({ "global": ["b", "a"], "list": [], "task": ["c"] })).unwrap());
    assert_eq!(r, json!({ "skills": ["a", "c"], "dropped": ["b"] }));

    assert_err(
        c.request("skillmem/skills/update", json!({ "source": "file:///nowhere" })).unwrap(),
        -32002,
        "notFound",
        &["skills list"],
    );
    let r = ok(c.request("skillmem/skills/remove", json!({ "source": url(&repo) })).unwrap());
    assert_eq!(r["removed"], json!(["a", "c"]));
    assert!(t.store_dirs().is_empty());
    assert_eq!(list(&mut c)["sources"], json!([]));
    assert_err(c.request("skillmem/skills/remove", json!({ "source": url(&repo) })).unwrap(), -32002, "notFound", &[]);
}

#[test]
fn resolve_is_a_first_seen_union_that_drops_unknown_names() {
    let t = T::new();
    let repo = t.repo(
        "r",
        &[("skills/a/SKILL.md", &md("a")), ("skills/b/SKILL.md", &md("b")), ("skills/c/SKILL.md", &md("c"))],
    );
    let mut c = t.w.spawn();
    ok(install(&mut c, &url(&repo), None));
    let r = ok(c
        .request(
            "skillmem/skills/resolve",
            json!({ "global": ["c", "x"], "list": ["a", "c"], "task": ["y", "b", "a", "x"] }),
        )
        .unwrap());
    assert_eq!(r, json!({ "skills": ["c", "a", "b"], "dropped": ["x", "y"] }));
    let r = ok(c.request("skillmem/skills/resolve", json!({})).unwrap());
    assert_eq!(r, json!({ "skills": [], "dropped": [] }));
    // Requests without params.
    let r = ok(c.request("skillmem/skills/resolve", Value::Null).unwrap());
    assert_eq!(r, json!({ "skills": [], "dropped": [] }));
    let r = ok(c.request("skillmem/skills/list", Value::Null).unwrap());
    assert_eq!(names(&r["sources"][0]["skills"]), ["a", "b", "c"]);
}

// ---- hostile input -----------------------------------------------------------------------

#[test]
fn hostile_names_oversize_and_bad_urls_are_refused_and_the_server_keeps_serving() {
    let t = T::new();
    let mut c = t.w.spawn();
    for (i, name) in ["../../evil", "Evil", "con", "lpt3", "synced", "a--b", &"x".repeat(65)].iter().enumerate() {
        let repo =
            t.repo(&format!("hostile-{i}"), &[("SKILL.md", &format!("---\nname: \"{name}\"\ndescription: d\n---\n"))]);
        assert_err(install(&mut c, &url(&repo), None), -32005, "invalidSkillRepo", &["invalid name"]);
    }
    // A bad folder of a bundle is refused alone (with the way out); the others install.
    let bad_folder =
        t.repo("bad-folder", &[("skills/good/SKILL.md", &md("good")), ("skills/Bad_Name/SKILL.md", &md("x"))]);
    let r = ok(install(&mut c, &url(&bad_folder), None));
    assert_eq!(names(&r["skills"]), ["good"]);
    assert_eq!(r["refused"][0]["subpath"], json!("skills/Bad_Name"));
    assert!(r["refused"][0]["reason"].as_str().unwrap().contains("--skill skills/Bad_Name --as NEW-NAME"), "{r}");
    ok(c.request("skillmem/skills/remove", json!({ "source": url(&bad_folder) })).unwrap());
    let bad_yaml = t.repo("bad-yaml", &[("SKILL.md", "---\nname: a\nskill-memory: { enabled: true\n---\n")]);
    assert_err(install(&mut c, &url(&bad_yaml), None), -32005, "invalidSkillRepo", &["frontmatter"]);

    let big = t.w.tmp.path().join("repos/big");
    std::fs::create_dir_all(big.join("skills/big")).unwrap();
    std::fs::write(big.join("skills/big/SKILL.md"), md("big")).unwrap();
    let f = std::fs::File::create(big.join("skills/big/blob.bin")).unwrap();
    f.set_len(51 * 1024 * 1024).unwrap();
    drop(f);
    t.git(&big, &["init", "-q"]);
    t.git(&big, &["add", "-A"]);
    t.git(&big, &["commit", "-q", "-m", "big"]);
    assert_err(install(&mut c, &url(&big), None), -32005, "invalidSkillRepo", &["50 MB", "blob.bin"]);

    assert_err(install(&mut c, "-uhttps://example.com/x", None), -32602, "invalidParams", &["'-'"]);
    assert_err(install(&mut c, "--upload-pack=touch /tmp/pwned", None), -32602, "invalidParams", &[]);
    assert_err(install(&mut c, "relative/path", None), -32602, "invalidParams", &["absolute"]);
    assert_err(install(&mut c, "", None), -32602, "invalidParams", &[]);
    let missing = t.w.tmp.path().join("no-such-repo");
    assert_err(install(&mut c, &url(&missing), None), -32004, "git", &["cannot clone"]);
    assert_err(install(&mut c, &missing.display().to_string(), None), -32004, "git", &[]);
    assert_err(install(&mut c, "https://127.0.0.1:9/nothing.git", None), -32004, "git", &["cannot clone"]);
    assert_err(c.request("skillmem/skills/install", json!({ "ref": "x" })).unwrap(), -32602, "invalidParams", &["url"]);

    assert_eq!(list(&mut c)["sources"], json!([]));
    assert!(t.store_dirs().is_empty(), "{:?}", t.store_dirs());
    assert_eq!(c.shutdown().unwrap(), 0, "still serving after every refusal");
}

// ---- seeding -----------------------------------------------------------------------------

fn bundle_abc(t: &T) -> PathBuf {
    t.repo(
        "abc",
        &[
            ("skills/a/SKILL.md", &md("a")),
            ("skills/a/scripts/go.sh", "!echo go"),
            ("skills/a/.gitignore", "node_modules\n"),
            ("skills/b/SKILL.md", &md("b")),
            ("skills/c/SKILL.md", &md("c")),
            ("skills/own/SKILL.md", &md("own")),
            ("skills/mine/SKILL.md", &md("mine")),
        ],
    )
}

#[test]
fn seed_plain_folder_dry_run_reseed_fewer_and_no_stale_files() {
    let t = T::new();
    let repo = bundle_abc(&t);
    let mut c = t.w.spawn();
    ok(install(&mut c, &url(&repo), None));
    let cwd = t.w.tmp.path().join("plain");
    std::fs::create_dir_all(&cwd).unwrap();
    let skills_dir = cwd.join(".claude/skills");

    let dry = ok(seed(&mut c, &cwd, &["a", "b"], json!({ "dryRun": true })));
    assert_eq!(ops(&dry), [op("copy", "a"), op("ignore", "a"), op("copy", "b"), op("ignore", "b")]);
    assert!(!cwd.join(".claude").exists(), "a dry run writes nothing");

    let r = ok(seed(&mut c, &cwd, &["a", "b"], json!({})));
    assert_eq!(r["actions"], dry["actions"], "the dry run announced exactly this");
    assert_eq!(r["actions"][0]["path"], json!(skills_dir.join("a").display().to_string()));
    assert_eq!(std::fs::read_to_string(skills_dir.join("a/SKILL.md")).unwrap(), md("a"));
    assert!(
        std::fs::read_to_string(skills_dir.join("a/.gitignore")).unwrap().lines().any(|l| l == "*"),
        "ours, not the skill's"
    );
    assert!(skills_dir.join("a/.skillmem-seeded").is_file());
    use std::os::unix::fs::PermissionsExt;
    assert_eq!(std::fs::metadata(skills_dir.join("a/scripts/go.sh")).unwrap().permissions().mode() & 0o111, 0o111);

    std::fs::write(skills_dir.join("a/stale.txt"), "left by the session").unwrap();
    write_files(
        &skills_dir,
        &[(".skillmem-tmp-a-crashed/.gitignore", "*\n"), (".skillmem-tmp-a-crashed/SKILL.md", "half")],
    );
    std::fs::write(skills_dir.join("a/SKILL.md"), "edited").unwrap();
    let dry = ok(seed(&mut c, &cwd, &["a"], json!({ "dryRun": true })));
    assert_eq!(ops(&dry), [op("copy", "a"), op("ignore", "a"), op("remove", "b")]);
    assert!(skills_dir.join("b").exists() && skills_dir.join("a/stale.txt").exists(), "dry run");
    let r = ok(seed(&mut c, &cwd, &["a"], json!({})));
    assert_eq!(r["actions"], dry["actions"]);
    assert!(!skills_dir.join("b").exists(), "a seeded skill no longer wanted is removed");
    assert!(!skills_dir.join("a/stale.txt").exists(), "a replaced copy keeps no stale file");
    assert_eq!(std::fs::read_to_string(skills_dir.join("a/SKILL.md")).unwrap(), md("a"));
    let leftovers: Vec<_> = std::fs::read_dir(&skills_dir).unwrap().flatten().map(|e| e.file_name()).collect();
    assert_eq!(leftovers, ["a"], "no staging folder left behind");

    let r = ok(seed(&mut c, &cwd, &[], json!({})));
    assert_eq!(ops(&r), [op("remove", "a")]);
    assert!(!skills_dir.join("a").exists());
}

#[test]
fn seed_into_main_checkout_stages_nothing_even_with_a_negation() {
    let t = T::new();
    let repo = bundle_abc(&t);
    let mut c = t.w.spawn();
    ok(install(&mut c, &url(&repo), None));
    let proj = t.repo(
        "project",
        &[
            (".gitignore", "*.log\n!.claude/skills/**\n"),
            (".claude/skills/own/SKILL.md", "the project's own"),
            ("src.txt", "x"),
        ],
    );
    std::fs::write(proj.join(".git/info/exclude"), "!.claude/\n!.claude/skills/**\n").unwrap();
    write_files(&proj, &[(".claude/skills/mine/SKILL.md", "untracked but the project's"), ("notes.txt", "new")]);
    let exclude_before = std::fs::read_to_string(proj.join(".git/info/exclude")).unwrap();

    let r = ok(seed(&mut c, &proj, &["a", "b", "own", "mine"], json!({})));
    let o = ops(&r);
    assert_eq!(o[..4], [op("copy", "a"), op("ignore", "a"), op("copy", "b"), op("ignore", "b")]);
    assert_eq!(o[4..], [op("skip", "own"), op("skip", "mine")]);
    let reasons: Vec<&str> =
        r["actions"].as_array().unwrap()[4..].iter().map(|a| a["reason"].as_str().unwrap()).collect();
    assert!(reasons[0].contains("tracked"), "{reasons:?}");
    assert!(reasons[1].contains("not seeded"), "{reasons:?}");
    assert_eq!(std::fs::read_to_string(proj.join(".claude/skills/own/SKILL.md")).unwrap(), "the project's own");
    assert_eq!(
        std::fs::read_to_string(proj.join(".claude/skills/mine/SKILL.md")).unwrap(),
        "untracked but the project's"
    );

    t.git(&proj, &["add", "-A"]);
    let staged = t.git(&proj, &["diff", "--cached", "--name-only"]);
    let staged: Vec<&str> = staged.lines().collect();
    assert_eq!(
        staged,
        [".claude/skills/mine/SKILL.md", "notes.txt"],
        "the project's untracked files stay visible; nothing seeded"
    );
    assert_eq!(
        std::fs::read_to_string(proj.join(".git/info/exclude")).unwrap(),
        exclude_before,
        "shared files untouched"
    );

    // Reseeding with fewer removes only our folders; the project's stay.
    let r = ok(seed(&mut c, &proj, &["b"], json!({})));
    assert_eq!(ops(&r), [op("copy", "b"), op("ignore", "b"), op("remove", "a")]);
    assert!(proj.join(".claude/skills/own/SKILL.md").exists() && proj.join(".claude/skills/mine/SKILL.md").exists());
    t.git(&proj, &["add", "-A"]);
    assert_eq!(
        t.git(&proj, &["status", "--porcelain", "--untracked-files=all"])
            .lines()
            .filter(|l| !l.starts_with('A'))
            .count(),
        0
    );
}

#[test]
fn seed_into_linked_worktree_stages_nothing_in_either_checkout() {
    let t = T::new();
    let repo = bundle_abc(&t);
    let mut c = t.w.spawn();
    ok(install(&mut c, &url(&repo), None));
    let main = t.repo("main-checkout", &[(".gitignore", "!.claude/skills/**\n"), ("README.md", "x")]);
    let wt = t.w.tmp.path().join("linked-wt");
    t.git(&main, &["worktree", "add", "-q", "-b", "session", wt.to_str().unwrap()]);
    write_files(&main, &[("main-notes.txt", "untracked in main")]);

    let r = ok(seed(&mut c, &wt, &["a", "c"], json!({ "target": ".agents/skills" })));
    assert_eq!(ops(&r), [op("copy", "a"), op("ignore", "a"), op("copy", "c"), op("ignore", "c")]);
    assert!(wt.join(".agents/skills/c/SKILL.md").is_file());
    t.git(&wt, &["add", "-A"]);
    assert_eq!(t.git(&wt, &["diff", "--cached", "--name-only"]), "", "nothing seeded is staged in the worktree");
    t.git(&main, &["add", "-A"]);
    assert_eq!(t.git(&main, &["diff", "--cached", "--name-only"]), "main-notes.txt");

    // A same-named folder in the main checkout is not hidden by the worktree's seed.
    write_files(&main, &[(".agents/skills/a/SKILL.md", "main's own a")]);
    t.git(&main, &["add", "-A"]);
    assert!(t.git(&main, &["diff", "--cached", "--name-only"]).contains(".agents/skills/a/SKILL.md"));
}

#[test]
fn seed_targets_errors_and_shadow_warning() {
    let t = T::new();
    let repo = bundle_abc(&t);
    let mut c = t.w.spawn();
    ok(install(&mut c, &url(&repo), None));
    let cwd = t.w.tmp.path().join("s");
    std::fs::create_dir_all(&cwd).unwrap();
    write_files(&t.w.home, &[(".claude/skills/a/SKILL.md", "the user's a")]);

    let r = ok(seed(&mut c, &cwd, &["a"], json!({})));
    assert!(r["warnings"].to_string().contains(".claude/skills/a"), "{r}");
    write_files(&t.w.home, &[(".config/opencode/skills/b/SKILL.md", "the user's b")]);
    let r = ok(seed(&mut c, &cwd, &["b"], json!({ "target": ".opencode/skills" })));
    assert_eq!(ops(&r), [op("copy", "b"), op("ignore", "b")]);
    assert!(r["warnings"].to_string().contains(".config/opencode/skills/b"), "{r}");
    assert!(cwd.join(".opencode/skills/b/SKILL.md").is_file());
    assert!(cwd.join(".claude/skills/a/SKILL.md").is_file(), "another target is left alone");
    // Copilot's project folder: its user folder ~/.copilot/skills may shadow the seeded skill.
    write_files(&t.w.home, &[(".copilot/skills/b/SKILL.md", "the user's b for Copilot")]);
    let r = ok(seed(&mut c, &cwd, &["b"], json!({ "target": ".github/skills" })));
    assert_eq!(ops(&r), [op("copy", "b"), op("ignore", "b")]);
    assert!(r["warnings"].to_string().contains(".copilot/skills/b"), "{r}");
    assert!(cwd.join(".github/skills/b/SKILL.md").is_file());

    assert_err(seed(&mut c, &cwd.join("missing"), &["a"], json!({})), -32602, "invalidParams", &["does not exist"]);
    assert_err(seed(&mut c, Path::new("relative"), &["a"], json!({})), -32602, "invalidParams", &["absolute"]);
    assert_err(seed(&mut c, &cwd, &["a", "zzz"], json!({})), -32002, "notFound", &["zzz", "not installed"]);
    assert_err(seed(&mut c, &cwd, &["../a"], json!({})), -32602, "invalidParams", &["not a skill name"]);
    assert_err(seed(&mut c, &cwd, &["a"], json!({ "target": "../out" })), -32602, "invalidParams", &["target"]);
    assert_err(seed(&mut c, &cwd, &["a"], json!({ "target": "/etc" })), -32602, "invalidParams", &["target"]);
    assert!(!t.w.tmp.path().join("out").exists());
    let stored_c = t.w.data.join("store/c");
    std::fs::remove_dir_all(&stored_c).unwrap();
    assert_err(seed(&mut c, &cwd, &["c"], json!({})), -32002, "notFound", &["missing", "skills update"]);
    let r = ok(c.request("skillmem/skills/list", json!({})).unwrap());
    assert_eq!(r["sources"].as_array().unwrap().len(), 1);
}

#[test]
fn two_seeds_at_once_into_different_folders() {
    let t = T::new();
    let repo = bundle_abc(&t);
    let mut c = t.w.spawn();
    ok(install(&mut c, &url(&repo), None));
    let one = t.w.tmp.path().join("one");
    let two = t.w.tmp.path().join("two");
    std::fs::create_dir_all(&one).unwrap();
    std::fs::create_dir_all(&two).unwrap();
    let id1 = c
        .send_request("skillmem/skills/seed", json!({ "cwd": one.display().to_string(), "skills": ["a", "b"] }))
        .unwrap();
    let id2 = c
        .send_request("skillmem/skills/seed", json!({ "cwd": two.display().to_string(), "skills": ["b", "c"] }))
        .unwrap();
    let mut got = std::collections::HashMap::new();
    while got.len() < 2 {
        let msg = c.read().unwrap().expect("a response");
        if let Some(id) = msg.get("id").and_then(Value::as_i64) {
            if msg.get("method").is_none() {
                got.insert(id, msg);
            }
        }
    }
    assert_eq!(ops(&ok(got[&id1].clone())), [op("copy", "a"), op("ignore", "a"), op("copy", "b"), op("ignore", "b")]);
    assert_eq!(ops(&ok(got[&id2].clone())), [op("copy", "b"), op("ignore", "b"), op("copy", "c"), op("ignore", "c")]);

    // And two CLI processes at once.
    let three = t.w.tmp.path().join("three");
    let four = t.w.tmp.path().join("four");
    let spawn = |cwd: &Path, names: &[&str]| {
        std::fs::create_dir_all(cwd).unwrap();
        std::process::Command::new(env!("CARGO_BIN_EXE_skillmem"))
            .args(["seed", "--json", "--cwd", cwd.to_str().unwrap()])
            .args(names)
            .envs(t.w.envs())
            .current_dir(&t.w.ws)
            .output()
    };
    let (r3, r4) = std::thread::scope(|s| {
        let h3 = s.spawn(|| spawn(&three, &["a", "c"]));
        let h4 = s.spawn(|| spawn(&four, &["a", "b"]));
        (h3.join().unwrap().unwrap(), h4.join().unwrap().unwrap())
    });
    assert!(
        r3.status.success() && r4.status.success(),
        "{} {}",
        String::from_utf8_lossy(&r3.stderr),
        String::from_utf8_lossy(&r4.stderr)
    );
    for (dir, names) in [(&three, ["a", "c"]), (&four, ["a", "b"])] {
        for n in names {
            assert!(dir.join(".claude/skills").join(n).join("SKILL.md").is_file());
        }
    }

    // Two seeds of the same folder wait for each other; the later one's set wins whole.
    let same = t.w.tmp.path().join("same");
    let (r5, r6) = std::thread::scope(|s| {
        let h5 = s.spawn(|| spawn(&same, &["a", "b", "c"]));
        let h6 = s.spawn(|| spawn(&same, &["own", "mine"]));
        (h5.join().unwrap().unwrap(), h6.join().unwrap().unwrap())
    });
    assert!(
        r5.status.success() && r6.status.success(),
        "{} {}",
        String::from_utf8_lossy(&r5.stderr),
        String::from_utf8_lossy(&r6.stderr)
    );
    let mut left: Vec<String> = std::fs::read_dir(same.join(".claude/skills"))
        .unwrap()
        .flatten()
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .collect();
    left.sort();
    assert!(left == ["a", "b", "c"] || left == ["mine", "own"], "{left:?}");
}

// ---- progress, memory, CLI ---------------------------------------------------------------

#[test]
fn install_reports_progress_under_the_work_done_token() {
    let t = T::new();
    let repo = bundle_abc(&t);
    let mut c = t.w.spawn();
    let r = c.request("skillmem/skills/install", json!({ "url": url(&repo), "workDoneToken": "tok-1" })).unwrap();
    ok(r);
    // Notifications and responses travel on separate queues: the end may trail the response.
    let kinds = progress_until_end(&mut c, json!("tok-1"));
    assert_eq!(kinds.first().map(String::as_str), Some("begin"), "{kinds:?}");
    assert_eq!(kinds.last().map(String::as_str), Some("end"), "{kinds:?}");
    assert!(kinds.iter().any(|k| k == "report"), "{kinds:?}");
    ok(c.request("skillmem/skills/update", json!({ "source": url(&repo), "workDoneToken": 7 })).unwrap());
    let kinds = progress_until_end(&mut c, json!(7));
    assert_eq!(kinds.first().map(String::as_str), Some("begin"), "{kinds:?}");
    // At the same commit, with the same choices and nothing refused, nothing is done again.
    let said: Vec<&str> = c
        .notifications
        .iter()
        .filter(|n| n["params"]["token"] == json!(7))
        .filter_map(|n| n["params"]["value"]["message"].as_str())
        .collect();
    assert!(said.iter().any(|m| m.contains("is already at")), "{said:?}");
    ok(install(&mut c, &url(&repo), None));
    ok(c.request("skillmem/skills/list", json!({})).unwrap());
    let tokens: std::collections::BTreeSet<String> = c
        .notifications
        .iter()
        .filter(|n| n["method"] == json!("$/progress"))
        .map(|n| n["params"]["token"].to_string())
        .collect();
    assert_eq!(tokens.into_iter().collect::<Vec<_>>(), ["\"tok-1\"", "7"], "no token, no progress");
}

/// The `$/progress` kinds seen for `token`, reading on until its `end` arrives.
fn progress_until_end(c: &mut Client, token: Value) -> Vec<String> {
    loop {
        let kinds: Vec<String> = c
            .notifications
            .iter()
            .filter(|n| n["method"] == json!("$/progress") && n["params"]["token"] == token)
            .map(|n| n["params"]["value"]["kind"].as_str().unwrap().to_string())
            .collect();
        if kinds.iter().any(|k| k == "end") {
            return kinds;
        }
        let msg = c.read().unwrap().expect("the server closed before the progress ended");
        c.notifications.push(msg);
    }
}

#[test]
fn installed_skills_are_found_by_the_memory_side() {
    let t = T::new();
    let repo = t.repo(
        "mem",
        &[("skills/remember/SKILL.md", "---\nname: remember\ndescription: d\nskill-memory:\n  enabled: true\n---\n")],
    );
    let mut c = t.w.spawn();
    ok(install(&mut c, &url(&repo), None));
    let r = ok(c
        .request(
            "skillmem/note",
            json!({ "skill": "remember", "kind": "gotcha", "delta": "installed skills have memory too" }),
        )
        .unwrap());
    assert_eq!(r["status"], json!("inserted"));
    let r = ok(c.request("skillmem/recall", json!({ "skill": "remember" })).unwrap());
    assert!(r["block"].as_str().unwrap().contains("installed skills have memory too"));
}

#[test]
fn cli_installs_lists_seeds_and_removes() {
    let t = T::new();
    let repo = bundle_abc(&t);
    let (code, out, errs) = t.w.cli(&["skills", "install", repo.to_str().unwrap(), "--json"]);
    assert_eq!(code, 0, "{errs}");
    let r: Value = serde_json::from_str(&out).unwrap();
    assert_eq!(names(&r["skills"]), ["a", "b", "c", "mine", "own"]);
    let (code, out, _) = t.w.cli(&["skills", "list"]);
    assert_eq!(code, 0);
    assert!(out.contains(repo.to_str().unwrap()) && out.contains("executable files"), "{out}");
    let (code, out, _) = t.w.cli(&["skills", "resolve", "--global", "a", "--task", "zz", "--json"]);
    assert_eq!(code, 0);
    assert_eq!(serde_json::from_str::<Value>(&out).unwrap(), json!({ "skills": ["a"], "dropped": ["zz"] }));

    let cwd = t.w.ws.join("session");
    std::fs::create_dir_all(&cwd).unwrap();
    let (code, out, errs) = t.w.cli(&["seed", "--cwd", "session", "a", "b", "--dry-run"]);
    assert_eq!(code, 0, "{errs}");
    assert!(out.contains("dry run") && !cwd.join(".claude").exists(), "{out}");
    let (code, out, _) = t.w.cli(&["seed", "--cwd", "session", "a", "b", "--target", ".opencode/skills"]);
    assert_eq!(code, 0);
    assert!(out.contains("copy") && cwd.join(".opencode/skills/b/SKILL.md").is_file(), "{out}");
    let (code, _, errs) = t.w.cli(&["seed", "--cwd", "session", "nope"]);
    assert_ne!(code, 0);
    assert!(errs.contains("not installed"), "{errs}");
    let (code, _, errs) = t.w.cli(&["skills", "install", "-x"]);
    assert_ne!(code, 0, "{errs}");

    let (code, out, errs) = t.w.cli(&["skills", "update", repo.to_str().unwrap(), "--yes"]);
    assert_eq!(code, 0, "{errs}");
    assert!(out.contains("updated"), "{out}");
    let (code, out, _) = t.w.cli(&["skills", "remove", repo.to_str().unwrap(), "--json"]);
    assert_eq!(code, 0);
    assert_eq!(serde_json::from_str::<Value>(&out).unwrap()["removed"], json!(["a", "b", "c", "mine", "own"]));
    let (code, _, errs) = t.w.cli(&["skills", "remove", repo.to_str().unwrap()]);
    assert_ne!(code, 0);
    assert!(errs.contains("not installed"), "{errs}");
}

#[test]
fn seeds_during_updates_always_see_one_whole_version() {
    let t = T::new();
    let repo = t.repo("flip", &[("skills/a/SKILL.md", &md("a")), ("skills/a/data.txt", "1")]);
    t.git(&repo, &["tag", "v1"]);
    t.commit(&repo, &[("skills/a/SKILL.md", &format!("{}version 2\n", md("a"))), ("skills/a/data.txt", "2")], "two");
    t.git(&repo, &["tag", "v2"]);
    let mut c = t.w.spawn();
    ok(install(&mut c, &url(&repo), Some("v1")));
    let cwd = t.w.tmp.path().join("racing");
    std::fs::create_dir_all(&cwd).unwrap();
    let done = std::sync::atomic::AtomicBool::new(false);
    let u = url(&repo);
    let mut seeds = 0;
    std::thread::scope(|s| {
        s.spawn(|| {
            for i in 0..12 {
                ok(install(&mut c, &u, Some(if i % 2 == 0 { "v2" } else { "v1" })));
            }
            done.store(true, std::sync::atomic::Ordering::SeqCst);
        });
        while !done.load(std::sync::atomic::Ordering::SeqCst) || seeds == 0 {
            let (code, _, errs) = t.w.cli(&["seed", "--cwd", cwd.to_str().unwrap(), "a"]);
            assert_eq!(code, 0, "{errs}");
            let dir = cwd.join(".claude/skills/a");
            let data = std::fs::read_to_string(dir.join("data.txt")).unwrap();
            let skill = std::fs::read_to_string(dir.join("SKILL.md")).unwrap();
            assert_eq!(skill.contains("version 2"), data == "2", "one whole version: {data} / {skill}");
            seeds += 1;
        }
    });
    assert!(seeds > 0);
}

#[test]
fn a_server_asking_for_credentials_gets_an_error_never_a_prompt() {
    use std::io::{Read, Write};
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    let hits = std::sync::Arc::new(std::sync::atomic::AtomicUsize::new(0));
    let h = hits.clone();
    std::thread::spawn(move || {
        for stream in listener.incoming().flatten() {
            let mut stream = stream;
            let mut buf = [0u8; 4096];
            let _ = stream.read(&mut buf);
            h.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
            let _ = stream.write_all(
                b"HTTP/1.1 401 Unauthorized\r\nWWW-Authenticate: Basic realm=\"x\"\r\nContent-Length: 0\r\nConnection: close\r\n\r\n",
            );
        }
    });
    let t = T::new();
    let mut c = t.w.spawn();
    let started = std::time::Instant::now();
    let msg = assert_err(install(&mut c, &format!("http://127.0.0.1:{port}/private.git"), None), -32004, "git", &[]);
    assert!(msg.contains("never prompts"), "{msg}");
    assert!(hits.load(std::sync::atomic::Ordering::SeqCst) >= 1);
    assert!(started.elapsed() < std::time::Duration::from_secs(60));
    assert_eq!(list(&mut c)["sources"], json!([]));
}

// ---- the layouts people publish (issue 50) -------------------------------------------------

fn install_with(c: &mut Client, url: &str, extra: Value) -> Value {
    let mut p = json!({ "url": url });
    if let Value::Object(m) = extra {
        for (k, v) in m {
            p[k] = v;
        }
    }
    c.request("skillmem/skills/install", p).unwrap()
}

/// A marketplace of 32 plugins (two skills each, `plugins/p<i>/skills/p<i>-<a|b>`), one
/// plugin elsewhere, a `dup` skill in two plugins, a skill inside a skill, and copies for
/// another tool that must not count.
fn marketplace_repo(t: &T) -> PathBuf {
    let mut entries = vec![];
    let mut files: Vec<(String, String)> = vec![];
    for i in 0..32 {
        entries.push(json!({ "name": format!("p{i}"), "source": format!("./plugins/p{i}"), "description": "d" }));
        for s in ["a", "b"] {
            let name = format!("p{i}-{s}");
            files.push((format!("plugins/p{i}/skills/{name}/SKILL.md"), md(&name)));
        }
        files.push((format!("plugins/p{i}/commands/run.md"), "a command".into()));
    }
    entries.push(json!({ "name": "far", "source": { "source": "github", "repo": "someone/else" } }));
    files.push(("plugins/p0/skills/dup/SKILL.md".into(), md("dup")));
    files.push(("plugins/p1/skills/dup/SKILL.md".into(), "---\nname: dup\ndescription: The other dup.\n---\n".into()));
    files.push(("plugins/p2/skills/p2-a/examples/inner/SKILL.md".into(), md("inner")));
    files.push((".gemini/skills/p0-a/SKILL.md".into(), md("p0-a")));
    files.push((".claude-plugin/marketplace.json".into(), json!({ "name": "m", "plugins": entries }).to_string()));
    let refs: Vec<(&str, &str)> = files.iter().map(|(p, c)| (p.as_str(), c.as_str())).collect();
    t.repo("market", &refs)
}

/// A collection of 120 skills at depth two (`science/s<i>/SKILL.md`) beside a README, a
/// vendored copy and test fixtures.
fn collection_repo(t: &T) -> PathBuf {
    let mut files: Vec<(String, String)> = vec![("README.md".into(), "a collection".into())];
    for i in 0..120 {
        files.push((format!("science/s{i}/SKILL.md"), md(&format!("s{i}"))));
        files.push((format!("science/s{i}/references/notes.md"), format!("notes {i}")));
    }
    files.push(("node_modules/x/skills/s0/SKILL.md".into(), md("s0")));
    files.push(("tests/fixtures/broken/SKILL.md".into(), "no frontmatter".into()));
    let refs: Vec<(&str, &str)> = files.iter().map(|(p, c)| (p.as_str(), c.as_str())).collect();
    t.repo("collection", &refs)
}

#[test]
fn a_marketplace_and_a_deep_collection_install_pin_list_resolve_and_seed_with_git_clean() {
    let t = T::new();
    let market = marketplace_repo(&t);
    let collection = collection_repo(&t);
    let mut c = t.w.spawn();

    let r = ok(install(&mut c, &url(&market), None));
    let got = names(&r["skills"]);
    assert_eq!(got.len(), 64, "every plugin's skills, none of the copies or the inner one: {got:?}");
    assert!(!got.contains(&"inner".to_string()) && !got.contains(&"dup".to_string()));
    let head = t.git(&market, &["rev-parse", "HEAD"]);
    let p5 = r["skills"].as_array().unwrap().iter().find(|s| s["name"] == json!("p5-b")).unwrap();
    assert_eq!(p5["plugin"], json!("p5"));
    assert_eq!(p5["subpath"], json!("plugins/p5/skills/p5-b"));
    assert_eq!(p5["pinnedRef"], json!(head));
    assert!(PathBuf::from(r["skills"][0]["path"].as_str().unwrap()).join("SKILL.md").is_file());
    let p2a = r["skills"].as_array().unwrap().iter().find(|s| s["name"] == json!("p2-a")).unwrap();
    assert!(PathBuf::from(p2a["path"].as_str().unwrap()).join("examples/inner/SKILL.md").is_file());
    let refused: Vec<&str> = r["refused"].as_array().unwrap().iter().map(|x| x["subpath"].as_str().unwrap()).collect();
    assert_eq!(refused, ["plugins/p0/skills/dup", "plugins/p1/skills/dup"]);
    let why = r["refused"][0]["reason"].as_str().unwrap();
    assert!(why.contains("plugins/p1/skills/dup") && why.contains("--skill plugins/p0/skills/dup"), "{why}");
    let again = ok(install(&mut c, &url(&market), None));
    assert_eq!(names(&again["skills"]).len(), 64);
    assert_eq!(again["refused"].as_array().unwrap().len(), 2, "a reinstall at the same commit says it again");

    let r = ok(install(&mut c, &url(&collection), None));
    let got = names(&r["skills"]);
    assert_eq!(got.len(), 120, "{got:?}");
    assert_eq!(r["skills"][0]["subpath"], json!("science/s0"));
    assert!(r["skills"][0].get("plugin").is_none(), "{}", r["skills"][0]);
    assert_eq!(r["refused"], json!([]));

    let l = list(&mut c);
    assert_eq!(l["sources"].as_array().unwrap().len(), 2);
    let total: usize = l["sources"].as_array().unwrap().iter().map(|s| s["skills"].as_array().unwrap().len()).sum();
    assert_eq!(total, 184);
    let r = ok(c
        .request(
            "skillmem/skills/resolve",
            json!({ "global": ["p0-a"], "list": ["s7", "s119"], "task": ["p31-b", "dup"] }),
        )
        .unwrap());
    assert_eq!(r, json!({ "skills": ["p0-a", "s7", "s119", "p31-b"], "dropped": ["dup"] }));

    let proj = t.repo("project", &[("src.txt", "x")]);
    let all: Vec<String> = l["sources"]
        .as_array()
        .unwrap()
        .iter()
        .flat_map(|s| s["skills"].as_array().unwrap().iter().map(|k| k["name"].as_str().unwrap().to_string()))
        .collect();
    let all: Vec<&str> = all.iter().map(String::as_str).collect();
    let r = ok(seed(&mut c, &proj, &all, json!({})));
    assert_eq!(ops(&r).iter().filter(|(o, _)| o == "copy").count(), 184);
    assert!(proj.join(".claude/skills/s42/references/notes.md").is_file());
    assert_eq!(t.git(&proj, &["status", "--porcelain"]), "", "git sees nothing seeded");
    t.git(&proj, &["add", "-A"]);
    assert_eq!(t.git(&proj, &["diff", "--cached", "--name-only"]), "");
    assert_eq!(c.shutdown().unwrap(), 0);
}

#[test]
fn list_path_skill_and_as_choose_what_installs() {
    let t = T::new();
    let market = marketplace_repo(&t);
    let mut c = t.w.spawn();

    // --list: what is offered, with plugin, subpath, description and problems; nothing written.
    let r = ok(install_with(&mut c, &url(&market), json!({ "list": true })));
    let offered = r["offered"].as_array().unwrap();
    assert_eq!(offered.len(), 66);
    let p3 = offered.iter().find(|o| o["name"] == json!("p3-a")).unwrap();
    assert_eq!(
        p3,
        &json!({ "name": "p3-a", "plugin": "p3", "subpath": "plugins/p3/skills/p3-a", "description": "The p3-a skill." })
    );
    let dup = offered.iter().find(|o| o["subpath"] == json!("plugins/p1/skills/dup")).unwrap();
    assert!(dup["problem"].as_str().unwrap().contains("plugins/p0/skills/dup"), "{dup}");
    assert_eq!(r["skills"], json!([]));
    assert_eq!(list(&mut c)["sources"], json!([]));
    assert!(t.store_dirs().is_empty());
    let r = ok(install_with(&mut c, &url(&market), json!({ "list": true, "path": "plugins/p9" })));
    assert_eq!(names(&r["offered"]), ["p9-a", "p9-b"]);

    // --path: only that folder's skills.
    let r = ok(install_with(&mut c, &url(&market), json!({ "path": "plugins/p3" })));
    assert_eq!(names(&r["skills"]), ["p3-a", "p3-b"]);
    // --skill adds to the choices; a subpath picks one of two skills of one name.
    let r = ok(install_with(&mut c, &url(&market), json!({ "skills": ["p7-b", "plugins/p0/skills/dup"] })));
    assert_eq!(names(&r["skills"]), ["dup", "p3-a", "p3-b", "p7-b"]);
    assert_eq!(r["refused"], json!([]));
    // --as: the other dup under a name of its own.
    let r = ok(install_with(&mut c, &url(&market), json!({ "skills": ["plugins/p1/skills/dup"], "as": "dup-p1" })));
    assert_eq!(names(&r["skills"]), ["dup", "dup-p1", "p3-a", "p3-b", "p7-b"]);
    let renamed = r["skills"].as_array().unwrap().iter().find(|s| s["name"] == json!("dup-p1")).unwrap();
    assert_eq!(renamed["subpath"], json!("plugins/p1/skills/dup"));
    let text = std::fs::read_to_string(PathBuf::from(renamed["path"].as_str().unwrap()).join("SKILL.md")).unwrap();
    assert!(text.contains("The other dup."));
    let l = list(&mut c);
    assert_eq!(l["sources"][0]["choices"].as_array().unwrap().len(), 3, "{}", l["sources"][0]);

    // update replays the choices at the new commit.
    let head = t.commit(&market, &[("plugins/p3/skills/p3-c/SKILL.md", &md("p3-c"))], "p3-c");
    let r = ok(c.request("skillmem/skills/update", json!({ "source": url(&market) })).unwrap());
    assert_eq!(names(&r["skills"]), ["dup", "dup-p1", "p3-a", "p3-b", "p3-c", "p7-b"]);
    assert_eq!(r["skills"][0]["pinnedRef"], json!(head));

    // Mistakes are refused before anything changes.
    assert_err(
        install_with(&mut c, &url(&market), json!({ "skills": ["nope"] })),
        -32602,
        "invalidParams",
        &["nope", "--list"],
    );
    assert_err(
        install_with(&mut c, &url(&market), json!({ "path": "plugins/p3", "as": "x" })),
        -32602,
        "invalidParams",
        &["--as"],
    );
    assert_err(install_with(&mut c, &url(&market), json!({ "path": "../x" })), -32602, "invalidParams", &["path"]);
    assert_err(
        install_with(&mut c, &url(&market), json!({ "skills": ["p4-a"], "as": "Bad Name" })),
        -32602,
        "invalidParams",
        &["--as"],
    );
    assert_eq!(names(&list(&mut c)["sources"][0]["skills"]), ["dup", "dup-p1", "p3-a", "p3-b", "p3-c", "p7-b"]);

    // No choice: every skill again, the choices forgotten (dup twice is refused again).
    let r = ok(install(&mut c, &url(&market), None));
    assert_eq!(names(&r["skills"]).len(), 65, "p3-c came with the second commit");
    assert_eq!(r["refused"].as_array().unwrap().len(), 2);
    assert_eq!(list(&mut c)["sources"][0]["choices"], json!([]));
    // The way out the refusal names keeps the source whole: one dup renamed, the other
    // now alone under its own name.
    let r = ok(install_with(&mut c, &url(&market), json!({ "skills": ["plugins/p0/skills/dup"], "as": "dup-p0" })));
    let got = names(&r["skills"]);
    assert_eq!(got.len(), 67, "{got:?}");
    assert!(got.contains(&"dup".to_string()) && got.contains(&"dup-p0".to_string()));
    assert_eq!(r["refused"], json!([]));
    assert_eq!(
        list(&mut c)["sources"][0]["choices"],
        json!([{}, { "skills": ["plugins/p0/skills/dup"], "as": "dup-p0" }])
    );
}

#[test]
fn cli_lists_and_chooses() {
    let t = T::new();
    let market = marketplace_repo(&t);
    let u = url(&market);
    let (code, out, errs) = t.w.cli(&["skills", "install", "--list", &u, "--path", "plugins/p4"]);
    assert_eq!(code, 0, "{errs}");
    assert!(
        out.contains("p4-a") && out.contains("plugins/p4/skills/p4-b") && out.contains("nothing installed"),
        "{out}"
    );
    let (code, out, errs) = t.w.cli(&["skills", "install", &u, "--skill", "p5-a,p6-b", "--json"]);
    assert_eq!(code, 0, "{errs}");
    assert_eq!(names(&serde_json::from_str::<Value>(&out).unwrap()["skills"]), ["p5-a", "p6-b"]);
    let (code, out, errs) =
        t.w.cli(&["skills", "install", &u, "--skill", "plugins/p1/skills/dup", "--as", "other-dup"]);
    assert_eq!(code, 0, "{errs}");
    assert!(out.contains("other-dup"), "{out}");
    let (code, out, _) = t.w.cli(&["skills", "list"]);
    assert_eq!(code, 0);
    assert!(
        out.contains(r#"chosen: {"skills":["p5-a","p6-b"]} {"skills":["plugins/p1/skills/dup"],"as":"other-dup"}"#),
        "{out}"
    );
    let (code, out, _) = t.w.cli(&["skills", "install", &u]);
    assert_eq!(code, 0);
    assert!(out.contains("not installed: 2") && out.contains("--as NEW-NAME"), "{out}");
    assert!(out.contains("plugin p5 · plugins/p5/skills/p5-a"), "{out}");
}
