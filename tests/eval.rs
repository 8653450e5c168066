//! `skillmem eval recall`: the figures docs/benchmarks.md reports come from it, so it is tested like
//! any other door: a labelled set in, MRR@10 out, through the binary.

mod common;

use serde_json::{json, Value};

/// Three jq lessons; each query names its note's words, so every ranking finds it first.
fn easy_set() -> Value {
    json!({
        "skills": [{
            "name": "jq",
            "notes": [
                { "id": "raw", "kind": "gotcha", "intent": "raw output", "delta": "Use -r to print raw strings instead of JSON-quoted ones." },
                { "id": "slurp", "kind": "discovery", "intent": "slurp files", "delta": "Use -s to read all inputs into one array." },
                { "id": "null", "kind": "discovery", "intent": "null input", "delta": "Use -n to start without reading any input." }
            ]
        }],
        "queries": [
            { "skill": "jq", "intent": "print raw strings instead of quoted ones", "relevant": ["raw"], "style": "lexical" },
            { "skill": "jq", "intent": "read all inputs into one array", "relevant": ["slurp"], "style": "lexical" }
        ]
    })
}

fn write(w: &common::World, name: &str, v: &Value) -> String {
    let path = w.tmp.path().join(name);
    std::fs::write(&path, serde_json::to_string(v).unwrap()).unwrap();
    path.display().to_string()
}

fn overall(report: &Value) -> &Value {
    report["styles"].as_array().unwrap().iter().find(|s| s["style"] == "overall").unwrap()
}

#[test]
fn a_set_is_ranked_by_the_cascade_and_its_baselines_and_compared_with_pure_cosine() {
    let w = common::World::new();
    let file = write(&w, "easy.json", &easy_set());
    let (code, out, errs) = w.cli(&["eval", "recall", &file, "--json"]);
    assert_eq!(code, 0, "{out}{errs}");
    let v: Value = serde_json::from_str(&out).unwrap();
    assert!(v["embedding"].as_str().unwrap().starts_with("static:"), "{v}");
    let o = overall(&v);
    assert_eq!(o["queries"], 2, "{v}");
    for ranking in ["cascade", "bm25", "plainBm25", "pureCosine"] {
        assert_eq!(o[ranking]["mrr10"], 1.0, "{ranking}: {v}");
        assert_eq!(o[ranking]["recall5"], 1.0, "{ranking}: {v}");
    }
    assert_eq!(v["vsPureCosine"], json!({ "diff": 0.0, "se": 0.0, "better": 0, "worse": 0 }), "{v}");

    // The human form says the same, with the paired difference.
    let (code, out, _) = w.cli(&["eval", "recall", &file]);
    assert_eq!(code, 0);
    assert!(out.contains("cascade − pure cosine: +0.000 MRR@10 ± 0.000"), "{out}");
    assert!(out.contains("0 queries ranked better, 0 worse"), "{out}");

    // Without an embedder there is no cosine to compare with.
    let (code, out, errs) = w.cli(&["eval", "recall", &file, "--json", "--embedding", "off"]);
    assert_eq!(code, 0, "{errs}");
    let v: Value = serde_json::from_str(&out).unwrap();
    assert_eq!(overall(&v)["cascade"]["mrr10"], 1.0, "{v}");
    assert!(overall(&v)["pureCosine"].is_null() && v["vsPureCosine"].is_null(), "{v}");
}

