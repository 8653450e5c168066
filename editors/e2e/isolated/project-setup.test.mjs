// `skillmem setup codex --project WS` and `skillmem setup copilot --project WS` for real: each
// host, in a HOME that holds only its own settings (the loopback model, telemetry and updates
// off), wired only by the project setup (the project's .codex/ or .github/ files, and the
// project's trust in the user's configuration), loads the skill once; a lesson noted before
// with the CLI must reach the model in the load's result, so the project's hook ran, and the
// host must offer skillmem's note tool from the project's MCP configuration. Run in a network
// namespace of its own (.ci/test).

import { test } from "node:test"
import assert from "node:assert/strict"
import { existsSync, mkdirSync, readFileSync, rmSync, writeFileSync } from "node:fs"
import { join } from "node:path"
import { spawnSync } from "node:child_process"

import { startModelServer } from "../lib/model-server.mjs"
import { HOSTS, LESSONS, SKILL, SKILLMEM, baseEnv, explain, preflight, run, setup, world } from "../lib/world.mjs"

function noteFirst(w, env) {
  const l = LESSONS.quotes
  const r = spawnSync(SKILLMEM, ["note", SKILL, "--kind", l.kind, "--delta", l.delta, "--intent", l.intent, "--workspace", w.ws], { env, encoding: "utf8" })
  assert.equal(r.status, 0, r.stderr)
}

test(`Codex CLI ${HOSTS.codex.version}: wired by setup --project, the project's hook gives the block`, { timeout: 300_000 }, async () => {
  assert.deepEqual(preflight("codex"), [])
  const w = world("codex-project", ".agents/skills")
  const read = { name: "exec_command", input: { cmd: `cat .agents/skills/${SKILL}/SKILL.md` } }
  const srv = await startModelServer({
    isAgent: (tools) => tools.includes("exec_command"),
    script: (step) => (step === 0 ? { text: "I will read the jq skill to print raw strings for a shell loop.", tools: [read] } : { text: "done" }),
  })
  const codexHome = join(w.home, ".codex")
  mkdirSync(codexHome, { recursive: true })
  writeFileSync(join(codexHome, "config.toml"), [
    `model = "scripted"`, `model_provider = "e2e"`, `check_for_update_on_startup = false`, ``,
    `[model_providers.e2e]`, `name = "e2e"`, `base_url = "${srv.url}/v1"`, `wire_api = "responses"`, `env_key = "E2E_API_KEY"`, `request_max_retries = 0`, `stream_max_retries = 0`, ``,
    `[analytics]`, `enabled = false`, ``, `[feedback]`, `enabled = false`, ``, `[features]`, `plugins = false`, ``,
  ].join("\n"))
  const env = { ...baseEnv(w), CODEX_HOME: codexHome, E2E_API_KEY: "e2e-loopback" }
  const out = setup(w, "codex", ["--project", w.ws])
  assert.match(out, /trusted project/, out)
  assert.ok(!existsSync(join(codexHome, "hooks.json")), "nothing at user level but the trust")
  noteFirst(w, env)
  try {
    const r = await run(HOSTS.codex.bin, ["exec", "--json", "--skip-git-repo-check", "--dangerously-bypass-approvals-and-sandbox", "-C", w.ws, "Use jq."], { cwd: w.ws, env, timeoutMs: 120_000 })
    assert.equal(r.code, 0, explain(r, srv))
    const after = srv.requests.find((q) => q.kind === "agent" && q.step === 2)
    assert.ok(after, explain(r, srv))
    const seen = JSON.stringify(after.body.input ?? [])
    assert.match(seen, /<skill-memory skill=\\"jq\\"[^]*jq -r prints strings/, `the project's hook gave the block: ${seen.slice(-3000)}`)
    const tools = JSON.stringify(after.body.tools ?? [])
    assert.match(tools, /mcp__skillmem/, "the project's MCP server is offered")
    rmSync(w.root, { recursive: true, force: true })
  } finally {
    await srv.close()
  }
})

test(`Copilot CLI ${HOSTS.copilot.version}: wired by setup --project, the project's hook gives the block`, { timeout: 300_000 }, async () => {
  assert.deepEqual(preflight("copilot"), [])
  const w = world("copilot-project", ".github/skills")
  const out = setup(w, "copilot", ["--project", w.ws])
  assert.match(out, /trusted folder/, out)
  assert.ok(!existsSync(join(w.home, ".copilot/hooks/skillmem.json")), "nothing at user level but the trust")
  const srv = await startModelServer({
    isAgent: (tools) => tools.includes("skill"),
    script: (step) => (step === 0 ? { text: "I will load the jq skill to print raw strings for a shell loop.", tools: [{ name: "skill", input: { skill: SKILL } }] } : { text: "done" }),
  })
  const env = {
    ...baseEnv(w),
    COPILOT_PROVIDER_BASE_URL: `${srv.url}/v1`, COPILOT_PROVIDER_TYPE: "openai", COPILOT_PROVIDER_API_KEY: "e2e-loopback", COPILOT_MODEL: "scripted",
    COPILOT_OFFLINE: "true", COPILOT_AUTO_UPDATE: "false",
  }
  noteFirst(w, env)
  try {
    const r = await run(HOSTS.copilot.bin, ["-p", "Use jq.", "--allow-all-tools", "--no-auto-update", "--disable-client-telemetry", "--output-format", "json"], { cwd: w.ws, env, timeoutMs: 180_000 })
    assert.equal(r.code, 0, explain(r, srv))
    const after = srv.requests.find((q) => q.kind === "agent" && q.step === 1)
    assert.ok(after, explain(r, srv))
    const tool = JSON.stringify((after.body.messages ?? []).filter((m) => m.role === "tool"))
    assert.match(tool, /<skill-memory skill=\\"jq\\"[^]*jq -r prints strings/, `the project's hook gave the block: ${tool.slice(-3000)}`)
    const tools = JSON.stringify((after.body.tools ?? []).map((t) => t.function?.name))
    assert.match(tools, /skillmem-skill_note/, "the project's MCP server is offered")
    const log = join(w.data, "logs/copilot-hook.log")
    assert.ok(!existsSync(log), existsSync(log) ? readFileSync(log, "utf8") : "")
    rmSync(w.root, { recursive: true, force: true })
  } finally {
    await srv.close()
  }
})
