// What every real-host test shares: a throw-away HOME, workspace and skillmem data directory,
// the host binaries installed by `npm ci` here (pinned in package.json), a bounded run of a
// host, and the two lessons the scripted agent writes and expects back.

import { spawn, spawnSync } from "node:child_process"
import { existsSync, mkdirSync, mkdtempSync, writeFileSync } from "node:fs"
import { networkInterfaces, tmpdir } from "node:os"
import { dirname, join, resolve } from "node:path"
import { fileURLToPath } from "node:url"

const here = dirname(fileURLToPath(import.meta.url))
export const E2E = resolve(here, "..")
export const REPO = resolve(E2E, "../..")
export const SKILLMEM = resolve(process.env.SKILLMEM_BIN ?? join(REPO, "target/debug/skillmem"))

/** The first candidate that is there: the platform package's native binary (present even
 * when npm did not run the wrapper's postinstall), else the wrapper's own. */
function firstOf(...paths) {
  const found = paths.map((p) => join(E2E, "node_modules", p)).find((p) => existsSync(p))
  return found ?? join(E2E, "node_modules", paths.at(-1))
}
const plat = `${process.platform}-${process.arch}`

/** The pinned hosts (package.json) and their executables. */
export const HOSTS = {
  claude: { version: "2.1.197", bin: firstOf(`@anthropic-ai/claude-code-${plat}/claude`, "@anthropic-ai/claude-code/bin/claude.exe") },
  opencode: { version: "1.18.33", bin: firstOf(`opencode-${plat}/bin/opencode`, "opencode-ai/bin/opencode.exe") },
  pi: { version: "0.73.1", bin: firstOf("@mariozechner/pi-coding-agent/dist/cli.js") },
  gemini: { version: "0.61.0", bin: firstOf("@google/gemini-cli/bundle/gemini.js") },
  codex: { version: "0.171.0", bin: firstOf(`@openai/codex-${plat}/vendor/${process.arch === "x64" ? "x86_64" : "aarch64"}-unknown-linux-musl/bin/codex`, "@openai/codex/bin/codex.js") },
  copilot: { version: "1.0.102", bin: firstOf(`@github/copilot-${plat}/copilot`, "@github/copilot/npm-loader.js") },
}

/** Runs `skillmem setup <host> [args]` in the world's HOME; its stdout. */
export function setup(w, host, args = []) {
  const r = spawnSync(SKILLMEM, ["setup", host, ...args], { env: baseEnv(w), encoding: "utf8" })
  if (r.status !== 0) throw new Error(`skillmem setup ${host} failed: ${r.stderr}`)
  return r.stdout
}

/** The skill used everywhere, its memory on. */
export const SKILL = "jq"
export const SKILL_MD = `---
name: jq
description: Query and reshape JSON on the command line with jq.
skill-memory:
  enabled: true
---

# jq

Filter with \`jq '.items[] | select(.ok)'\`.
`

/** The two lessons the first session notes, and the intent of the later load. */
export const LESSONS = {
  quotes: { kind: "gotcha", delta: "jq -r prints strings without their quotes; use it when the output feeds a shell loop.", intent: "print raw strings for a shell loop" },
  slurp: { kind: "fix", delta: "jq: error: Cannot index array with string: pass --slurp (-s) when the input is several JSON documents.", intent: "read several JSON documents at once" },
}
export const LATER_INTENT = "print the names as raw strings without quotes for a shell loop"

/** The workspace's skillmem.toml in every world: the holdout off (append to it, never replace). */
export const HOLDOUT_OFF = "[memory]\nholdout = 0.0\n"

/** A fresh world under the temporary folder: HOME, a workspace with the skill, skillmem's data. */
export function world(host, skillDir) {
  const root = mkdtempSync(join(tmpdir(), `skillmem-e2e-${host}-`))
  const home = join(root, "home")
  const ws = join(root, "ws")
  const data = join(root, "data")
  for (const d of [home, ws, data]) mkdirSync(d, { recursive: true })
  const dir = join(ws, skillDir, SKILL)
  mkdirSync(dir, { recursive: true })
  writeFileSync(join(dir, "SKILL.md"), SKILL_MD)
  // No holdout: a real host's session ids are random, so a seeded draw would withhold a note
  // from one load in ten at random (docs/protocol.md, "Use and trust"); tests/trust.rs tests it.
  writeFileSync(join(ws, "skillmem.toml"), HOLDOUT_OFF)
  // A git checkout, as a real project is (its identity then comes from git, not the path).
  spawnSync("git", ["init", "-q"], { cwd: ws })
  return { root, home, ws, data, skillDir: dir }
}

/** The environment every host run starts from: nothing of the real user's. */
export function baseEnv(w) {
  return {
    PATH: `${dirname(SKILLMEM)}:${process.env.PATH}`,
    HOME: w.home,
    USER: process.env.USER ?? "root",
    LANG: "C.UTF-8",
    TERM: "dumb",
    NO_COLOR: "1",
    CI: "1",
    TMPDIR: tmpdir(),
    XDG_CONFIG_HOME: join(w.home, ".config"),
    XDG_DATA_HOME: join(w.home, ".local/share"),
    XDG_CACHE_HOME: join(w.home, ".cache"),
    XDG_STATE_HOME: join(w.home, ".local/state"),
    SKILLMEM_HOME: w.data,
    SKILLMEM_BIN: SKILLMEM,
    SKILLMEM_LOG: "warn",
  }
}