/// The cascade is what a host is shown: notes written with `skillmem/note` (a restatement is
/// merged, so its label is found through the note it merged into) and read with
/// `skillmem/recall`, in block order (a pinned note is not in the set; the newer of two
/// versions leads).
#[test]
fn the_cascade_is_ranked_by_the_hosts_path() {
    let w = common::World::new();
    let set = json!({
        "skills": [{
            "name": "deps",
            "notes": [
                { "id": "old", "kind": "gotcha", "delta": "Pin serde_yaml to 0.8; 0.9 breaks the parser.", "age_days": 30 },
                { "id": "new", "kind": "gotcha", "delta": "Pin serde_yaml to 0.9; 0.8 is unmaintained and 0.9 fixed the parser.", "age_days": 1 },
                { "id": "again", "kind": "gotcha", "delta": "PIN serde_yaml to 0.8;  0.9 breaks the parser.", "age_days": 2 },
                { "id": "other", "kind": "discovery", "delta": "Run cargo update -p serde_yaml to move only that crate." }
            ]
        }],
        "queries": [
            { "skill": "deps", "intent": "which serde_yaml version to pin", "relevant": ["new"] },
            { "skill": "deps", "intent": "serde_yaml 0.8 breaks the parser", "relevant": ["again"] }
        ]
    });
    let file = write(&w, "deps.json", &set);
    let (code, out, errs) = w.cli(&["eval", "recall", &file, "--json"]);
    assert_eq!(code, 0, "{out}{errs}");
    let v: Value = serde_json::from_str(&out).unwrap();
    assert_eq!(v["hostPath"], true, "{v}");
    assert_eq!(v["duplicates"], 1, "the restatement is merged: {v}");
    // The newer version leads (the first query finds it first); the restatement is found as
    // the note it merged into, right after the newer version of it (second place): (1 + 1/2) / 2.
    assert_eq!(overall(&v)["cascade"]["mrr10"], 0.75, "{v}");
    assert_eq!(overall(&v)["cascade"]["recall5"], 1.0, "{v}");
    let (code, out, _) = w.cli(&["eval", "recall", &file]);
    assert_eq!(code, 0);
    assert!(out.contains("cascade by the host's path") && out.contains("1 writes answered duplicate"), "{out}");
}

#[test]
fn several_sets_are_reported_each_and_by_their_mean() {
    let w = common::World::new();
    let easy = write(&w, "easy.json", &easy_set());
    // The same notes, one query whose note shares no word with it: bm25 alone cannot find it.
    let mut hard = easy_set();
    hard["queries"] = json!([{ "skill": "jq", "intent": "zzz qqq", "relevant": ["null"], "style": "paraphrase" }]);
    let hard = write(&w, "hard.json", &hard);
    let (code, out, errs) = w.cli(&["eval", "recall", &easy, &hard, "--json"]);
    assert_eq!(code, 0, "{out}{errs}");
    let v: Value = serde_json::from_str(&out).unwrap();
    let sets = v["sets"].as_array().unwrap();
    assert_eq!(sets.len(), 2, "{v}");
    assert_eq!(sets[0]["file"], easy.as_str());
    assert_eq!(overall(&sets[1])["bm25"]["mrr10"], 0.0, "{v}");
    let (a, b) = (
        overall(&sets[0])["cascade"]["mrr10"].as_f64().unwrap(),
        overall(&sets[1])["cascade"]["mrr10"].as_f64().unwrap(),
    );
    assert!((v["mean"]["mrr10"].as_f64().unwrap() - (a + b) / 2.0).abs() < 1e-12, "{v}");

    let (code, out, _) = w.cli(&["eval", "recall", &easy, &hard]);
    assert_eq!(code, 0);
    assert!(out.contains("mean of 2 sets"), "{out}");
}

