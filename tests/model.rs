//! `skillmem model fetch|status` against a loopback hub that serves files the way the Hugging
//! Face hub does (`/{repo}/resolve/{revision}/{file}`, `X-Repo-Commit`, `ETag`, large files
//! behind a redirect with `X-Linked-Etag`), and a configured model that is missing.

mod common;

use std::io::{BufRead, BufReader, Write};
use std::net::{TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::Arc;

use serde_json::{json, Value};
use sha2::{Digest, Sha256};

const COMMIT: &str = "0123456789abcdef0123456789abcdef01234567";

fn sha256_hex(b: &[u8]) -> String {
    Sha256::digest(b).iter().map(|x| format!("{x:02x}")).collect()
}

fn git_sha1(b: &[u8]) -> String {
    use sha1::Digest as _;
    let mut h = sha1::Sha1::new();
    h.update(format!("blob {}\0", b.len()).as_bytes());
    h.update(b);
    h.finalize().iter().map(|x| format!("{x:02x}")).collect()
}

/// A loopback hub with one model, `org/tiny`.
struct Hub {
    url: String,
    gets: Arc<AtomicUsize>,
    /// Serve bytes that do not match the announced hash for the large file.
    corrupt: Arc<AtomicBool>,
    stop: Arc<AtomicBool>,
}

impl Drop for Hub {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::SeqCst);
        let _ = TcpStream::connect(self.url.trim_start_matches("http://"));
    }
}

fn files() -> Vec<(&'static str, Vec<u8>, bool)> {
    vec![
        ("config.json", br#"{"hidden_size": 8, "model_type": "bert"}"#.to_vec(), false),
        ("tokenizer.json", br#"{"version": "1.0"}"#.to_vec(), false),
        ("model.safetensors", (0..50_000u32).map(|i| (i % 251) as u8).collect(), true),
    ]
}

fn hub() -> Hub {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let url = format!("http://{}", listener.local_addr().unwrap());
    let gets = Arc::new(AtomicUsize::new(0));
    let corrupt = Arc::new(AtomicBool::new(false));
    let stop = Arc::new(AtomicBool::new(false));
    let (g, c, s) = (gets.clone(), corrupt.clone(), stop.clone());
    std::thread::spawn(move || {
        for stream in listener.incoming() {
            if s.load(Ordering::SeqCst) {
                break;
            }
            let Ok(stream) = stream else { continue };
            serve(stream, &g, &c);
        }
    });
    Hub { url, gets, corrupt, stop }
}

fn serve(mut stream: TcpStream, gets: &AtomicUsize, corrupt: &AtomicBool) {
    let mut reader = BufReader::new(stream.try_clone().unwrap());
    let mut line = String::new();
    if reader.read_line(&mut line).is_err() {
        return;
    }
    loop {
        let mut h = String::new();
        if reader.read_line(&mut h).is_err() || h.trim().is_empty() {
            break;
        }
    }
    let mut parts = line.split_whitespace();
    let (method, path) = (parts.next().unwrap_or(""), parts.next().unwrap_or(""));
    let head = method == "HEAD";
    let mut respond = |status: &str, headers: Vec<(String, String)>, body: &[u8]| {
        let mut r = format!("HTTP/1.1 {status}\r\nConnection: close\r\nContent-Length: {}\r\n", body.len());
        for (k, v) in headers {
            r.push_str(&format!("{k}: {v}\r\n"));
        }
        r.push_str("\r\n");
        let _ = stream.write_all(r.as_bytes());
        if !head {
            let _ = stream.write_all(body);
        }
    };
    // The CDN a large file redirects to.
    if let Some(sha) = path.strip_prefix("/cdn/") {
        gets.fetch_add(1, Ordering::SeqCst);
        let f = files().into_iter().find(|(_, b, _)| sha256_hex(b) == sha);
        return match f {
            Some((_, mut body, _)) => {
                if corrupt.load(Ordering::SeqCst) {
                    body[7] ^= 1;
                }
                respond("200 OK", vec![("ETag".into(), format!("\"{sha}\""))], &body)
            }
            None => respond("404 Not Found", vec![], b"no such blob"),
        };
    }
    let Some(rest) = path.strip_prefix("/org/tiny/resolve/") else {
        return respond("404 Not Found", vec![("X-Error-Code".into(), "RepoNotFound".into())], b"Repository not found");
    };
    let (rev, file) = rest.split_once('/').unwrap_or((rest, ""));
    if rev != "main" && rev != COMMIT {
        return respond("404 Not Found", vec![("X-Error-Code".into(), "RevisionNotFound".into())], b"");
    }
    let Some((_, body, lfs)) = files().into_iter().find(|(n, _, _)| *n == file) else {
        return respond("404 Not Found", vec![("X-Error-Code".into(), "EntryNotFound".into())], b"");
    };
    let commit = ("X-Repo-Commit".to_string(), COMMIT.to_string());
    if lfs {
        let sha = sha256_hex(&body);
        respond(
            "302 Found",
            vec![
                commit,
                ("Location".into(), format!("/cdn/{sha}")),
                ("X-Linked-Etag".into(), format!("\"{sha}\"")),
                ("X-Linked-Size".into(), body.len().to_string()),
                ("ETag".into(), "\"something-else\"".into()),
            ],
            b"",
        )
    } else {
        if !head {
            gets.fetch_add(1, Ordering::SeqCst);
        }
        respond("200 OK", vec![commit, ("ETag".into(), format!("W/\"{}\"", git_sha1(&body)))], &body)
    }
}

fn cli(w: &common::World, hub: &str, args: &[&str]) -> (i32, String, String) {
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_skillmem"))
        .args(args)
        .current_dir(&w.ws)
        .envs(w.envs())
        .env("HF_HOME", w.tmp.path().join("hf"))
        .env_remove("HF_HUB_CACHE")
        .env("HF_ENDPOINT", hub)
        .output()
        .unwrap();
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stdout).into(),
        String::from_utf8_lossy(&out.stderr).into(),
    )
}

