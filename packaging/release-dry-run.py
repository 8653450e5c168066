#!/usr/bin/env python3
"""A dry run of .github/workflows/release.yml on this machine, from the workflow's own text.

It reads the workflow (PyYAML: `apt-get install python3-yaml` or `pip install pyyaml`) and runs,
in a clean export of HEAD (`git archive`, what actions/checkout gives):

- the `build` job for every matrix entry whose target this machine's toolchain has
  (`rustup target list --installed`), each `run:` step as GitHub runs it
  (`bash --noprofile --norc -eo pipefail`), `${{ matrix.* }}` and `runner.os` filled in; the
  entries whose target is not installed are listed as not buildable here, with the reason;
- the `package` job with the binaries built above (a `--bin` of a platform not built is left
  out of `cargo xtask dist`, and globs that match nothing expand to nothing), so the npm
  tarballs, wheels, installers, SHA256SUMS and the offline install check all run for real;
- the `publish` job only as what it would do: each upload and publish command, with the files
  its globs name. Nothing leaves this machine.

`uses:` steps (checkout, setup-node, artifacts) are done by hand as the dry run says.

    python3 packaging/release-dry-run.py [--target-dir DIR] [--keep]

`--target-dir DIR` reuses a target directory's release builds (one already made there is then
not made again; `cargo zigbuild` needs `zig` on PATH, e.g. the `ziglang` wheel's); `--keep` keeps the export with its `dist/`. docs/install.md records a run.
"""
import argparse
import glob
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile

try:
    import yaml
except ImportError:
    sys.exit("PyYAML is needed: apt-get install python3-yaml (or pip install pyyaml)")

