//! The `http` embedder against a small OpenAI-compatible server on loopback: batching, the
//! API key, the dimension probe, wrong dimension, garbage, a slow endpoint, the circuit
//! breaker, notes that are never lost while the endpoint is down, and writes that do not wait
//! for a recall's query embedding.

mod common;

use std::io::{BufRead, BufReader, Read, Write};
use std::net::{TcpListener, TcpStream};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Condvar, Mutex};
use std::time::Duration;

use serde_json::{json, Value};
use skillmem::embed::http::HttpEmbedder;
use skillmem::embed::Embedder;

const OK: usize = 0;
const WRONG_DIM: usize = 1;
const GARBAGE: usize = 2;
const SLOW: usize = 3;
const FAIL: usize = 4;

/// A fake `/v1/embeddings`: 8-dimensional vectors derived from the text's bytes.
struct Fake {
    url: String,
    mode: Arc<AtomicUsize>,
    requests: Arc<AtomicUsize>,
    auth: Arc<Mutex<Vec<String>>>,
    gate: Arc<Gate>,
}

/// A request with a text containing [`HOLD`] is answered only once the test opens the gate
/// (or after a minute, so that a failing test ends).
const HOLD: &str = "holdthisquery";

#[derive(Default)]
struct Gate {
    /// (a request is being held, the gate is open)
    state: Mutex<(bool, bool)>,
    cv: Condvar,
}

impl Gate {
    fn hold(&self) {
        let mut s = self.state.lock().unwrap();
        s.0 = true;
        self.cv.notify_all();
        let _open = self.cv.wait_timeout_while(s, Duration::from_secs(60), |s| !s.1).unwrap();
    }
    /// Waits until a request is held.
    fn wait_held(&self) {
        let s = self.state.lock().unwrap();
        let (s, _) = self.cv.wait_timeout_while(s, Duration::from_secs(60), |s| !s.0).unwrap();
        assert!(s.0, "the endpoint never received the held request");
    }
    fn open(&self) {
        self.state.lock().unwrap().1 = true;
        self.cv.notify_all();
    }
}

fn vector(text: &str, dim: usize) -> Vec<f32> {
    let mut v = vec![0.1f32; dim];
    for (i, b) in text.bytes().enumerate() {
        v[i % dim] += b as f32 / 255.0;
    }
    v
}

fn serve_conn(
    s: TcpStream,
    mode: Arc<AtomicUsize>,
    requests: Arc<AtomicUsize>,
    auth: Arc<Mutex<Vec<String>>>,
    gate: Arc<Gate>,
) {
    let mut r = BufReader::new(s.try_clone().unwrap());
    let mut w = s;
    loop {
        let mut len = 0usize;
        let mut first = true;
        loop {
            let mut line = String::new();
            if r.read_line(&mut line).unwrap_or(0) == 0 {
                return;
            }
            if first {
                first = false;
                continue;
            }
            let l = line.trim_end();
            if l.is_empty() {
                break;
            }
            let lower = l.to_ascii_lowercase();
            if let Some(v) = lower.strip_prefix("content-length:") {
                len = v.trim().parse().unwrap_or(0);
            }
            if lower.starts_with("authorization:") {
                auth.lock().unwrap().push(l["authorization:".len()..].trim().to_string());
            }
        }
        let mut body = vec![0; len];
        if r.read_exact(&mut body).is_err() {
            return;
        }
        requests.fetch_add(1, Ordering::SeqCst);
        let req: Value = serde_json::from_slice(&body).unwrap_or(Value::Null);
        let inputs: Vec<String> = match &req["input"] {
            Value::Array(a) => a.iter().map(|x| x.as_str().unwrap_or("").to_string()).collect(),
            Value::String(s) => vec![s.clone()],
            _ => vec![],
        };
        if inputs.iter().any(|t| t.contains(HOLD)) {
            gate.hold();
        }
        let m = mode.load(Ordering::SeqCst);
        let (status, text) = match m {
            GARBAGE => (200, "{\"data\": [{\"embedding\": \"nope\"}]}".to_string()),
            FAIL => (500, "{\"error\": \"model not loaded\"}".to_string()),
            _ => {
                if m == SLOW {
                    std::thread::sleep(Duration::from_millis(1500));
                }
                let dim = if m == WRONG_DIM { 5 } else { 8 };
                // Items in reverse order: the embedder must sort by `index`.
                let data: Vec<Value> = inputs
                    .iter()
                    .enumerate()
                    .rev()
                    .map(|(i, t)| json!({"object": "embedding", "index": i, "embedding": vector(t, dim)}))
                    .collect();
                (200, json!({"object": "list", "data": data, "model": req["model"]}).to_string())
            }
        };
        let resp = format!(
            "HTTP/1.1 {status} X\r\nContent-Type: application/json\r\nContent-Length: {}\r\n\r\n{text}",
            text.len()
        );
        if w.write_all(resp.as_bytes()).is_err() {
            return;
        }
    }
}

