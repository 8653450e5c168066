//! A persisted index after a crash in the middle of writing it (issue 49): whatever state the
//! files were left in, a start that reopens them answers as an exact scan of the current
//! vectors does — the files are either verified (the reloaded graph checked against the
//! stored vectors, each row against its checksum) or refused and rebuilt; never trusted
//! blindly. Each case damages the files one way, then starts an index the way the engine
//! does (the loader streams the stored vectors) and compares every answer with exact search.

use std::path::{Path, PathBuf};

use skillmem_index::hnsw::{HnswIndex, HnswParams, Loader};
use skillmem_index::{ExactIndex, VectorIndex};

const DIM: usize = 24;

fn unit(seed: u64) -> Vec<f32> {
    let mut s = seed.wrapping_mul(0x9e37_79b9_7f4a_7c15) | 1;
    let mut v: Vec<f32> = (0..DIM)
        .map(|_| {
            s ^= s << 13;
            s ^= s >> 7;
            s ^= s << 17;
            (s % 2001) as f32 / 1000.0 - 1.0
        })
        .collect();
    skillmem_embed::normalize(&mut v);
    v
}

/// The stored vectors (what SQLite holds): ids 1..=n.
fn store(n: u64, salt: u64) -> Vec<(i64, Vec<f32>)> {
    (1..=n).map(|i| (i as i64, unit(i * 7 + salt))).collect()
}

fn loader(rows: Vec<(i64, Vec<f32>)>) -> Loader {
    Box::new(move |sink: &mut dyn FnMut(i64, Vec<f32>)| {
        let n = rows.len();
        for (id, v) in &rows {
            sink(*id, v.clone());
        }
        Ok(n)
    })
}

/// Starts an index over `dir` as the engine does, with `rows` as the stored vectors, and
/// waits until it is ready.
fn open(dir: &Path, rows: &[(i64, Vec<f32>)]) -> HnswIndex {
    let ix = HnswIndex::new("m", DIM, Some(dir.to_path_buf()), HnswParams::default());
    ix.start(Some(loader(rows.to_vec())));
    ix.wait_ready();
    ix
}

/// Every answer of `ix` is the exact scan's: the same ids in the same order, the same scores.
fn answers_exactly(ix: &HnswIndex, rows: &[(i64, Vec<f32>)], case: &str) {
    let ex = ExactIndex::new("m");
    for (id, v) in rows {
        ex.insert(*id, v);
    }
    let all: Vec<i64> = rows.iter().map(|r| r.0).collect();
    let some: Vec<i64> = all.iter().copied().step_by(3).collect();
    for q in 0..40u64 {
        let q = unit(q + 100_000);
        for (cands, k) in [(&all, 10), (&some, 5), (&all, 1)] {
            let got = ix.search(&q, cands, k);
            let want = ex.search(&q, cands, k);
            // The ids are ascending: the search that need not check answers the same.
            assert_eq!(ix.search_sorted(&q, cands, None, k), got, "{case}");
            assert_eq!(
                got.iter().map(|x| x.0).collect::<Vec<_>>(),
                want.iter().map(|x| x.0).collect::<Vec<_>>(),
                "{case}"
            );
            for ((_, a), (_, b)) in got.iter().zip(&want) {
                assert!((a - b).abs() < 1e-5, "{case}: {a} vs {b}");
            }
        }
    }
}

/// The folder of an index over `rows`, built and saved by a worker.
fn saved(root: &Path, rows: &[(i64, Vec<f32>)]) -> PathBuf {
    let dir = root.join("index").join("m");
    let ix = open(&dir, rows);
    ix.finish(std::time::Duration::from_secs(30));
    assert!(HnswIndex::manifest(&dir).is_some());
    dir
}

fn files(dir: &Path) -> Vec<(String, Vec<u8>)> {
    let mut v: Vec<(String, Vec<u8>)> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap())
        .map(|e| (e.file_name().to_string_lossy().to_string(), std::fs::read(e.path()).unwrap()))
        .collect();
    v.sort();
    v
}

