//! The HNSW index: agreement with exact search, persistence, corrupt files, tombstones, a
//! query equal to a stored vector, and a clean frame stream while the index works.

mod common;

use skillmem::index::{ExactIndex, HnswIndex, HnswParams, VectorIndex};

/// Clustered unit vectors (deterministic): `n` of dimension `dim` around `clusters` centres.
fn clustered(n: usize, dim: usize, clusters: usize, seed: u64) -> Vec<Vec<f32>> {
    let mut s = seed.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
    let mut rnd = move || {
        s ^= s << 13;
        s ^= s >> 7;
        s ^= s << 17;
        (s >> 11) as f32 / (1u64 << 53) as f32 - 0.5
    };
    let centres: Vec<Vec<f32>> = (0..clusters).map(|_| (0..dim).map(|_| rnd()).collect()).collect();
    (0..n)
        .map(|i| {
            let c = &centres[i % clusters];
            let mut v: Vec<f32> = c.iter().map(|x| x + 0.35 * rnd()).collect();
            skillmem::embed::normalize(&mut v);
            v
        })
        .collect()
}

/// Always search the graph (no exact shortcut for small sets).
fn graph_params() -> HnswParams {
    HnswParams { exact_max: 0, min_selectivity: 0.0, ef_search: 64, ..HnswParams::default() }
}

fn filled(dir: Option<std::path::PathBuf>, vs: &[Vec<f32>]) -> HnswIndex {
    let ix = HnswIndex::new("test-model", vs[0].len(), dir, graph_params());
    for (i, v) in vs.iter().enumerate() {
        ix.insert(i as i64 + 1, v);
    }
    ix.build_now();
    ix
}

fn ids(r: &[(i64, f32)]) -> Vec<i64> {
    r.iter().map(|x| x.0).collect()
}

/// An index (default parameters: small sets scanned) and an exact one over the same 3,000
/// clustered vectors (ids 0..3000, the graph built over them), then `late` more written
/// after the build (ids from 10,000: pending, not in the graph); the late vectors too.
fn built_with_late(seed: u64, late: usize) -> (HnswIndex, ExactIndex, Vec<Vec<f32>>) {
    let vs = clustered(3000, 32, 30, seed);
    let ix = HnswIndex::new("test-model", 32, None, HnswParams::default());
    let ex = ExactIndex::new("test-model");
    for (i, v) in vs.iter().enumerate() {
        ix.insert(i as i64, v);
        ex.insert(i as i64, v);
    }
    ix.build_now();
    assert_eq!(ix.pending(), 0);
    let late = clustered(late, 32, 30, seed + 1);
    for (i, v) in late.iter().enumerate() {
        ix.insert(10_000 + i as i64, v);
        ex.insert(10_000 + i as i64, v);
    }
    (ix, ex, late)
}

/// A skill's notes under the exact limit are scanned (the graph's int8 codes first, then the
/// best of them exactly): the ranking and the scores are an exact scan's, pending vectors
/// included.
#[test]
fn scanned_candidate_sets_rank_exactly() {
    let (ix, ex, late) = built_with_late(7, 3);
    assert_eq!(ix.pending(), 3);
    let cands: Vec<i64> = (0..3000).step_by(3).chain(10_000..10_003).collect();
    for q in clustered(30, 32, 30, 9).iter().chain(&late) {
        for k in [1, 10, 50] {
            let got = ix.search(q, &cands, k);
            let want = ex.search(q, &cands, k);
            assert_eq!(ids(&got), ids(&want), "k={k}");
            for ((_, a), (_, b)) in got.iter().zip(&want) {
                assert!((a - b).abs() < 1e-5, "scores are exact: {a} vs {b}");
            }
        }
    }
}