#[test]
fn sets_whose_labels_point_nowhere_are_refused_with_what_to_fix() {
    let w = common::World::new();
    let with = |f: &dyn Fn(&mut Value)| {
        let mut v = easy_set();
        f(&mut v);
        v
    };
    // (set, what the error says)
    let cases: Vec<(Value, &str)> = vec![
        (with(&|v| v["queries"][1]["relevant"] = json!(["nope"])), "query 2 (\"read all inputs into one array\") lists relevant note \"nope\", which no skill of the set has"),
        (with(&|v| v["queries"][0]["skill"] = json!("git")), "query 1 (\"print raw strings instead of quoted ones\") names skill \"git\", which the set has no notes for"),
        (with(&|v| v["queries"][0]["relevant"] = json!([])), "query 1 (\"print raw strings instead of quoted ones\") has no relevant notes"),
        (with(&|v| v["skills"][0]["notes"][1]["id"] = json!("raw")), "note id \"raw\" is used twice"),
        (
            with(&|v| {
                let note = json!({ "id": "log", "kind": "gotcha", "intent": "log", "delta": "git log --oneline" });
                v["skills"].as_array_mut().unwrap().push(json!({ "name": "git", "notes": [note] }));
                v["queries"][0]["relevant"] = json!(["log"]);
            }),
            "is for skill \"jq\" but lists note \"log\" of skill \"git\"",
        ),
        (json!({ "skills": [] }), "is not a recall set"),
    ];
    for (set, want) in cases {
        let file = write(&w, "bad.json", &set);
        let (code, out, errs) = w.cli(&["eval", "recall", &file]);
        assert_ne!(code, 0, "{want}: {out}");
        assert!(errs.contains(want), "want {want:?} in {errs}");
    }
    // A bad set among good ones: nothing is evaluated.
    let good = write(&w, "good.json", &easy_set());
    let (code, out, errs) = w.cli(&["eval", "recall", &good, "/no/such/set.json"]);
    assert_ne!(code, 0);
    assert!(out.is_empty() && errs.contains("cannot read /no/such/set.json"), "{out}{errs}");
}

/// The labelled pairs of bench/merge/ are the merge rule's test table: no pair that says
/// something else (an update, a distinct lesson) is ever merged, on the set the rule was
/// chosen on and on the one written after; most restatements are.
#[test]
fn the_merge_rule_never_merges_a_pair_that_says_something_else() {
    let w = common::World::new();
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("bench/merge");
    for (file, min_recall) in [("pairs-dev.jsonl", 0.65), ("pairs-heldout.jsonl", 0.65)] {
        let path = root.join(file).display().to_string();
        let (code, out, errs) = w.cli(&["eval", "merge", &path, "--json"]);
        assert_eq!(code, 0, "{errs}");
        let r: Value = serde_json::from_str(&out).unwrap();
        let r = &r[0];
        let wrong_merges: Vec<&Value> = r["wrong"].as_array().unwrap().iter().filter(|p| p["got"] == "same").collect();
        assert!(wrong_merges.is_empty(), "{file}: merged but says something else: {wrong_merges:?}");
        assert_eq!(r["merge"]["precision"], 1.0, "{file}: {r}");
        assert!(r["merge"]["recall"].as_f64().unwrap() >= min_recall, "{file}: {}", r["merge"]);
    }
    // A file that is not pairs says where.
    let bad = w.tmp.path().join("bad.jsonl");
    std::fs::write(&bad, "{\"a\": \"x\", \"b\": \"y\", \"label\": \"maybe\"}\n").unwrap();
    let (code, _, errs) = w.cli(&["eval", "merge", &bad.display().to_string()]);
    assert_ne!(code, 0);
    assert!(errs.contains("bad.jsonl:1") && errs.contains("use same, update or distinct"), "{errs}");
}