fn fake() -> Fake {
    let l = TcpListener::bind("127.0.0.1:0").unwrap();
    let url = format!("http://{}", l.local_addr().unwrap());
    let mode = Arc::new(AtomicUsize::new(OK));
    let requests = Arc::new(AtomicUsize::new(0));
    let auth = Arc::new(Mutex::new(vec![]));
    let gate = Arc::new(Gate::default());
    let (m, r, a, g) = (mode.clone(), requests.clone(), auth.clone(), gate.clone());
    std::thread::spawn(move || {
        for s in l.incoming().flatten() {
            let (m, r, a, g) = (m.clone(), r.clone(), a.clone(), g.clone());
            std::thread::spawn(move || serve_conn(s, m, r, a, g));
        }
    });
    Fake { url, mode, requests, auth, gate }
}

fn embedder(f: &Fake) -> HttpEmbedder {
    HttpEmbedder::new(&f.url, "mini", None, Some(8), Duration::from_millis(500)).unwrap()
}

#[test]
fn embeds_in_batches_sorted_by_index_and_normalised() {
    let f = fake();
    let e = embedder(&f);
    assert_eq!(e.dim(), 8);
    assert_eq!(e.model_id(), format!("http:mini@{}/v1/embeddings#8+2v", f.url));
    let texts: Vec<String> = (0..150).map(|i| format!("text number {i}")).collect();
    let refs: Vec<&str> = texts.iter().map(String::as_str).collect();
    let vs = e.embed(&refs).unwrap();
    assert_eq!(vs.len(), 150);
    assert_eq!(f.requests.load(Ordering::SeqCst), 3, "64 texts a request");
    for (t, v) in texts.iter().zip(&vs) {
        let mut want = vector(t, 8);
        skillmem::embed::normalize(&mut want);
        assert!(v.iter().zip(&want).all(|(a, b)| (a - b).abs() < 1e-5));
    }
}

#[test]
fn learns_the_dimension_and_sends_the_api_key() {
    let f = fake();
    std::env::set_var("SKILLMEM_TEST_EMBED_KEY", "sekrit");
    let e = HttpEmbedder::new(
        &format!("{}/v1", f.url),
        "mini",
        Some("SKILLMEM_TEST_EMBED_KEY"),
        None,
        Duration::from_secs(2),
    )
    .unwrap();
    assert_eq!(e.dim(), 8);
    assert!(f.auth.lock().unwrap().iter().all(|a| a == "Bearer sekrit"));
    let err = HttpEmbedder::new(&f.url, "mini", Some("SKILLMEM_TEST_EMBED_KEY_UNSET"), Some(8), Duration::from_secs(1))
        .err()
        .unwrap();
    assert!(err.to_string().contains("SKILLMEM_TEST_EMBED_KEY_UNSET"), "{err}");
    assert!(HttpEmbedder::new("ftp://x", "mini", None, Some(8), Duration::from_secs(1)).is_err());
    // Nothing listening: the dimension cannot be learnt, and the error says what to do.
    let down = HttpEmbedder::new("http://127.0.0.1:9", "mini", None, None, Duration::from_millis(300)).err().unwrap();
    assert!(down.to_string().contains("embedding.dim"), "{down}");
}

#[test]
fn wrong_dimension_garbage_errors_and_slowness_are_errors_not_vectors() {
    let f = fake();
    let e = embedder(&f).with_cooldown(Duration::from_millis(1));
    for mode in [WRONG_DIM, GARBAGE, FAIL, SLOW] {
        f.mode.store(mode, Ordering::SeqCst);
        let r = e.embed(&["hello"]);
        assert!(r.is_err(), "mode {mode}: {r:?}");
        std::thread::sleep(Duration::from_millis(5));
    }
    f.mode.store(OK, Ordering::SeqCst);
    std::thread::sleep(Duration::from_millis(5));
    assert_eq!(e.embed(&["hello"]).unwrap().len(), 1);
}

