#!/usr/bin/env python3
"""usearch (HNSW in C++, SIMD distances) on the files `cargo xtask bench index --write-data DIR`
writes, measured like `bench/hnswlib_bench.py`: a candidate for the index's next step.

    python3 bench/usearch_bench.py DIR/vectors-100000.f32 DIR/queries-100000.f32 \
        --m 16 --ef-construction 64 --ef 32,64,128 [--dtype f32|f16|i8]

Needs `pip install usearch numpy`.
"""
import argparse, os, time

import numpy as np
from usearch.index import Index


def rss_mb():
    for line in open("/proc/self/status"):
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    return 0.0


ap = argparse.ArgumentParser()
ap.add_argument("vectors")
ap.add_argument("queries")
ap.add_argument("--dim", type=int, default=384)
ap.add_argument("--m", type=int, default=16)
ap.add_argument("--ef-construction", type=int, default=64)
ap.add_argument("--ef", default="32,64,128")
ap.add_argument("--dtype", default="f32")
ap.add_argument("--threads", type=int, default=2, help="threads for the build only")
ap.add_argument("--index", help="keep the built index in this file and load it next time (no build time then)")
a = ap.parse_args()

data = np.fromfile(a.vectors, dtype="<f4").reshape(-1, a.dim)
qs = np.fromfile(a.queries, dtype="<f4").reshape(-1, a.dim)
data /= np.linalg.norm(data, axis=1, keepdims=True)
qs /= np.linalg.norm(qs, axis=1, keepdims=True)
truth = np.argsort(-(qs @ data.T), axis=1)[:, :10]

before = rss_mb()
ix = Index(ndim=a.dim, metric="ip", dtype=a.dtype, connectivity=a.m, expansion_add=a.ef_construction)
if a.index and os.path.exists(a.index):
    ix.load(a.index)
    build = float("nan")
else:
    t = time.perf_counter()
    ix.add(np.arange(len(data)), data, threads=a.threads)
    build = time.perf_counter() - t
    if a.index:
        ix.save(a.index)
index_rss = rss_mb() - before
for ef in [int(x) for x in a.ef.split(",")]:
    ix.expansion_search = ef
    lat, hit = [], 0
    cpu = time.thread_time()
    for q, want in zip(qs, truth):
        t = time.perf_counter()
        m = ix.search(q, 10, threads=1)
        lat.append(time.perf_counter() - t)
        hit += len(set(m.keys.tolist()) & set(want.tolist()))
    cpu = time.thread_time() - cpu
    lat.sort()
    print(
        f"usearch n={len(data)} dim={a.dim} M={a.m} ef_construction={a.ef_construction} dtype={a.dtype} ef={ef}: "
        f"build {build:.1f} s, recall@10 {hit / (10 * len(qs)):.3f}, {len(qs) / sum(lat):.0f} QPS/core ({len(qs) / cpu:.0f} per CPU second), "
        f"p50 {lat[len(lat) // 2] * 1000:.3f} ms, index RSS {index_rss:.0f} MB (usearch's own count {ix.memory_usage / 2**20:.0f} MB)"
    )
