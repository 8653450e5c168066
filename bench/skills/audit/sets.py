#!/usr/bin/env python3
"""The audit's labelled sets (issue 48): extract them from the mirrors and list them.

    python3 bench/skills/audit/sets.py list    MIRRORS   # writes malicious.txt, benign.txt here
    python3 bench/skills/audit/sets.py extract MIRRORS DATA  # the skill folders under DATA

MIRRORS holds bare git snapshots as `owner+name/repo` (the `fetch` tool's layout). Only the
lists are committed; the skills themselves are third-party and stay out of the repository.

Malicious: MaliciousSkillBench (github protectskills/MaliciousSkillBench, packages/, CC BY 4.0
data licence, see its LICENSE-DATA) sources SRC004, SRC005, SRC006, SRC008 and SRC013 only,
one entry per package; and the malicious skills of cisco-ai-defense/skill-scanner's evals/
(Apache-2.0). Benign: every SKILL.md folder of the public repositories in BENIGN_REPOS, plus
skill-scanner's four safe eval skills. Held out and never read: the other MaliciousSkillBench
sources, trailofbits/skills, obra/superpowers, K-Dense-AI/claude-scientific-skills.

Each entry is `dev` or `blind`: blind when the first byte of sha256(SEED + id) is 0 mod 3
(a fixed third, chosen before any rule was written; tune on dev only, measure blind once).
"""
import csv
import hashlib
import io
import os
import subprocess
import sys
import tarfile

SEED = "skillmem-audit-48:"
MSB = "protectskills+MaliciousSkillBench"
MSB_SOURCES = {"SRC004", "SRC005", "SRC006", "SRC008", "SRC013"}
CISCO = "cisco-ai-defense+skill-scanner"
BENIGN_REPOS = [
    "anthropics+skills",
    "anthropics+claude-plugins-official",
    "openai+skills",
    "vercel-labs+agent-skills",
    "hashicorp+agent-skills",
    "getsentry+skills",
    "expo+skills",
    "UiPath+skills",
    "cloudflare+skills",
    "supabase+agent-skills",
    "wshobson+agents",
]
HELD_OUT = ("trailofbits", "superpowers", "claude-scientific-skills")
HERE = os.path.dirname(os.path.abspath(__file__))


def part(ident):
    return "blind" if hashlib.sha256((SEED + ident).encode()).digest()[0] % 3 == 0 else "dev"


def git(mirrors, repo, *args):
    return subprocess.run(["git", "-C", os.path.join(mirrors, repo, "repo"), *args],
                          check=True, capture_output=True).stdout


def msb_entries(mirrors):
    """(source, id, archive, package path) of the five sources' packages."""
    text = git(mirrors, MSB, "show", "HEAD:packages/package_manifest.csv").decode()
    out = []
    for r in csv.DictReader(io.StringIO(text)):
        if r["source_id"] in MSB_SOURCES and r["benchmark_primary_membership"] == "true":
            out.append((r["source_id"], r["benchmark_id"], r["package_archive"], r["package_relative_path"]))
    return sorted(out)


def cisco_entries(mirrors):
    names = git(mirrors, CISCO, "ls-tree", "-r", "--name-only", "HEAD", "evals/").decode().split("\n")
    out = []
    for n in sorted(names):
        if n.endswith("/SKILL.md"):
            d = n[: -len("/SKILL.md")]
            safe = "/safe" in d
            out.append(("benign" if safe else "malicious", "cisco-evals", d))
    return out


def benign_entries(mirrors):
    out = []
    for repo in BENIGN_REPOS:
        names = git(mirrors, repo, "ls-tree", "-r", "--name-only", "HEAD").decode().split("\n")
        for n in sorted(names):
            if not n.endswith("SKILL.md") or n == "SKILL.md" or not n.endswith("/SKILL.md"):
                continue
            d = n[: -len("/SKILL.md")]
            if any(h in n.lower() for h in HELD_OUT):
                continue
            out.append((repo.replace("+", "/"), d))
    return out


def write_lists(mirrors):
    mal, ben = [], []
    for src, ident, _, _ in msb_entries(mirrors):
        mal.append((src, ident))
    for label, src, d in cisco_entries(mirrors):
        ident = f"cisco-ai-defense/skill-scanner:{d}"
        (mal if label == "malicious" else ben).append(("cisco-evals", ident))
    for repo, d in benign_entries(mirrors):
        ben.append((repo, f"{repo}:{d}"))
    for name, rows in (("malicious.txt", mal), ("benign.txt", ben)):
        with open(os.path.join(HERE, name), "w") as f:
            f.write("# source\tid\tpart (written by sets.py list; see its docstring)\n")
            for src, ident in rows:
                f.write(f"{src}\t{ident}\t{part(ident)}\n")
        print(name, len(rows), "entries,", sum(part(i) == "blind" for _, i in rows), "blind")


def read_list(name):
    rows = []
    with open(os.path.join(HERE, name)) as f:
        for line in f:
            if line.startswith("#") or not line.strip():
                continue
            src, ident, p = line.rstrip("\n").split("\t")
            rows.append((src, ident, p))
    return rows


def folder(data, label, ident):
    """Where extract puts an entry's skill folder."""
    safe = ident.replace("/", "+").replace(":", "__")
    return os.path.join(data, label, safe)


def extract(mirrors, data):
    # MaliciousSkillBench packages: one folder per benchmark id.
    by_archive = {}
    for src, ident, archive, rel in msb_entries(mirrors):
        by_archive.setdefault(archive, {})[rel.rstrip("/")] = ident
    for archive, rels in by_archive.items():
        blob = git(mirrors, MSB, "show", f"HEAD:packages/{archive}")
        with tarfile.open(fileobj=io.BytesIO(blob)) as t:
            for m in t.getmembers():
                name = m.name.lstrip("./")
                for rel, ident in rels.items():
                    if name == rel or name.startswith(rel + "/"):
                        dest = folder(data, "malicious", ident)
                        sub = name[len(rel):].lstrip("/")
                        target = os.path.join(dest, sub) if sub else dest
                        if m.isdir():
                            os.makedirs(target, exist_ok=True)
                        elif m.issym():
                            os.makedirs(os.path.dirname(target), exist_ok=True)
                            if not os.path.lexists(target):
                                os.symlink(m.linkname, target)
                        elif m.isfile():
                            os.makedirs(os.path.dirname(target), exist_ok=True)
                            with open(target, "wb") as f:
                                f.write(t.extractfile(m).read())
                            if m.mode & 0o111:
                                os.chmod(target, 0o755)
                        break
    # Git repositories: each skill folder through git archive.
    jobs = [(CISCO, d, ("malicious" if lab == "malicious" else "benign"), f"cisco-ai-defense/skill-scanner:{d}")
            for lab, _, d in cisco_entries(mirrors)]
    jobs += [(repo.replace("/", "+"), d, "benign", f"{repo}:{d}") for repo, d in benign_entries(mirrors)]
    for repo, d, label, ident in jobs:
        dest = folder(data, label, ident)
        os.makedirs(dest, exist_ok=True)
        blob = git(mirrors, repo, "archive", "--format=tar", f"HEAD:{d}")
        with tarfile.open(fileobj=io.BytesIO(blob)) as t:
            t.extractall(dest, filter="tar")
    print("extracted under", data)


if __name__ == "__main__":
    if len(sys.argv) >= 3 and sys.argv[1] == "list":
        write_lists(sys.argv[2])
    elif len(sys.argv) >= 4 and sys.argv[1] == "extract":
        extract(sys.argv[2], sys.argv[3])
    else:
        sys.exit(__doc__)