/// `skillmem eval mine`: a tiny labelled set of Claude Code transcripts (a flag that fixed a
/// failure, a test fixed in the code, a session with no skill) through the binary.
#[test]
fn the_miner_is_measured_on_labelled_transcripts() {
    let w = common::World::new();
    let bash = |id: &str, command: &str| json!({"type":"assistant","message":{"content":[{"type":"tool_use","id":id,"name":"Bash","input":{"command":command}}]}});
    let result = |id: &str, error: bool, text: &str| json!({"type":"user","message":{"content":[{"type":"tool_result","tool_use_id":id,"is_error":error,"content":text}]}});
    let skill = json!({"type":"assistant","message":{"content":[{"type":"tool_use","id":"s","name":"Skill","input":{"skill":"node"}}]}});
    let edit = json!({"type":"assistant","message":{"content":[{"type":"tool_use","id":"e","name":"Edit","input":{"file_path":"src/a.js"}}]}});
    let sessions: Vec<(&str, Vec<Value>)> = vec![
        (
            "flag.jsonl",
            vec![
                skill.clone(),
                bash("1", "npm install"),
                result(
                    "1",
                    true,
                    "Exit code 1\nnpm ERR! code ERESOLVE\nnpm ERR! ERESOLVE unable to resolve dependency tree",
                ),
                bash("2", "npm install --legacy-peer-deps"),
                result("2", false, "added 3 packages"),
            ],
        ),
        (
            "code.jsonl",
            vec![
                skill.clone(),
                bash("1", "npm test"),
                result("1", true, "Exit code 1\n    Expected: 3\n    Received: 4"),
                edit,
                bash("2", "npm test"),
                result("2", false, "Tests: 3 passed"),
            ],
        ),
        (
            "no-skill.jsonl",
            vec![
                bash("1", "npm install"),
                result("1", true, "npm ERR! ERESOLVE unable to resolve dependency tree"),
                bash("2", "npm install --force"),
                result("2", false, "ok"),
            ],
        ),
    ];
    for (name, records) in &sessions {
        let text: String = records.iter().map(|r| format!("{r}\n")).collect();
        std::fs::write(w.tmp.path().join(name), text).unwrap();
    }
    let labels = [
        r#"{"transcript": "flag.jsonl", "host": "claude-code", "enabled": ["node"], "lessons": [{"failed": "npm install", "fixed": "npm install --legacy-peer-deps"}]}"#,
        r#"{"transcript": "code.jsonl", "host": "claude-code", "enabled": ["node"], "lessons": []}"#,
        r#"{"transcript": "no-skill.jsonl", "host": "claude-code", "enabled": ["node"], "lessons": []}"#,
    ];
    let file = w.tmp.path().join("labels.jsonl");
    std::fs::write(&file, labels.join("\n")).unwrap();
    let file = file.display().to_string();
    let (code, out, errs) = w.cli(&["eval", "mine", &file, "--json"]);
    assert_eq!(code, 0, "{out}{errs}");
    let v: Value = serde_json::from_str(&out).unwrap();
    let r = &v[0];
    assert_eq!((r["labelled"].as_u64(), r["mined"].as_u64(), r["found"].as_u64()), (Some(1), Some(1), Some(1)), "{r}");
    assert_eq!((r["precision"].as_f64(), r["recall"].as_f64()), (Some(1.0), Some(1.0)), "{r}");
    assert_eq!(r["refused"]["own-test-or-build"], 1, "{r}");
    assert_eq!(r["refused"]["no-skill"], 1, "{r}");
    assert_eq!(r["secretsLeft"], 0, "{r}");
    assert_eq!(
        r["lessons"][0]["delta"],
        "`npm install` fails with `ERESOLVE unable to resolve dependency tree`; `npm install --legacy-peer-deps` works.",
        "{r}"
    );

    // The human form, with every refusal listed; a label that is not found is a miss.
    let missed = labels[1].replace(r#""lessons": []"#, r#""lessons": [{"failed": "npm test", "fixed": "npm test"}]"#);
    std::fs::write(w.tmp.path().join("labels.jsonl"), [labels[0], missed.as_str(), labels[2]].join("\n")).unwrap();
    let (code, out, _) = w.cli(&["eval", "mine", &file, "--verbose"]);
    assert_eq!(code, 0, "{out}");
    assert!(out.contains("mined 1, 1 labelled: precision 1.000  recall 0.500"), "{out}");
    assert!(out.contains("- missed code.jsonl: `npm test` → `npm test`"), "{out}");
    assert!(out.contains("- refused (no-skill) no-skill.jsonl: `npm install` → `npm install --force`"), "{out}");

    // A host it does not read is refused with the hosts it does.
    std::fs::write(w.tmp.path().join("labels.jsonl"), labels[0].replace("claude-code", "cursor")).unwrap();
    let (code, _, errs) = w.cli(&["eval", "mine", &file]);
    assert_eq!(code, 2);
    assert!(errs.contains("use claude-code, codex, gemini-cli or copilot"), "{errs}");
}

/// `skillmem eval use`: a tiny labelled set, one OpenCode session (the plugin's events) and
/// one Claude Code transcript, replayed through a child `skillmem serve`.
#[test]
fn the_use_detector_is_measured_on_labelled_sessions_by_the_hosts_path() {
    let w = common::World::new();
    let event = |tool: &str, args: Value, output: &str, exit: Option<i64>| {
        json!({ "input": { "tool": tool, "sessionID": "ses_1", "callID": "c", "args": args },
                "output": { "title": "", "output": output, "metadata": exit.map(|e| json!({ "exit": e })) } })
    };
    let opencode = [
        event("bash", json!({ "command": "ls dist" }), "index.html", Some(0)),
        event("skill", json!({ "name": "aws" }), "# aws", None),
        event("bash", json!({ "command": "aws s3 sync dist s3://site" }), "upload: ...", Some(0)),
        event("bash", json!({ "command": "aws s3 sync dist s3://site --exact-timestamps" }), "upload: ...", Some(0)),
    ];
    let bash = |id: &str, command: &str| json!({"type":"assistant","message":{"content":[{"type":"tool_use","id":id,"name":"Bash","input":{"command":command}}]}});
    let result = |id: &str, error: bool, text: &str| json!({"type":"user","message":{"content":[{"type":"tool_result","tool_use_id":id,"is_error":error,"content":text}]}});
    let claude = [
        json!({"type":"assistant","message":{"content":[{"type":"tool_use","id":"s","name":"Skill","input":{"skill":"node"}}]}}),
        bash("1", "npm ci"),
        result("1", true, "Exit code 1\nnpm ERR! code ERESOLVE\nnpm ERR! ERESOLVE unable to resolve dependency tree"),
        bash("2", "npm ci --force"),
        result("2", false, "added 3 packages"),
    ];
    for (name, records) in [("oc.jsonl", &opencode[..]), ("cc.jsonl", &claude[..])] {
        let text: String = records.iter().map(|r| format!("{r}\n")).collect();
        std::fs::write(w.tmp.path().join(name), text).unwrap();
    }
    let labels = [
        r#"{"transcript": "oc.jsonl", "host": "opencode", "notes": [
            {"id": "exact", "skill": "aws", "delta": "aws s3 sync skips files whose size did not change; pass `--exact-timestamps` after a rebuild.", "used": true},
            {"id": "profile", "skill": "aws", "delta": "Write to the bucket with `--profile deploy`.", "used": true}]}"#,
        r#"{"transcript": "cc.jsonl", "host": "claude-code", "notes": [
            {"id": "peer", "skill": "node", "delta": "npm ci fails with ERESOLVE on the peer range; install with `--legacy-peer-deps`.", "used": false, "ignored": true}]}"#,
    ];
    let file = w.tmp.path().join("labels.jsonl");
    std::fs::write(&file, labels.iter().map(|l| l.replace('\n', " ")).collect::<Vec<_>>().join("\n")).unwrap();
    let file = file.display().to_string();
    let (code, out, errs) = w.cli(&["eval", "use", &file, "--json"]);
    assert_eq!(code, 0, "{out}{errs}");
    let v: Value = serde_json::from_str(&out).unwrap();
    let r = &v[0];
    assert_eq!((r["sessions"].as_u64(), r["notes"].as_u64(), r["shown"].as_u64()), (Some(2), Some(3), Some(3)), "{r}");
    assert_eq!(r["hosts"], json!(["claude-code", "opencode"]), "{r}");
    // "profile" was labelled used by mistake: the detector judged it unused, a miss.
    assert_eq!(r["used"], json!({ "labelled": 2, "found": 1, "right": 1, "precision": 1.0, "recall": 0.5 }), "{r}");
    assert_eq!(r["ignored"], json!({ "labelled": 1, "found": 1, "right": 1, "precision": 1.0, "recall": 1.0 }), "{r}");
    assert_eq!(r["wrong"][0]["note"], "profile", "{r}");
    assert_eq!(r["wrong"][0]["specifics"], json!(["--profile"]), "{r}");

    let (code, out, _) = w.cli(&["eval", "use", &file, "--verbose"]);
    assert_eq!(code, 0, "{out}");
    assert!(out.contains("used     labelled   2, judged   1, both   1: precision 1.000  recall 0.500"), "{out}");
    assert!(out.contains("oc.jsonl profile: labelled used, judged not used"), "{out}");

    // A host it does not read is refused with the hosts it does.
    std::fs::write(w.tmp.path().join("labels.jsonl"), labels[1].replace('\n', " ").replace("claude-code", "cursor"))
        .unwrap();
    let (code, _, errs) = w.cli(&["eval", "use", &file]);
    assert_eq!(code, 2);
    assert!(errs.contains("use claude-code, codex, gemini-cli, copilot or opencode"), "{errs}");
}

