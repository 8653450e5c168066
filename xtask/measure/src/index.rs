//! `cargo xtask bench index`: the HNSW index alone over synthetic unit vectors (low-rank, like
//! sentence embeddings, or clustered) or raw little-endian f32 rows from files: build time,
//! recall@10 against exact search, single-thread QPS, latency percentiles, save and reload
//! time, RSS. A program that prints figures (never assertions).

use std::io::Write;
use std::path::{Path, PathBuf};
use std::time::Instant;

use anyhow::{bail, Context, Result};
use serde::Serialize;

use crate::common::{ms, pct, rss_mb, thread_cpu_s, Rng};
use crate::{out, Global, IndexData};
use skillmem::embed::normalize;
use skillmem::index::{fast_dot, top_k, HnswIndex, HnswParams, VectorIndex};

/// `n` unit vectors of `dim` around `n / 100` (at least 10) cluster centres.
pub fn clustered(n: usize, dim: usize, seed: u64) -> Vec<Vec<f32>> {
    let mut r = Rng::new(seed);
    let k = (n / 100).max(10);
    let centres: Vec<Vec<f32>> = (0..k).map(|_| (0..dim).map(|_| r.gauss()).collect()).collect();
    (0..n)
        .map(|_| {
            let c = &centres[r.below(k)];
            let mut v: Vec<f32> = c.iter().map(|x| x + 0.6 * r.gauss()).collect();
            normalize(&mut v);
            v
        })
        .collect()
}

/// `n` unit vectors of `dim` with low-rank structure: a 32-dim Gaussian latent times a fixed
/// random 32×`dim` basis (the same for every call with the same `basis_seed`), plus 0.15
/// Gaussian noise per coordinate, normalised. Real sentence embeddings look like this (most
/// variance in a few directions), and it is much harder for a graph index than clusters.
pub fn lowrank(n: usize, dim: usize, basis_seed: u64, seed: u64) -> Vec<Vec<f32>> {
    const RANK: usize = 32;
    let mut r = Rng::new(basis_seed);
    let basis: Vec<Vec<f32>> = (0..RANK).map(|_| (0..dim).map(|_| r.gauss()).collect()).collect();
    let mut r = Rng::new(seed);
    (0..n)
        .map(|_| {
            let mut v: Vec<f32> = (0..dim).map(|_| 0.15 * r.gauss()).collect();
            for b in &basis {
                let z = r.gauss();
                for (x, y) in v.iter_mut().zip(b) {
                    *x += z * y;
                }
            }
            normalize(&mut v);
            v
        })
        .collect()
}

fn write_rows(path: &Path, rows: &[Vec<f32>]) -> Result<()> {
    let bytes: Vec<u8> = rows.iter().flatten().flat_map(|x| x.to_le_bytes()).collect();
    std::fs::write(path, bytes).with_context(|| format!("cannot write {}", path.display()))
}

fn read_rows(path: &Path, dim: usize) -> Result<Vec<Vec<f32>>> {
    let b = std::fs::read(path).with_context(|| format!("cannot read {}", path.display()))?;
    if b.len() % (dim * 4) != 0 {
        bail!("{}: {} bytes is not a whole number of {dim}-float rows", path.display(), b.len());
    }
    Ok(b.chunks_exact(dim * 4)
        .map(|row| {
            let mut v: Vec<f32> = row.chunks_exact(4).map(|c| f32::from_le_bytes([c[0], c[1], c[2], c[3]])).collect();
            normalize(&mut v);
            v
        })
        .collect())
}

#[derive(Serialize)]
struct IndexFigures {
    n: usize,
    dim: usize,
    queries: usize,
    m: usize,
    ef_construction: usize,
    ef_search: usize,
    build_s: f64,
    recall_at_10: f64,
    qps_per_core: f64,
    /// Queries per second of the thread's CPU time (what a shared, loaded machine's
    /// preemption does not inflate).
    qps_per_cpu_s: f64,
    p50_ms: f64,
    p95_ms: f64,
    p99_ms: f64,
    exact_qps_per_core: f64,
    save_s: f64,
    reload_s: f64,
    rss_mb: f64,
    peak_rss_mb: f64,
    /// RSS growth from building the index (the index's own memory, roughly).
    index_rss_mb: f64,
}

/// Vectors to index and the queries to ask.
type DataAndQueries = (Vec<Vec<f32>>, Vec<Vec<f32>>);

/// Options of `bench index`.
pub struct IndexOpts {
    pub sizes: Vec<usize>,
    /// The synthetic data, when no `vectors` are given.
    pub data: IndexData,
    pub write_data: Option<PathBuf>,
    pub dim: usize,
    pub queries: usize,
    pub vectors: Option<PathBuf>,
    pub query_file: Option<PathBuf>,
    pub m: usize,
    pub ef_construction: usize,
    pub ef_search: Vec<usize>,
    /// Where to keep the graph between runs (reloaded instead of built when it matches).
    pub index_dir: Option<PathBuf>,
}

