#!/usr/bin/env python3
"""Where a large skill's loads spend the server's CPU, thread by thread: ROUNDS loads of the
90,000-note skill back to back, each thread's CPU (user and system, /proc/PID/task/*/stat)
summed by its name and divided by the loads, and the round trip's p50/p90 at this client.

    python3 bench/threads.py BIN KEPT ROUNDS [--no-session]

BIN is a `skillmem` binary; KEPT a `bench recall --keep` setting's folder (its
`data.pristine` is copied, so the kept store is not changed). The intents are 2-4 words of
the skill's own notes, as in `paired.py`. With `--no-session` the loads name no session, so
no load's call is written to a session's log after its answer (the rest is the same).
"""
import os
import random
import shutil
import sqlite3
import sys
import tempfile
import time

from sidecar import Sidecar

binary, kept, rounds = sys.argv[1], sys.argv[2], int(sys.argv[3])
session = "" if "--no-session" in sys.argv[4:] else "s1"
skill = "bench-skill-000"
db = sqlite3.connect(os.path.join(kept, "data.pristine", "skillmem.db"))
words = sorted({w for (r,) in db.execute("select intent from notes where skill=? order by id limit 3000", (skill,)) for w in r.split()})
db.close()
data = tempfile.mkdtemp(prefix="skillmem-threads-")
shutil.rmtree(data)
shutil.copytree(os.path.join(kept, "data.pristine"), data)
env = dict(os.environ, SKILLMEM_HOME=data, HOME=os.path.join(kept, "home"), SKILLMEM_INDEX_BLOCKING="1")
sc = Sidecar(binary, env)
ws = os.path.join(kept, "ws")
sc.initialize(ws)
folder = os.path.join(ws, ".claude", "skills", skill)
r = random.Random(11)


def load(i):
    intent = " ".join(r.choice(words) for _ in range(r.randint(2, 4)))
    sc.call(i, "skillmem/toolAfter", {"sessionId": session, "callId": "c%d" % i, "tool": "skill",
                                      "args": {"name": skill, "intent": intent}, "output": "", "metadata": {"dir": folder}})


def threads():
    """Each live thread's name and CPU ticks."""
    out = {}
    for t in os.listdir("/proc/%d/task" % sc.p.pid):
        try:
            s = open("/proc/%d/task/%s/stat" % (sc.p.pid, t)).read()
        except FileNotFoundError:
            continue
        f = s[s.rindex(")") + 2:].split()
        out[t] = (s[s.index("(") + 1:s.rindex(")")], int(f[11]) + int(f[12]))
    return out


for i in range(1, 301):
    load(i)
before, times = threads(), []
for i in range(301, 301 + rounds):
    t = time.perf_counter()
    load(i)
    times.append(time.perf_counter() - t)
after = threads()
by_name = {}
for t, (name, ticks) in after.items():
    by_name[name] = by_name.get(name, 0) + ticks - before.get(t, (name, 0))[1]
tick = os.sysconf("SC_CLK_TCK")
for name, ticks in sorted(by_name.items(), key=lambda x: -x[1]):
    if ticks:
        print("%-20s CPU %.3f ms a load" % (name, 1000 * ticks / tick / rounds))
times.sort()
print("toolAfter, the large skill%s: p50 %.3f ms p90 %.3f ms" % (
    "" if session else ", no session", 1000 * times[len(times) // 2], 1000 * times[int(len(times) * 0.9)]))
sc.stop(10**6)
shutil.rmtree(data, ignore_errors=True)
