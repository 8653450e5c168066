// Claude Code 2.1.197 for real (`claude -p`) with the skillmem plugin installed as a user
// installs it: `claude plugin marketplace add` of the marketplace (the repository's
// `.claude-plugin/` and `editors/claude-code/`, copied out of the checkout, since a user's
// marketplace is a fetch of the repository) and `claude plugin install skillmem@skillmem`.
// skillmem is not on PATH: the plugin's script falls back to `npx skillmem@<version>`, which
// fetches the launcher and the linux-x64 package of `cargo xtask dist` from an npm registry on
// loopback (lib/registry.mjs) into an empty npm cache. Then the scripted two sessions of
// editors/e2e/test/claude-code.test.mjs: the notes written over the plugin's MCP server in
// session 1 come back in the hook's block in session 2. No file written names the checkout.
//
// SKILLMEM_DIST: the folder `cargo xtask dist` wrote (run.sh sets it).

import { test } from "node:test"
import assert from "node:assert/strict"
import { cpSync, existsSync, mkdirSync, readFileSync, rmSync } from "node:fs"
import { delimiter, dirname, join } from "node:path"
import { spawnSync } from "node:child_process"

import { startModelServer } from "../../e2e/lib/model-server.mjs"
import { HOSTS, LATER_INTENT, LESSONS, REPO, SKILL, SKILLMEM, baseEnv, explain, preflight, requestText, run, world } from "../../e2e/lib/world.mjs"
import { startRegistry } from "../lib/registry.mjs"
import { namesOf, noSkillmemOn } from "../lib/checks.mjs"

const DIST = process.env.SKILLMEM_DIST
const noteTool = (body) => (body?.tools ?? []).map((t) => t.name).find((n) => n === "mcp__plugin_skillmem_skillmem__skill_note")

