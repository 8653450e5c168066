// Pi 0.73.1 for real (`pi -p --offline`), with the extension of editors/pi (`-e`, loaded from
// its TypeScript source as Pi loads extensions), against the scripted OpenAI chat-completions
// server as a provider in ~/.pi/agent/models.json. Pi loads a skill by reading its SKILL.md
// with the `read` tool; the text the agent writes with the call is the intent. Session 1
// reads the skill's file and writes two notes with `skill_note`; session 2 reads it again, and
// the request after that read must carry the `<skill-memory>` block in the tool result, the
// matching lesson first; the model then corrects that lesson with `skill_note` and `replaces`
// (the id it read in the block), and session 3's read must bring the correction back in its
// place. `pi -p` must end on its own: the sidecar stops at session_shutdown.

import { test } from "node:test"
import { rmSync } from "node:fs"
import assert from "node:assert/strict"
import { mkdirSync, writeFileSync } from "node:fs"
import { join } from "node:path"

import { startModelServer } from "../lib/model-server.mjs"
import { HOSTS, LATER_INTENT, LESSONS, REPO, SKILL, baseEnv, explain, preflight, requestText, run, world } from "../lib/world.mjs"

const CORRECTION = "jq -r prints strings without their quotes, and jq -j also drops the newlines; never pipe -r output into xargs without -d."

test(`Pi ${HOSTS.pi.version}: a lesson noted in one session comes back when the SKILL.md is read again`, { timeout: 300_000 }, async () => {
  assert.deepEqual(preflight("pi"), [])
  const w = world("pi", ".pi/skills")
  const skillFile = `.pi/skills/${SKILL}/SKILL.md`
  let session = 1
  const srv = await startModelServer({
    isAgent: (tools) => tools.includes("read"),
    script: (step, body) => {
      if (session === 1) {
        if (step === 0) return { text: `Loading the jq skill to ${LESSONS.quotes.intent}.`, tools: [{ name: "read", input: { path: skillFile } }] }
        if (step === 1) return { tools: Object.values(LESSONS).map((l) => ({ name: "skill_note", input: { skill: SKILL, kind: l.kind, delta: l.delta, intent: l.intent } })) }
        return { text: "done" }
      }
      if (step === 0) return { text: `Loading the jq skill to ${LATER_INTENT}.`, tools: [{ name: "read", input: { path: skillFile } }] }
      if (session === 2 && step === 1) {
        // The id of the lesson the block showed, as the agent reads it there.
        const id = requestText(body).match(/<note id=\\"(\d+)\\"[^>]*>\\n<delta>jq -r prints strings/)?.[1]
        if (id) return { tools: [{ name: "skill_note", input: { skill: SKILL, kind: "gotcha", delta: CORRECTION, replaces: Number(id) } }] }
      }
      return { text: "done" }
    },
  })
  const agentDir = join(w.home, ".pi/agent")
  mkdirSync(agentDir, { recursive: true })
  writeFileSync(
    join(agentDir, "models.json"),
    JSON.stringify({
      providers: {
        e2e: {
          baseUrl: `${srv.url}/v1`,
          api: "openai-completions",
          apiKey: "e2e-loopback",
          compat: { supportsDeveloperRole: false, supportsReasoningEffort: false },
          models: [{ id: "scripted", reasoning: false, contextWindow: 100_000, maxTokens: 4_000 }],
        },
      },
    }),
  )
  const env = { ...baseEnv(w), PI_OFFLINE: "1", PI_SKIP_VERSION_CHECK: "1", PI_TELEMETRY: "0", SKILLMEM_TIMEOUT_MS: "10000" }
  const args = (prompt) => [HOSTS.pi.bin, "--offline", "-e", join(REPO, "editors/pi/src/index.ts"), "--provider", "e2e", "--model", "scripted", "-p", prompt]
  try {
    const first = await run(process.execPath, args("Use jq to print the names for a shell loop."), { cwd: w.ws, env, timeoutMs: 120_000 })
    assert.equal(first.code, 0, explain(first, srv))
    assert.ok(!first.timedOut, "pi -p ended on its own")
    const s1 = srv.requests.filter((r) => r.kind === "agent")
    const names = (s1[0]?.body?.tools ?? []).map((t) => t.function?.name)
    assert.ok(names.includes("skill_note") && names.includes("skill_recall"), `the extension's tools reach the model: ${names}`)
    const noted = requestText(s1.find((r) => r.step === 2)?.body)
    assert.equal((noted.match(/Saved as note \d+/g) ?? []).length, 2, explain(first, srv))

    session = 2
    const before = srv.requests.length
    const second = await run(process.execPath, args("Print the names again."), { cwd: w.ws, env, timeoutMs: 120_000 })
    assert.equal(second.code, 0, explain(second, srv))
    assert.ok(!second.timedOut, "pi -p ended on its own")
    const after = srv.requests.slice(before).find((r) => r.kind === "agent" && r.step === 1)
    assert.ok(after, explain(second, srv))
    const text = requestText(after.body)
    const block = text.match(/<skill-memory skill=\\"jq\\"[^]*?<\/skill-memory>/)?.[0]
    assert.ok(block, `the read's result carries the block: ${text.slice(-3000)}`)
    assert.match(text, /Filter with `jq/, "the SKILL.md itself is still there")
    const quotes = block.indexOf("jq -r prints strings")
    const slurp = block.indexOf("pass --slurp")
    assert.ok(quotes > 0, block)
    assert.ok(slurp < 0 || quotes < slurp, `the lesson matching the intent comes first: ${block}`)
    assert.doesNotMatch(block, /mode=\\"recent\\"/, "ranked by what the agent said with the read")
    assert.match(text, /skill_note/, "the guidance names Pi's note tool")
    const fixed = requestText(srv.requests.slice(before).find((r) => r.kind === "agent" && r.step === 2)?.body)
    assert.match(fixed, /Saved as note \d+, in the place of note \d+\./, explain(second, srv))

    // Session 3: the correction comes back in the old lesson's place.
    session = 3
    const before3 = srv.requests.length
    const third = await run(process.execPath, args("Print the names once more."), { cwd: w.ws, env, timeoutMs: 120_000 })
    assert.equal(third.code, 0, explain(third, srv))
    const after3 = srv.requests.slice(before3).find((r) => r.kind === "agent" && r.step === 1)
    const block3 = requestText(after3?.body).match(/<skill-memory skill=\\"jq\\"[^]*?<\/skill-memory>/)?.[0]
    assert.ok(block3, explain(third, srv))
    assert.ok(block3.includes("never pipe -r output into xargs"), `the correction is recalled: ${block3}`)
    assert.ok(!block3.includes("use it when the output feeds a shell loop"), `the replaced lesson left recall: ${block3}`)
    const fixedAt = block3.indexOf("never pipe -r output")
    const slurp3 = block3.indexOf("pass --slurp")
    assert.ok(slurp3 < 0 || fixedAt < slurp3, `the correction leads: ${block3}`)
    rmSync(w.root, { recursive: true, force: true }) // kept when the test fails, for a look
  } finally {
    await srv.close()
  }
})
