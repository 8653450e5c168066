// GitHub Copilot CLI 1.0.102 for real (`copilot -p`, wired by `skillmem setup copilot`),
// against the scripted chat-completions server: the error → fix miner in a host with no
// historian of its own (no hook into its summary). Session 1 loads the deploy skill (memory
// on), runs `deployctl push web` with `bash`, which really fails (the made-up CLI on PATH wants
// a region), then `deployctl push web --region …`, which works. Copilot writes the session's
// events.jsonl behind the session (at sessionEnd it may hold only the start), so the lesson is
// mined at sessionEnd or, at the latest, by the next session's first hook, before its block
// is built: an unverified `fix` note of the skill, source `transcript`, with its evidence.
// Session 2 loads the skill again, and the skill's tool message carries the lesson, marked
// unverified. Run in a network namespace of its own (.ci/test), offline, no auto-update, no
// client telemetry.

import { test } from "node:test"
import assert from "node:assert/strict"
import { readFileSync, rmSync, writeFileSync } from "node:fs"
import { join } from "node:path"

import { startModelServer } from "../lib/model-server.mjs"
import { DEPLOY, DEPLOY_LESSON, HOSTS, baseEnv, explain, fixWorld, notesOf, preflight, requestText, run, setup } from "../lib/world.mjs"

test(`Copilot CLI ${HOSTS.copilot.version}: a command that fails, then works with a flag, is a mined lesson on the next load`, { timeout: 300_000 }, async () => {
  assert.deepEqual(preflight("copilot"), [])
  const w = fixWorld("copilot", ".github/skills")
  // The lesson is shown from its first session here (memory.minedSupport = 1): what this host's
  // transcript gives is this test's subject; holding a lesson until it recurs is the Claude
  // Code e2e's (test/claude-code-mine.test.mjs) and tests/mine.rs's.
  writeFileSync(join(w.ws, "skillmem.toml"), "[memory]\nmined_support = 1\nholdout = 0.0\n")
  setup(w, "copilot")
  let session = 1
  const srv = await startModelServer({
    isAgent: (tools) => tools.includes("skill"),
    script: (step) => {
      if (step === 0) return { text: `I will load the deploy skill to ${DEPLOY.intent}.`, tools: [{ name: "skill", input: { skill: DEPLOY.skill } }] }
      if (session === 1 && step === 1) return { tools: [{ name: "bash", input: { command: DEPLOY.failing, description: "Push the build" } }] }
      if (session === 1 && step === 2) return { tools: [{ name: "bash", input: { command: DEPLOY.fixed, description: "Push the build to a region" } }] }
      return { text: "done" }
    },
  })
  const env = {
    ...baseEnv(w),
    PATH: w.path,
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
    const first = await run(HOSTS.copilot.bin, args("Ship the web app to staging."), { cwd: w.ws, env, timeoutMs: 180_000 })
    assert.equal(first.code, 0, explain(first, srv))
    // The host really ran both calls: the first failed with the CLI's error, the second worked.
    const s1 = requestText(srv.requests.find((r) => r.kind === "agent" && r.step === 3)?.body)
    assert.ok(s1.includes(DEPLOY.error) && s1.includes("pushed web to eu-west-1"), `both calls ran: ${s1.slice(-2000)}\n${explain(first, srv)}`)

    session = 2
    const before = srv.requests.length
    const second = await run(HOSTS.copilot.bin, args("Ship the web app to staging again."), { cwd: w.ws, env, timeoutMs: 120_000 })
    assert.equal(second.code, 0, explain(second, srv))
    const notes = notesOf(w, env, DEPLOY.skill)
    const mined = notes.find((n) => n.kind === "fix")
    assert.ok(mined, `the session was mined: ${JSON.stringify(notes)}`)
    assert.equal(mined.delta, DEPLOY_LESSON)
    assert.deepEqual([mined.source, mined.trust, mined.host], ["transcript", "unverified", "copilot"], JSON.stringify(mined))
    const ev = mined.evidence
    assert.deepEqual([ev.failedCall, ev.errorLines, ev.fixedCall], [DEPLOY.failing, [DEPLOY.error], DEPLOY.fixed], JSON.stringify(mined))
    assert.equal(ev.positions.length, 2, JSON.stringify(mined))
    assert.ok(ev.positions.every((p) => Number.isInteger(p.recordIndex)), `the events' records: ${JSON.stringify(mined)}`)

    const after = srv.requests.slice(before).find((r) => r.kind === "agent" && r.step === 1)
    assert.ok(after, explain(second, srv))
    const tool = JSON.stringify((after.body.messages ?? []).filter((m) => m.role === "tool"))
    const block = tool.match(/<skill-memory skill=\\"deploy\\"[^]*?<\/skill-memory>/)?.[0]
    assert.ok(block, `the skill's tool message carries the block: ${tool.slice(-3000)}`)
    assert.match(block, new RegExp(`<note id=\\\\"${mined.id}\\\\" kind=\\\\"fix\\\\" [^>]* trust=\\\\"unverified\\\\">`), block)
    assert.ok(block.includes("fails with `error: no region configured"), block)
    // The hook log holds the lesson mined, and nothing gone wrong.
    const log = readFileSync(join(w.data, "logs/copilot-hook.log"), "utf8").trim().split("\n")
    assert.equal(log.length, 1, log.join("\n"))
    assert.match(log[0], /mined a fix lesson of deploy \(Inserted\)/)
    rmSync(w.root, { recursive: true, force: true }) // kept when the test fails, for a look
  } finally {
    await srv.close()
  }
})
