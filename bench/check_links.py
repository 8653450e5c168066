#!/usr/bin/env python3
"""Checks every relative link of the Markdown files (README.md, ARCHITECTURE.md, docs/,
editors/*/README.md): the file exists and, for `#anchor`, a heading of that file has that
GitHub slug. Prints each broken link; exit code 1 when there is one."""
import os, re, sys

root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
link = re.compile(r"(?<!!)\[[^\]]*\]\(([^)\s]+)\)|!\[[^\]]*\]\(([^)\s]+)\)|^\[[^\]]+\]:\s*(\S+)", re.M)

def slugs(path):
    out, seen, fence = set(), {}, False
    for line in open(path, encoding="utf-8"):
        if line.startswith("```"):
            fence = not fence
        if fence or not line.startswith("#"):
            continue
        text = line.lstrip("#").strip()
        s = re.sub(r"[^\w\- ]", "", text.lower().replace("`", "")).replace(" ", "-")
        n = seen.get(s, 0)
        seen[s] = n + 1
        out.add(s if n == 0 else f"{s}-{n}")
    return out

files = ["README.md", "ARCHITECTURE.md"]
for d, _, names in os.walk(os.path.join(root, "docs")):
    files += [os.path.relpath(os.path.join(d, n), root) for n in names if n.endswith(".md")]
for e in sorted(os.listdir(os.path.join(root, "editors"))):
    p = os.path.join("editors", e, "README.md")
    if os.path.isfile(os.path.join(root, p)):
        files.append(p)

bad = 0
for f in files:
    text = open(os.path.join(root, f), encoding="utf-8").read()
    text = re.sub(r"```.*?```", "", text, flags=re.S)
    for m in link.finditer(text):
        target = m.group(1) or m.group(2) or m.group(3)
        if re.match(r"^[a-z]+:", target):
            continue
        path, _, anchor = target.partition("#")
        dest = os.path.normpath(os.path.join(root, os.path.dirname(f), path)) if path else os.path.join(root, f)
        if not os.path.exists(dest):
            print(f"{f}: {target}: no such file")
            bad += 1
        elif anchor and dest.endswith(".md") and anchor not in slugs(dest):
            print(f"{f}: {target}: no heading #{anchor}")
            bad += 1
sys.exit(1 if bad else 0)
