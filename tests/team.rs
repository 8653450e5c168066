//! Team memory through a REAL PostgreSQL server that each test starts for itself (initdb in a
//! temporary folder, a free loopback port, stopped on drop), and data directories standing for
//! machines. Fails, saying to install PostgreSQL, where its binaries are missing.

mod common;

use std::process::Command;
use std::time::{Duration, Instant};

use serde_json::{json, Value};
use skillmem_test_support::ScratchServer;

const PW_A: &str = "pw-alpha";
const PW_B: &str = "pw-beta";

/// A server with two team roles and one database owned by the first.
fn server() -> ScratchServer {
    let pg = ScratchServer::start().unwrap_or_else(|e| panic!("cannot start a scratch PostgreSQL server: {e}"));
    pg.admin_sql(
        "postgres",
        &format!("CREATE ROLE team_a LOGIN PASSWORD '{PW_A}'; CREATE ROLE team_b LOGIN PASSWORD '{PW_B}';"),
    )
    .unwrap();
    // Not in a transaction block: a statement of its own.
    pg.admin_sql("postgres", "CREATE DATABASE skillmem OWNER team_a").unwrap();
    pg
}

/// One machine: its own data directory and home, a workspace with the `deploy` skill and a
/// skillmem.toml naming the team.
struct Machine {
    w: common::World,
    password: String,
}

impl Machine {
    fn new(pg: &ScratchServer, role: &str, password: &str, team: &str, extra: &str) -> Machine {
        let w = common::World::new();
        w.enabled_skill("deploy");
        let m = Machine { w, password: password.into() };
        m.configure(&pg.url(role, "skillmem"), team, extra);
        m
    }

    fn configure(&self, url: &str, team: &str, extra: &str) {
        // These tests count what sync carries: every note in the block, trusted or not.
        let share = "unverified_share = 1.0\n";
        let extra = match extra.find("[memory]\n") {
            Some(i) => format!("{}{share}{}", &extra[..i + "[memory]\n".len()], &extra[i + "[memory]\n".len()..]),
            None => format!("{extra}\n[memory]\n{share}"),
        };
        std::fs::write(
            self.w.ws.join("skillmem.toml"),
            format!(
                "project_id = \"proj-1\"\n{extra}\n[team]\nurl = \"{url}\"\nteam = \"{team}\"\npassword_env = \"SKILLMEM_TEAM_PW\"\n"
            ),
        )
        .unwrap();
    }

    fn envs(&self) -> Vec<(&'static str, String)> {
        let mut e = self.w.envs();
        e.push(("SKILLMEM_TEAM_PW", self.password.clone()));
        e
    }

    /// Runs the CLI; returns (status, stdout, stderr).
    fn cli(&self, args: &[&str]) -> (i32, String, String) {
        let out = Command::new(env!("CARGO_BIN_EXE_skillmem"))
            .args(args)
            .current_dir(&self.w.ws)
            .envs(self.envs())
            .output()
            .unwrap();
        (
            out.status.code().unwrap_or(-1),
            String::from_utf8_lossy(&out.stdout).into(),
            String::from_utf8_lossy(&out.stderr).into(),
        )
    }

    fn json(&self, args: &[&str]) -> Value {
        let mut a = vec!["--json"];
        a.extend_from_slice(args);
        let (code, out, err) = self.cli(&a);
        assert_eq!(code, 0, "skillmem {args:?} failed: {err}");
        serde_json::from_str(&out).unwrap_or_else(|e| panic!("{args:?}: {e}: {out}"))
    }

    fn sync(&self) -> Value {
        self.json(&["sync"])
    }

    fn sync_err(&self) -> String {
        let (code, out, err) = self.cli(&["sync"]);
        assert_ne!(code, 0, "sync should fail: {out}");
        err
    }

    fn note(&self, delta: &str) -> i64 {
        let r = self.json(&[
            "note",
            "deploy",
            "--kind",
            "gotcha",
            "--scope",
            "global",
            "--intent",
            "deploy to staging",
            "--delta",
            delta,
        ]);
        r["id"].as_i64().unwrap()
    }

    fn recall(&self) -> Vec<Value> {
        self.json(&["recall", "deploy", "--intent", "deploy to staging"])["notes"]
            .as_array()
            .cloned()
            .unwrap_or_default()
    }

    fn deltas(&self) -> Vec<String> {
        let mut d: Vec<String> = self.recall().iter().map(|n| n["delta"].as_str().unwrap().to_string()).collect();
        d.sort();
        d
    }

    fn find(&self, delta: &str) -> Value {
        self.recall().into_iter().find(|n| n["delta"] == delta).unwrap_or_else(|| panic!("no note {delta:?} here"))
    }
}

fn count(pg: &ScratchServer, sql: &str) -> i64 {
    pg.admin("skillmem").unwrap().query_one(sql, &[]).unwrap().get(0)
}

#[test]
fn a_note_travels_and_pins_edits_and_forgets_follow_it() {
    let pg = server();
    // A embeds with the hash embedder, B with the static one: vectors are not shared.
    let a = Machine::new(&pg, "team_a", PW_A, "core", "[embedding]\nprovider = \"hash\"");
    let b = Machine::new(&pg, "team_a", PW_A, "core", "");
    let lesson = "the deploy skill needs --no-cache on the staging cluster";
    a.note(lesson);
    let r = a.sync();
    assert_eq!(r["pushed"], 1, "{r}");
    let r = b.sync();
    assert_eq!(r["inserted"], 1, "{r}");

    // B's next skill load recalls it, through the protocol.
    let dir = b.w.ws.join(".claude/skills/deploy");
    let envs = b.envs();
    let envs: Vec<(&str, &str)> = envs.iter().map(|(k, v)| (*k, v.as_str())).collect();
    let mut c =
        skillmem::client::Client::spawn(std::path::Path::new(env!("CARGO_BIN_EXE_skillmem")), &envs, true).unwrap();
    c.initialize(&b.w.ws, json!({})).unwrap();
    let got = common::load(&mut c, "c1", "deploy", &dir, Some("deploy to staging"));
    assert!(got["append"].as_str().unwrap_or("").contains("--no-cache"), "{got}");
    c.shutdown().unwrap();
    // Embedded on B by B's own embedder.
    let stats = b.json(&["stats"]);
    assert_eq!(stats["embedding"]["stale"], 0, "{stats}");
    assert!(stats["embedding"]["model"].as_str().unwrap().starts_with("static"), "{stats}");

    // B pins and edits it; A sees both.
    let id_b = b.find(lesson)["id"].as_i64().unwrap();
    b.json(&["pin", &id_b.to_string()]);
    let edited = "the deploy skill needs --no-cache and --pull on the staging cluster";
    b.json(&["edit", &id_b.to_string(), "--delta", edited]);
    let r = b.sync();
    assert_eq!(r["pushed"], 2, "{r}");
    let r = a.sync();
    assert!(r["updated"].as_i64().unwrap() >= 1, "{r}");
    let n = a.find(edited);
    assert_eq!(n["pinned"], true, "{n}");
    assert_eq!(a.deltas(), vec![edited.to_string()]);

    // A forgets it: it leaves B's recall too, kept there as history with A's reason, and the
    // server keeps it retired (not a tombstone).
    let id_a = n["id"].as_i64().unwrap();
    a.json(&["forget", &id_a.to_string(), "--reason", "the cluster caches no more"]);
    a.sync();
    let r = b.sync();
    assert_eq!((r["retired"].as_i64(), r["removed"].as_i64()), (Some(1), Some(0)), "{r}");
    assert!(b.deltas().is_empty());
    let hist = b.json(&["notes", "deploy", "--all-versions"]);
    let kept =
        hist["notes"].as_array().unwrap().iter().find(|n| n["id"] == id_b).cloned().unwrap_or_else(|| panic!("{hist}"));
    assert_eq!(kept["reason"], "the cluster caches no more", "{kept}");
    assert!(kept["retiredAt"].is_i64(), "{kept}");
    assert_eq!(count(&pg, "SELECT count(*) FROM skillmem.notes WHERE retired_at IS NOT NULL AND NOT deleted"), 1);

    // A restores it: back in B's recall.
    a.json(&["restore", &id_a.to_string()]);
    a.sync();
    let r = b.sync();
    assert_eq!(r["restored"], 1, "{r}");
    assert_eq!(b.deltas(), vec![edited.to_string()]);

    // A purges it: gone from B with its older version, and the server keeps a tombstone.
    a.json(&["purge", &id_a.to_string()]);
    a.sync();
    let r = b.sync();
    assert_eq!(r["removed"], 2, "the note and the version B's pull of the edit kept: {r}");
    assert!(b.deltas().is_empty());
    let left = b.json(&["notes", "deploy", "--all-versions"]);
    assert_eq!(left["notes"].as_array().map(Vec::len), Some(0), "{left}");
    assert_eq!(count(&pg, "SELECT count(*) FROM skillmem.notes WHERE deleted AND delta = ''"), 1);
    // Syncing again moves nothing.
    let r = a.sync();
    assert_eq!(
        (r["pushed"].as_i64(), r["inserted"].as_i64(), r["removed"].as_i64()),
        (Some(0), Some(0), Some(0)),
        "{r}"
    );
}