/// `cargo xtask bench index`.
pub fn index(g: &Global, o: IndexOpts) -> Result<()> {
    let mut all = vec![];
    let sets: Vec<DataAndQueries> = match &o.vectors {
        Some(vf) => {
            let data = read_rows(vf, o.dim)?;
            let qs = match &o.query_file {
                Some(qf) => read_rows(qf, o.dim)?,
                None => {
                    let mut r = Rng::new(7);
                    (0..o.queries).map(|_| data[r.below(data.len())].clone()).collect()
                }
            };
            vec![(data, qs)]
        }
        None => {
            o.sizes
                .iter()
                .map(|&n| {
                    // Queries come from the same distribution (the same centres or basis), not
                    // from the data.
                    let mut both = if o.data == IndexData::Lowrank {
                        lowrank(n + o.queries, o.dim, 1, n as u64)
                    } else {
                        clustered(n + o.queries, o.dim, n as u64)
                    };
                    let qs = both.split_off(n);
                    (both, qs)
                })
                .collect()
        }
    };
    if let Some(dir) = &o.write_data {
        std::fs::create_dir_all(dir)?;
        for (data, qs) in &sets {
            write_rows(&dir.join(format!("vectors-{}.f32", data.len())), data)?;
            write_rows(&dir.join(format!("queries-{}.f32", data.len())), qs)?;
        }
    }
    for (data, qs) in sets {
        let n = data.len();
        let dir = tempfile::tempdir()?;
        let idir = match &o.index_dir {
            Some(d) => d.join(format!("n{n}-m{}-efc{}", o.m, o.ef_construction)),
            None => dir.path().join("ix"),
        };
        let params = HnswParams {
            m: o.m,
            ef_construction: o.ef_construction,
            exact_max: 0,
            min_selectivity: 0.0,
            ..HnswParams::default()
        };
        let (rss_before, _) = rss_mb(None);
        let ix = HnswIndex::new("bench", o.dim, Some(idir.clone()), params);
        for (i, v) in data.iter().enumerate() {
            ix.insert(i as i64, v);
        }
        let t = Instant::now();
        // A kept graph over the same vectors is reloaded (reload checks every vector).
        let kept = o.index_dir.is_some() && ix.reload_now() && ix.tombstones() == 0 && ix.pending() == 0;
        if !kept {
            ix.build_now();
        }
        let build_s = if kept { f64::NAN } else { t.elapsed().as_secs_f64() };
        let index_rss = rss_mb(None).0 - rss_before;
        // Ground truth and the exact scan's speed.
        let t = Instant::now();
        let truth: Vec<Vec<i64>> = qs
            .iter()
            .map(|q| {
                let mut s: Vec<(i64, f32)> = data.iter().enumerate().map(|(i, v)| (i as i64, fast_dot(q, v))).collect();
                top_k(&mut s, 10);
                s.into_iter().map(|x| x.0).collect()
            })
            .collect();
        let exact_qps = qs.len() as f64 / t.elapsed().as_secs_f64();
        let (rss, peak) = rss_mb(None);
        let t = Instant::now();
        ix.save()?;
        let save_s = t.elapsed().as_secs_f64();
        let again = HnswIndex::new("bench", o.dim, Some(idir.clone()), params);
        for (i, v) in data.iter().enumerate() {
            again.insert(i as i64, v);
        }
        let t = Instant::now();
        let reloaded = again.reload_now();
        let reload_s = t.elapsed().as_secs_f64();
        if !reloaded {
            bail!("the saved index did not reload");
        }
        drop(again);
        for &ef in &o.ef_search {
            let mut lat = Vec::with_capacity(qs.len());
            let mut hit = 0usize;
            let cpu = thread_cpu_s();
            for (q, want) in qs.iter().zip(&truth) {
                let t = Instant::now();
                let got = ix.search_graph(q, 10, ef);
                let got = got.unwrap_or_default();
                lat.push(ms(t.elapsed()));
                hit += got.iter().filter(|(id, _)| want.contains(id)).count();
            }
            let cpu = thread_cpu_s() - cpu;
            let total: f64 = lat.iter().sum();
            lat.sort_by(f64::total_cmp);
            let f = IndexFigures {
                n,
                dim: o.dim,
                queries: qs.len(),
                m: o.m,
                ef_construction: o.ef_construction,
                ef_search: ef,
                build_s,
                recall_at_10: hit as f64 / (qs.len() * 10) as f64,
                qps_per_core: qs.len() as f64 / (total / 1000.0),
                qps_per_cpu_s: qs.len() as f64 / cpu,
                p50_ms: pct(&lat, 0.5),
                p95_ms: pct(&lat, 0.95),
                p99_ms: pct(&lat, 0.99),
                exact_qps_per_core: exact_qps,
                save_s,
                reload_s,
                rss_mb: rss,
                peak_rss_mb: peak,
                index_rss_mb: index_rss,
            };
            if !g.json {
                out(&format!(
                    "index n={} dim={} ef={}: build {:.1} s, recall@10 {:.3}, {:.0} QPS/core ({:.0} per CPU second; exact {:.0}), p50 {:.3} ms p95 {:.3} ms p99 {:.3} ms, save {:.2} s, reload {:.2} s, index RSS {:.0} MB (process {:.0} MB, peak {:.0} MB)",
                    f.n, f.dim, f.ef_search, f.build_s, f.recall_at_10, f.qps_per_core, f.qps_per_cpu_s, f.exact_qps_per_core, f.p50_ms, f.p95_ms, f.p99_ms, f.save_s, f.reload_s, f.index_rss_mb, f.rss_mb, f.peak_rss_mb
                ));
                let _ = std::io::stdout().flush();
            }
            all.push(f);
        }
    }
    if g.json {
        out(&serde_json::to_string_pretty(&all)?);
    }
    Ok(())
}