fn repo(w: &common::World) -> PathBuf {
    w.tmp.path().join("hf/hub/models--org--tiny")
}

#[test]
fn fetch_lays_out_the_hub_cache_and_verifies() {
    let w = common::World::new();
    let h = hub();
    let (code, out, errs) = cli(&w, &format!("{}/", h.url), &["model", "fetch", "org/tiny", "--json"]);
    assert_eq!(code, 0, "{out}{errs}");
    let v: Value = serde_json::from_str(&out).unwrap();
    let snap = repo(&w).join("snapshots").join(COMMIT);
    assert_eq!(v["fetched"]["commit"], COMMIT);
    assert_eq!(Path::new(v["fetched"]["path"].as_str().unwrap()), snap);
    assert!(v["config"].as_str().unwrap().contains(&format!("path = \"{}\"", snap.display())), "{v}");
    assert!(v["fetched"]["files"].as_array().unwrap().iter().all(|f| f["downloaded"] == true));
    assert_eq!(std::fs::read_to_string(repo(&w).join("refs/main")).unwrap(), COMMIT);
    for (name, body, _) in files() {
        let link = snap.join(name);
        assert!(std::fs::symlink_metadata(&link).unwrap().file_type().is_symlink(), "{name}");
        assert_eq!(std::fs::read(&link).unwrap(), body, "{name}");
    }
    let big = sha256_hex(&files()[2].1);
    assert!(repo(&w).join("blobs").join(&big).is_file(), "a large file's blob is named by its SHA-256");
    assert_eq!(h.gets.load(Ordering::SeqCst), 3);

    // Again: verified from the cache, nothing downloaded. The human output ends with the config.
    let (code, out, errs) = cli(&w, &h.url, &["model", "fetch", "org/tiny"]);
    assert_eq!(code, 0, "{out}{errs}");
    assert_eq!(h.gets.load(Ordering::SeqCst), 3);
    assert!(out.contains("already present") && out.contains("provider = \"model\""), "{out}");

    // status sees the configured folder.
    std::fs::write(
        w.ws.join("skillmem.toml"),
        format!("[embedding]\nprovider = \"model\"\npath = \"{}\"\n", snap.display()),
    )
    .unwrap();
    let (code, out, errs) = cli(&w, &h.url, &["model", "status", "--json"]);
    assert_eq!(code, 0, "{out}{errs}");
    let v: Value = serde_json::from_str(&out).unwrap();
    assert_eq!((v["configured"].as_str(), v["present"].as_bool()), (Some("model"), Some(true)), "{v}");
    // The tiny files are no model: status says why the static table is in use instead.
    assert!(v["inUse"].as_str().unwrap().starts_with("static:"), "{v}");
    let why = if cfg!(feature = "local-model") { "does not load" } else { "local-model feature" };
    assert!(v["problem"].as_str().is_some_and(|p| p.contains(why)), "{v}");
}