#[test]
fn a_correction_on_one_machine_takes_effect_on_the_other_and_both_keep_its_history() {
    let pg = server();
    let a = Machine::new(&pg, "team_a", PW_A, "core", "");
    let b = Machine::new(&pg, "team_a", PW_A, "core", "");
    let old = "Pin serde_yaml to 0.8; 0.9 breaks the parser.";
    let id_a = a.note(old);
    a.sync();
    b.sync();
    let id_b = b.find(old)["id"].as_i64().unwrap();
    // B pins it; A replaces it with the correction (the pin carries over to the new note).
    b.json(&["pin", &id_b.to_string()]);
    b.sync();
    a.sync();
    let new = "Pin serde_yaml to 0.9; 0.8 is unmaintained and 0.9 parses our files.";
    let r = a.json(&[
        "note",
        "deploy",
        "--kind",
        "gotcha",
        "--scope",
        "global",
        "--intent",
        "deploy to staging",
        "--delta",
        new,
        "--replaces",
        &id_a.to_string(),
    ]);
    assert_eq!(r["status"], "replaced", "{r}");
    a.sync();
    let r = b.sync();
    assert_eq!((r["inserted"].as_i64(), r["retired"].as_i64()), (Some(1), Some(1)), "{r}");
    assert_eq!(b.deltas(), vec![new.to_string()], "the correction took effect on B");
    let newer = b.find(new);
    assert_eq!(newer["pinned"], true, "{newer}");
    // B's history: the old lesson, replaced by B's copy of the new one.
    let v = b.json(&["versions", &newer["id"].as_i64().unwrap().to_string()]);
    let texts: Vec<&str> = v.as_array().unwrap().iter().map(|n| n["delta"].as_str().unwrap()).collect();
    assert_eq!(texts, vec![old, new], "{v}");
    assert_eq!(v[0]["supersededBy"], newer["id"], "{v}");

    // B's pull of an edit keeps the old text as a version, as a local edit does.
    let id_new_a = a.find(new)["id"].as_i64().unwrap();
    let edited = "Pin serde_yaml to 0.9.34; 0.8 is unmaintained and 0.9 parses our files.";
    a.json(&["edit", &id_new_a.to_string(), "--delta", edited]);
    a.sync();
    b.sync();
    assert_eq!(b.deltas(), vec![edited.to_string()]);
    let v = b.json(&["versions", &b.find(edited)["id"].as_i64().unwrap().to_string()]);
    let texts: Vec<&str> = v.as_array().unwrap().iter().map(|n| n["delta"].as_str().unwrap()).collect();
    assert_eq!(texts, vec![old, new, edited], "{v}");

    // B retires the current one; A's recall loses it too, and a third machine joining later
    // gets the history as history: nothing current, every version kept.
    let id_b_now = b.find(edited)["id"].as_i64().unwrap();
    b.json(&["forget", &id_b_now.to_string(), "--reason", "we dropped serde_yaml"]);
    b.sync();
    let r = a.sync();
    assert_eq!(r["retired"], 1, "{r}");
    assert!(a.deltas().is_empty());
    let c = Machine::new(&pg, "team_a", PW_A, "core", "");
    c.sync();
    assert!(c.deltas().is_empty(), "{:?}", c.deltas());
    let all = c.json(&["notes", "deploy", "--all-versions"]);
    let mut texts: Vec<&str> = all["notes"].as_array().unwrap().iter().map(|n| n["delta"].as_str().unwrap()).collect();
    texts.sort();
    assert_eq!(texts, vec![old, edited], "the team's two notes as they are now, both retired: {all}");
}

#[test]
fn the_same_lesson_written_on_both_machines_is_one_note_with_hits_merged() {
    let pg = server();
    let a = Machine::new(&pg, "team_a", PW_A, "core", "");
    let b = Machine::new(&pg, "team_a", PW_A, "core", "");
    let lesson = "run migrations before restarting the workers";
    a.note(lesson);
    b.note("Run migrations before restarting the workers.");
    a.sync();
    b.sync();
    a.sync();
    for m in [&a, &b] {
        let notes = m.recall();
        assert_eq!(notes.len(), 1, "{notes:?}");
        assert_eq!(notes[0]["hits"], 1, "both writes count: {notes:?}");
    }
    assert_eq!(count(&pg, "SELECT count(*) FROM skillmem.notes"), 1);
    assert_eq!(count(&pg, "SELECT hits FROM skillmem.notes"), 1);
}

#[test]
fn a_server_stopped_in_the_middle_of_a_push_loses_nothing_and_duplicates_nothing() {
    let pg = server();
    // Twenty different lessons, not merged as near duplicates.
    let exact = "[memory]\ndedup_threshold = 1.0";
    let a = Machine::new(&pg, "team_a", PW_A, "core", exact);
    let b = Machine::new(&pg, "team_a", PW_A, "core", exact);
    a.sync(); // the schema and the team exist
    for i in 0..20 {
        a.note(&format!("lesson {i} about the staging cluster"));
    }
    // Hold the team's push lock, so that A's push waits inside its transaction.
    let mut admin = pg.admin("skillmem").unwrap();
    admin.execute("SELECT pg_advisory_lock(hashtext('skillmem:' || 'core'))", &[]).unwrap();
    let child = Command::new(env!("CARGO_BIN_EXE_skillmem"))
        .args(["sync"])
        .current_dir(&a.w.ws)
        .envs(a.envs())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        let waiting: i64 = admin
            .query_one(
                "SELECT count(*) FROM pg_stat_activity WHERE application_name = 'skillmem' AND wait_event_type = 'Lock'",
                &[],
            )
            .unwrap()
            .get(0);
        if waiting > 0 {
            break;
        }
        assert!(Instant::now() < deadline, "the push never reached the server");
        std::thread::sleep(Duration::from_millis(20));
    }
    pg.stop().unwrap();
    let out = child.wait_with_output().unwrap();
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("team server"), "{err}");
    // Nothing lost: every change still waits, and recall works meanwhile.
    let st = a.json(&["sync", "status", "--offline"]);
    assert_eq!(st["pending"], 20, "{st}");
    assert!(st["lastError"].as_str().unwrap().contains("team server"), "{st}");
    assert_eq!(a.recall().len(), 20);

    pg.start_again().unwrap();
    let r = a.sync();
    assert_eq!(r["pushed"], 20, "{r}");
    let r = a.sync();
    assert_eq!(r["pushed"], 0, "{r}");
    let r = b.sync();
    assert_eq!(r["inserted"], 20, "{r}");
    assert_eq!(count(&pg, "SELECT count(*) FROM skillmem.notes"), 20);
    assert_eq!(b.recall().len(), 20);
}