#[test]
fn a_reopened_index_is_verified_or_rebuilt_never_wrong() {
    let rows = store(600, 0);
    // The store after the crash: 40 notes edited (new vectors), 30 forgotten, 50 new.
    let mut after: Vec<(i64, Vec<f32>)> = rows.clone();
    for (id, v) in after.iter_mut().filter(|(id, _)| id % 15 == 0) {
        *v = unit(*id as u64 * 13 + 999);
    }
    after.retain(|(id, _)| id % 20 != 1);
    after.extend(store(650, 0).into_iter().skip(600));
    let root = tempfile::tempdir().unwrap();
    let dir = saved(root.path(), &rows);
    let good = files(&dir);
    let file = |name: &str| good.iter().find(|(n, _)| n == name).map(|(_, b)| b.clone()).unwrap();
    let graph = file("graph.bin");
    let vectors = file("vectors.f32");
    let slots = file("slots.bin");
    type Damage = Box<dyn Fn(&Path)>;
    let cases: Vec<(&str, Damage)> = vec![
        ("as saved", Box::new(|_: &Path| {})),
        (
            "a save cut short beside it (a temporary folder with half the files)",
            Box::new(move |d: &Path| {
                let tmp = d.parent().unwrap().join(".tmp-index-crash");
                std::fs::create_dir_all(&tmp).unwrap();
                std::fs::write(tmp.join("vectors.f32"), &vectors[..vectors.len() / 2]).unwrap();
            }),
        ),
        (
            "the crash between the two renames of a save (no folder)",
            Box::new(|d: &Path| {
                std::fs::rename(d, d.parent().unwrap().join(".old-1")).unwrap();
            }),
        ),
        ("the vectors file cut short", {
            let v = file("vectors.f32");
            Box::new(move |d: &Path| std::fs::write(d.join("vectors.f32"), &v[..v.len() - 100]).unwrap())
        }),
        ("the vectors file gone", Box::new(|d: &Path| std::fs::remove_file(d.join("vectors.f32")).unwrap())),
        ("a row of the vectors file overwritten", {
            let v = file("vectors.f32");
            Box::new(move |d: &Path| {
                let mut v = v.clone();
                let at = 4 * DIM * 123;
                v[at..at + 4 * DIM].copy_from_slice(&[0x3c; 4 * DIM]);
                std::fs::write(d.join("vectors.f32"), v).unwrap();
            })
        }),
        ("the graph file cut short", {
            let g = graph.clone();
            Box::new(move |d: &Path| std::fs::write(d.join("graph.bin"), &g[..g.len() * 2 / 3]).unwrap())
        }),
        ("the graph file of another save", {
            let g = graph.clone();
            Box::new(move |d: &Path| {
                let mut g = g.clone();
                // One byte of a link count: a graph that does not match its rows' checksums.
                let n = g.len();
                g[n / 2] ^= 0x01;
                std::fs::write(d.join("graph.bin"), g).unwrap();
            })
        }),
        ("the slots file cut short", {
            let s = slots.clone();
            Box::new(move |d: &Path| std::fs::write(d.join("slots.bin"), &s[..s.len() - 8]).unwrap())
        }),
        ("the manifest gone", Box::new(|d: &Path| std::fs::remove_file(d.join("manifest.json")).unwrap())),
    ];
    for (case, damage) in &cases {
        // Reopened over the same vectors, then over the store as it is after the crash; each
        // time from the damaged files in a folder of its own (a dropped index's worker may
        // still be writing its own).
        for (what, current) in [("the same vectors", &rows), ("vectors changed meanwhile", &after)] {
            let here = tempfile::tempdir().unwrap();
            let d = here.path().join("index").join("m");
            std::fs::create_dir_all(&d).unwrap();
            for (name, bytes) in &good {
                std::fs::write(d.join(name), bytes).unwrap();
            }
            damage(&d);
            let ix = open(&d, current);
            answers_exactly(&ix, current, &format!("{case}, {what}"));
            drop(ix);
        }
    }
}

/// A sidecar killed in the middle of a save leaves a copy of its index beside the index
/// folder (a hundred megabytes or more at 100,000 notes); the next save removes what killed
/// processes left, and nothing a live process is writing.
#[test]
fn a_save_removes_what_killed_saves_left_and_nothing_in_use() {
    use std::os::fd::AsRawFd;
    let rows = store(300, 0);
    let root = tempfile::tempdir().unwrap();
    let dir = saved(root.path(), &rows);
    let parent = dir.parent().unwrap().to_path_buf();
    let folder = |name: &str, lock: bool| {
        let d = parent.join(name);
        std::fs::create_dir_all(&d).unwrap();
        std::fs::write(d.join("vectors.f32"), [0u8; 4096]).unwrap();
        if lock {
            std::fs::write(d.join(".saving"), b"").unwrap();
        }
        d
    };
    // A save killed mid-write: its lock file is there, and nobody holds it.
    let killed = folder(".tmp-index-killed", true);
    // A save under way in another process: its lock file is held.
    let live = folder(".tmp-index-live", true);
    let held = std::fs::OpenOptions::new().write(true).open(live.join(".saving")).unwrap();
    // SAFETY: flock on a descriptor this test owns.
    assert_eq!(unsafe { libc::flock(held.as_raw_fd(), libc::LOCK_EX | libc::LOCK_NB) }, 0);
    // Left by an older build (no lock file): removed once it is old, kept while it is new.
    let legacy = folder(".tmp-index-legacy", false);
    let an_hour_ago = std::time::SystemTime::now() - std::time::Duration::from_secs(3600);
    std::fs::File::open(&legacy).unwrap().set_modified(an_hour_ago).unwrap();
    let fresh = folder(".tmp-index-fresh", false);
    // The index a save replaced, of a process that is gone, and of one alive (pid 1).
    let dead_pid = folder(&format!(".old-{}", i32::MAX - 7), false);
    let live_pid = folder(".old-1", false);
    // A stopped build's progress, taken to resume it by a process that is gone, and by one
    // alive; and progress nobody took yet.
    let dead_resume = folder(&format!(".resume-{}", i32::MAX - 7), false);
    let live_resume = folder(".resume-1", false);
    let partial = folder(".build-another-model", false);
    // Not a save's: never touched.
    let other = folder("another-model", false);

    let ix = open(&dir, &store(310, 0));
    ix.save().unwrap();
    for (d, kept) in [
        (&killed, false),
        (&live, true),
        (&legacy, false),
        (&fresh, true),
        (&dead_pid, false),
        (&live_pid, true),
        (&dead_resume, false),
        (&live_resume, true),
        (&partial, true),
        (&other, true),
    ] {
        assert_eq!(d.exists(), kept, "{}", d.display());
    }
    // The saved index is whole, and no save's leftovers are in it.
    assert!(HnswIndex::manifest(&dir).is_some());
    assert!(!dir.join(".saving").exists());
    answers_exactly(&open(&dir, &store(310, 0)), &store(310, 0), "after the sweep");
    drop(held);
}