#[test]
fn circuit_breaker_opens_then_probes() {
    let f = fake();
    let e = embedder(&f).with_cooldown(Duration::from_millis(300));
    f.mode.store(FAIL, Ordering::SeqCst);
    for _ in 0..3 {
        assert!(e.embed(&["x"]).is_err());
    }
    let seen = f.requests.load(Ordering::SeqCst);
    assert_eq!(seen, 3);
    // Open: fails at once without asking the endpoint.
    assert!(e.embed(&["x"]).unwrap_err().to_string().contains("circuit breaker"));
    assert_eq!(f.requests.load(Ordering::SeqCst), seen);
    // After the cooldown one call goes through; success closes the breaker.
    f.mode.store(OK, Ordering::SeqCst);
    std::thread::sleep(Duration::from_millis(350));
    assert!(e.embed(&["x"]).is_ok());
    assert!(e.embed(&["y"]).is_ok());
}

/// Through the binary: with the endpoint failing, notes are still stored and recalled by
/// their words; with it back, recall uses vectors of the http model.
#[test]
fn endpoint_down_never_loses_a_note() {
    let f = fake();
    let w = common::World::new();
    let dir = w.enabled_skill("jq");
    let opts = json!({"embedding": {"provider": "http", "url": f.url, "model": "mini", "dim": 8}});
    f.mode.store(FAIL, Ordering::SeqCst);
    let mut c = w.spawn_with(opts.clone());
    let n = common::note(&mut c, "jq", "gotcha", "parse csv", "use @csv to quote fields");
    assert_eq!(n["status"], "inserted");
    let r = common::load(&mut c, "c1", "jq", &dir, Some("csv quoting"));
    assert_eq!(r["mode"], "fts", "{r}");
    assert!(r["append"].as_str().unwrap().contains("@csv"));
    drop(c);
    f.mode.store(OK, Ordering::SeqCst);
    let mut c = w.spawn_with(opts);
    common::note(&mut c, "jq", "fix", "empty output", "add -r for raw strings");
    let r = common::load(&mut c, "c2", "jq", &dir, Some("raw strings output"));
    assert_eq!(r["mode"], "vector", "{r}");
    let s = common::ok(c.request("skillmem/stats", json!({})).unwrap());
    assert_eq!(s["notes"], 2);
    assert!(s["embedding"]["model"].as_str().unwrap().starts_with("http:mini@"));
    assert_eq!(s["embedding"]["stale"], 1, "the note written while down waits for distill");
}

/// Through the binary: a recall embeds its intent without holding the database, so a note
/// written while the endpoint is still embedding a recall's query is stored and answered
/// first (a model takes milliseconds a query, an endpoint a round trip; writes and the
/// recalls of other skills used to queue behind it).
#[test]
fn a_write_does_not_wait_for_a_recall_embedding_its_query() {
    let f = fake();
    let w = common::World::new();
    let dir = w.enabled_skill("jq");
    let opts = json!({"embedding": {"provider": "http", "url": f.url, "model": "mini", "dim": 8}});
    let mut c = w.spawn_with(opts);
    common::note(&mut c, "jq", "gotcha", "parse csv", "use @csv to quote fields");
    let recall = c
        .send_request(
            "skillmem/toolAfter",
            json!({ "sessionId": "s1", "callId": "c1", "tool": "skill",
                    "args": { "name": "jq", "intent": format!("{HOLD} csv quoting") },
                    "output": format!("# jq\n\nBase directory for this skill: {}\n", dir.display()) }),
        )
        .unwrap();
    f.gate.wait_held();
    let write = c
        .send_request(
            "skillmem/note",
            json!({ "skill": "jq", "kind": "fix", "intent": "raw output", "delta": "add -r for raw strings" }),
        )
        .unwrap();
    // Frames in the order they come: the write's answer must not wait for the recall's.
    let first = loop {
        let msg = c.read().unwrap().expect("the server closed its output");
        match msg.get("id").and_then(Value::as_i64) {
            Some(id) if id == write || id == recall => break (id, msg),
            _ => {}
        }
    };
    assert_eq!(first.0, write, "the recall answered before the write: {}", first.1);
    // (The fake's vectors are all alike: the write may be merged as a duplicate.)
    let status = common::ok(first.1)["status"].clone();
    assert!(status == "inserted" || status == "duplicate", "{status}");
    f.gate.open();
    let r = common::ok(c.wait_for(recall).unwrap());
    assert_eq!(r["mode"], "vector", "{r}");
    assert!(r["append"].as_str().unwrap().contains("@csv"), "{r}");
}