#[test]
fn a_batch_sent_twice_applies_once() {
    // The case where the server committed a push and the answer was lost: the retry sends the
    // same events, and the server skips what it applied.
    use skillmem::memory::store::TeamNote;
    use skillmem::team::server::{Event, EventKind, Remote};
    let pg = server();
    let cfg = skillmem::team::TeamConfig {
        url: pg.url("team_a", "skillmem"),
        password_env: Some("SKILLMEM_TEST_PW_TWICE".into()),
        team: "core".into(),
        share: skillmem::team::Share::Global,
    };
    std::env::set_var("SKILLMEM_TEST_PW_TWICE", PW_A);
    let mut r = Remote::connect(&cfg).unwrap();
    let note = TeamNote {
        skill: "deploy".into(),
        scope: "global".into(),
        project_id: String::new(),
        origin_project: "p".into(),
        source: "agent".into(),
        kind: "gotcha".into(),
        intent: String::new(),
        delta: "x".into(),
        tags: "[]".into(),
        pinned: false,
        hits: 0,
        norm_hash: "h".into(),
        created_at: 1,
        updated_at: 1,
        retired_at: None,
        superseded_by: None,
        reason: None,
        evidence: None,
    };
    let events = vec![
        Event { id: 1, kind: EventKind::Note, uid: "u1".into(), note: Some(note.clone()), hits: 0 },
        Event { id: 2, kind: EventKind::Hit, uid: "u1".into(), note: Some(note), hits: 1 },
    ];
    assert_eq!(r.push("m1", &events).unwrap().applied, 2);
    assert_eq!(r.push("m1", &events).unwrap().applied, 0);
    assert_eq!(count(&pg, "SELECT hits FROM skillmem.notes"), 1);
    assert_eq!(r.pull(0, 10).unwrap().len(), 1);
}

#[test]
fn a_note_with_an_api_key_is_not_pushed_and_says_so() {
    let pg = server();
    let a = Machine::new(&pg, "team_a", PW_A, "core", "");
    let b = Machine::new(&pg, "team_a", PW_A, "core", "");
    // Every write path redacts secrets now; a note written before that is planted in SQL.
    let id = a.note("export the OpenAI key before deploying");
    let conn = rusqlite::Connection::open(a.w.data.join("skillmem.db")).unwrap();
    conn.execute(
        "UPDATE notes SET delta = ?1 WHERE id = ?2",
        rusqlite::params!["export OPENAI_API_KEY=sk-proj-abc123DEF456ghi789JKL012mno before deploying", id],
    )
    .unwrap();
    a.note("deploys need the VPN up");
    // A skill that opted out keeps its notes here.
    a.w.skill("private", "---\nname: NAME\ndescription: d\nskill-memory:\n  enabled: true\n  share: false\n---\n");
    a.json(&["note", "private", "--kind", "fix", "--scope", "global", "--delta", "our internal host is build-7"]);
    let (code, out, _) = a.cli(&["sync"]);
    assert_eq!(code, 0);
    assert!(out.contains("not pushed") && out.contains("secret") && out.contains("API key"), "{out}");
    assert!(out.contains("opted out"), "{out}");
    let st = a.json(&["sync", "status", "--offline"]);
    assert_eq!(st["held"].as_array().unwrap().len(), 2, "{st}");
    assert_eq!(count(&pg, "SELECT count(*) FROM skillmem.notes WHERE skill = 'private'"), 0);
    assert_eq!(count(&pg, "SELECT count(*) FROM skillmem.notes WHERE delta LIKE '%sk-proj%'"), 0);
    b.sync();
    assert_eq!(b.deltas(), vec!["deploys need the VPN up".to_string()]);
    // Still recalled on A.
    assert_eq!(a.recall().len(), 2);
}

#[test]
fn a_team_cannot_read_another_teams_notes() {
    let pg = server();
    let a = Machine::new(&pg, "team_a", PW_A, "alpha", "");
    a.note("alpha's secret sauce is caching");
    // A held mined lesson: its support row is alpha's too.
    eresolve_session(&a, "a1");
    a.sync();
    assert_eq!(count(&pg, "SELECT count(*) FROM skillmem.lesson_support WHERE team = 'alpha'"), 1);
    let c = Machine::new(&pg, "team_b", PW_B, "beta", "");
    let r = c.sync();
    assert_eq!(r["pulled"], 0, "{r}");
    assert!(c.deltas().is_empty());
    // Naming the other team does not help: the team belongs to another role.
    c.configure(&pg.url("team_b", "skillmem"), "alpha", "");
    let err = c.sync_err();
    assert!(err.contains("belongs to the PostgreSQL role team_a"), "{err}");
    // Row-level security, not the client, keeps the rows apart.
    let mut cfg: postgres::Config = pg.url("team_b", "skillmem").parse().unwrap();
    cfg.password(PW_B);
    let mut direct = cfg.connect(postgres::NoTls).unwrap();
    let seen: i64 = direct.query_one("SELECT count(*) FROM skillmem.notes", &[]).unwrap().get(0);
    assert_eq!(seen, 0);
    let n = direct.execute("UPDATE skillmem.notes SET delta = 'defaced' WHERE team = 'alpha'", &[]).unwrap();
    assert_eq!(n, 0);
    assert!(direct
        .execute(
            "INSERT INTO skillmem.notes (team, uid, seq, origin, skill, scope, project_id, origin_project, source, kind, intent, delta, tags, pinned, hits, norm_hash, created_at, updated_at)
             VALUES ('alpha', 'x', 1, 'm', 's', 'global', '', '', 'agent', 'gotcha', '', 'planted', '[]', false, 0, 'h', 0, 0)",
            &[],
        )
        .is_err());
    assert_eq!(count(&pg, "SELECT count(*) FROM skillmem.notes WHERE team = 'alpha'"), 1);
    let seen: i64 = direct.query_one("SELECT count(*) FROM skillmem.lesson_support", &[]).unwrap().get(0);
    assert_eq!(seen, 0, "nor its lessons' support");
    let n = direct.execute("UPDATE skillmem.lesson_support SET sessions = 99 WHERE team = 'alpha'", &[]).unwrap();
    assert_eq!(n, 0);
    assert!(direct
        .execute(
            "INSERT INTO skillmem.lesson_support (team, skill, key_hash, machine, seq, sessions)
             VALUES ('alpha', 'deploy', 'h', 'm', 1, 99)",
            &[],
        )
        .is_err());
    assert_eq!(count(&pg, "SELECT sum(sessions)::bigint FROM skillmem.lesson_support WHERE team = 'alpha'"), 1);
}