/// A build the end of its process stopped (a sidecar that lives shorter than the build of a
/// large store, or of a compaction) saves what it built beside the index; the next build
/// resumes from it, and answers exactly whatever changed meanwhile. Progress that is damaged,
/// or for another model, is dropped and the build starts over; either way it is used once.
#[test]
fn a_stopped_build_is_resumed_or_started_over_never_wrong() {
    let rows = store(1200, 0);
    // Meanwhile: a note the build had inserted is edited, another forgotten, one more added.
    let mut after = rows.clone();
    after[4].1 = unit(777_777);
    after.retain(|(id, _)| *id != 7);
    after.extend(store(1201, 0).into_iter().skip(1200));
    let stopped = |root: &Path| {
        let dir = root.join("index").join("m");
        let ix = HnswIndex::new("m", DIM, Some(dir.clone()), HnswParams::default());
        for (id, v) in &rows {
            ix.insert(*id, v);
        }
        ix.build_part(500);
        let partial = root.join("index").join(".build-m");
        let man = HnswIndex::manifest(&partial).expect("the stopped build is saved");
        assert_eq!((man.count, man.slots), (500, 500));
        assert!(HnswIndex::manifest(&dir).is_none(), "nothing is saved as the index");
        (dir, partial)
    };
    type Damage = Box<dyn Fn(&Path)>;
    let cut = |name: &'static str| -> Damage {
        Box::new(move |d: &Path| {
            let b = std::fs::read(d.join(name)).unwrap();
            std::fs::write(d.join(name), &b[..b.len() - 8]).unwrap();
        })
    };
    let cases: Vec<(&str, Damage, bool)> = vec![
        ("as saved", Box::new(|_: &Path| {}), true),
        ("the graph file cut short", cut("graph.bin"), false),
        ("the vectors file cut short", cut("vectors.f32"), false),
        ("the slots file cut short", cut("slots.bin"), false),
        ("the manifest gone", Box::new(|d: &Path| std::fs::remove_file(d.join("manifest.json")).unwrap()), false),
        (
            "another model's",
            Box::new(|d: &Path| {
                let m = std::fs::read_to_string(d.join("manifest.json")).unwrap();
                std::fs::write(d.join("manifest.json"), m.replace("\"m\"", "\"other\"")).unwrap();
            }),
            false,
        ),
    ];
    for (case, damage, resumed) in &cases {
        for (what, current) in [("the same vectors", &rows), ("vectors changed meanwhile", &after)] {
            let root = tempfile::tempdir().unwrap();
            let (dir, partial) = stopped(root.path());
            damage(&partial);
            let ix = open(&dir, current);
            answers_exactly(&ix, current, &format!("{case}, {what}"));
            assert!(!partial.exists(), "{case}, {what}: the progress is used once");
            // A resumed build keeps the slots of the notes that changed since, as tombstones.
            let stale = if *resumed && std::ptr::eq(current, &after) { 2 } else { 0 };
            assert_eq!(ix.tombstones(), stale, "{case}, {what}: resumed: {resumed}");
            let leftovers: Vec<_> = std::fs::read_dir(dir.parent().unwrap())
                .unwrap()
                .map(|e| e.unwrap().file_name().to_string_lossy().to_string())
                .filter(|n| n != "m")
                .collect();
            assert!(leftovers.is_empty(), "{case}, {what}: {leftovers:?}");
        }
    }
}
