#!/usr/bin/env python3
"""Figures of `skillmem skills audit` over the labelled sets (issue 48).

    python3 bench/skills/audit/eval.py DATA [--part dev|blind|all] [--bin target/debug/skillmem] [--misses]

DATA is what `sets.py extract` wrote. Prints, per source, how many skills the audit blocks
(malicious recall: verdict block) and, for the benign sets, how many it blocks and warns
(false positives). --misses lists the malicious skills not blocked and the benign ones blocked,
with the rules that fired (dev only: the blind part is measured, not read).
"""
import argparse
import collections
import json
import os
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import sets  # noqa: E402


def audit(binary, paths):
    out = []
    for i in range(0, len(paths), 200):
        chunk = paths[i:i + 200]
        with tempfile.TemporaryDirectory() as home:
            r = subprocess.run([binary, "skills", "audit", "--json", "--data-dir", home, *chunk],
                               capture_output=True, text=True)
        if r.returncode not in (0, 1):
            sys.exit(f"audit failed: {r.stderr}")
        out += json.loads(r.stdout)
    return out


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("data")
    ap.add_argument("--part", default="dev", choices=["dev", "blind", "all"])
    ap.add_argument("--bin", default="target/debug/skillmem")
    ap.add_argument("--misses", action="store_true")
    a = ap.parse_args()
    if a.misses and a.part != "dev":
        sys.exit("--misses is for the dev part only")
    rows = []
    for label, name in (("malicious", "malicious.txt"), ("benign", "benign.txt")):
        for src, ident, part in sets.read_list(name):
            if a.part in ("all", part):
                rows.append((label, src, ident, sets.folder(a.data, label, ident)))
    missing = [r for r in rows if not os.path.isdir(r[3])]
    if missing:
        sys.exit(f"{len(missing)} folders missing under {a.data}: run sets.py extract first")
    reports = audit(a.bin, [r[3] for r in rows])
    by = collections.defaultdict(lambda: collections.Counter())
    misses = []
    for (label, src, ident, path), rep in zip(rows, reports):
        c = by[(label, src)]
        c["n"] += 1
        c[rep["verdict"]] += 1
        fired = sorted({f["rule"] for f in rep["findings"] if f["severity"] in ("critical", "high")})
        if (label == "malicious") != (rep["verdict"] == "block"):
            misses.append((label, src, ident, rep["verdict"], fired or sorted({f["rule"] for f in rep["findings"]})))
    print(f"part: {a.part}")
    for label in ("malicious", "benign"):
        tot = collections.Counter()
        print(f"\n{label}: source, skills, blocked, warned, ok, {'recall' if label == 'malicious' else 'blocked rate'}")
        for (l, src), c in sorted(by.items()):
            if l != label:
                continue
            tot.update(c)
            print(f"  {src:<38} {c['n']:>4} {c['block']:>5} {c['warn']:>5} {c['ok']:>5}  {c['block'] / c['n']:.3f}")
        print(f"  {'all':<38} {tot['n']:>4} {tot['block']:>5} {tot['warn']:>5} {tot['ok']:>5}  {tot['block'] / max(tot['n'], 1):.3f}")
    if a.misses:
        print("\nmisses (malicious not blocked, benign blocked):")
        for m in misses:
            print("  ", *m)


if __name__ == "__main__":
    main()