/// A model folder whose files do not load (a config of another architecture, weights cut
/// short) does not stop the sidecar: it recalls with the static embedder and says why.
#[test]
fn a_model_that_does_not_load_falls_back_to_static_and_says_why() {
    let w = common::World::new();
    let dir = w.enabled_skill("jq");
    let broken = w.tmp.path().join("broken-model");
    std::fs::create_dir_all(&broken).unwrap();
    std::fs::write(broken.join("config.json"), r#"{"model_type": "gpt2"}"#).unwrap();
    std::fs::write(broken.join("tokenizer.json"), "{}").unwrap();
    std::fs::write(broken.join("model.safetensors"), b"cut short").unwrap();
    let mut c = w.spawn_with(json!({ "embedding": { "provider": "model", "path": broken } }));
    common::note(&mut c, "jq", "gotcha", "raw output", "Use -r to print raw strings instead of JSON-quoted ones.");
    let r = common::load(&mut c, "c1", "jq", &dir, Some("print strings without quotes"));
    assert_eq!(r["mode"], "vector", "{r}");
    assert!(r["append"].as_str().unwrap().contains("Use -r"), "{r}");
    let s = common::ok(c.request("skillmem/stats", json!({})).unwrap());
    assert!(s["embedding"]["model"].as_str().unwrap().starts_with("static:minilm-l6-v2#256-"), "{s}");
    let why = if cfg!(feature = "local-model") { "does not load" } else { "local-model feature" };
    let logs = log_messages(&c);
    assert!(logs.iter().any(|m| m.contains(why) && m.contains("static")), "{logs:?}");
    c.shutdown().unwrap();
}

#[test]
fn a_corrupt_download_is_refused_and_nothing_is_kept() {
    let w = common::World::new();
    let h = hub();
    h.corrupt.store(true, Ordering::SeqCst);
    let (code, out, errs) = cli(&w, &h.url, &["model", "fetch", "org/tiny"]);
    assert_ne!(code, 0, "{out}");
    assert!(errs.contains("model.safetensors of org/tiny failed verification"), "{errs}");
    let blobs: Vec<_> = std::fs::read_dir(repo(&w).join("blobs")).unwrap().flatten().map(|e| e.file_name()).collect();
    assert_eq!(blobs.len(), 2, "only the two verified small files: {blobs:?}");
    assert!(!repo(&w).join("snapshots").exists());
    // The hub heals: the next run completes.
    h.corrupt.store(false, Ordering::SeqCst);
    let (code, out, errs) = cli(&w, &h.url, &["model", "fetch", "org/tiny"]);
    assert_eq!(code, 0, "{out}{errs}");
}

#[test]
fn unknown_models_and_bad_names_say_what_to_fix() {
    let w = common::World::new();
    let h = hub();
    for (args, want) in [
        (vec!["model", "fetch", "org/nope"], "HTTP 404: no such model"),
        (vec!["model", "fetch", "org/tiny", "--revision", "v9"], "HTTP 404"),
        (vec!["model", "fetch", "a/b/c"], "give org/name"),
    ] {
        let (code, out, errs) = cli(&w, &h.url, &args);
        assert_ne!(code, 0, "{args:?}: {out}");
        assert!(errs.contains(want), "{args:?}: {errs}");
    }
    let (code, _, errs) = cli(&w, "http://127.0.0.1:9", &["model", "fetch"]);
    assert_ne!(code, 0);
    assert!(errs.contains("cannot reach http://127.0.0.1:9/sentence-transformers/all-MiniLM-L6-v2"), "{errs}");
}

/// A configured model that is missing is never downloaded by the sidecar: it recalls with the
/// static embedder and tells the host what to run.
#[test]
fn a_missing_model_falls_back_to_static_and_says_what_to_run() {
    let w = common::World::new();
    let dir = w.enabled_skill("jq");
    let missing = w.tmp.path().join("no-model-here");
    let mut c = w.spawn_with(json!({ "embedding": { "provider": "model", "path": missing } }));
    common::note(&mut c, "jq", "gotcha", "raw output", "Use -r to print raw strings instead of JSON-quoted ones.");
    let r = common::load(&mut c, "c1", "jq", &dir, Some("print strings without quotes"));
    assert_eq!(r["mode"], "vector", "{r}");
    let s = common::ok(c.request("skillmem/stats", json!({})).unwrap());
    assert!(s["embedding"]["model"].as_str().unwrap().starts_with("static:minilm-l6-v2#256-"), "{s}");
    let logs = log_messages(&c);
    assert!(logs.iter().any(|m| m.contains("skillmem model fetch") && m.contains("static")), "{logs:?}");
    c.shutdown().unwrap();

    let (code, out, _) = w.cli(&["model", "status"]);
    assert_eq!(code, 0);
    assert!(out.contains("configured: static") && out.contains("in use: static:"), "{out}");
}

/// The `window/logMessage` texts the sidecar has sent so far.
fn log_messages(c: &skillmem::client::Client) -> Vec<&str> {
    c.notifications
        .iter()
        .filter(|n| n["method"] == "window/logMessage")
        .filter_map(|n| n["params"]["message"].as_str())
        .collect()
}

/// Reads the sidecar's messages until a `window/logMessage` containing `needle` has come.
fn wait_for_log(c: &mut skillmem::client::Client, needle: &str) {
    loop {
        let done = c.notifications.iter().any(|n| {
            n["method"] == "window/logMessage" && n["params"]["message"].as_str().is_some_and(|m| m.contains(needle))
        });
        if done {
            return;
        }
        let m = c.read().unwrap().expect("the sidecar ended before the log message came");
        c.notifications.push(m);
    }
}

/// Notes stamped by another model are re-embedded in the background after start; until then
/// they are found by their words.
#[test]
fn notes_of_another_model_are_reembedded_in_the_background() {
    let w = common::World::new();
    let dir = w.enabled_skill("jq");
    let mut c = w.spawn_with(json!({ "embedding": { "provider": "hash" } }));
    for i in 0..40 {
        common::note(&mut c, "jq", "gotcha", &format!("case {i}"), &format!("Lesson number {i} about filters."));
    }
    c.shutdown().unwrap();
    let mut c = w.spawn();
    // Found at once, by words or by vectors, whatever the background run has done so far.
    let r = common::load(&mut c, "c1", "jq", &dir, Some("lesson number 7"));
    assert!(r["append"].as_str().unwrap().contains("Lesson number 7"), "{r}");
    // The run ends with a log message; then nothing is stamped by the old model.
    wait_for_log(&mut c, "re-embedded 40 notes");
    let s = common::ok(c.request("skillmem/stats", json!({})).unwrap());
    assert_eq!(s["embedding"]["stale"], 0, "{s}");
    c.shutdown().unwrap();
}

/// With the static table as the embedder, each note keeps the word pieces token matching
/// reads: a write and an edit store them, so that a load reads them with the note. Notes
/// stored without them (by a build before, here cleared by hand) are ranked the same
/// meanwhile, and get them from the background run after a start.
#[test]
fn notes_keep_their_word_pieces_for_token_matching() {
    let w = common::World::new();
    let dir = w.enabled_skill("s3");
    let db = || rusqlite::Connection::open(w.data.join("skillmem.db")).unwrap();
    let pieces = || -> Vec<(i64, Option<Vec<u8>>)> {
        let db = db();
        let mut st = db.prepare("SELECT id, match_pieces FROM notes WHERE retired_at IS NULL ORDER BY id").unwrap();
        st.query_map([], |r| Ok((r.get(0)?, r.get(1)?))).unwrap().map(|r| r.unwrap()).collect()
    };
    let mut c = w.spawn();
    let lessons = [
        ("presigned link", "`aws s3 presign s3://b/f --expires-in 3600` prints a temporary download URL."),
        ("sync a folder", "`aws s3 sync ./logs s3://b/logs` uploads only what changed."),
        ("lifecycle", "Expire old objects with a lifecycle rule after 30 days."),
    ];
    for (intent, delta) in lessons {
        common::note(&mut c, "s3", "gotcha", intent, delta);
    }
    let intent = "share a file for an hour via a temporary link";
    let first = common::load(&mut c, "c1", "s3", &dir, Some(intent))["append"].clone();
    assert!(first.as_str().unwrap().contains("presign"), "{first}");
    let stored = pieces();
    assert_eq!(stored.len(), 3);
    for (id, p) in &stored {
        // Four bytes naming the table, then two bytes a piece.
        let p = p.as_ref().unwrap_or_else(|| panic!("note {id} was stored without its pieces"));
        assert!(p.len() > 4 && p.len() % 2 == 0, "note {id}: {p:?}");
    }
    // An edit stores the new text's pieces.
    let (id, before) = stored[1].clone();
    common::ok(
        c.request("skillmem/edit", json!({ "id": id, "delta": "`aws s3 sync --delete` also removes what is gone." }))
            .unwrap(),
    );
    let after = pieces()[1].1.clone();
    assert!(after.is_some() && after != before, "{before:?} -> {after:?}");
    common::ok(c.request("skillmem/edit", json!({ "id": id, "delta": lessons[1].1 })).unwrap());
    assert_eq!(pieces()[1].1, before);
    c.shutdown().unwrap();

    // A store whose notes have none: the same block at once, and the pieces after the run.
    db().execute("UPDATE notes SET match_pieces = NULL", []).unwrap();
    let mut c = w.spawn();
    let again = common::load(&mut c, "c2", "s3", &dir, Some(intent))["append"].clone();
    assert_eq!(again, first);
    wait_for_log(&mut c, "stored the word pieces of 3 notes");
    assert_eq!(pieces(), stored);
    let last = common::load(&mut c, "c3", "s3", &dir, Some(intent))["append"].clone();
    assert_eq!(last, first);
    c.shutdown().unwrap();
}

/// With a real local model (`SKILLMEM_TEST_MODEL_DIR`, a build with `--features
/// local-model`): notes keep the model's pieces when written; notes written before (here by
/// the static table) get them from the background run after a start, and recall then ranks
/// by them.
#[cfg(feature = "local-model")]
#[test]
fn a_model_keeps_each_notes_pieces_and_makes_the_missing_ones() {
    let Ok(model) = std::env::var("SKILLMEM_TEST_MODEL_DIR") else { return };
    let w = common::World::new();
    let dir = w.enabled_skill("jq");
    let pieces = |w: &common::World| -> i64 {
        let db = rusqlite::Connection::open(w.data.join("skillmem.db")).unwrap();
        db.query_row("SELECT count(*) FROM note_pieces", [], |r| r.get(0)).unwrap()
    };
    let mut c = w.spawn_with(json!({ "embedding": { "provider": "static" } }));
    common::note(&mut c, "jq", "gotcha", "raw output", "Use `jq -r` to print raw strings instead of JSON-quoted ones.");
    c.shutdown().unwrap();
    assert_eq!(pieces(&w), 0);
    let mut c = w.spawn_with(json!({ "embedding": { "provider": "model", "path": model } }));
    common::note(&mut c, "jq", "fix", "slurp lines", "`jq -s .` reads every input into one array.");
    wait_for_log(&mut c, "re-embedded");
    let r = common::load(&mut c, "c1", "jq", &dir, Some("print strings without the quotes"));
    assert!(r["append"].as_str().unwrap().contains("jq -r"), "{r}");
    c.shutdown().unwrap();
    assert_eq!(pieces(&w), 2);
}