/// A scanned set searched again is answered from its packed codes: still exactly, after a
/// candidate's vector changes, one is forgotten, pending ones move into the graph or the
/// graph is rebuilt, and a write's near-duplicate check (which makes no pack) agrees too.
#[test]
fn a_searched_set_stays_exact_as_its_vectors_change() {
    let (ix, ex, _) = built_with_late(11, 4);
    let cands: Vec<i64> = (0..3000).step_by(2).chain(10_000..10_004).collect();
    let queries = clustered(12, 32, 30, 13);
    let agree = |ix: &HnswIndex, ex: &ExactIndex, when: &str| {
        for q in &queries {
            for k in [1, 10, 40] {
                // Twice: the first may make the pack, the second reads it.
                for _ in 0..2 {
                    let got = ix.search(q, &cands, k);
                    let want = ex.search(q, &cands, k);
                    assert_eq!(ids(&got), ids(&want), "{when}, k={k}");
                    for ((_, a), (_, b)) in got.iter().zip(&want) {
                        assert!((a - b).abs() < 1e-5, "{when}: scores are exact: {a} vs {b}");
                    }
                }
            }
            let near = ix.neighbours(q, &cands, 0.0, 8);
            assert_eq!(ids(&near), ids(&ex.neighbours(q, &cands, 0.0, 8)), "{when}: a write's check");
        }
    };
    agree(&ix, &ex, "packed");
    // A candidate's vector becomes the first query itself: it must lead at once.
    ix.insert(4, &queries[0]);
    ex.insert(4, &queries[0]);
    assert_eq!(ids(&ix.search(&queries[0], &cands, 1)), vec![4], "a changed vector is seen");
    agree(&ix, &ex, "after a vector changed");
    // The best candidate of the second query is forgotten.
    let best = ix.search(&queries[1], &cands, 1)[0].0;
    ix.remove(best);
    ex.remove(best);
    assert!(!ids(&ix.search(&queries[1], &cands, 10)).contains(&best), "a forgotten vector is gone");
    agree(&ix, &ex, "after a removal");
    ix.build_now();
    assert_eq!(ix.pending(), 0);
    agree(&ix, &ex, "after a rebuild");
}

#[test]
fn ann_agrees_with_exact_on_small_sets() {
    let vs = clustered(600, 32, 12, 1);
    let ix = filled(None, &vs);
    let ex = ExactIndex::new("test-model");
    for (i, v) in vs.iter().enumerate() {
        ex.insert(i as i64 + 1, v);
    }
    let all: Vec<i64> = (1..=vs.len() as i64).collect();
    let queries = clustered(40, 32, 12, 2);
    let mut hit = 0;
    for q in &queries {
        let got = ix.search(q, &all, 10);
        // Scores are exact cosines, whatever the graph compared on its way.
        for (id, score) in &got {
            let want: f32 = q.iter().zip(&vs[*id as usize - 1]).map(|(a, b)| a * b).sum();
            assert!((score - want).abs() < 1e-5, "note {id}: {score} vs {want}");
        }
        let a = ids(&got);
        let e = ids(&ex.search(q, &all, 10));
        hit += a.iter().filter(|x| e.contains(x)).count();
    }
    let recall = hit as f32 / (queries.len() * 10) as f32;
    assert!(recall >= 0.9, "recall@10 {recall}");
    // A subset filter is honoured.
    let half: Vec<i64> = (1..=300).collect();
    for q in &queries {
        assert!(ix.search(q, &half, 10).iter().all(|(id, _)| *id <= 300));
    }
}

/// Duplicate detection through the graph (its short candidate list): a query within cosine
/// 0.92 of a stored vector of the partition finds one that close, as the exact scan does, and
/// a query with nothing that close finds nothing.
#[test]
fn nearest_finds_near_duplicates_through_the_graph() {
    let vs = clustered(3000, 64, 30, 11);
    let ix = filled(None, &vs);
    let ex = ExactIndex::new("test-model");
    for (i, v) in vs.iter().enumerate() {
        ex.insert(i as i64 + 1, v);
    }
    // The partition: nine notes in ten.
    let part: Vec<i64> = (1..=vs.len() as i64).filter(|id| id % 10 != 0).collect();
    let noise = clustered(300, 64, 300, 12);
    let (mut near, mut far) = (0, 0);
    for (i, n) in noise.iter().enumerate() {
        for mix in [0.2f32, 0.45, 1.0] {
            // A stored vector moved towards random noise: near it for small mixes, not for large.
            let base = &vs[(i * 7) % vs.len()];
            let mut q: Vec<f32> = base.iter().zip(n).map(|(a, b)| a + mix * b).collect();
            skillmem::embed::normalize(&mut q);
            let want = ex.nearest(&q, &part, 0.92);
            let got = ix.nearest(&q, &part, 0.92);
            match want {
                Some((_, s)) => {
                    near += 1;
                    let (id, g) = got.unwrap_or_else(|| panic!("query {i} mix {mix}: exact {s} found nothing"));
                    assert!(g >= 0.92 && part.contains(&id), "query {i}: {id} at {g}");
                    assert!(g >= s - 0.02, "query {i} mix {mix}: {g} against the exact {s}");
                }
                None => {
                    far += 1;
                    assert_eq!(got, None, "query {i} mix {mix}");
                }
            }
        }
    }
    assert!(near > 300 && far > 100, "the queries cover both cases: {near} near, {far} far");
}

