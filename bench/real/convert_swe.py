#!/usr/bin/env python3
"""Converts mini-swe-agent trajectories (format `mini-swe-agent-1`, the SWE-bench Verified runs
in github gruckion/mini-swe-agent, swebench_results/20251118_gemini-3-pro-74pct/trajs) into
Claude Code transcripts (the shape bench/mine/gen.py writes, after tests/fixtures' recordings),
one per instance, so that `skillmem eval mine`, `eval use` and `skillmem hook claude-code` read
them as they read a real host's.

Only the instances of ../shared/bench/real/dev-instances.txt are converted; the other
trajectories of that folder are held out. The split into dev and blind parts is by the
instance's SHA-256 (blind when its first byte is divisible by 3), fixed before any label.

Each session: a load of the skill `swe-bench` (the environment the lessons are about: every
instance runs in a SWE-bench image with the repository at /testbed), then each step: the model's THOUGHT as text, its one bash
block as a Bash call (kept whole, multi-line included), the <returncode> as the exit code
(non-zero: is_error), the <output> (or <output_head> + <output_tail>) as the result; a
command that timed out is a failure with exit code 124. Outputs are cut to 2,000 characters.

Run: python3 bench/real/convert_swe.py TRAJ_DIR ../shared/bench/real/dev-instances.txt bench/real/swe
(TRAJ_DIR holding <id>.json or <id>/<id>.traj.json)
"""
import hashlib
import json
import os
import re
import sys

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "mine"))
from gen import claude  # noqa: E402

OUT_MAX = 2000
BASH = re.compile(r"```bash\s*\n(.*?)\n```", re.S)


SKILL = "swe-bench"


def part_of(instance):
    return "blind" if hashlib.sha256(instance.encode()).digest()[0] % 3 == 0 else "dev"


def result_of(text):
    m = re.search(r"<returncode>(-?\d+)</returncode>", text)
    if m:
        code = int(m.group(1))
        out = re.search(r"<output>\n?(.*?)</output>", text, re.S)
        if out:
            body = out.group(1)
        else:
            head = re.search(r"<output_head>\n?(.*?)</output_head>", text, re.S)
            tail = re.search(r"<output_tail>\n?(.*?)</output_tail>", text, re.S)
            body = (head.group(1) if head else "") + "\n...\n" + (tail.group(1) if tail else "")
        return code, body
    if text.lstrip().startswith("The last command <command>") and "timed out" in text:
        return 124, "timed out"
    return None


def cut(s):
    return s if len(s) <= OUT_MAX else s[: OUT_MAX // 2] + "\n...\n" + s[-OUT_MAX // 2 :]


def steps_of(traj):
    msgs = traj["messages"]
    steps = [["skill", SKILL]]
    for k, m in enumerate(msgs):
        if m["role"] != "assistant":
            continue
        blocks = BASH.findall(m["content"])
        thought = m["content"].split("```")[0].replace("THOUGHT:", "").strip()
        if thought:
            steps.append(["say", thought[:600]])
        if len(blocks) != 1 or k + 1 >= len(msgs) or msgs[k + 1]["role"] != "user":
            continue
        r = result_of(msgs[k + 1]["content"])
        if r is None:
            continue
        code, out = r
        cmd = blocks[0].strip()
        if cmd.startswith("echo COMPLETE_TASK_AND_SUBMIT_FINAL_OUTPUT"):
            continue
        steps.append(["sh", cmd, code, cut(out)])
    return steps


def main():
    src, listing, out_dir = sys.argv[1:4]
    ids = [l.strip() for l in open(listing) if l.strip() and not l.startswith("#")]
    os.makedirs(out_dir, exist_ok=True)
    parts = {"dev": [], "blind": []}
    for i in ids:
        p = os.path.join(src, i + ".json")
        if not os.path.exists(p):
            p = os.path.join(src, i, i + ".traj.json")
        traj = json.load(open(p))
        recs = claude(steps_of(traj), "swe-" + i)
        with open(os.path.join(out_dir, i + ".jsonl"), "w") as f:
            for r in recs:
                f.write(json.dumps(r) + "\n")
        parts[part_of(i)].append(i)
    for name, got in parts.items():
        with open(os.path.join(out_dir, "..", f"swe-{name}.instances.txt"), "w") as f:
            f.write("\n".join(got) + "\n")
    print({k: len(v) for k, v in parts.items()})


if __name__ == "__main__":
    main()