#[test]
fn a_wrong_password_an_unreachable_host_and_a_newer_schema_each_say_so_and_recall_keeps_working() {
    let pg = server();
    let a = Machine::new(&pg, "team_a", PW_A, "core", "");
    a.note("tag the release before deploying");
    a.sync();

    let wrong = Machine { w: common::World::new(), password: "not-the-password".into() };
    wrong.w.enabled_skill("deploy");
    wrong.configure(&pg.url("team_a", "skillmem"), "core", "");
    wrong.note("a local lesson");
    let err = wrong.sync_err();
    assert!(err.contains("refused the login"), "{err}");
    assert_eq!(wrong.deltas(), vec!["a local lesson".to_string()]);

    let free = std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port();
    let gone = Machine::new(&pg, "team_a", PW_A, "core", "");
    gone.configure(&format!("postgres://team_a@127.0.0.1:{free}/skillmem?sslmode=disable"), "core", "");
    gone.note("another local lesson");
    let err = gone.sync_err();
    assert!(err.contains("cannot reach the team server"), "{err}");
    assert_eq!(gone.deltas(), vec!["another local lesson".to_string()]);
    let st = gone.json(&["sync", "status"]);
    assert!(st["serverError"].as_str().unwrap().contains("cannot reach"), "{st}");
    assert_eq!(st["pending"], 1, "{st}");

    pg.admin_sql("skillmem", "UPDATE skillmem.version SET version = 99").unwrap();
    a.note("a lesson written while the server is too new");
    let err = a.sync_err();
    assert!(err.contains("newer than this skillmem knows"), "{err}");
    assert_eq!(a.recall().len(), 2);
}

#[test]
fn project_notes_are_shared_only_with_global_plus_project_and_the_same_project() {
    let pg = server();
    let a = Machine::new(&pg, "team_a", PW_A, "core", "");
    let b = Machine::new(&pg, "team_a", PW_A, "core", "");
    for m in [&a, &b] {
        let toml = std::fs::read_to_string(m.w.ws.join("skillmem.toml")).unwrap();
        std::fs::write(m.w.ws.join("skillmem.toml"), format!("{toml}share = \"global+project\"\n")).unwrap();
    }
    let c = Machine::new(&pg, "team_a", PW_A, "core", "");
    a.json(&["note", "deploy", "--kind", "fix", "--scope", "project", "--delta", "this repo deploys with make ship"]);
    a.note("a global lesson");
    a.sync();
    b.sync();
    c.sync();
    assert_eq!(b.deltas().len(), 2, "{:?}", b.deltas());
    assert_eq!(c.deltas(), vec!["a global lesson".to_string()]);
}

#[test]
fn serve_syncs_in_the_background_within_seconds() {
    let pg = server();
    let a = Machine::new(&pg, "team_a", PW_A, "core", "");
    let b = Machine::new(&pg, "team_a", PW_A, "core", "");
    a.sync();
    let spawn = |m: &Machine| {
        let envs = m.envs();
        let envs: Vec<(&str, &str)> = envs.iter().map(|(k, v)| (*k, v.as_str())).collect();
        let mut c = skillmem::client::Client::spawn(std::path::Path::new(env!("CARGO_BIN_EXE_skillmem")), &envs, false)
            .unwrap();
        c.initialize(&m.w.ws, json!({})).unwrap();
        c
    };
    let mut ca = spawn(&a);
    let mut cb = spawn(&b);
    common::ok(
        ca.request(
            "skillmem/note",
            json!({ "skill": "deploy", "kind": "gotcha", "intent": "deploy to staging", "scope": "global",
                    "delta": "staging needs the feature flag on" }),
        )
        .unwrap(),
    );
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        let r = cb.request("skillmem/recall", json!({"skill": "deploy", "intent": "deploy to staging"})).unwrap();
        let found = r["result"]["notes"].as_array().is_some_and(|n| !n.is_empty());
        if found {
            break;
        }
        assert!(Instant::now() < deadline, "B never saw A's note: {r}");
        std::thread::sleep(Duration::from_millis(100));
    }
    ca.shutdown().unwrap();
    cb.shutdown().unwrap();
}

/// A server a skillmem of the first team schema wrote (no history columns) is migrated by the
/// next sync and keeps its notes, which arrive current.
#[test]
fn a_server_of_the_first_schema_is_migrated_and_keeps_its_notes() {
    let pg = server();
    let a = Machine::new(&pg, "team_a", PW_A, "core", "");
    let lesson = "the deploy skill needs --no-cache on the staging cluster";
    a.note(lesson);
    a.sync();
    // Back to schema 1, as an older skillmem left it.
    pg.admin_sql(
        "skillmem",
        "ALTER TABLE skillmem.notes DROP COLUMN retired_at, DROP COLUMN superseded_by, DROP COLUMN reason,
             DROP COLUMN evidence;
         DROP TABLE skillmem.note_counts;
         DROP TABLE skillmem.lesson_support;
         UPDATE skillmem.version SET version = 1",
    )
    .unwrap();
    let b = Machine::new(&pg, "team_a", PW_A, "core", "");
    let r = b.sync();
    assert_eq!(r["inserted"], 1, "{r}");
    assert_eq!(b.deltas(), vec![lesson.to_string()]);
    assert_eq!(count(&pg, "SELECT version::bigint FROM skillmem.version"), 5);
    assert_eq!(count(&pg, "SELECT count(*) FROM skillmem.notes WHERE retired_at IS NULL"), 1);
}

/// Two machines write two versions of one lesson, each its own: after a sync each machine
/// holds both as a conflicting pair, and the newer one leads its block with the older naming it.
#[test]
fn versions_written_on_two_machines_are_a_conflicting_pair_on_both() {
    let pg = server();
    let a = Machine::new(&pg, "team_a", PW_A, "core", "");
    let b = Machine::new(&pg, "team_a", PW_A, "core", "");
    let older = "Always pass --no-verify when pushing release tags.";
    let newer = "Never pass --no-verify when pushing release tags.";
    a.note(older);
    a.sync();
    b.note(newer);
    b.sync();
    a.sync();
    for m in [&a, &b] {
        let (code, out, err) = m.cli(&["recall", "deploy", "--intent", "push the release tags"]);
        assert_eq!(code, 0, "{err}");
        let (i_new, i_old) =
            (out.find(newer).unwrap_or_else(|| panic!("{out}")), out.find(older).unwrap_or_else(|| panic!("{out}")));
        assert!(i_new < i_old, "the newer leads: {out}");
        let newer_id = m.find(newer)["id"].as_i64().unwrap();
        assert!(out.contains(&format!("newer=\"{newer_id}\"")), "the older names the newer: {out}");
    }
}

/// A note this machine pulled, shared again with another team, tells that team who first
/// wrote it (the agent), not that it came from a team.
#[test]
fn a_pulled_note_shared_again_keeps_who_first_wrote_it() {
    let pg = server();
    let a = Machine::new(&pg, "team_a", PW_A, "core", "");
    let b = Machine::new(&pg, "team_a", PW_A, "core", "");
    a.note("the deploy skill needs --no-cache on the staging cluster");
    a.sync();
    b.sync();
    b.configure(&pg.url("team_a", "skillmem"), "other", "");
    let r = b.sync();
    assert_eq!(r["pushed"], 1, "{r}");
    assert_eq!(count(&pg, "SELECT count(*) FROM skillmem.notes WHERE team = 'other' AND source = 'agent'"), 1);
}