#[test]
fn query_equal_to_a_stored_vector_finds_it_first() {
    let vs = clustered(300, 24, 5, 3);
    let ix = filled(None, &vs);
    let all: Vec<i64> = (1..=300).collect();
    for i in [0usize, 17, 299] {
        let got = ix.search(&vs[i], &all, 5);
        assert_eq!(got[0].0, i as i64 + 1);
        assert!((got[0].1 - 1.0).abs() < 1e-4, "{}", got[0].1);
    }
}

#[test]
fn persist_reload_same_answers_and_truncated_files_are_rebuilt() {
    let dir = tempfile::tempdir().unwrap();
    let idir = dir.path().join("ix");
    let vs = clustered(500, 16, 8, 4);
    let ix = filled(Some(idir.clone()), &vs);
    let all: Vec<i64> = (1..=500).collect();
    let queries = clustered(10, 16, 8, 5);
    let before: Vec<_> = queries.iter().map(|q| ids(&ix.search(q, &all, 10))).collect();
    ix.save().unwrap();
    let man = HnswIndex::manifest(&idir).unwrap();
    assert_eq!((man.count, man.dim, man.max_note_id), (500, 16, 500));
    drop(ix);

    let again = HnswIndex::new("test-model", 16, Some(idir.clone()), graph_params());
    for (i, v) in vs.iter().enumerate() {
        again.insert(i as i64 + 1, v);
    }
    assert!(again.reload_now(), "a good dump reloads");
    assert_eq!(again.pending(), 0);
    let after: Vec<_> = queries.iter().map(|q| ids(&again.search(q, &all, 10))).collect();
    assert_eq!(before, after);

    // Another model's files are not trusted.
    let other = HnswIndex::new("other-model", 16, Some(idir.clone()), graph_params());
    other.insert(1, &vs[0]);
    assert!(!other.reload_now());

    // Truncate the graph file: reload refuses, a build over the vectors answers again.
    let graph = idir.join("graph.bin");
    let len = std::fs::metadata(&graph).unwrap().len();
    let f = std::fs::OpenOptions::new().write(true).open(&graph).unwrap();
    f.set_len(len / 3).unwrap();
    drop(f);
    let third = HnswIndex::new("test-model", 16, Some(idir.clone()), graph_params());
    for (i, v) in vs.iter().enumerate() {
        third.insert(i as i64 + 1, v);
    }
    assert!(!third.reload_now(), "a truncated dump is not trusted");
    third.build_now();
    assert_eq!(ids(&third.search(&vs[9], &all, 1)), vec![10]);
    // The rebuild rewrote good files.
    let fourth = HnswIndex::new("test-model", 16, Some(idir), graph_params());
    for (i, v) in vs.iter().enumerate() {
        fourth.insert(i as i64 + 1, v);
    }
    assert!(fourth.reload_now());
}

#[test]
fn tombstones_never_surface_and_edits_replace() {
    let vs = clustered(400, 16, 4, 6);
    let ix = filled(None, &vs);
    let all: Vec<i64> = (1..=400).collect();
    for id in 1..=200 {
        ix.remove(id);
    }
    // Moving note 300 onto note 5's old vector: the old slot of 300 is a tombstone.
    ix.insert(300, &vs[4]);
    assert!(ix.tombstones() >= 201);
    for q in vs.iter().take(50) {
        let got = ix.search(q, &all, 10);
        assert!(got.iter().all(|(id, _)| *id > 200), "{got:?}");
    }
    let got = ix.search(&vs[4], &all, 1);
    assert_eq!(got[0].0, 300, "a pending vector is searched exactly");
    assert!(!ix.contains(3));
}