/** Runs a host to its end, or kills it (and its process group) after `timeoutMs`. */
export function run(cmd, args, { cwd, env, timeoutMs }) {
  return new Promise((resolveRun) => {
    const child = spawn(cmd, args, { cwd, env, stdio: ["ignore", "pipe", "pipe"], detached: true })
    let stdout = ""
    let stderr = ""
    child.stdout.on("data", (d) => (stdout += d))
    child.stderr.on("data", (d) => (stderr += d))
    let timedOut = false
    const timer = setTimeout(() => {
      timedOut = true
      try {
        process.kill(-child.pid, "SIGKILL")
      } catch {}
    }, timeoutMs)
    child.on("error", (e) => {
      clearTimeout(timer)
      resolveRun({ code: -1, stdout, stderr: `${stderr}\n${e}`, timedOut })
    })
    child.on("close", (code, signal) => {
      clearTimeout(timer)
      // Whatever the host left behind in its group (a sidecar, an MCP server) goes too.
      try {
        process.kill(-child.pid, "SIGKILL")
      } catch {}
      resolveRun({ code: code ?? signal, stdout, stderr, timedOut })
    })
  })
}

/** Fails with what is needed when the hosts or skillmem are not there, or when this process
 * sees any network but loopback: every host runs in a network namespace of its own
 * (`unshare -n`, then `ip link set lo up`; see .ci/test), so nothing can leave this machine. */
export function preflight(host) {
  const missing = []
  const nets = Object.keys(networkInterfaces())
  if (!nets.every((n) => n === "lo")) missing.push(`network interfaces besides lo: ${nets.join(", ")} (run under unshare -n, see .ci/test)`)
  if (!existsSync(SKILLMEM)) missing.push(`${SKILLMEM} (cargo build)`)
  if (!existsSync(HOSTS[host].bin)) missing.push(`${HOSTS[host].bin} (npm ci in editors/e2e)`)
  return missing
}

/** Every text the model was shown in one request body (both APIs), as one string. */
export function requestText(body) {
  return JSON.stringify(body?.messages ?? [])
}

/** A short account of a run and the model traffic, for assertion messages. */
export function explain(r, srv) {
  const reqs = srv.requests.map((q) => `${q.method} ${q.url} ${q.kind ?? ""} step ${q.step ?? ""}`).join("\n")
  return `exit ${r.code}${r.timedOut ? " (killed: took too long)" : ""}\n--- requests\n${reqs}\n--- stdout\n${r.stdout.slice(-3000)}\n--- stderr\n${r.stderr.slice(-5000)}`
}

/** The error → fix tests' skill and the made-up CLI it is about: `deployctl push` fails with
 * a realistic error line unless a region is given (`--region` or DEPLOY_REGION). The scripted
 * agent runs the failing call, then the one with `--region`; the host really runs both. */
export const DEPLOY = {
  skill: "deploy",
  skillMd: `---
name: deploy
description: Ship the web app to the staging cluster with deployctl.
skill-memory:
  enabled: true
---

# deploy

Push a build with \`deployctl push web\`.
`,
  intent: "ship the web app to staging",
  failing: "deployctl push web",
  fixed: "deployctl push web --region eu-west-1",
  error: "error: no region configured (set --region or DEPLOY_REGION)",
}

/** `fixWorld(host, skillsDir)`: a world whose workspace holds the deploy skill (memory on) and
 * whose `bin` holds `deployctl`; its `env(extra)` puts that `bin` first on PATH. */
export function fixWorld(host, skillsDir) {
  const w = world(host, skillsDir)
  const dir = join(w.ws, skillsDir, DEPLOY.skill)
  mkdirSync(dir, { recursive: true })
  writeFileSync(join(dir, "SKILL.md"), DEPLOY.skillMd)
  const bin = join(w.root, "bin")
  mkdirSync(bin)
  writeFileSync(
    join(bin, "deployctl"),
    [
      "#!/bin/sh",
      "# A made-up deploy CLI: `push` needs a region.",
      'cmd="$1"; shift',
      'region="$DEPLOY_REGION"',
      'while [ $# -gt 0 ]; do case "$1" in --region) region="$2"; shift 2 ;; --region=*) region="${1#--region=}"; shift ;; *) app="$1"; shift ;; esac; done',
      'if [ -z "$region" ]; then',
      `  echo "${DEPLOY.error}" >&2`,
      "  exit 1",
      "fi",
      'echo "pushed $app to $region (release 42)"',
      "",
    ].join("\n"),
    { mode: 0o755 },
  )
  return { ...w, bin, path: `${bin}:${baseEnv(w).PATH}` }
}

/** The mined lesson of DEPLOY, as the miner words it. */
export const DEPLOY_LESSON = `\`${DEPLOY.failing}\` fails with \`${DEPLOY.error}\`; \`${DEPLOY.fixed}\` works.`

/** The notes of `skill` in the world's workspace (`skillmem notes --json`). */
export function notesOf(w, env, skill) {
  const r = spawnSync(SKILLMEM, ["notes", skill, "--json", "--workspace", w.ws], { env, encoding: "utf8" })
  if (r.status !== 0) throw new Error(`skillmem notes failed: ${r.stderr}`)
  return JSON.parse(r.stdout).notes
}
