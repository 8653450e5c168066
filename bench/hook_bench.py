#!/usr/bin/env python3
"""The hook process as Claude Code starts it: `skillmem hook claude-code` on a PostToolUse of
the Skill tool, one process per event, on a store `cargo xtask bench recall --keep DIR`
filled (DIR/<notes>-<skills>, whose workspace has the skills).

    python3 bench/hook_bench.py DIR/1000-10 40 target/release/skillmem [another/skillmem ...]
    python3 bench/hook_bench.py --parts DIR/1000-10 20 target/release/skillmem

Prints each binary's wall time per process (p50, p90; the binaries in turns), or with
--parts where one process's time goes (from the timings its SKILLMEM_LOG debug lines give).
"""
import datetime, json, os, re, statistics, subprocess, sys, time

args = sys.argv[1:]
parts = args[:1] == ["--parts"]
if parts:
    args = args[1:]
store, runs, bins = args[0], int(args[1]), args[2:]
ws = os.path.join(store, "ws")
skills = sorted(os.listdir(os.path.join(ws, ".claude/skills")))
env = dict(os.environ, SKILLMEM_HOME=os.path.join(store, "data"), HOME=os.path.join(store, "home"))
if parts:
    env["SKILLMEM_LOG"] = "skillmem=debug,skillmem_engine=debug"
words = ["deploy", "build", "cache", "parse", "retry", "token", "image", "query", "schema", "config"]


def event(i):
    skill = skills[i % len(skills)]
    return json.dumps({
        "session_id": f"hook-bench-{i}", "transcript_path": "/nonexistent", "cwd": ws,
        "hook_event_name": "PostToolUse", "tool_name": "Skill",
        "tool_input": {"skill": skill, "args": f"{words[i % 10]} {words[(i * 7) % 10]} {words[(i * 3) % 10]}"},
        "tool_response": {"success": True, "commandName": skill}, "tool_use_id": f"toolu_{i}",
    }).encode()


def stamp(line):
    m = re.match(r"(\d+-\d+-\d+T[\d:.]+)Z", line)
    return datetime.datetime.fromisoformat(m.group(1)).replace(tzinfo=datetime.timezone.utc).timestamp() if m else None


def ms(s):
    v = float(re.match(r"([\d.]+)", s).group(1))
    return v / 1000 if s.endswith("µs") else v


times = {b: [] for b in bins}
blocks = {b: 0 for b in bins}
split = {}
for i in range(runs):
    for b in bins:
        t0 = time.time()
        p = subprocess.run([b, "hook", "claude-code"], input=event(i), capture_output=True, env=env, cwd=ws)
        t1 = time.time()
        times[b].append((t1 - t0) * 1000)
        blocks[b] += b"additionalContext" in p.stdout
        if not parts:
            continue
        lines = p.stderr.decode().splitlines()
        d = lambda k, v: split.setdefault(k, []).append(v)
        if lines and stamp(lines[0]):
            d("exec to the hook reading its configuration", (stamp(lines[0]) - t0) * 1000)
        for l in lines:
            m = re.search(r"database ([\d.]+[µm]s), embedder ([\d.]+[µm]s)", l)
            if m:
                d("the database opened", ms(m.group(1)))
                d("the static embedder's table", ms(m.group(2)))
            m = re.search(r"project identity ([\d.]+[µm]s), skill folders [\d.]+[µm]s, the index opened ([\d.]+[µm]s)", l)
            if m:
                d("the project identity", ms(m.group(1)))
                d("the vector index opened", ms(m.group(2)))
        rec = [l for l in lines if "recall " in l and " total " in l]
        if rec:
            d("the load (context, catalog, query, rungs, block)", ms(re.search(r"total ([\d.]+[µm]s)", rec[-1]).group(1)))
            d("the block printed to the exit", (t1 - stamp(rec[-1])) * 1000)
for b in bins:
    v = sorted(times[b])
    print(f"{b}: p50 {statistics.median(v):.1f} ms, p90 {v[int(len(v) * 0.9)]:.1f} ms, min {v[0]:.1f} ms; {blocks[b]} of {runs} answered a block")
for k, v in split.items():
    print(f"  {k}: p50 {statistics.median(v):.1f} ms")