ROOT = os.path.realpath(os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
WORKFLOW = os.path.join(ROOT, ".github/workflows/release.yml")


def sh(script, cwd, env):
    """Runs a step's script as GitHub's `shell: bash` does; returns its exit code."""
    full = "shopt -s nullglob\n" + script
    return subprocess.run(["bash", "--noprofile", "--norc", "-eo", "pipefail", "-c", full], cwd=cwd, env=env).returncode


def fill(text, matrix, extra=None):
    """`${{ matrix.x }}` and the few other expressions the workflow's scripts use."""
    values = {f"matrix.{k}": str(v) for k, v in matrix.items()}
    values.update(extra or {})

    def sub(m):
        key = m.group(1).strip()
        if key.startswith("matrix.") and key not in values:
            return ""  # GitHub's value of a key the entry does not have
        if key not in values:
            raise SystemExit(f"the dry run does not know the expression ${{{{ {key} }}}}")
        return values[key]

    return re.sub(r"\$\{\{\s*([^}]+?)\s*\}\}", sub, text)


def condition(cond, os_name, tag):
    """Evaluates the step conditions the workflow uses."""
    if cond is None:
        return True
    cond = cond.strip()
    m = re.fullmatch(r"runner\.os\s*==\s*'(\w+)'", cond)
    if m:
        return m.group(1) == os_name
    if cond == "startsWith(github.ref, 'refs/tags/v')":
        return tag
    if cond == "env.NPM_TOKEN != ''":
        return False
    raise SystemExit(f"the dry run does not know the condition {cond!r}")


def runner_os(label):
    return "Linux" if label.startswith("ubuntu") else "macOS" if label.startswith("macos") else "Windows"


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--target-dir", help="a target directory to reuse")
    ap.add_argument("--keep", action="store_true", help="keep the export and its dist/")
    args = ap.parse_args()

    wf = yaml.safe_load(open(WORKFLOW))
    jobs = wf["jobs"]
    installed = set(subprocess.run(["rustup", "target", "list", "--installed"], capture_output=True, text=True, check=True).stdout.split())
    work = tempfile.mkdtemp(prefix="skillmem-release-")
    subprocess.run(f"git -C {ROOT} archive HEAD | tar -x -C {work}", shell=True, check=True)
    if args.target_dir:
        # Its release builds are reused; `target/debug` stays the export's own, since xtask
        # (a debug build) knows the folder it was built in.
        os.makedirs(os.path.join(work, "target", "debug"))
        for e in os.listdir(args.target_dir):
            if e != "debug":
                os.symlink(os.path.realpath(os.path.join(args.target_dir, e)), os.path.join(work, "target", e))
    version = subprocess.run(["cargo", "xtask", "version"], cwd=work, capture_output=True, text=True, check=True).stdout.strip()
    repo = subprocess.run(["cargo", "xtask", "repository"], cwd=work, capture_output=True, text=True, check=True).stdout.strip()
    env = dict(os.environ, **wf.get("env", {}))
    env.update(
        GITHUB_REF_NAME=f"v{version}",
        GITHUB_REPOSITORY=repo.removeprefix("https://github.com/"),
        RUNNER_TEMP=os.path.join(work, "runner-temp"),
    )
    os.makedirs(env["RUNNER_TEMP"], exist_ok=True)
    report = {"version": version, "built": [], "not built": [], "steps": [], "would publish": []}

    def log(job, name, what):
        report["steps"].append(f"{job}: {name}: {what}")
        print(f"== {job}: {name}: {what}", flush=True)

    # build
    built = []
    for m in jobs["build"]["strategy"]["matrix"]["include"]:
        os_name = runner_os(m["os"])
        if m["target"] not in installed:
            report["not built"].append(f"{m['target']} ({m['os']}): the target is not installed here (rustup target list --installed: {', '.join(sorted(installed))}) and no other can be installed on this machine")
            continue
        if os_name != "Linux":
            report["not built"].append(f"{m['target']}: needs a {os_name} runner")
            continue
        step_env = dict(env, RUNNER_OS=os_name)
        for st in jobs["build"]["steps"]:
            name = st.get("name") or st.get("uses")
            if "uses" in st:
                log("build " + m["target"], name, "done by hand: " + ("the export of HEAD" if "checkout" in st["uses"] else "out/ is kept for the package job"))
                continue
            if not condition(st.get("if"), os_name, True):
                log("build " + m["target"], name, "skipped: its condition does not hold on " + os_name)
                continue
            script = fill(st["run"], m)
            if name == "Rust":
                log("build " + m["target"], name, "skipped: the installed toolchain (" + subprocess.run(["rustc", "--version"], capture_output=True, text=True).stdout.strip() + ")")
                continue
            if "pip install" in script and shutil.which("cargo-zigbuild"):
                log("build " + m["target"], name, "skipped: cargo-zigbuild is on PATH (" + shutil.which("cargo-zigbuild") + ")")
                continue
            rc = sh(script, work, step_env)
            log("build " + m["target"], name, f"exit {rc}")
            if rc:
                sys.exit(f"the step {name!r} failed")
        built.append(m)
        report["built"].append(m["target"])

    # package: the artefacts of the build job are its out/ folder.
    bins = os.path.join(work, "bins")
    os.makedirs(bins, exist_ok=True)
    for f in glob.glob(os.path.join(work, "out", "*")):
        shutil.copy2(f, bins)
    for st in jobs["package"]["steps"]:
        name = st.get("name") or st.get("uses")
        if "uses" in st:
            log("package", name, "done by hand: " + ("bins/ holds the build job's out/" if "download-artifact" in st["uses"] else "the installed node " + subprocess.run(["node", "--version"], capture_output=True, text=True).stdout.strip() if "setup-node" in st["uses"] else "the export of HEAD" if "checkout" in st["uses"] else "dist/ is kept"))
            continue
        script = st["run"]

        def keep_bin(mb):
            path = mb.group(2)
            if os.path.exists(os.path.join(work, path)):
                return mb.group(0)
            return ""

        script = re.sub(r"--bin ([\w-]+)=(\S+)", keep_bin, script)
        script = re.sub(r"\\\n\s*(?=\\\n|\n|$)", "", script)  # continuation lines left empty
        rc = sh(script, work, dict(env, RUNNER_OS="Linux"))
        log("package", name, f"exit {rc}")
        if rc:
            sys.exit(f"the step {name!r} failed")

    # publish: what it would do.
    dist = os.path.join(work, "dist")
    for st in jobs["publish"]["steps"]:
        name = st.get("name") or st.get("uses")
        if "uses" in st:
            report["would publish"].append(f"{name}: {st['uses']} {json.dumps(st.get('with', {}))}")
            continue
        for line in st["run"].splitlines():
            files = sorted({os.path.relpath(f, work) for pat in re.findall(r"dist/\S+", line) for f in glob.glob(os.path.join(work, pat))})
            if line.strip():
                report["would publish"].append(f"{name}: {line.strip()}" + (f"  [{len(files)} files]" if files else ""))
    report["dist"] = sorted(f"{os.path.relpath(f, dist)} {os.path.getsize(f)}" for f in glob.glob(os.path.join(dist, "**", "*"), recursive=True) if os.path.isfile(f))
    print(json.dumps(report, indent=1))
    if args.keep:
        print(f"kept: {work}")
    else:
        shutil.rmtree(work)  # symbolic links go, not what they point to


if __name__ == "__main__":
    main()