/// Two machines write lessons whose normalised texts agree but whose numbers differ ("-1" and
/// "1"): the team keeps both, and each machine ends with both.
#[test]
fn lessons_that_differ_only_in_a_sign_are_two_notes_on_the_team() {
    let pg = server();
    let a = Machine::new(&pg, "team_a", PW_A, "core", "");
    let b = Machine::new(&pg, "team_a", PW_A, "core", "");
    let plus = "Set the replica offset to 1 before the failover.";
    let minus = "Set the replica offset to -1 before the failover.";
    a.note(plus);
    b.note(minus);
    a.sync();
    b.sync();
    a.sync();
    for m in [&a, &b] {
        assert_eq!(m.deltas(), vec![minus.to_string(), plus.to_string()]);
    }
    assert_eq!(count(&pg, "SELECT count(*) FROM skillmem.notes"), 2);
}

/// What backs a note travels with it: a note imported with its evidence reaches the other
/// machine with it; evidence recorded after a note was first pushed (as the miner records it
/// just after the write) follows it as an edit; the first evidence a note gets stays.
#[test]
fn a_notes_evidence_travels_with_it() {
    let pg = server();
    let a = Machine::new(&pg, "team_a", PW_A, "core", "");
    let b = Machine::new(&pg, "team_a", PW_A, "core", "");
    let import = |m: &Machine, delta: &str, evidence: Value| {
        let line = serde_json::json!({
            "skill": "deploy", "scope": "global", "source": "transcript", "kind": "fix", "delta": delta,
            "evidence": evidence,
        });
        let file = m.w.tmp.path().join("in.jsonl");
        std::fs::write(&file, format!("{line}\n")).unwrap();
        let (code, _, e) = m.cli(&["import", file.to_str().unwrap()]);
        assert_eq!(code, 0, "{e}");
    };
    let mined = serde_json::json!({
        "failedCall": "kubectl apply -f deploy.yaml", "errorLines": ["error: You must be logged in to the server (Unauthorized)"],
        "fixedCall": "kubectl --context staging apply -f deploy.yaml", "positions": [{ "callId": "c2" }, { "callId": "c3" }]
    });
    let lesson = "`kubectl apply -f deploy.yaml` fails with `Unauthorized`; `kubectl --context staging apply -f deploy.yaml` works.";
    import(&a, lesson, mined.clone());
    a.sync();
    b.sync();
    let listed = |m: &Machine| -> Vec<Value> { m.json(&["notes"])["notes"].as_array().cloned().unwrap_or_default() };
    let on_b = listed(&b);
    let n = on_b.iter().find(|n| n["delta"] == lesson).unwrap_or_else(|| panic!("{on_b:#?}"));
    assert_eq!(n["evidence"], mined, "{n}");

    // Written and shared first, its evidence recorded later: it follows.
    let later = "The deploy skill needs --wait on the staging cluster.";
    a.note(later);
    a.sync();
    b.sync();
    let grounded = serde_json::json!({ "errorLines": ["error: timed out waiting for the condition"] });
    import(&a, later, grounded.clone());
    a.sync();
    b.sync();
    let on_b = listed(&b);
    let n = on_b.iter().find(|n| n["delta"] == later).unwrap_or_else(|| panic!("{on_b:#?}"));
    assert_eq!(n["evidence"], grounded, "{n}");
    assert_eq!(count(&pg, "SELECT count(*) FROM skillmem.notes WHERE evidence IS NOT NULL"), 2);

    // Other evidence for the same lesson later does not replace it.
    import(&b, later, serde_json::json!({ "errorLines": ["another line"] }));
    b.sync();
    a.sync();
    let n = listed(&a).into_iter().find(|n| n["delta"] == later).unwrap();
    assert_eq!(n["evidence"], grounded, "{n}");
}

/// `skillmem serve` on machine `m`, initialized in its workspace.
fn serve(m: &Machine) -> skillmem::client::Client {
    let envs = m.envs();
    let envs: Vec<(&str, &str)> = envs.iter().map(|(k, v)| (*k, v.as_str())).collect();
    let mut c =
        skillmem::client::Client::spawn(std::path::Path::new(env!("CARGO_BIN_EXE_skillmem")), &envs, true).unwrap();
    c.initialize(&m.w.ws, json!({})).unwrap();
    c
}

/// One agent session on `m`: the `deploy` skill loaded, a call applying `command`, the end.
fn session(m: &Machine, id: &str, command: &str) {
    let mut c = serve(m);
    let dir = m.w.ws.join(".claude/skills/deploy");
    common::ok(
        c.request(
            "skillmem/toolAfter",
            json!({ "sessionId": id, "callId": "1", "tool": "skill", "args": { "name": "deploy" },
                    "output": format!("# deploy\n\nBase directory for this skill: {}\n", dir.display()) }),
        )
        .unwrap(),
    );
    common::ok(
        c.request(
            "skillmem/toolAfter",
            json!({ "sessionId": id, "callId": "2", "tool": "bash", "args": { "command": command },
                    "output": "upload: ...", "metadata": { "exit": 0, "output": "upload: ..." } }),
        )
        .unwrap(),
    );
    common::ok(c.request("skillmem/sessionEnd", json!({ "sessionId": id })).unwrap());
    c.shutdown().unwrap();
}

#[test]
fn use_counts_of_every_machine_add_up_once_and_a_persons_vouch_travels() {
    let pg = server();
    let a = Machine::new(&pg, "team_a", PW_A, "core", "");
    let b = Machine::new(&pg, "team_a", PW_A, "core", "");
    let used = "aws s3 sync skips files whose size did not change; pass `--exact-timestamps` after a rebuild.";
    let other = "The deploy skill's staging bucket lives in eu-west-1.";
    // Written by an agent (no person vouches for them).
    let mut c = serve(&a);
    for delta in [used, other] {
        common::ok(
            c.request(
                "skillmem/note",
                json!({ "skill": "deploy", "kind": "gotcha", "scope": "global", "intent": "deploy to staging",
                        "delta": delta }),
            )
            .unwrap(),
        );
    }
    c.shutdown().unwrap();
    let counts = |m: &Machine| -> Vec<(String, i64, i64, String)> {
        let mut v: Vec<_> = m.json(&["notes", "deploy"])["notes"]
            .as_array()
            .unwrap()
            .iter()
            .map(|n| {
                (
                    n["delta"].as_str().unwrap().to_string(),
                    n["shown"].as_i64().unwrap_or(0),
                    n["used"].as_i64().unwrap_or(0),
                    n["trust"].as_str().unwrap_or("").to_string(),
                )
            })
            .collect();
        v.sort();
        v
    };
    let row = |delta: &str, shown: i64, used: i64, trust: &str| (delta.to_string(), shown, used, trust.to_string());

    // A's session uses one note; B, after a sync, sees A's counts (a use earns trust only with
    // lift behind it: no session withheld the note yet).
    session(&a, "a1", "aws s3 sync dist s3://site --exact-timestamps");
    let on_a = counts(&a);
    assert_eq!(on_a, vec![row(other, 1, 0, "unverified"), row(used, 1, 1, "unverified")]);
    a.sync();
    b.sync();
    assert_eq!(counts(&b), on_a);

    // B's own session adds to them; after both sync (again and again) both agree, nothing twice.
    session(&b, "b1", "aws s3 sync dist s3://site --exact-timestamps");
    assert_eq!(counts(&b), vec![row(other, 2, 0, "unverified"), row(used, 2, 2, "unverified")]);
    for _ in 0..2 {
        b.sync();
        a.sync();
    }
    b.sync();
    assert_eq!(counts(&a), counts(&b));
    assert_eq!(counts(&a), vec![row(other, 2, 0, "unverified"), row(used, 2, 2, "unverified")]);
    // One row per note and machine on the server, each machine's own counts.
    assert_eq!(count(&pg, "SELECT count(*) FROM skillmem.note_counts"), 4);
    assert_eq!(count(&pg, "SELECT sum(used)::bigint FROM skillmem.note_counts"), 2);

    // A person pins the other note on A: it is trusted on B too.
    let id = a.find(other)["id"].as_i64().unwrap();
    a.json(&["pin", &id.to_string()]);
    a.sync();
    b.sync();
    assert_eq!(counts(&b), vec![row(other, 2, 0, "trusted"), row(used, 2, 2, "unverified")]);
    assert_eq!(counts(&a), counts(&b));
}

