// Gemini CLI 0.61.0 for real (`gemini -p`, wired by `skillmem setup gemini-cli --project WS`),
// against the scripted Gemini API server: the error → fix miner in a host with no historian
// of its own (its compression takes no instructions). Session 1 activates the deploy skill
// (memory on), runs `deployctl push web` with `run_shell_command`, which really fails (the
// made-up CLI on PATH wants a region), then `deployctl push web --region …`, which works.
// SessionEnd mines the chat file: an unverified `fix` note of the skill, source `transcript`,
// with its evidence. Session 2 activates the skill again, and the activation's response
// carries the lesson, marked unverified. Run in a network namespace of its own (.ci/test).

import { test } from "node:test"
import assert from "node:assert/strict"
import { existsSync, mkdirSync, readFileSync, rmSync, writeFileSync } from "node:fs"
import { join } from "node:path"

import { startModelServer } from "../lib/model-server.mjs"
import { DEPLOY, DEPLOY_LESSON, HOSTS, baseEnv, explain, fixWorld, notesOf, preflight, run, setup } from "../lib/world.mjs"

/** Every text of a Gemini API request, as one string. */
const geminiText = (body) => JSON.stringify(body?.contents ?? [])

test(`Gemini CLI ${HOSTS.gemini.version}: a command that fails, then works with a flag, is a mined lesson on the next activation`, { timeout: 300_000 }, async () => {
  assert.deepEqual(preflight("gemini"), [])
  const w = fixWorld("gemini", ".gemini/skills")
  // The lesson is shown from its first session here (memory.minedSupport = 1): what this host's
  // transcript gives is this test's subject; holding a lesson until it recurs is the Claude
  // Code e2e's (test/claude-code-mine.test.mjs) and tests/mine.rs's.
  writeFileSync(join(w.ws, "skillmem.toml"), "[memory]\nmined_support = 1\nholdout = 0.0\n")
  setup(w, "gemini-cli", ["--project", w.ws])
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
      if (step === 0) return { text: `I will load the deploy skill to ${DEPLOY.intent}.`, tools: [{ name: "activate_skill", input: { name: DEPLOY.skill } }] }
      if (session === 1 && step === 1) return { tools: [{ name: "run_shell_command", input: { command: DEPLOY.failing, description: "Push the build" } }] }
      if (session === 1 && step === 2) return { tools: [{ name: "run_shell_command", input: { command: DEPLOY.fixed, description: "Push the build to a region" } }] }
      return { text: "done" }
    },
  })
  const env = { ...baseEnv(w), PATH: w.path, GEMINI_API_KEY: "e2e-loopback", GOOGLE_GEMINI_BASE_URL: srv.url, GEMINI_CLI_NO_RELAUNCH: "true" }
  // Shell calls need approval in headless mode: yolo approves them (setup's policy covers only
  // the skill and skillmem's own tools).
  const args = (prompt) => [HOSTS.gemini.bin, "-p", prompt, "-m", "gemini-2.5-flash", "--output-format", "json", "--approval-mode", "yolo"]
  try {
    const first = await run(process.execPath, args("Ship the web app to staging."), { cwd: w.ws, env, timeoutMs: 120_000 })
    assert.equal(first.code, 0, explain(first, srv))
    // The host really ran both calls: the first failed with the CLI's error, the second worked.
    const s1 = geminiText(srv.requests.find((r) => r.kind === "agent" && r.step === 3)?.body)
    assert.ok(s1.includes(DEPLOY.error) && s1.includes("pushed web to eu-west-1"), `both calls ran: ${s1.slice(-2000)}\n${explain(first, srv)}`)

    const notes = notesOf(w, env, DEPLOY.skill)
    const mined = notes.find((n) => n.kind === "fix")
    assert.ok(mined, `SessionEnd mined a fix lesson: ${JSON.stringify(notes)}`)
    assert.equal(mined.delta, DEPLOY_LESSON)
    assert.deepEqual([mined.source, mined.trust, mined.host], ["transcript", "unverified", "gemini-cli"], JSON.stringify(mined))
    const ev = mined.evidence
    assert.deepEqual([ev.failedCall, ev.errorLines, ev.fixedCall], [DEPLOY.failing, [DEPLOY.error], DEPLOY.fixed], JSON.stringify(mined))
    assert.equal(ev.positions.length, 2, JSON.stringify(mined))
    assert.ok(ev.positions.every((p) => Number.isInteger(p.recordIndex)), `the chat file's records: ${JSON.stringify(mined)}`)

    session = 2
    const before = srv.requests.length
    const second = await run(process.execPath, args("Ship the web app to staging again."), { cwd: w.ws, env, timeoutMs: 120_000 })
    assert.equal(second.code, 0, explain(second, srv))
    const after = srv.requests.slice(before).find((r) => r.kind === "agent" && r.step === 1)
    assert.ok(after, explain(second, srv))
    const response = JSON.stringify(after.body.contents.at(-1))
    const block = response.match(/<hook_context>skill-memory for deploy[^]*?<\/hook_context>/)?.[0]
    assert.ok(block, `the activation's response carries the lessons: ${response.slice(-3000)}`)
    assert.match(block, new RegExp(`- note #${mined.id} \\(fix, [^)]*trust: unverified\\)`), block)
    assert.ok(block.includes("fails with `error: no region configured"), block)
    // The hook log holds the lesson mined, and nothing gone wrong.
    const log = readFileSync(join(w.data, "logs/gemini-cli-hook.log"), "utf8").trim().split("\n")
    assert.equal(log.length, 1, log.join("\n"))
    assert.match(log[0], /mined a fix lesson of deploy \(Inserted\)/)
    rmSync(w.root, { recursive: true, force: true }) // kept when the test fails, for a look
  } finally {
    await srv.close()
  }
})
