#!/usr/bin/env python3
"""The protocol's floor: `skillmem/toolAfter` round trips of a call that is not a skill load
(nothing to recall), timed at a host written in Python.

    python3 bench/floor.py BIN KEPT [ROUNDS]

BIN is a `skillmem` binary; KEPT a `bench recall --keep` setting's folder (its `data.pristine`
is copied, so the kept store is not changed). Prints the p50 and p90 of the last 5/6 of the
rounds (the first sixth warms up).
"""
import os
import shutil
import sys
import tempfile
import time

from sidecar import Sidecar

binary, kept = sys.argv[1], sys.argv[2]
rounds = int(sys.argv[3]) if len(sys.argv) > 3 else 3000
data = tempfile.mkdtemp(prefix="skillmem-floor-")
shutil.rmtree(data)
shutil.copytree(os.path.join(kept, "data.pristine"), data)
env = dict(os.environ, SKILLMEM_HOME=data, HOME=os.path.join(kept, "home"), SKILLMEM_INDEX_BLOCKING="1")
sc = Sidecar(binary, env)
sc.initialize(os.path.join(kept, "ws"))
times = []
for i in range(1, rounds + 1):
    t = time.perf_counter()
    sc.call(i, "skillmem/toolAfter", {"sessionId": "s1", "callId": "c%d" % i, "tool": "bash", "args": {"command": "ls"}, "output": "ok"})
    times.append(time.perf_counter() - t)
times = sorted(times[rounds // 6 :])
print("toolAfter, no skill: p50 %.3f ms p90 %.3f ms" % (times[len(times) // 2] * 1e3, times[int(len(times) * 0.9)] * 1e3))
sc.stop(rounds + 1)
shutil.rmtree(data, ignore_errors=True)
