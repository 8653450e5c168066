//! What a person is told, through the real binary: the getting-started screen of a bare
//! `skillmem`, `--help` that lists values and shows examples, the suggestion for a mistyped
//! command, and the errors that say what to do next, on the command line and over the
//! protocol. (That every argument of every command has help is a unit test of the binary,
//! `cli::help`, which walks clap's command tree.)

mod common;

use common::{err, note, ok, World};
use serde_json::json;

#[test]
fn a_bare_skillmem_says_what_to_run_first() {
    let w = World::new();
    let (code, out, e) = w.cli(&[]);
    assert_eq!(code, 0, "{e}");
    for what in ["skillmem setup claude-code", "skillmem demo", "skillmem ui", "skill-memory: { enabled: true }"] {
        assert!(out.contains(what), "{what} missing from:\n{out}");
    }
    assert!(!out.contains("error"), "{out}");
}

#[test]
fn a_mistyped_command_gets_the_right_one_suggested() {
    let w = World::new();
    let (code, _, e) = w.cli(&["recal", "jq"]);
    assert_eq!(code, 2);
    assert!(e.contains("similar subcommand") && e.contains("'recall'"), "{e}");
    let (code, _, e) = w.cli(&["skills", "instal", "x"]);
    assert_eq!(code, 2);
    assert!(e.contains("'install'"), "{e}");
}

/// The product's commands are what a user runs: the benchmarks and dataset studies are
/// `cargo xtask bench|study` in a checkout.
#[test]
fn help_lists_no_benchmark() {
    let w = World::new();
    let (code, out, e) = w.cli(&["--help"]);
    assert_eq!(code, 0, "{e}");
    assert!(out.contains("  eval ") && out.contains("  demo "), "{out}");
    assert!(!out.lines().any(|l| l.trim_start().starts_with("bench")), "{out}");
    let (code, _, e) = w.cli(&["bench", "recall"]);
    assert_eq!(code, 2);
    assert!(e.contains("unrecognized subcommand 'bench'"), "{e}");
    let (code, _, e) = w.cli(&["eval", "historian", "--features", "x", "set.jsonl"]);
    assert_eq!(code, 2);
    assert!(e.contains("--features"), "{e}");
}

#[test]
fn help_lists_the_values_of_an_enumeration_and_shows_an_example() {
    let w = World::new();
    let (code, out, e) = w.cli(&["note", "--help"]);
    assert_eq!(code, 0, "{e}");
    for what in ["gotcha", "discovery", "fix", "workflow", "project", "global", "Examples:", "skillmem note jq"] {
        assert!(out.contains(what), "{what} missing from:\n{out}");
    }
    // A wrong value is refused with the list, before anything is opened.
    let (code, _, e) = w.cli(&["notes", "--sort", "oldest"]);
    assert_eq!(code, 2);
    assert!(e.contains("possible values: recent, hits, recalls"), "{e}");
    // The kinds are read as the protocol reads them: case does not matter.
    w.enabled_skill("jq");
    let (code, out, e) = w.cli(&["note", "jq", "--kind", "Gotcha", "--delta", "jq -r prints raw strings"]);
    assert_eq!(code, 0, "{e}");
    assert!(out.starts_with("note "), "{out}");
}

#[test]
fn a_data_directory_without_a_store_says_where_it_looked_and_what_to_do() {
    let w = World::new();
    let nowhere = w.tmp.path().join("typo");
    let dir = nowhere.display().to_string();
    for args in [
        vec!["notes", "--data-dir", &dir],
        vec!["recall", "jq", "--data-dir", &dir],
        vec!["forget", "1", "--data-dir", &dir],
        vec!["stats", "--data-dir", &dir],
    ] {
        let (code, out, e) = w.cli(&args);
        assert_eq!(code, 2, "{args:?}: {out}");
        assert!(e.contains(&dir) && e.contains("from --data-dir"), "{args:?}: {e}");
        assert!(e.contains("skillmem setup") && e.contains("SKILLMEM_HOME"), "{args:?}: {e}");
    }
    assert!(!nowhere.exists(), "a read made the data directory");
    // The world's own data directory (SKILLMEM_HOME) holds no store either until a write.
    let (code, _, e) = w.cli(&["notes"]);
    assert_eq!(code, 2);
    assert!(e.contains("$SKILLMEM_HOME"), "{e}");
    w.enabled_skill("jq");
    let (code, _, e) = w.cli(&["note", "jq", "--kind", "fix", "--delta", "a first lesson"]);
    assert_eq!(code, 0, "a write starts the store: {e}");
    let (code, out, e) = w.cli(&["notes"]);
    assert_eq!(code, 0, "{e}");
    assert!(out.contains("a first lesson"), "{out}");
}