const ERESOLVE: &str = "npm ERR! code ERESOLVE\nnpm ERR! ERESOLVE unable to resolve dependency tree\nnpm ERR! \nnpm ERR! While resolving: app@1.0.0\nnpm ERR! Found: react@18.2.0";
const MINED: &str =
    "`npm ci` fails with `ERESOLVE unable to resolve dependency tree`; `npm ci --legacy-peer-deps` works.";

/// One agent session on `m` that meets `ERESOLVE` in `npm ci` with the `deploy` skill loaded and
/// gets past it with `--legacy-peer-deps`: the miner's lesson, at the session's end.
fn eresolve_session(m: &Machine, id: &str) {
    m.offline(|| eresolve_session_in(m, id, "npm ci"))
}

fn eresolve_session_in(m: &Machine, id: &str, npm_ci: &str) {
    let mut c = serve(m);
    let dir = m.w.ws.join(".claude/skills/deploy");
    let call = |c: &mut skillmem::client::Client, call: &str, command: &str, exit: i64, output: &str| {
        common::ok(
            c.request(
                "skillmem/toolAfter",
                json!({ "sessionId": id, "callId": call, "tool": "bash", "args": { "command": command },
                        "output": output, "metadata": { "exit": exit, "output": output } }),
            )
            .unwrap(),
        );
    };
    common::ok(
        c.request(
            "skillmem/toolAfter",
            json!({ "sessionId": id, "callId": "1", "tool": "skill", "args": { "name": "deploy" },
                    "output": format!("# deploy\n\nBase directory for this skill: {}\n", dir.display()) }),
        )
        .unwrap(),
    );
    call(&mut c, "2", npm_ci, 1, ERESOLVE);
    call(&mut c, "3", &format!("{npm_ci} --legacy-peer-deps"), 0, "added 312 packages in 9s");
    common::ok(c.request("skillmem/sessionEnd", json!({ "sessionId": id })).unwrap());
    c.shutdown().unwrap();
}

impl Machine {
    /// Runs `f` with no `[team]` in the configuration: `serve` then syncs nothing in the
    /// background, so that the test's own syncs are the only ones and their order is the test's.
    fn offline<T>(&self, f: impl FnOnce() -> T) -> T {
        let file = self.w.ws.join("skillmem.toml");
        let with_team = std::fs::read_to_string(&file).unwrap();
        let without = with_team.split("[team]").next().unwrap().to_string();
        std::fs::write(&file, without).unwrap();
        let out = f();
        std::fs::write(&file, with_team).unwrap();
        out
    }

    /// The notes waiting in review (a mined lesson is held there until it recurs).
    fn held(&self) -> Vec<Value> {
        self.json(&["review"])["notes"].as_array().cloned().unwrap_or_default()
    }

    /// The current notes of `deploy` that say `delta`.
    fn current(&self, delta: &str) -> Vec<Value> {
        let all = self.json(&["notes", "deploy"])["notes"].as_array().cloned().unwrap_or_default();
        all.into_iter().filter(|n| n["delta"] == delta).collect()
    }

    /// The block a load of `deploy` shows in a session of its own.
    fn block(&self, session: &str) -> String {
        self.offline(|| self.block_in(session))
    }

    fn block_in(&self, session: &str) -> String {
        let mut c = serve(self);
        let dir = self.w.ws.join(".claude/skills/deploy");
        let r = common::ok(
            c.request(
                "skillmem/toolAfter",
                json!({ "sessionId": session, "callId": "1", "tool": "skill", "args": { "name": "deploy" },
                        "output": format!("# deploy\n\nBase directory for this skill: {}\n", dir.display()) }),
            )
            .unwrap(),
        );
        c.shutdown().unwrap();
        r["append"].as_str().unwrap_or_default().to_string()
    }
}

/// Several machines seeing the same fix is the strongest evidence there is: a lesson each of
/// two machines mined in one session of its own is held on each (one session is not enough),
/// and released by the team's count, never by sending the held text: after A syncs, B's sync
/// counts A's session, releases B's lesson (shown at B's next load) and shares it; A's next
/// sync maps B's note onto A's own held copy and releases it too. One current copy each, one
/// row on the server.
#[test]
fn a_lesson_mined_once_on_each_of_two_machines_is_released_on_both_by_the_teams_count() {
    let pg = server();
    let quiet = "[memory]\nholdout = 0.0\n";
    let a = Machine::new(&pg, "team_a", PW_A, "core", quiet);
    let b = Machine::new(&pg, "team_a", PW_A, "core", quiet);
    eresolve_session(&a, "a1");
    eresolve_session(&b, "b1");
    for m in [&a, &b] {
        let held = m.held();
        assert_eq!(held.len(), 1, "{held:#?}");
        assert_eq!((held[0]["delta"].as_str(), held[0]["evidence"]["sessions"].as_i64()), (Some(MINED), Some(1)));
        assert!(m.current(MINED).is_empty());
    }
    let held_on_a = a.held()[0]["id"].as_i64().unwrap();
    let held_on_b = b.held()[0]["id"].as_i64().unwrap();

    let r = a.sync();
    assert_eq!(r["released"], 0, "{r}");
    assert_eq!(count(&pg, "SELECT count(*) FROM skillmem.notes"), 0, "a held lesson is not shared");
    assert_eq!(count(&pg, "SELECT count(*) FROM skillmem.lesson_support"), 1);

    // B counts A's session: two sessions on the team, B's lesson released and shared.
    let r = b.sync();
    assert_eq!(r["released"], 1, "{r}");
    assert!(b.held().is_empty(), "{:#?}", b.held());
    let on_b = b.current(MINED);
    assert_eq!(on_b.len(), 1, "{on_b:#?}");
    assert_eq!(on_b[0]["id"].as_i64(), Some(held_on_b), "the held note itself is released");
    assert_eq!(on_b[0]["evidence"]["sessions"], 2, "{}", on_b[0]);
    assert!(b.block("b2").contains("--legacy-peer-deps"), "shown at B's next load");
    assert_eq!(count(&pg, "SELECT count(*) FROM skillmem.notes"), 1);
    // A has not synced since: still held there.
    assert_eq!(a.held().len(), 1);

    // A pulls B's note (the same lesson: mapped onto A's held copy) and B's session: released.
    let r = a.sync();
    assert_eq!(r["released"], 1, "{r}");
    assert_eq!(r["inserted"], 0, "mapped onto the copy held here, not a second note: {r}");
    assert!(a.held().is_empty());
    let on_a = a.current(MINED);
    assert_eq!(on_a.len(), 1, "{on_a:#?}");
    assert_eq!(on_a[0]["id"].as_i64(), Some(held_on_a));
    assert_eq!(on_a[0]["evidence"]["sessions"], 2, "{}", on_a[0]);
    assert!(a.block("a2").contains("--legacy-peer-deps"));
    for _ in 0..2 {
        b.sync();
        a.sync();
    }
    for m in [&a, &b] {
        assert_eq!(m.current(MINED).len(), 1, "one current copy");
        assert!(m.held().is_empty());
        let all = m.json(&["notes", "deploy"])["notes"].as_array().cloned().unwrap_or_default();
        assert_eq!(all.len(), 1, "{all:#?}");
    }
    assert_eq!(count(&pg, "SELECT count(*) FROM skillmem.notes"), 1, "one row on the server");
    assert_eq!(count(&pg, "SELECT count(*) FROM skillmem.lesson_support"), 2, "one row per machine");
    assert_eq!(count(&pg, "SELECT sum(sessions)::bigint FROM skillmem.lesson_support"), 2, "each counted once");
}

