//! The documentation's own checks, on the source tree: every relative link of the Markdown
//! files leads to a file (and, with `#anchor`, to a heading of it), the README and the user
//! docs name no issue numbers, and every figure of the README's benchmarks table is in
//! docs/benchmarks.md, where each has its command, date and machine.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// README.md, ARCHITECTURE.md, every file under docs/, and editors/*/README.md.
fn markdown_files() -> Vec<PathBuf> {
    let r = root();
    let mut files = vec![r.join("README.md"), r.join("ARCHITECTURE.md")];
    let mut dirs = vec![r.join("docs")];
    while let Some(d) = dirs.pop() {
        for e in std::fs::read_dir(&d).unwrap() {
            let p = e.unwrap().path();
            if p.is_dir() {
                dirs.push(p);
            } else if p.extension().is_some_and(|x| x == "md") {
                files.push(p);
            }
        }
    }
    for e in std::fs::read_dir(r.join("editors")).unwrap() {
        let p = e.unwrap().path().join("README.md");
        if p.is_file() {
            files.push(p);
        }
    }
    files.sort();
    files
}

/// The text outside fenced code blocks.
fn prose(text: &str) -> String {
    let mut out = String::new();
    let mut fence = false;
    for line in text.lines() {
        if line.trim_start().starts_with("```") {
            fence = !fence;
            continue;
        }
        if !fence {
            out.push_str(line);
            out.push('\n');
        }
    }
    out
}

/// The anchors GitHub gives the headings of a Markdown text.
fn anchors(text: &str) -> BTreeSet<String> {
    let mut seen: Vec<String> = vec![];
    let mut out = BTreeSet::new();
    for line in prose(text).lines() {
        let Some(h) = line.strip_prefix('#') else { continue };
        let h = h.trim_start_matches('#');
        if !h.starts_with(' ') {
            continue;
        }
        let slug: String = h
            .trim()
            .to_lowercase()
            .chars()
            .filter(|c| c.is_alphanumeric() || *c == '-' || *c == '_' || *c == ' ')
            .map(|c| if c == ' ' { '-' } else { c })
            .collect();
        let n = seen.iter().filter(|s| **s == slug).count();
        out.insert(if n == 0 { slug.clone() } else { format!("{slug}-{n}") });
        seen.push(slug);
    }
    out
}

/// The targets of the inline links `[text](target)` and images of a Markdown text.
fn links(text: &str) -> Vec<String> {
    let mut out = vec![];
    let p = prose(text);
    let mut rest = p.as_str();
    while let Some(i) = rest.find("](") {
        rest = &rest[i + 2..];
        let end = rest.find(')').unwrap_or(rest.len());
        let target = rest[..end].trim();
        if !target.is_empty() && !target.contains(' ') {
            out.push(target.to_string());
        }
        rest = &rest[end..];
    }
    out
}

fn rel(p: &Path) -> String {
    p.strip_prefix(root()).unwrap_or(p).display().to_string()
}

#[test]
fn every_relative_link_leads_somewhere() {
    let mut broken = vec![];
    for file in markdown_files() {
        let text = std::fs::read_to_string(&file).unwrap();
        for target in links(&text) {
            if target.contains("://") || target.starts_with("mailto:") {
                continue;
            }
            let (path, anchor) = match target.split_once('#') {
                Some((p, a)) => (p, Some(a)),
                None => (target.as_str(), None),
            };
            let dest = if path.is_empty() { file.clone() } else { file.parent().unwrap().join(path) };
            if !dest.exists() {
                broken.push(format!("{}: {target}: no such file", rel(&file)));
                continue;
            }
            if let Some(a) = anchor {
                if dest.extension().is_some_and(|x| x == "md")
                    && !anchors(&std::fs::read_to_string(&dest).unwrap()).contains(a)
                {
                    broken.push(format!("{}: {target}: no heading #{a}", rel(&file)));
                }
            }
        }
    }
    assert!(broken.is_empty(), "broken links:\n{}", broken.join("\n"));
}

#[test]
fn the_anchors_are_githubs() {
    let a = anchors(
        "# Title\n## Older Neovim (0.7–0.10)\n## The `static` table: a/b\n## Title\n```\n# not a heading\n```\n",
    );
    let want: BTreeSet<String> =
        ["title", "older-neovim-07010", "the-static-table-ab", "title-1"].iter().map(|s| s.to_string()).collect();
    assert_eq!(a, want);
    assert_eq!(links("see [a](b.md#c) and ![i](img/x.png) `[x](y)`"), ["b.md#c", "img/x.png", "y"]);
}