#[test]
fn a_skill_without_memory_says_which_line_to_add_on_the_cli_and_over_the_protocol() {
    let w = World::new();
    let dir = w.skill("pdf", "---\nname: pdf\ndescription: PDF work\n---\n# pdf\n");
    let file = dir.join("SKILL.md").display().to_string();
    let (code, _, e) = w.cli(&["note", "pdf", "--kind", "gotcha", "--delta", "pages count from 1"]);
    assert_ne!(code, 0);
    assert!(e.contains("skill-memory: { enabled: true }") && e.contains(&file), "{e}");
    assert!(e.contains("memory.enabledSkills"), "{e}");

    let mut c = w.spawn();
    let e = err(c
        .request("skillmem/note", json!({ "skill": "pdf", "kind": "gotcha", "delta": "pages count from 1" }))
        .unwrap());
    assert_eq!(e["data"]["kind"], "memoryDisabled", "{e}");
    let message = e["message"].as_str().unwrap();
    assert!(message.contains("skill-memory: { enabled: true }") && message.contains(&file), "{message}");
    assert_eq!(c.shutdown().unwrap(), 0);

    // Adding that one line is enough.
    std::fs::write(
        dir.join("SKILL.md"),
        "---\nname: pdf\ndescription: PDF work\nskill-memory: { enabled: true }\n---\n# pdf\n",
    )
    .unwrap();
    let (code, _, e) = w.cli(&["note", "pdf", "--kind", "gotcha", "--delta", "pages count from 1"]);
    assert_eq!(code, 0, "{e}");
}

#[test]
fn an_unknown_note_id_says_how_to_find_one_on_the_cli_and_over_the_protocol() {
    let w = World::new();
    w.enabled_skill("jq");
    let mut c = w.spawn();
    let id = note(&mut c, "jq", "gotcha", "", "jq -r prints raw strings")["id"].as_i64().unwrap();
    let missing = id + 1000;
    for (method, params) in [
        ("skillmem/forget", json!({ "id": missing })),
        ("skillmem/pin", json!({ "id": missing, "pinned": true })),
        ("skillmem/edit", json!({ "id": missing, "delta": "new text" })),
    ] {
        let e = err(c.request(method, params).unwrap());
        assert_eq!(e["data"]["kind"], "notFound", "{method}: {e}");
        let message = e["message"].as_str().unwrap();
        assert!(message.contains(&format!("no note with id {missing}")), "{method}: {message}");
        assert!(message.contains("skillmem notes SKILL") && message.contains("skillmem/notes"), "{method}: {message}");
    }
    ok(c.request("skillmem/pin", json!({ "id": id, "pinned": true })).unwrap());
    assert_eq!(c.shutdown().unwrap(), 0);

    let missing = missing.to_string();
    for args in [vec!["forget", &missing], vec!["pin", &missing], vec!["edit", &missing, "--delta", "new text"]] {
        let (code, _, e) = w.cli(&args);
        assert_ne!(code, 0, "{args:?}");
        assert!(e.contains("skillmem notes SKILL"), "{args:?}: {e}");
    }
}

#[test]
fn a_data_directory_that_cannot_be_made_says_what_to_set() {
    let w = World::new();
    let file = w.tmp.path().join("a-file");
    std::fs::write(&file, "not a folder").unwrap();
    let below = file.join("data").display().to_string();
    // Over the protocol: initialize fails and says which settings choose the folder.
    let mut c = w.spawn_raw();
    let r = c.initialize(&w.ws, json!({ "dataDir": below })).unwrap();
    let message = r["error"]["message"].as_str().unwrap_or_else(|| panic!("initialize succeeded: {r}"));
    assert!(message.contains(&below) && message.contains("SKILLMEM_HOME") && message.contains("writable"), "{message}");
    drop(c);
    // On the command line, the same.
    w.enabled_skill("jq");
    let (code, _, e) = w.cli(&["note", "jq", "--kind", "fix", "--delta", "x", "--data-dir", &below]);
    assert_ne!(code, 0);
    assert!(e.contains(&below) && e.contains("writable"), "{e}");
}
