//! The shape ARCHITECTURE.md promises, checked on the source tree: core domains never import
//! the engine or a door, and the engine never imports a door.

use std::path::{Path, PathBuf};

fn rust_files(dir: &Path, out: &mut Vec<PathBuf>) {
    if dir.is_file() {
        out.push(dir.to_path_buf());
        return;
    }
    for e in std::fs::read_dir(dir).unwrap().flatten() {
        let p = e.path();
        if p.is_dir() {
            rust_files(&p, out);
        } else if p.extension().is_some_and(|x| x == "rs") {
            out.push(p);
        }
    }
}

/// `use`s and paths of `crate::<module>` in code (comments and doc comments skipped).
fn imports_of(file: &Path, modules: &[&str]) -> Vec<String> {
    let text = std::fs::read_to_string(file).unwrap();
    let mut found = vec![];
    for (n, line) in text.lines().enumerate() {
        let code = line.trim_start();
        if code.starts_with("//") {
            continue;
        }
        for m in modules {
            if code.contains(&format!("crate::{m}::")) || code.contains(&format!("crate::{m};")) {
                found.push(format!("{}:{}: {}", file.display(), n + 1, code));
            }
        }
    }
    found
}

fn check(folders: &[&str], forbidden: &[&str]) {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let mut files = vec![];
    for f in folders {
        let p = src.join(f);
        assert!(p.exists(), "{} is gone: update this test and ARCHITECTURE.md", p.display());
        rust_files(&p, &mut files);
    }
    let bad: Vec<String> = files.iter().flat_map(|f| imports_of(f, forbidden)).collect();
    assert!(bad.is_empty(), "imports that break ARCHITECTURE.md's layering:\n{}", bad.join("\n"));
}

#[test]
fn core_domains_know_nothing_of_the_engine_or_the_doors() {
    check(
        &[
            "memory",
            "historian",
            "skills",
            "skillmd",
            "index",
            "embed",
            "db",
            "team",
            "project.rs",
            "progress.rs",
            "config.rs",
        ],
        &["engine", "server", "protocol", "hosts", "cli", "client", "ui"],
    );
}

#[test]
fn the_engine_knows_no_door() {
    check(&["engine"], &["server", "protocol", "hosts", "cli", "client", "ui"]);
}

#[test]
fn the_wire_types_know_no_transport() {
    check(&["protocol"], &["server", "hosts", "cli", "client", "ui"]);
}

#[test]
fn text_analysis_is_a_leaf() {
    let all = [
        "memory",
        "historian",
        "skills",
        "index",
        "embed",
        "db",
        "project",
        "progress",
        "config",
        "error",
        "engine",
        "server",
        "protocol",
        "hosts",
        "cli",
        "client",
        "skillmd",
    ];
    check(&["text.rs"], &all);
}

#[test]
fn the_vector_index_knows_no_notes() {
    check(&["index"], &["memory"]);
}

#[test]
fn skillmd_is_a_leaf() {
    check(
        &["skillmd"],
        &["memory", "historian", "skills", "index", "embed", "db", "engine", "server", "protocol", "hosts", "config"],
    );
}
