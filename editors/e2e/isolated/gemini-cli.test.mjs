// Gemini CLI 0.61.0 for real (`gemini -p`, headless), wired only by `skillmem setup gemini-cli
// --project WS` (the hook, the MCP server, the tool policy, the folder trust), against the
// scripted Gemini API server (`GOOGLE_GEMINI_BASE_URL`). Gemini loads a skill with
// `activate_skill {name}` (no room for an intent); the hook reads what the agent said before
// the call from the transcript. Session 1 activates the skill and writes two notes with
// `mcp_skillmem_skill_note`; session 2 activates it again, and the function response the model
// receives must carry the lessons (as Gemini renders hook context), the matching one first.
// Run in a network namespace of its own (.ci/test): nothing but loopback exists.

import { test } from "node:test"
import assert from "node:assert/strict"
import { existsSync, mkdirSync, readFileSync, rmSync, writeFileSync } from "node:fs"
import { join } from "node:path"

import { startModelServer } from "../lib/model-server.mjs"
import { HOSTS, LATER_INTENT, LESSONS, SKILL, baseEnv, explain, preflight, run, setup, world } from "../lib/world.mjs"

/** Every text of a Gemini API request, as one string. */
const geminiText = (body) => JSON.stringify(body?.contents ?? [])

test(`Gemini CLI ${HOSTS.gemini.version}: a lesson noted in one session comes back when the skill is activated again`, { timeout: 300_000 }, async () => {
  assert.deepEqual(preflight("gemini"), [])
  const w = world("gemini", ".gemini/skills")
  const out = setup(w, "gemini-cli", ["--project", w.ws])
  assert.match(out, /trusted folder/, out)
  // The host's own settings that are not skillmem's: API-key auth, no usage statistics,
  // telemetry or update checks.
  const settings = join(w.home, ".gemini/settings.json")
  mkdirSync(join(w.home, ".gemini"), { recursive: true })
  const s = existsSync(settings) ? JSON.parse(readFileSync(settings, "utf8")) : {}
  Object.assign(s, {
    security: { auth: { selectedType: "gemini-api-key" } },
    privacy: { usageStatisticsEnabled: false },
    telemetry: { enabled: false },
    general: { enableAutoUpdate: false, enableAutoUpdateNotification: false },
  })
  writeFileSync(settings, JSON.stringify(s, null, 2))
  let session = 1
  const srv = await startModelServer({
    isAgent: (tools) => tools.includes("activate_skill"),
    script: (step) => {
      if (session === 1) {
        if (step === 0) return { text: `I will load the jq skill to ${LESSONS.quotes.intent}.`, tools: [{ name: "activate_skill", input: { name: SKILL } }] }
        if (step === 1) return { tools: Object.values(LESSONS).map((l) => ({ name: "mcp_skillmem_skill_note", input: { skill: SKILL, kind: l.kind, delta: l.delta, intent: l.intent } })) }
        return { text: "done" }
      }
      if (step === 0) return { text: `I will load the jq skill to ${LATER_INTENT}.`, tools: [{ name: "activate_skill", input: { name: SKILL } }] }
      return { text: "done" }
    },
  })
  const env = { ...baseEnv(w), GEMINI_API_KEY: "e2e-loopback", GOOGLE_GEMINI_BASE_URL: srv.url, GEMINI_CLI_NO_RELAUNCH: "true" }
  const args = (prompt) => [HOSTS.gemini.bin, "-p", prompt, "-m", "gemini-2.5-flash", "--output-format", "json"]
  try {
    const first = await run(process.execPath, args("Use jq to print the names for a shell loop."), { cwd: w.ws, env, timeoutMs: 120_000 })
    assert.equal(first.code, 0, explain(first, srv))
    const s1 = srv.requests.filter((r) => r.kind === "agent")
    const noted = geminiText(s1.find((r) => r.step === 2)?.body)
    assert.equal((noted.match(/Saved as note \d+/g) ?? []).length, 2, `both notes saved: ${noted.slice(-2000)}\n${explain(first, srv)}`)

    session = 2
    const before = srv.requests.length
    const second = await run(process.execPath, args("Print the names again."), { cwd: w.ws, env, timeoutMs: 120_000 })
    assert.equal(second.code, 0, explain(second, srv))
    const after = srv.requests.slice(before).find((r) => r.kind === "agent" && r.step === 1)
    assert.ok(after, explain(second, srv))
    const response = JSON.stringify(after.body.contents.at(-1))
    const block = response.match(/<hook_context>skill-memory for jq[^]*?<\/hook_context>/)?.[0]
    assert.ok(block, `the activation's response carries the lessons: ${response.slice(-3000)}`)
    assert.match(response, /activated_skill name=\\"jq\\"/, "the skill itself is still there")
    const quotes = block.indexOf("jq -r prints strings")
    const slurp = block.indexOf("pass --slurp")
    assert.ok(quotes > 0 && slurp > 0, block)
    assert.ok(quotes < slurp, `the lesson matching the intent comes first: ${block}`)
    assert.doesNotMatch(block, /ranked by recent/, "ranked by what the agent said before the call")
    assert.doesNotMatch(block, /&lt;note|&lt;skill-memory/, "no escaped XML framing")
    assert.match(block, /mcp_skillmem_skill_note/, "the guidance names Gemini's note tool")
    // Both sessions' ends ran the hook on the transcript (the skill uses), without a failure.
    const log = join(w.data, "logs/gemini-cli-hook.log")
    assert.ok(!existsSync(log), existsSync(log) ? readFileSync(log, "utf8") : "")
    rmSync(w.root, { recursive: true, force: true }) // kept when the test fails, for a look
  } finally {
    await srv.close()
  }
})