/// The same lesson in other words: each machine's find names its own checkout, so the texts
/// differ but the lesson's key (paths left out) is the same. The team's row of it maps onto the
/// copy held here by that key: one note on each machine, one row on the server.
#[test]
fn the_same_lesson_mined_in_other_words_on_two_machines_is_one_note_on_each() {
    let pg = server();
    let quiet = "[memory]\nholdout = 0.0\n";
    let a = Machine::new(&pg, "team_a", PW_A, "core", quiet);
    let b = Machine::new(&pg, "team_a", PW_A, "core", quiet);
    a.offline(|| eresolve_session_in(&a, "a1", "npm ci --prefix /home/alice/shop"));
    b.offline(|| eresolve_session_in(&b, "b1", "npm ci --prefix /home/bob/shop"));
    let (on_a, on_b) = (a.held(), b.held());
    assert_eq!((on_a.len(), on_b.len()), (1, 1), "{on_a:#?} {on_b:#?}");
    assert_ne!(on_a[0]["delta"], on_b[0]["delta"], "other words");
    assert_eq!(on_a[0]["evidence"]["key"], on_b[0]["evidence"]["key"], "the same lesson");
    let held_on_a = on_a[0]["id"].as_i64().unwrap();
    let theirs = on_b[0]["delta"].as_str().unwrap().to_string();
    a.sync();
    assert_eq!(b.sync()["released"], 1);
    let r = a.sync();
    assert_eq!((r["released"].as_i64(), r["inserted"].as_i64()), (Some(1), Some(0)), "{r}");
    for m in [&a, &b] {
        let all = m.json(&["notes", "deploy"])["notes"].as_array().cloned().unwrap_or_default();
        assert_eq!(all.len(), 1, "one current note: {all:#?}");
        assert_eq!(all[0]["delta"], theirs.as_str(), "the team's words");
        assert!(m.held().is_empty());
    }
    assert_eq!(a.json(&["notes", "deploy"])["notes"][0]["id"].as_i64(), Some(held_on_a), "A's own note, mapped");
    b.sync();
    a.sync();
    assert_eq!(count(&pg, "SELECT count(*) FROM skillmem.notes"), 1);
    assert_eq!(a.json(&["notes", "deploy"])["notes"].as_array().map(Vec::len), Some(1));
    assert_eq!(b.json(&["notes", "deploy"])["notes"].as_array().map(Vec::len), Some(1));
}

/// A lesson mined on one machine only stays held everywhere, and its text never reaches the
/// server: only its key's hash and the count of sessions travel (a push sent again counts
/// once). A second session there releases it, and then it is shared as any note.
#[test]
fn a_lesson_mined_on_one_machine_stays_held_and_its_text_never_reaches_the_server() {
    let pg = server();
    let quiet = "[memory]\nholdout = 0.0\n";
    let a = Machine::new(&pg, "team_a", PW_A, "core", quiet);
    let b = Machine::new(&pg, "team_a", PW_A, "core", quiet);
    eresolve_session(&a, "a1");
    let key = a.held()[0]["evidence"]["key"].as_str().unwrap().to_string();
    for _ in 0..2 {
        a.sync();
        b.sync();
    }
    assert_eq!(a.held().len(), 1, "still held on A");
    assert!(a.current(MINED).is_empty());
    assert!(b.held().is_empty() && b.current(MINED).is_empty(), "nothing of it on B");
    assert!(!b.block("b1").contains("legacy-peer-deps"));
    assert_eq!(count(&pg, "SELECT count(*) FROM skillmem.notes"), 0);
    assert_eq!(count(&pg, "SELECT count(*) FROM skillmem.lesson_support"), 1);
    assert_eq!(count(&pg, "SELECT sum(sessions)::bigint FROM skillmem.lesson_support"), 1, "sent twice, counted once");
    // What the server holds of it: the skill, the key's SHA-256 and a count; no word of it.
    let mut admin = pg.admin("skillmem").unwrap();
    let row = admin.query_one("SELECT skill, key_hash, sessions FROM skillmem.lesson_support", &[]).unwrap();
    let (skill, hash, sessions): (String, String, i64) = (row.get(0), row.get(1), row.get(2));
    assert_eq!((skill.as_str(), sessions), ("deploy", 1));
    assert_eq!(hash.len(), 64, "{hash}");
    assert!(hash.bytes().all(|b| b.is_ascii_hexdigit()), "{hash}");
    let everything: String = admin
        .query_one(
            "SELECT coalesce(string_agg(t::text, ' '), '') FROM (
                 SELECT n::text AS t FROM skillmem.notes n UNION ALL SELECT s::text FROM skillmem.lesson_support s
                 UNION ALL SELECT c::text FROM skillmem.note_counts c) x",
            &[],
        )
        .unwrap()
        .get(0);
    for word in ["legacy-peer-deps", "ERESOLVE", "npm ci", key.as_str()] {
        assert!(!everything.contains(word), "{word:?} reached the server: {everything}");
    }

    // A second session on A: released there, then shared as any accepted note.
    eresolve_session(&a, "a2");
    assert_eq!(a.current(MINED).len(), 1);
    a.sync();
    b.sync();
    assert_eq!(b.current(MINED).len(), 1, "shared once released");
    assert!(b.held().is_empty());
    assert_eq!(count(&pg, "SELECT sum(sessions)::bigint FROM skillmem.lesson_support"), 2);
}

/// The holdout's counts travel with the other counts: a session on A that withheld a note
/// (and whose calls carried its specific anyway) shows on B as withheld and appeared, in the
/// note's lift.
#[test]
fn withheld_and_appeared_counted_on_one_machine_reach_the_others_lift() {
    let pg = server();
    let a = Machine::new(&pg, "team_a", PW_A, "core", "[memory]\nholdout = 1.0\n");
    let b = Machine::new(&pg, "team_a", PW_A, "core", "[memory]\nholdout = 0.0\n");
    let lesson = "aws s3 sync skips files whose size did not change; pass `--exact-timestamps` after a rebuild.";
    a.offline(|| {
        let mut c = serve(&a);
        common::ok(
            c.request(
                "skillmem/note",
                json!({ "skill": "deploy", "kind": "gotcha", "scope": "global", "intent": "deploy to staging",
                        "delta": lesson }),
            )
            .unwrap(),
        );
        c.shutdown().unwrap();
    });
    a.sync();
    // Two sessions on A withhold it (the holdout at every load); one types the flag anyway.
    a.offline(|| {
        session(&a, "a1", "aws s3 sync dist s3://site --exact-timestamps");
        session(&a, "a2", "aws s3 sync dist s3://site");
    });
    let of = |m: &Machine| -> Value {
        let all = m.json(&["notes", "deploy"])["notes"].as_array().cloned().unwrap_or_default();
        all.into_iter().find(|n| n["delta"] == lesson).unwrap_or_else(|| panic!("no note {lesson:?}"))
    };
    let on_a = of(&a);
    assert_eq!((on_a["withheld"].as_i64(), on_a["appeared"].as_i64()), (Some(2), Some(1)), "{on_a}");
    a.sync();
    b.sync();
    let on_b = of(&b);
    assert_eq!((on_b["withheld"].as_i64(), on_b["appeared"].as_i64()), (Some(2), Some(1)), "{on_b}");
    assert_eq!(on_b["lift"], on_a["lift"], "{on_b}");
    assert_eq!(count(&pg, "SELECT sum(withheld)::bigint FROM skillmem.note_counts"), 2);
    // Sent again, counted once.
    a.sync();
    b.sync();
    assert_eq!(of(&b)["withheld"].as_i64(), Some(2));
    assert_eq!(count(&pg, "SELECT sum(withheld)::bigint FROM skillmem.note_counts"), 2);
}