#[test]
fn worker_builds_in_the_background_and_persists() {
    let dir = tempfile::tempdir().unwrap();
    let idir = dir.path().join("ix");
    let vs = clustered(300, 16, 4, 7);
    let ix = HnswIndex::new("test-model", 16, Some(idir.clone()), graph_params());
    let data = vs.clone();
    ix.start(Some(Box::new(move |sink: &mut dyn FnMut(i64, Vec<f32>)| {
        for (i, v) in data.iter().cloned().enumerate() {
            sink(i as i64 + 1, v);
        }
        Ok(300)
    })));
    ix.wait_ready();
    assert!(ix.is_ready());
    ix.insert(1000, &vs[0]);
    ix.wait_ready();
    let all: Vec<i64> = (1..=300).chain([1000]).collect();
    let got = ids(&ix.search(&vs[0], &all, 2));
    assert!(got.contains(&1) && got.contains(&1000), "{got:?}");
    assert!(HnswIndex::manifest(&idir).is_some());
}

fn frame(v: serde_json::Value) -> Vec<u8> {
    let body = serde_json::to_vec(&v).unwrap();
    let mut f = format!("Content-Length: {}\r\n\r\n", body.len()).into_bytes();
    f.extend(body);
    f
}

/// Reads one frame strictly: exactly one `Content-Length` header, then a JSON body.
fn strict_frame(r: &mut impl std::io::BufRead) -> Option<serde_json::Value> {
    let mut header = vec![];
    while !header.ends_with(b"\r\n\r\n") {
        let mut b = [0u8; 1];
        if r.read(&mut b).unwrap() == 0 {
            assert!(header.is_empty(), "stream ended inside a header: {:?}", String::from_utf8_lossy(&header));
            return None;
        }
        header.push(b[0]);
    }
    let text = String::from_utf8_lossy(&header);
    let n: usize = text
        .strip_prefix("Content-Length: ")
        .unwrap_or_else(|| panic!("stray output on the frame stream: {text:?}"))
        .trim()
        .parse()
        .unwrap_or_else(|_| panic!("stray output on the frame stream: {text:?}"));
    let mut body = vec![0; n];
    r.read_exact(&mut body).unwrap();
    Some(serde_json::from_slice(&body).expect("a JSON body"))
}

/// Runs one session of `skillmem serve`: each message is sent, and for a request every frame
/// up to its response is read strictly. Returns the responses by id.
fn session(w: &common::World, msgs: Vec<serde_json::Value>) -> Vec<serde_json::Value> {
    let (responses, code) = session_ending(w, msgs, End::CloseInput);
    assert_eq!(code, Some(0));
    responses
}

/// How a host ends the sidecar once its messages are answered.
#[derive(Debug, Clone, Copy)]
enum End {
    /// Closes its input.
    CloseInput,
    /// Sends SIGTERM.
    #[cfg(unix)]
    Sigterm,
}

/// [`session`], then ended by `end`: the responses and the exit code.
fn session_ending(w: &common::World, msgs: Vec<serde_json::Value>, end: End) -> (Vec<serde_json::Value>, Option<i32>) {
    use std::io::Write;
    let mut cmd = std::process::Command::new(env!("CARGO_BIN_EXE_skillmem"));
    cmd.arg("serve").stdin(std::process::Stdio::piped()).stdout(std::process::Stdio::piped());
    cmd.stderr(std::process::Stdio::null());
    for (k, v) in w.envs() {
        cmd.env(k, v);
    }
    cmd.env("SKILLMEM_INDEX", "hnsw")
        .env("SKILLMEM_INDEX_EXACT_MAX", "0")
        .env("SKILLMEM_INDEX_BLOCKING", "1")
        .env("SKILLMEM_LOG", "debug");
    let mut child = cmd.spawn().unwrap();
    let mut stdin = child.stdin.take().unwrap();
    let mut out = std::io::BufReader::new(child.stdout.take().unwrap());
    let mut responses = vec![];
    for m in msgs {
        stdin.write_all(&frame(m.clone())).unwrap();
        stdin.flush().unwrap();
        if let Some(id) = m.get("id") {
            loop {
                let f = strict_frame(&mut out).expect("a response");
                if f.get("id") == Some(id) && f.get("method").is_none() {
                    responses.push(f);
                    break;
                }
            }
        }
    }
    match end {
        End::CloseInput => drop(stdin),
        #[cfg(unix)]
        // SAFETY: a signal to the child this test spawned.
        End::Sigterm => assert_eq!(unsafe { libc::kill(child.id() as i32, libc::SIGTERM) }, 0),
    }
    while strict_frame(&mut out).is_some() {}
    (responses, child.wait().unwrap().code())
}

