// GitHub Copilot CLI 1.0.102 for real (`copilot -p`), wired only by `skillmem setup copilot`
// (~/.copilot/hooks/skillmem.json, the MCP server in ~/.copilot/mcp-config.json), against the
// scripted chat-completions server as a bring-your-own provider (COPILOT_PROVIDER_*). Copilot
// loads a skill with the tool `skill {skill}` (no intent argument, no path in the hook input);
// the hook finds the skill by name in .github/skills and reads what the agent said before the
// call from the session's events. Session 1 loads the skill and writes two notes with
// `skillmem-skill_note`; session 2 loads it again, and the skill's tool message the model
// receives must carry the block, the matching lesson first. Run in a network namespace of its
// own (.ci/test), offline, no auto-update, no client telemetry.

import { test } from "node:test"
import assert from "node:assert/strict"
import { existsSync, readFileSync, rmSync } from "node:fs"
import { join } from "node:path"

import { startModelServer } from "../lib/model-server.mjs"
import { HOSTS, LATER_INTENT, LESSONS, SKILL, baseEnv, explain, preflight, requestText, run, setup, world } from "../lib/world.mjs"

test(`Copilot CLI ${HOSTS.copilot.version}: a lesson noted in one session comes back when the skill is loaded again`, { timeout: 300_000 }, async () => {
  assert.deepEqual(preflight("copilot"), [])
  const w = world("copilot", ".github/skills")
  setup(w, "copilot")
  let session = 1
  const srv = await startModelServer({
    isAgent: (tools) => tools.includes("skill"),
    script: (step) => {
      if (step === 0) return { text: `I will load the jq skill to ${session === 1 ? LESSONS.quotes.intent : LATER_INTENT}.`, tools: [{ name: "skill", input: { skill: SKILL } }] }
      if (session === 1 && step === 1) {
        return { tools: Object.values(LESSONS).map((l) => ({ name: "skillmem-skill_note", input: { skill: SKILL, kind: l.kind, delta: l.delta, intent: l.intent } })) }
      }
      return { text: "done" }
    },
  })
  const env = {
    ...baseEnv(w),
    COPILOT_PROVIDER_BASE_URL: `${srv.url}/v1`,
    COPILOT_PROVIDER_TYPE: "openai",
    COPILOT_PROVIDER_API_KEY: "e2e-loopback",
    COPILOT_MODEL: "scripted",
    COPILOT_OFFLINE: "true",
    COPILOT_AUTO_UPDATE: "false",
  }
  const args = (prompt) => ["-p", prompt, "--allow-all-tools", "--no-auto-update", "--disable-client-telemetry", "--output-format", "json"]
  try {
    // The first start unpacks Copilot's runtime into ~/.copilot (no network).
    const first = await run(HOSTS.copilot.bin, args("Use jq to print the names for a shell loop."), { cwd: w.ws, env, timeoutMs: 180_000 })
    assert.equal(first.code, 0, explain(first, srv))
    const noted = requestText(srv.requests.find((r) => r.kind === "agent" && r.step === 2)?.body)
    assert.equal((noted.match(/Saved as note \d+/g) ?? []).length, 2, `both notes saved: ${noted.slice(-2000)}`)

    session = 2
    const before = srv.requests.length
    const second = await run(HOSTS.copilot.bin, args("Print the names again."), { cwd: w.ws, env, timeoutMs: 120_000 })
    assert.equal(second.code, 0, explain(second, srv))
    const after = srv.requests.slice(before).find((r) => r.kind === "agent" && r.step === 1)
    assert.ok(after, explain(second, srv))
    const tool = JSON.stringify((after.body.messages ?? []).filter((m) => m.role === "tool"))
    const block = tool.match(/<skill-memory skill=\\"jq\\"[^]*?<\/skill-memory>[^"]*/)?.[0]
    assert.ok(block, `the skill's tool message carries the block: ${tool.slice(-3000)}`)
    assert.match(requestText(after.body), /skill-context name=\\"jq\\"/, "the skill itself is still there")
    const quotes = block.indexOf("jq -r prints strings")
    const slurp = block.indexOf("pass --slurp")
    assert.ok(quotes > 0 && slurp > 0, block)
    assert.ok(quotes < slurp, `the lesson matching the intent comes first: ${block}`)
    assert.doesNotMatch(block, /mode=\\"recent\\"/, "ranked by what the agent said before the call")
    assert.match(block, /skillmem-skill_note/, "the guidance names Copilot's note tool")
    // Both sessions' ends ran the hook on the transcript (the skill uses), without a failure.
    const log = join(w.data, "logs/copilot-hook.log")
    assert.ok(!existsSync(log), existsSync(log) ? readFileSync(log, "utf8") : "")
    rmSync(w.root, { recursive: true, force: true }) // kept when the test fails, for a look
  } finally {
    await srv.close()
  }
})