impl Machine {
    /// The dashboard's review page (`skillmem ui`, read over loopback with its token), rendered
    /// with no sync of its own.
    fn review_page(&self) -> String {
        use std::io::{BufRead, BufReader, Read, Write};
        self.offline(|| {
            let mut child = Command::new(env!("CARGO_BIN_EXE_skillmem"))
                .args(["ui", "--no-open", "--port", "0", "--json"])
                .current_dir(&self.w.ws)
                .envs(self.envs())
                .stdout(std::process::Stdio::piped())
                .spawn()
                .unwrap();
            let mut line = String::new();
            BufReader::new(child.stdout.take().unwrap()).read_line(&mut line).unwrap();
            let v: Value = serde_json::from_str(&line).unwrap_or_else(|e| panic!("{e}: {line:?}"));
            let token = v["url"].as_str().unwrap().split("?token=").nth(1).unwrap().to_string();
            let port = v["port"].as_u64().unwrap() as u16;
            let mut s = std::net::TcpStream::connect(("127.0.0.1", port)).unwrap();
            write!(
                s,
                "GET /review HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nCookie: skillmem_ui={token}\r\nConnection: close\r\n\r\n"
            )
            .unwrap();
            let mut out = vec![];
            s.read_to_end(&mut out).unwrap();
            let _ = child.kill();
            let _ = child.wait();
            let text = String::from_utf8_lossy(&out).to_string();
            let (head, body) = text.split_once("\r\n\r\n").unwrap();
            assert!(head.starts_with("HTTP/1.1 200"), "{head}");
            if !head.to_lowercase().contains("transfer-encoding: chunked") {
                return body.to_string();
            }
            let (mut page, mut rest) = (String::new(), body);
            while let Some((size, after)) = rest.split_once("\r\n") {
                let n = usize::from_str_radix(size.trim(), 16).unwrap();
                if n == 0 {
                    break;
                }
                page.push_str(&after[..n]);
                rest = &after[n + 2..];
            }
            page
        })
    }
}

/// `sync status` and the dashboard's review page list the team's support of this machine's
/// mined lessons: a held lesson the team's other machines mined too (with how many sessions
/// each side counts), and a lesson their sessions released. With `memory.minedSupport = 3`, A's
/// and B's sessions hold B's lesson up (2 of 3); C's session releases it on C, then on B.
#[test]
fn sync_status_and_the_dashboard_list_the_teams_support_of_held_lessons() {
    let pg = server();
    let cfg = "[memory]\nholdout = 0.0\nmined_support = 3\n";
    let a = Machine::new(&pg, "team_a", PW_A, "core", cfg);
    let b = Machine::new(&pg, "team_a", PW_A, "core", cfg);
    let c = Machine::new(&pg, "team_a", PW_A, "core", cfg);
    eresolve_session(&a, "a1");
    eresolve_session(&b, "b1");
    let on_b = b.held()[0]["id"].as_i64().unwrap();
    // Before any sync: no team support, nothing listed.
    let st = b.json(&["sync", "status", "--offline"]);
    assert_eq!(st["support"], json!({ "needed": 3, "held": [], "released": [] }), "{st}");
    assert!(!b.review_page().contains("id=\"team-support\""));

    a.sync();
    assert_eq!(b.sync()["released"], 0);
    let st = b.json(&["sync", "status", "--offline"]);
    let lesson = json!({ "id": on_b, "skill": "deploy", "here": 1, "team": 1, "support": 2, "acceptedOnTeam": false });
    assert_eq!(st["support"], json!({ "needed": 3, "held": [lesson], "released": [] }), "{st}");
    let (code, text, e) = b.cli(&["sync", "status", "--offline"]);
    assert_eq!(code, 0, "{e}");
    assert!(
        text.contains("mined lessons with the team's support: 1 held (memory.minedSupport 3), 0 released by it"),
        "{text}"
    );
    assert!(
        text.contains(&format!(
            "held: note {on_b} (deploy): 1 session(s) here + 1 on the team's other machines = 2 of 3"
        )),
        "{text}"
    );
    let page = b.review_page();
    assert!(page.contains("1 held lesson(s) with the team's support, 0 released by it"), "{page}");
    assert!(page.contains(&format!("id=\"team-held-{on_b}\"")), "{page}");
    assert!(
        page.contains("held: mined in 2 of the 3 sessions it needs, 1 of them on the team's other machines"),
        "{page}"
    );

    // C's session makes three on the team: released on C, then on B, each by the team.
    eresolve_session(&c, "c1");
    assert_eq!(c.sync()["released"], 1);
    let st = c.json(&["sync", "status", "--offline"]);
    assert_eq!(
        (st["support"]["held"].as_array().map(Vec::len), st["support"]["released"].as_array().map(Vec::len)),
        (Some(0), Some(1)),
        "{st}"
    );
    assert_eq!(b.sync()["released"], 1);
    assert!(b.held().is_empty());
    let st = b.json(&["sync", "status", "--offline"]);
    let lesson = json!({ "id": on_b, "skill": "deploy", "here": 1, "team": 2, "support": 3, "acceptedOnTeam": false });
    assert_eq!(st["support"], json!({ "needed": 3, "held": [], "released": [lesson] }), "{st}");
    let (_, text, _) = b.cli(&["sync", "status", "--offline"]);
    assert!(
        text.contains(&format!(
            "released by the team: note {on_b} (deploy): 1 session(s) here + 2 on the team's other machines = 3 of 3"
        )),
        "{text}"
    );
    let page = b.review_page();
    assert!(page.contains("0 held lesson(s) with the team's support, 1 released by it"), "{page}");
    assert!(page.contains(&format!("id=\"team-released-{on_b}\"")), "{page}");

    // A's second session leaves it short (2 of 3) and with no team support yet; its next sync
    // counts B's and C's sessions and releases it by the team.
    eresolve_session(&a, "a2");
    let st = a.json(&["sync", "status", "--offline"]);
    assert_eq!(st["support"], json!({ "needed": 3, "held": [], "released": [] }), "{st}");
    assert_eq!(a.held().len(), 1);
    assert_eq!(a.sync()["released"], 1);
    let st = a.json(&["sync", "status", "--offline"]);
    let released = &st["support"]["released"];
    assert_eq!((released[0]["here"].as_i64(), released[0]["team"].as_i64()), (Some(2), Some(2)), "{st}");
    // A lesson whose own sessions release it is none of the team's doing.
    eresolve_session(&b, "b2");
    eresolve_session(&b, "b3");
    let st = b.json(&["sync", "status", "--offline"]);
    assert_eq!(st["support"]["released"], json!([]), "3 sessions here: {st}");
}