/// A host that ends the sidecar without `shutdown` (many close the pipe; some send SIGTERM)
/// still gets the notes written since the last save into the index files, as `shutdown`
/// writes them: the next start then reloads them instead of finding them missing. (SIGTERM
/// ending the open sessions: `tests/use.rs`.)
#[test]
fn ending_without_shutdown_writes_the_index_as_shutdown_does() {
    use serde_json::json;
    let ends = [
        End::CloseInput,
        #[cfg(unix)]
        End::Sigterm,
    ];
    for end in ends {
        let w = common::World::new();
        w.enabled_skill("jq");
        let uri = format!("file://{}", w.ws.display());
        let mut input = vec![
            json!({"jsonrpc": "2.0", "id": 1, "method": "initialize",
                "params": {"processId": null, "rootUri": uri, "capabilities": {}}}),
            json!({"jsonrpc": "2.0", "method": "initialized", "params": {}}),
        ];
        for i in 0..30 {
            input.push(json!({"jsonrpc": "2.0", "id": 100 + i, "method": "skillmem/note", "params": {
                "skill": "jq", "kind": "gotcha", "intent": format!("intent {i}"),
                "delta": format!("lesson number {i} about filters {}", i * 7)}}));
        }
        let (frames, code) = session_ending(&w, input, end);
        assert!(frames.iter().all(|f| f.get("error").is_none()), "{end:?}: {frames:?}");
        assert_eq!(code, Some(1), "{end:?}: no shutdown, exit code 1");
        let manifests: Vec<_> = std::fs::read_dir(w.data.join("index"))
            .unwrap()
            .filter_map(|e| HnswIndex::manifest(&e.unwrap().path()))
            .collect();
        assert_eq!(manifests.iter().map(|m| m.count).collect::<Vec<_>>(), vec![30], "{end:?}: {manifests:?}");
    }
}

/// Notes written and recalled through the binary while the HNSW graph is built, searched,
/// saved and reloaded: every byte on stdout is a well-formed frame.
#[test]
fn frame_stream_stays_clean_while_the_index_works() {
    use serde_json::json;
    let w = common::World::new();
    let dir = w.enabled_skill("jq");
    let init = |id: i64| {
        let uri = format!("file://{}", w.ws.display());
        vec![
            json!({"jsonrpc": "2.0", "id": id, "method": "initialize",
                "params": {"processId": null, "rootUri": uri, "capabilities": {}}}),
            json!({"jsonrpc": "2.0", "method": "initialized", "params": {}}),
        ]
    };
    let load = |id: i64, intent: &str| {
        json!({"jsonrpc": "2.0", "id": id, "method": "skillmem/toolAfter", "params": {
            "sessionId": "s", "callId": format!("c{id}"), "tool": "skill",
            "args": {"name": "jq", "intent": intent}, "output": "", "metadata": {"dir": dir.display().to_string()}}})
    };
    let end = |id: i64| {
        vec![json!({"jsonrpc": "2.0", "id": id, "method": "shutdown"}), json!({"jsonrpc": "2.0", "method": "exit"})]
    };
    let mut input = init(1);
    for i in 0..80 {
        input.push(json!({"jsonrpc": "2.0", "id": 100 + i, "method": "skillmem/note", "params": {
            "skill": "jq", "kind": "gotcha", "intent": format!("intent {i}"),
            "delta": format!("lesson number {i} about filters {}", i * 7)}}));
    }
    for i in 0..5 {
        input.push(load(200 + i, "filters lesson"));
    }
    input.extend(end(999));
    let frames = session(&w, input);
    assert!(frames.iter().all(|f| f.get("error").is_none()), "{frames:?}");
    // A second session reloads the persisted graph and searches it.
    let mut input = init(1);
    input.push(load(2, "lesson about filters"));
    input.extend(end(3));
    let frames = session(&w, input);
    let r = frames.iter().find(|f| f["id"] == 2).unwrap();
    assert!(r["result"]["append"].is_string(), "{r}");
    assert_eq!(r["result"]["mode"], "vector");
}