/// `skillmem eval replay`: simulated sessions over useful and junk lessons, by the host's path;
/// the same seed gives the same figures.
#[test]
fn the_replay_reports_the_junk_share_after_each_checkpoint() {
    let w = common::World::new();
    let (code, out, errs) = w.cli(&["eval", "replay", "--sessions", "4", "--seed", "3", "--json"]);
    assert_eq!(code, 0, "{out}{errs}");
    let v: Value = serde_json::from_str(&out).unwrap();
    assert_eq!((v["useful"].as_u64(), v["junk"].as_u64(), v["skills"].as_u64()), (Some(18), Some(18), Some(3)), "{v}");
    let cps = v["checkpoints"].as_array().unwrap();
    assert_eq!(cps.iter().map(|c| c["sessions"].as_u64().unwrap()).collect::<Vec<_>>(), [3, 4], "{v}");
    for c in cps {
        let share = c["trustedJunkShare"].as_f64().unwrap();
        assert!((0.0..=1.0).contains(&share), "{c}");
        // Trust by use needs withheld sessions (lift): after a few sessions, maybe none yet.
        assert!(c["usedUseful"].as_u64().unwrap() > 0, "{c}");
        assert!(c["block"]["notes"].as_u64().unwrap() > 0, "{c}");
        assert!(["trust", "used > 0"].contains(&c["trustSource"].as_str().unwrap()), "{c}");
    }
    assert!(!v["blocks"].as_array().unwrap().is_empty(), "{v}");
    let (_, again, _) = w.cli(&["eval", "replay", "--sessions", "4", "--seed", "3", "--json"]);
    assert_eq!(out, again);

    let (code, out, _) = w.cli(&["eval", "replay", "--sessions", "3"]);
    assert_eq!(code, 0, "{out}");
    assert!(out.contains("replay: seed 1, 3 sessions over 3 skills, 18 useful and 18 junk lessons"), "{out}");
}

/// `skillmem eval replay --anyway`: the agent runs junk lessons' steps whether shown or not;
/// such a note is used by coincidence at most, and never trusted.
#[test]
fn the_replays_anyway_agent_trusts_no_junk() {
    let w = common::World::new();
    let (code, out, errs) = w.cli(&["eval", "replay", "--sessions", "6", "--seed", "1", "--anyway", "0.6", "--json"]);
    assert_eq!(code, 0, "{out}{errs}");
    let v: Value = serde_json::from_str(&out).unwrap();
    let anyway: usize =
        v["blocks"].as_array().unwrap().iter().map(|b| b["anyway"].as_array().map_or(0, Vec::len)).sum();
    assert!(anyway > 10, "the agent did junk steps anyway: {v}");
    for c in v["checkpoints"].as_array().unwrap() {
        assert_eq!(c["trustedJunk"].as_u64(), Some(0), "{c}");
    }
    let (code, _, errs) = w.cli(&["eval", "replay", "--anyway", "2"]);
    assert_ne!(code, 0);
    assert!(errs.contains("--anyway"), "{errs}");
}