test(`Claude Code ${HOSTS.claude.version}, the plugin from the marketplace, skillmem through npx: a noted lesson comes back on the next Skill load`, { timeout: 400_000 }, async () => {
  assert.deepEqual(preflight("claude"), [])
  assert.ok(DIST && existsSync(join(DIST, "npm")), `SKILLMEM_DIST=${DIST}: the output of cargo xtask dist (bash editors/dist-e2e/run.sh sets it)`)
  const w = world("claude", ".claude/skills")
  // The marketplace as a fetch of the repository would give it: its manifest and the plugin.
  const market = join(w.root, "marketplace")
  cpSync(join(REPO, ".claude-plugin"), join(market, ".claude-plugin"), { recursive: true })
  cpSync(join(REPO, "editors/claude-code"), join(market, "editors/claude-code"), { recursive: true })
  const registry = await startRegistry(join(DIST, "npm"))
  let session = 1
  const srv = await startModelServer({
    isAgent: (tools) => tools.includes("Skill"),
    script: (step, body) => {
      if (session === 1) {
        const note = noteTool(body)
        if (step === 0) return { text: "Loading jq.", tools: [{ name: "Skill", input: { skill: SKILL, args: LESSONS.quotes.intent } }] }
        if (step === 1) {
          if (!note) return { text: "no note tool offered" }
          return { tools: Object.values(LESSONS).map((l) => ({ name: note, input: { skill: SKILL, kind: l.kind, delta: l.delta, intent: l.intent } })) }
        }
        return { text: "done" }
      }
      if (step === 0) return { text: "Loading jq.", tools: [{ name: "Skill", input: { skill: SKILL, args: LATER_INTENT } }] }
      return { text: "done" }
    },
  })
  const { SKILLMEM_BIN, ...base } = baseEnv(w)
  const env = {
    ...base,
    // node and npx, the system's tools; no skillmem anywhere on it (checked below).
    PATH: [dirname(process.execPath), "/usr/local/bin", "/usr/bin", "/bin"].join(delimiter),
    npm_config_registry: registry.url,
    npm_config_cache: join(w.root, "npm-cache"),
    npm_config_update_notifier: "false",
    npm_config_audit: "false",
    npm_config_fund: "false",
    ANTHROPIC_BASE_URL: srv.url,
    ANTHROPIC_API_KEY: "sk-ant-e2e-loopback",
    CLAUDE_CONFIG_DIR: join(w.home, ".claude"),
    CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC: "1",
    DISABLE_TELEMETRY: "1",
    DISABLE_AUTOUPDATER: "1",
    DISABLE_ERROR_REPORTING: "1",
    DISABLE_BUG_COMMAND: "1",
    CLAUDE_CODE_DISABLE_FEEDBACK_SURVEY: "1",
    MCP_TIMEOUT: "60000",
    // `claude -p` does not wait for MCP servers by default: the first npx start (a fetch, then
    // the binary) outlasts the first request, whose tools would then lack skillmem's. An
    // interactive session gets them once connected; this run waits, as the test needs them.
    MCP_CONNECTION_NONBLOCKING: "false",
  }
  assert.equal(SKILLMEM_BIN, SKILLMEM)
  assert.deepEqual(noSkillmemOn(env.PATH), [], "skillmem is not on the hosts' PATH")
  const args = (prompt) => ["-p", prompt, "--allowedTools", "Skill,mcp__plugin_skillmem_skillmem", "--output-format", "json", "--max-turns", "6"]
  try {
    for (const a of [["plugin", "marketplace", "add", market], ["plugin", "install", "skillmem@skillmem"]]) {
      const r = await run(HOSTS.claude.bin, a, { cwd: w.ws, env, timeoutMs: 60_000 })
      assert.equal(r.code, 0, `claude ${a.join(" ")}: ${r.stdout}\n${r.stderr}`)
    }
    const first = await run(HOSTS.claude.bin, args("Use jq to print the names for a shell loop."), { cwd: w.ws, env, timeoutMs: 180_000 })
    assert.equal(first.code, 0, explain(first, srv))
    // The plugin's script fetched skillmem from the registry (the launcher, the linux-x64 binary).
    assert.ok(registry.requests.includes("GET /-/" + namesOf(DIST).launcher), registry.requests.join("\n"))
    assert.ok(registry.requests.includes("GET /-/" + namesOf(DIST).linux), registry.requests.join("\n"))
    const s1 = srv.requests.filter((r) => r.kind === "agent")
    assert.ok(noteTool(s1[0]?.body), `the plugin's MCP note tool reaches the model: ${JSON.stringify(s1[0]?.body?.tools?.map((t) => t.name))}`)
    const noted = requestText(s1.find((r) => r.step === 2)?.body)
    assert.equal((noted.match(/Saved as note \d+|\\"status\\":\\"inserted\\"/g) ?? []).length, 2, explain(first, srv))

    session = 2
    const before = srv.requests.length
    const second = await run(HOSTS.claude.bin, args("Print the names again."), { cwd: w.ws, env, timeoutMs: 180_000 })
    assert.equal(second.code, 0, explain(second, srv))
    const after = srv.requests.slice(before).find((r) => r.kind === "agent" && r.step === 1)
    assert.ok(after, explain(second, srv))
    const block = requestText(after.body).match(/<skill-memory skill=\\"jq\\"[^]*?<\/skill-memory>/)?.[0]
    assert.ok(block, `the load's hook context carries the block: ${requestText(after.body).slice(-3000)}`)
    const quotes = block.indexOf("jq -r prints strings")
    const slurp = block.indexOf("pass --slurp")
    assert.ok(quotes > 0, block)
    assert.ok(slurp < 0 || quotes < slurp, `the lesson matching the intent comes first: ${block}`)

    // The hooks (Stop, SessionEnd) ran through the same fallback and recorded both sessions.
    const stats = spawnSync(SKILLMEM, ["stats", "--json", "--workspace", w.ws], { env: { ...env, PATH: process.env.PATH }, encoding: "utf8" })
    assert.equal(stats.status, 0, stats.stderr)
    const jq = JSON.parse(stats.stdout).skills.find((s) => s.skill === SKILL)
    assert.equal(jq?.sessions, 2, stats.stdout)
    assert.equal(jq?.notes, 2, stats.stdout)
    const log = join(w.data, "logs/claude-code-hook.log")
    assert.equal(existsSync(log) ? readFileSync(log, "utf8") : "", "", "the hook log stays empty")
    const named = spawnSync("grep", ["-rlF", REPO, w.home], { encoding: "utf8" }).stdout.trim()
    assert.equal(named, "", `no file under HOME names the checkout ${REPO}`)
    rmSync(w.root, { recursive: true, force: true }) // kept when the test fails, for a look
  } finally {
    await srv.close()
    await registry.close()
  }
})
