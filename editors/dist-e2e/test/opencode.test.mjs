// OpenCode 1.18.33 for real (`opencode run`) with skillmem's packages installed as a user
// installs them: `npm i -g skillmem @skillmem/opencode` (into a temporary prefix, an empty npm
// cache, from lib/registry.mjs on loopback, which serves the tarballs of `cargo xtask dist` and
// the plugin's dependencies as editors/opencode's `npm ci` installed them), then
// `skillmem setup opencode` from that install, which wires the installed plugin by its path.
// No skillmem of the checkout on PATH. Then the scripted two sessions of
// editors/e2e/test/opencode.test.mjs: session 1 loads the skill and writes two notes with
// `ctx_skill_note`; session 2's load carries the `<skill-memory>` block, the matching lesson
// first. No file written under HOME names the checkout.
//
// SKILLMEM_DIST: the folder `cargo xtask dist` wrote (run.sh sets it).

import { test } from "node:test"
import assert from "node:assert/strict"
import { existsSync, readFileSync, rmSync, writeFileSync } from "node:fs"
import { delimiter, dirname, join } from "node:path"
import { spawnSync } from "node:child_process"

import { startModelServer } from "../../e2e/lib/model-server.mjs"
import { HOSTS, LATER_INTENT, LESSONS, REPO, SKILL, baseEnv, explain, preflight, requestText, run, world } from "../../e2e/lib/world.mjs"
import { startRegistry } from "../lib/registry.mjs"
import { noSkillmemOn } from "../lib/checks.mjs"

const DIST = process.env.SKILLMEM_DIST
const skillTool = (body) => (body?.tools ?? []).find((t) => t.function?.name === "skill")