/// "issue 16", "issue #9", "#9" as a reference: words that mean nothing outside the
/// repository's tracker.
fn issue_numbers(text: &str) -> Vec<String> {
    let lower = text.to_lowercase();
    let digits_at = |s: &str| s.chars().take_while(char::is_ascii_digit).collect::<String>();
    let mut found = vec![];
    for (i, _) in lower.match_indices("issue ") {
        let after = &lower[i + 6..];
        let hash = after.starts_with('#');
        let n = digits_at(after.trim_start_matches('#'));
        if !n.is_empty() {
            found.push(format!("issue {}{n}", if hash { "#" } else { "" }));
        }
    }
    // A bare `#9` is a reference in parentheses, "(#9)"; elsewhere `#12` may be a note's id
    // (the historian's `replaces #12`).
    for (i, _) in lower.match_indices("(#") {
        let n = digits_at(&lower[i + 2..]);
        if !n.is_empty() {
            found.push(format!("#{n}"));
        }
    }
    found
}

/// The text without inline code spans (`...`).
fn without_code_spans(text: &str) -> String {
    text.split('`').step_by(2).collect::<Vec<_>>().join(" ")
}

#[test]
fn the_readme_and_the_user_docs_name_no_issue_numbers() {
    assert_eq!(issue_numbers("as issue 16 said, and issue #9 (#12)"), ["issue 16", "issue #9", "#12"]);
    assert!(issue_numbers("an issue with 3 parts; note #12 (gotcha); C# 8").is_empty());
    assert_eq!(without_code_spans("a `replaces (#12)` b"), "a   b");
    let mut found = vec![];
    for file in markdown_files() {
        if file.starts_with(root().join("docs/research")) || file.ends_with("ARCHITECTURE.md") {
            continue;
        }
        for n in issue_numbers(&without_code_spans(&prose(&std::fs::read_to_string(&file).unwrap()))) {
            found.push(format!("{}: {n}", rel(&file)));
        }
    }
    assert!(found.is_empty(), "say what was done, not which issue asked for it:\n{}", found.join("\n"));
}

/// The numbers of a text: runs of digits with their separators (`1,044`, `0.953`, `5.32`).
fn numbers(text: &str) -> Vec<String> {
    let mut out = vec![];
    let mut cur = String::new();
    for c in text.chars().chain([' ']) {
        if c.is_ascii_digit() || (!cur.is_empty() && (c == '.' || c == ',')) {
            cur.push(c);
        } else if !cur.is_empty() {
            let n = cur.trim_end_matches(['.', ',']).to_string();
            if n.contains(|c: char| c != '0' && c.is_ascii_digit()) {
                out.push(n);
            }
            cur.clear();
        }
    }
    out
}

#[test]
fn every_figure_of_the_readme_benchmarks_is_in_benchmarks_md() {
    let readme = std::fs::read_to_string(root().join("README.md")).unwrap();
    let bench = std::fs::read_to_string(root().join("docs/benchmarks.md")).unwrap();
    let section = readme.split("\n## Benchmarks").nth(1).expect("README has a Benchmarks section");
    let section = section.split("\n## ").next().unwrap();
    let mut rows = 0;
    let mut missing = vec![];
    for row in section.lines().filter(|l| l.starts_with('|') && !l.starts_with("|---") && !l.starts_with("| area")) {
        let cells: Vec<&str> = row.split('|').map(str::trim).collect();
        // | area | figure | date | command |
        let (figure, date, command) = (cells[2], cells[3], cells[4]);
        rows += 1;
        assert!(date.starts_with("20"), "a figure without its date: {row}");
        assert!(
            command.contains("skillmem ") || command.contains("cargo xtask ") || command.contains(".ci/"),
            "a figure without its command: {row}"
        );
        for n in numbers(figure) {
            if !bench.contains(&n) {
                missing.push(format!("{n} ({figure})"));
            }
        }
    }
    assert!(rows >= 5, "the benchmarks table has {rows} rows");
    assert!(missing.is_empty(), "figures of the README not in docs/benchmarks.md:\n{}", missing.join("\n"));
    assert_eq!(
        numbers("p50 1,044 notes/s, 0.953 at 1,163–1,395; ×384."),
        ["50", "1,044", "0.953", "1,163", "1,395", "384"]
    );
}

#[test]
fn the_readme_stays_short() {
    let lines = std::fs::read_to_string(root().join("README.md")).unwrap().lines().count();
    assert!(lines <= 320, "README.md has {lines} lines: move details to docs/");
}
