//! A graph's recall on real vectors: the rows of a saved index (`vectors.f32`, one row of
//! `dim` floats per slot) searched for intents embedded by the built-in static table, against
//! the exact nearest rows. The saved graph, or one built here with other parameters.
//!
//! ```sh
//! cargo run --release -p skillmem-index --example graph_recall -- INDEX_DIR INTENTS [M EF_CONSTRUCTION]
//! ```
//!
//! INDEX_DIR is an index folder of a store (`<data dir>/index/static_…/`, with `manifest.json`,
//! `graph.bin`, `vectors.f32`); INTENTS a file of one intent a line. Prints, for each `ef`,
//! the recall of the 50 nearest (a recall's vector rung asks for 50), how often the nearest
//! row was found, and the time a query on this thread.
//!
//! `cargo xtask bench index` measures a graph it builds on vector files, at the top 10, against
//! hnswlib; this one measures the graph a store saved (or one built like it) at a rung's depth,
//! for intents as a host sends them.

// A tool run by hand: its figures are its output (the sidecar itself never prints).
#![allow(clippy::print_stdout)]

use skillmem_embed::Embedder;
use skillmem_index::graph::Graph;

/// The nearest rows a recall's vector rung asks for.
const K: usize = 50;

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let [dir, intents, rest @ ..] = args.as_slice() else {
        return Err("usage: graph_recall INDEX_DIR INTENTS [M EF_CONSTRUCTION]".into());
    };
    let dir = std::path::Path::new(dir);
    let manifest: serde_json::Value = serde_json::from_slice(&std::fs::read(dir.join("manifest.json"))?)?;
    let dim = manifest["dim"].as_u64().ok_or("manifest.json names no dim")? as usize;
    let bytes = std::fs::read(dir.join("vectors.f32"))?;
    let rows: Vec<f32> = bytes.chunks_exact(4).map(|c| f32::from_le_bytes([c[0], c[1], c[2], c[3]])).collect();
    let n = rows.len() / dim;
    let row = |i: usize| &rows[i * dim..(i + 1) * dim];
    let table = skillmem_embed::static_table::StaticEmbedder::builtin()?;
    let texts: Vec<&str> = std::fs::read_to_string(intents)?.leak().lines().filter(|l| !l.trim().is_empty()).collect();
    let queries = table.embed(&texts)?;
    let truth: Vec<Vec<usize>> = queries
        .iter()
        .map(|q| {
            let mut s: Vec<(f32, usize)> = (0..n).map(|i| (skillmem_index::fast_dot(q, row(i)), i)).collect();
            s.sort_by(|a, b| b.0.total_cmp(&a.0).then(a.1.cmp(&b.1)));
            s.into_iter().take(K).map(|x| x.1).collect()
        })
        .collect();
    let t = std::time::Instant::now();
    let (g, what) = match rest {
        [m, efc] => {
            let (m, efc) = (m.parse()?, efc.parse()?);
            let mut g = Graph::new(dim, m, efc, n);
            for i in 0..n {
                g.insert(row(i));
            }
            (g, format!("built here, M {m}, ef_construction {efc}"))
        }
        _ => (Graph::load(dir, dim, 64)?, "saved".to_string()),
    };
    println!(
        "{n} rows × {dim}, {} intents; the graph {what}, ready in {:.1} s",
        texts.len(),
        t.elapsed().as_secs_f64()
    );
    for ef in [100usize, 200, 400, 800, 1600] {
        let t = std::time::Instant::now();
        let (mut found, mut nearest) = (0, 0);
        for (q, want) in queries.iter().zip(&truth) {
            let got: std::collections::HashSet<usize> =
                g.search(q, K, ef, &|_| true).into_iter().map(|x| x.0).collect();
            found += want.iter().filter(|w| got.contains(w)).count();
            nearest += usize::from(want.first().is_some_and(|w| got.contains(w)));
        }
        println!(
            "ef {ef}: recall@{K} {:.3}, the nearest found {:.3}, {:.2} ms a query",
            found as f64 / (K * queries.len()).max(1) as f64,
            nearest as f64 / queries.len().max(1) as f64,
            t.elapsed().as_secs_f64() * 1000.0 / queries.len().max(1) as f64
        );
    }
    Ok(())
}