test(`OpenCode ${HOSTS.opencode.version} with @skillmem/opencode from npm, wired by the installed skillmem setup: a noted lesson comes back on the next load`, { timeout: 600_000 }, async () => {
  assert.deepEqual(preflight("opencode"), [])
  assert.ok(DIST && existsSync(join(DIST, "npm")), `SKILLMEM_DIST=${DIST}: the output of cargo xtask dist (bash editors/dist-e2e/run.sh sets it)`)
  const deps = join(REPO, "editors/opencode/node_modules")
  assert.ok(existsSync(deps), `${deps}: npm ci in editors/opencode (its dependencies are what the registry serves)`)
  const w = world("opencode", ".agents/skills")
  const registry = await startRegistry(join(DIST, "npm"), { trees: [deps] })
  let session = 1
  const srv = await startModelServer({
    isAgent: (tools) => tools.includes("skill"),
    script: (step) => {
      if (session === 1) {
        if (step === 0) return { text: "Loading jq.", tools: [{ name: "skill", input: { name: SKILL, intent: LESSONS.quotes.intent } }] }
        if (step === 1) return { tools: Object.values(LESSONS).map((l) => ({ name: "ctx_skill_note", input: { skill: SKILL, kind: l.kind, delta: l.delta, intent: l.intent } })) }
        return { text: "done" }
      }
      if (step === 0) return { text: "Loading jq.", tools: [{ name: "skill", input: { name: SKILL, intent: LATER_INTENT } }] }
      return { text: "done" }
    },
  })
  const prefix = join(w.root, "npm-global")
  const { SKILLMEM_BIN, ...base } = baseEnv(w)
  const env = {
    ...base,
    PATH: [join(prefix, "bin"), dirname(process.execPath), "/usr/local/bin", "/usr/bin", "/bin"].join(delimiter),
    npm_config_registry: registry.url,
    npm_config_cache: join(w.root, "npm-cache"),
    npm_config_update_notifier: "false",
    npm_config_audit: "false",
    npm_config_fund: "false",
    OPENCODE_DISABLE_AUTOUPDATE: "1",
    OPENCODE_DISABLE_MODELS_FETCH: "1",
    OPENCODE_DISABLE_SHARE: "1",
    OPENCODE_DISABLE_LSP_DOWNLOAD: "1",
    OPENCODE_DISABLE_DEFAULT_PLUGINS: "1",
    OPENCODE_DISABLE_CLAUDE_CODE: "1",
  }
  try {
    assert.deepEqual(noSkillmemOn(env.PATH), [], "no skillmem on PATH before the install")
    const install = await run("npm", ["install", "-g", "--prefix", prefix, "skillmem", "@skillmem/opencode"], { cwd: w.root, env, timeoutMs: 180_000 })
    assert.equal(install.code, 0, `npm i -g: ${install.stdout}\n${install.stderr}`)
    const setup = await run("skillmem", ["setup", "opencode"], { cwd: w.root, env, timeoutMs: 30_000 })
    assert.equal(setup.code, 0, setup.stderr)
    const global = readFileSync(join(w.home, ".config/opencode/opencode.json"), "utf8")
    assert.ok(global.includes(`file://${prefix}/lib/node_modules/@skillmem/opencode/src/index.ts`), global)

    // The project's own configuration: the scripted model only (the plugin is the global one).
    writeFileSync(
      join(w.ws, "opencode.json"),
      JSON.stringify({
        $schema: "https://opencode.ai/config.json",
        autoupdate: false,
        share: "disabled",
        model: "e2e/scripted",
        small_model: "e2e/scripted",
        provider: {
          e2e: {
            npm: "@ai-sdk/openai-compatible",
            name: "e2e",
            options: { baseURL: `${srv.url}/v1`, apiKey: "e2e-loopback" },
            models: { scripted: { name: "scripted", tool_call: true, limit: { context: 100_000, output: 4_000 } } },
          },
        },
      }),
    )
    const first = await run(HOSTS.opencode.bin, ["run", "--print-logs", "Use jq to print the names for a shell loop."], { cwd: w.ws, env, timeoutMs: 300_000 })
    assert.equal(first.code, 0, explain(first, srv))
    const s1 = srv.requests.filter((r) => r.kind === "agent")
    const tool = skillTool(s1[0]?.body)
    assert.equal(tool?.function?.parameters?.properties?.intent?.type, "string", `the installed plugin adds intent to the skill tool: ${JSON.stringify(tool)}\n${first.stderr.slice(-4000)}`)
    const noted = requestText(s1.find((r) => r.step === 2)?.body)
    assert.equal((noted.match(/Saved as note \d+/g) ?? []).length, 2, explain(first, srv))

    session = 2
    const before = srv.requests.length
    const second = await run(HOSTS.opencode.bin, ["run", "--print-logs", "Print the names again."], { cwd: w.ws, env, timeoutMs: 180_000 })
    assert.equal(second.code, 0, explain(second, srv))
    const after = srv.requests.slice(before).find((r) => r.kind === "agent" && r.step === 1)
    assert.ok(after, explain(second, srv))
    const block = requestText(after.body).match(/<skill-memory skill=\\"jq\\"[^]*?<\/skill-memory>/)?.[0]
    assert.ok(block, `the skill tool's result carries the block: ${requestText(after.body).slice(-3000)}`)
    const quotes = block.indexOf("jq -r prints strings")
    const slurp = block.indexOf("pass --slurp")
    assert.ok(quotes > 0, block)
    assert.ok(slurp < 0 || quotes < slurp, `the lesson matching the intent comes first: ${block}`)
    assert.doesNotMatch(second.stderr, /service=skillmem.*level=WARN|skillmem: .* failed/, "no plugin warnings")
    const named = spawnSync("grep", ["-rlF", REPO, w.home], { encoding: "utf8" }).stdout.trim()
    assert.equal(named, "", `no file under HOME names the checkout ${REPO}`)
    rmSync(w.root, { recursive: true, force: true }) // kept when the test fails, for a look
  } finally {
    await srv.close()
    await registry.close()
  }
})
