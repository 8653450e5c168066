// OpenCode 1.18.33 for real (`opencode run`), with the plugin of editors/opencode (run from its
// TypeScript source, as OpenCode loads it), against the scripted OpenAI chat-completions
// server as a custom provider. The skill tool must reach the model with an `intent`
// argument; session 1 loads the skill with an intent and writes two notes with
// `ctx_skill_note`; session 2 loads it with another intent, and the request after that load
// must carry the `<skill-memory>` block in the tool result, the matching lesson first; session 2
// then applies that lesson (`jq -r`) with the bash tool. The plugin reports every call, and the
// session ends with the run: the lesson, written in session 1 and used in session 2, is
// counted used, and session 3's block says `used="1"`; it stays unverified until sessions that
// withheld it show a lift (the holdout is off here).

import { test } from "node:test"
import { rmSync } from "node:fs"
import assert from "node:assert/strict"
import { writeFileSync } from "node:fs"
import { join } from "node:path"
import { pathToFileURL } from "node:url"
import { spawnSync } from "node:child_process"

import { startModelServer } from "../lib/model-server.mjs"
import { HOSTS, LATER_INTENT, LESSONS, REPO, SKILL, SKILLMEM, baseEnv, explain, preflight, requestText, run, world } from "../lib/world.mjs"

const skillTool = (body) => (body?.tools ?? []).find((t) => t.function?.name === "skill")

test(`OpenCode ${HOSTS.opencode.version}: the skill tool takes an intent, and a noted lesson comes back on the next load`, { timeout: 600_000 }, async () => {
  assert.deepEqual(preflight("opencode"), [])
  // .agents/skills: read by OpenCode, and no .opencode folder for it to install packages into.
  const w = world("opencode", ".agents/skills")
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
      if (step === 1 && session === 2) return { tools: [{ name: "bash", input: { command: "jq -r '.names[]' names.json", description: "Print the names" } }] }
      return { text: "done" }
    },
  })
  const plugin = pathToFileURL(join(REPO, "editors/opencode/src/index.ts")).href
  writeFileSync(
    join(w.ws, "opencode.json"),
    JSON.stringify({
      $schema: "https://opencode.ai/config.json",
      autoupdate: false,
      share: "disabled",
      model: "e2e/scripted",
      small_model: "e2e/scripted",
      plugin: [[plugin, { bin: SKILLMEM, timeoutMs: 10_000, env: { SKILLMEM_HOME: w.data } }]],
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
  const env = {
    ...baseEnv(w),
    OPENCODE_DISABLE_AUTOUPDATE: "1",
    OPENCODE_DISABLE_MODELS_FETCH: "1",
    OPENCODE_DISABLE_SHARE: "1",
    OPENCODE_DISABLE_LSP_DOWNLOAD: "1",
    OPENCODE_DISABLE_DEFAULT_PLUGINS: "1",
    OPENCODE_DISABLE_CLAUDE_CODE: "1",
  }
  try {
    // The first run also installs OpenCode's own plugin package into its config folder (npm).
    const first = await run(HOSTS.opencode.bin, ["run", "--print-logs", "Use jq to print the names for a shell loop."], { cwd: w.ws, env, timeoutMs: 300_000 })
    assert.equal(first.code, 0, explain(first, srv))
    const s1 = srv.requests.filter((r) => r.kind === "agent")
    const tool = skillTool(s1[0]?.body)
    assert.equal(tool?.function?.parameters?.properties?.intent?.type, "string", `the skill tool offers intent: ${JSON.stringify(tool)}`)
    assert.deepEqual(tool.function.parameters.required, ["name"], "intent stays optional")
    const noted = requestText(s1.find((r) => r.step === 2)?.body)
    assert.equal((noted.match(/Saved as note \d+/g) ?? []).length, 2, explain(first, srv))

    session = 2
    const before = srv.requests.length
    const second = await run(HOSTS.opencode.bin, ["run", "--print-logs", "Print the names again."], { cwd: w.ws, env, timeoutMs: 180_000 })
    assert.equal(second.code, 0, explain(second, srv))
    const after = srv.requests.slice(before).find((r) => r.kind === "agent" && r.step === 1)
    assert.ok(after, explain(second, srv))
    const text = requestText(after.body)
    const block = text.match(/<skill-memory skill=\\"jq\\"[^]*?<\/skill-memory>/)?.[0]
    assert.ok(block, `the skill tool's result carries the block: ${text.slice(-3000)}`)
    const quotes = block.indexOf("jq -r prints strings")
    const slurp = block.indexOf("pass --slurp")
    assert.ok(quotes > 0, block)
    assert.ok(slurp < 0 || quotes < slurp, `the lesson matching the intent comes first: ${block}`)
    assert.doesNotMatch(block, /mode=\\"recent\\"/, "ranked by the intent the model gave")
    assert.doesNotMatch(second.stderr, /service=skillmem.*level=WARN|skillmem: .* failed/, "no plugin warnings")
    assert.equal((block.match(/ trust=\\"unverified\\">/g) ?? []).length, 2, `the agent's own notes start unverified: ${block}`)

    // Session 2 applied the quotes lesson (jq -r): at its end it was used, in another session
    // than the one that wrote it. Use alone does not trust it: trust by use needs sessions that
    // withheld the note and a lift (docs/protocol.md, "Use and trust"), and this world has no
    // holdout; the next load shows the use and still marks it unverified.
    const notes = spawnSync(SKILLMEM, ["notes", SKILL, "--json", "--workspace", w.ws], { env: { ...env, SKILLMEM_HOME: w.data }, encoding: "utf8" })
    assert.equal(notes.status, 0, notes.stderr)
    const listed = JSON.parse(notes.stdout).notes
    const q = listed.find((n) => n.delta === LESSONS.quotes.delta)
    const s = listed.find((n) => n.delta === LESSONS.slurp.delta)
    assert.deepEqual([q?.shown, q?.used, q?.trust], [1, 1, "unverified"], notes.stdout)
    assert.deepEqual([s?.shown, s?.used, s?.trust], [1, 0, "unverified"], notes.stdout)
    session = 3
    const mark = srv.requests.length
    const third = await run(HOSTS.opencode.bin, ["run", "--print-logs", "Print the names once more."], { cwd: w.ws, env, timeoutMs: 180_000 })
    assert.equal(third.code, 0, explain(third, srv))
    const load3 = srv.requests.slice(mark).find((r) => r.kind === "agent" && r.step === 1)
    const block3 = requestText(load3?.body).match(/<skill-memory skill=\\"jq\\"[^]*?<\/skill-memory>/)?.[0]
    assert.ok(block3, explain(third, srv))
    assert.match(block3, new RegExp(`<note id=\\\\"${q.id}\\\\" [^>]*used=\\\\"1\\\\" pinned=\\\\"false\\\\" written=\\\\"[0-9-]+\\\\" trust=\\\\"unverified\\\\">`), block3)
    rmSync(w.root, { recursive: true, force: true }) // kept when the test fails, for a look
  } finally {
    await srv.close()
  }
})
