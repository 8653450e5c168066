#!/usr/bin/env python3
"""Writes a placebo set for `skillmem eval use` from real sessions and the lessons mined from them.

    skillmem --json eval mine bench/real/swe-dev.labels.jsonl > /tmp/mine-dev.json
    python3 bench/use/placebo.py /tmp/mine-dev.json bench/real/swe-dev.labels.jsonl bench/use/placebo-dev.labels.jsonl

One line per real session (in the order of the mine labels file), grouped by repository (the
instance id before its number: `django__django`). Each line lists, under `mined`, the lessons
the miner wrote from that session, with their hand label (useful / junk / harmful) from the
mine labels file. `eval use` writes them at the end of their session, under the session's id,
and a later session of the same group is shown them at its load: its agent never saw them, so
every `used` it is judged to have is a coincidence (the coincidental-use rate).

The lessons' text is frozen here (the miner of commit 574df59), so that a rule of the use
detector is measured on the same notes whatever the miner becomes.
"""
import json
import sys


def main(mine_json, labels_path, out_path):
    report = json.load(open(mine_json))
    report = report[0] if isinstance(report, list) else report
    labels = {}
    order = []
    for line in open(labels_path):
        line = line.strip()
        if not line or line.startswith("//"):
            continue
        l = json.loads(line)
        order.append(l)
        for x in l["lessons"]:
            labels[(l["transcript"], x["failed"], x["fixed"])] = x["label"]
    by_transcript = {}
    for x in report["lessons"]:
        by_transcript.setdefault(x["transcript"], []).append(x)
    lines = []
    for l in order:
        t = l["transcript"]
        instance = t.rsplit("/", 1)[-1].removesuffix(".jsonl")
        group = instance.rsplit("-", 1)[0]
        mined = []
        for i, x in enumerate(by_transcript.get(t, [])):
            ev = x.get("evidence", {})
            label = labels.get((t, ev.get("failedCall"), ev.get("fixedCall")), "unlabelled")
            mined.append({"id": f"{instance}#{i}", "skill": x["skill"], "kind": "fix", "delta": x["delta"], "label": label})
        lines.append({"transcript": "../real/" + t, "host": l["host"], "group": group, "notes": [], "mined": mined})
    with open(out_path, "w") as f:
        f.write("// Written by bench/use/placebo.py from " + labels_path + " and the lessons today's miner mines from it:"
                " each session's mined lessons are written at its end and shown to later sessions of its repository,"
                " whose agents never saw them (every use is a coincidence).\n")
        for l in lines:
            f.write(json.dumps(l) + "\n")
    print(f"{out_path}: {len(lines)} sessions, {sum(len(l['mined']) for l in lines)} mined lessons", file=sys.stderr)


if __name__ == "__main__":
    main(*sys.argv[1:4])
