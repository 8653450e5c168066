#!/usr/bin/env python3
"""The protocol's floor: `skillmem/toolAfter` round trips of a call that is not a skill load
(nothing to recall), timed at a host written in Python.

    python3 bench/floor.py BIN KEPT [ROUNDS]

BIN is a `skillmem` binary; KEPT a `bench recall --keep` setting's folder (its `data.pristine`
is copied, so the kept store is not changed). Prints the p50 and p90 of the last 5/6 of the
rounds (the first sixth warms up).
"""
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time

binary, kept = sys.argv[1], sys.argv[2]
rounds = int(sys.argv[3]) if len(sys.argv) > 3 else 3000
data = tempfile.mkdtemp(prefix="skillmem-floor-")
shutil.rmtree(data)
shutil.copytree(os.path.join(kept, "data.pristine"), data)
env = dict(os.environ, SKILLMEM_HOME=data, HOME=os.path.join(kept, "home"), SKILLMEM_INDEX_BLOCKING="1")
p = subprocess.Popen([binary, "serve"], stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, env=env)


def send(m):
    b = json.dumps(m).encode()
    p.stdin.write(b"Content-Length: %d\r\n\r\n" % len(b) + b)
    p.stdin.flush()


def recv():
    n = None
    while True:
        line = p.stdout.readline()
        if line in (b"\r\n", b"\n"):
            break
        if line.lower().startswith(b"content-length"):
            n = int(line.split(b":")[1])
    return json.loads(p.stdout.read(n))


def call(i, method, params):
    send({"jsonrpc": "2.0", "id": i, "method": method, "params": params})
    while recv().get("id") != i:
        pass


call(0, "initialize", {"processId": None, "rootUri": "file://" + os.path.join(kept, "ws"), "capabilities": {}})
send({"jsonrpc": "2.0", "method": "initialized", "params": {}})
times = []
for i in range(1, rounds + 1):
    t = time.perf_counter()
    call(i, "skillmem/toolAfter", {"sessionId": "s1", "callId": "c%d" % i, "tool": "bash", "args": {"command": "ls"}, "output": "ok"})
    times.append(time.perf_counter() - t)
times = sorted(times[rounds // 6 :])
print("toolAfter, no skill: p50 %.3f ms p90 %.3f ms" % (times[len(times) // 2] * 1e3, times[int(len(times) * 0.9)] * 1e3))
call(rounds + 1, "shutdown", None)
send({"jsonrpc": "2.0", "method": "exit"})
p.wait()
shutil.rmtree(data, ignore_errors=True)
