#!/usr/bin/env python3
"""The hnswlib baseline on the files `cargo xtask bench index --write-data DIR` writes.

    python3 bench/hnswlib_bench.py DIR/vectors-100000.f32 DIR/queries-100000.f32 \
        --dim 384 --m 16 --ef-construction 200 --ef 32,64,128

Prints build time, recall@10 against exact search, single-thread queries/s and the RSS growth
of building the index, like `bench index` does. Needs `pip install hnswlib numpy`.
"""
import argparse, resource, time

import hnswlib
import numpy as np


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
ap.add_argument("--ef-construction", type=int, default=200)
ap.add_argument("--ef", default="32,64,128")
ap.add_argument("--threads", type=int, default=2, help="threads for the build only")
ap.add_argument("--index", help="keep the built index in this file and load it next time (no build time then)")
a = ap.parse_args()

data = np.fromfile(a.vectors, dtype="<f4").reshape(-1, a.dim)
qs = np.fromfile(a.queries, dtype="<f4").reshape(-1, a.dim)
data /= np.linalg.norm(data, axis=1, keepdims=True)
qs /= np.linalg.norm(qs, axis=1, keepdims=True)
truth = np.argsort(-(qs @ data.T), axis=1)[:, :10]

import os

before = rss_mb()
ix = hnswlib.Index(space="ip", dim=a.dim)
if a.index and os.path.exists(a.index):
    ix.load_index(a.index, max_elements=len(data))
    build = float("nan")
else:
    ix.init_index(max_elements=len(data), M=a.m, ef_construction=a.ef_construction)
    ix.set_num_threads(a.threads)
    t = time.perf_counter()
    ix.add_items(data, np.arange(len(data)))
    build = time.perf_counter() - t
    if a.index:
        ix.save_index(a.index)
index_rss = rss_mb() - before
ix.set_num_threads(1)
for ef in [int(x) for x in a.ef.split(",")]:
    ix.set_ef(ef)
    lat, hit = [], 0
    cpu = time.thread_time()
    for q, want in zip(qs, truth):
        t = time.perf_counter()
        labels, _ = ix.knn_query(q, k=10)
        lat.append(time.perf_counter() - t)
        hit += len(set(labels[0].tolist()) & set(want.tolist()))
    cpu = time.thread_time() - cpu
    lat.sort()
    print(
        f"hnswlib n={len(data)} dim={a.dim} M={a.m} ef_construction={a.ef_construction} ef={ef}: "
        f"build {build:.1f} s, recall@10 {hit / (10 * len(qs)):.3f}, {len(qs) / sum(lat):.0f} QPS/core ({len(qs) / cpu:.0f} per CPU second), "
        f"p50 {lat[len(lat) // 2] * 1000:.3f} ms, index RSS {index_rss:.0f} MB"
    )
