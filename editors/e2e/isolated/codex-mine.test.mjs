// Codex CLI 0.171.0 for real (`codex exec --json`, wired by `skillmem setup codex`), against the
// scripted Responses API server: the error → fix miner beside Codex's own historian (its
// compaction). Session 1 reads the deploy skill's SKILL.md (memory on) with `exec_command`,
// runs `deployctl push web`, which really fails (the made-up CLI on PATH wants a region), then
// `deployctl push web --region …`, which works. The turn's Stop mines the rollout: an
// unverified `fix` note of the skill, source `transcript`, with its evidence. Session 2 reads
// the skill again, and the developer message after the read carries the lesson, marked
// unverified. Run in a network namespace of its own (.ci/test); plugins, update checks,
// analytics and feedback are off besides.

import { test } from "node:test"
import assert from "node:assert/strict"
import { mkdirSync, readFileSync, rmSync, writeFileSync } from "node:fs"
import { join } from "node:path"

import { startModelServer } from "../lib/model-server.mjs"
import { DEPLOY, DEPLOY_LESSON, HOSTS, baseEnv, explain, fixWorld, notesOf, preflight, run, setup } from "../lib/world.mjs"

test(`Codex CLI ${HOSTS.codex.version}: a command that fails, then works with a flag, is a mined lesson on the next read`, { timeout: 300_000 }, async () => {
  assert.deepEqual(preflight("codex"), [])
  const w = fixWorld("codex", ".agents/skills")
  // The lesson is shown from its first session here (memory.minedSupport = 1): what this host's
  // transcript gives is this test's subject; holding a lesson until it recurs is the Claude
  // Code e2e's (test/claude-code-mine.test.mjs) and tests/mine.rs's.
  writeFileSync(join(w.ws, "skillmem.toml"), "[memory]\nmined_support = 1\nholdout = 0.0\n")
  const read = { name: "exec_command", input: { cmd: `cat .agents/skills/${DEPLOY.skill}/SKILL.md` } }
  let session = 1
  const srv = await startModelServer({
    isAgent: (tools) => tools.includes("exec_command"),
    // Steps count the model's output items: the read's turn gives a message and a call.
    script: (step) => {
      if (step === 0) return { text: `I will read the deploy skill to ${DEPLOY.intent}.`, tools: [read] }
      if (session === 1 && step === 2) return { tools: [{ name: "exec_command", input: { cmd: DEPLOY.failing } }] }
      if (session === 1 && step === 3) return { tools: [{ name: "exec_command", input: { cmd: DEPLOY.fixed } }] }
      return { text: "done" }
    },
  })
  const codexHome = join(w.home, ".codex")
  mkdirSync(codexHome, { recursive: true })
  // Codex's own settings (not skillmem's): the loopback provider, no retries, no update check,
  // analytics, feedback or plugins; no login shell, whose profile would set PATH anew and lose
  // the world's bin.
  writeFileSync(
    join(codexHome, "config.toml"),
    [
      `model = "scripted"`,
      `model_provider = "e2e"`,
      `check_for_update_on_startup = false`,
      `allow_login_shell = false`,
      ``,
      `[model_providers.e2e]`,
      `name = "e2e"`,
      `base_url = "${srv.url}/v1"`,
      `wire_api = "responses"`,
      `env_key = "E2E_API_KEY"`,
      `request_max_retries = 0`,
      `stream_max_retries = 0`,
      ``,
      `[analytics]`,
      `enabled = false`,
      ``,
      `[feedback]`,
      `enabled = false`,
      ``,
      `[features]`,
      `plugins = false`,
      ``,
    ].join("\n"),
  )
  const env = { ...baseEnv(w), PATH: w.path, CODEX_HOME: codexHome, E2E_API_KEY: "e2e-loopback" }
  setup(w, "codex")
  const args = (prompt) => ["exec", "--json", "--skip-git-repo-check", "--dangerously-bypass-approvals-and-sandbox", "-C", w.ws, prompt]
  try {
    const first = await run(HOSTS.codex.bin, args("Ship the web app to staging."), { cwd: w.ws, env, timeoutMs: 120_000 })
    assert.equal(first.code, 0, explain(first, srv))
    // The host really ran both calls: the first failed with the CLI's error, the second worked.
    const s1 = JSON.stringify(srv.requests.find((r) => r.kind === "agent" && r.step === 4)?.body?.input ?? [])
    assert.ok(s1.includes(DEPLOY.error) && s1.includes("pushed web to eu-west-1"), `both calls ran: ${s1.slice(-2000)}\n${explain(first, srv)}`)

    const notes = notesOf(w, env, DEPLOY.skill)
    const mined = notes.find((n) => n.kind === "fix")
    assert.ok(mined, `Stop mined a fix lesson: ${JSON.stringify(notes)}`)
    assert.equal(mined.delta, DEPLOY_LESSON)
    assert.deepEqual([mined.source, mined.trust, mined.host], ["transcript", "unverified", "codex"], JSON.stringify(mined))
    const ev = mined.evidence
    assert.deepEqual([ev.failedCall, ev.errorLines, ev.fixedCall], [DEPLOY.failing, [DEPLOY.error], DEPLOY.fixed], JSON.stringify(mined))
    assert.equal(ev.positions.length, 2, JSON.stringify(mined))
    assert.ok(ev.positions.every((p) => Number.isInteger(p.recordIndex)), `the rollout's records: ${JSON.stringify(mined)}`)

    session = 2
    const before = srv.requests.length
    const second = await run(HOSTS.codex.bin, args("Ship the web app to staging again."), { cwd: w.ws, env, timeoutMs: 120_000 })
    assert.equal(second.code, 0, explain(second, srv))
    const after = srv.requests.slice(before).find((r) => r.kind === "agent" && r.step === 2)
    assert.ok(after, explain(second, srv))
    const dev = (after.body.input ?? []).filter((i) => i.type === "message" && i.role === "developer").map((i) => JSON.stringify(i.content))
    const block = dev.join("\n").match(/<skill-memory skill=\\"deploy\\"[^]*?<\/skill-memory>/)?.[0]
    assert.ok(block, `a developer message after the read carries the block: ${JSON.stringify(after.body.input).slice(-3000)}`)
    assert.match(block, new RegExp(`<note id=\\\\"${mined.id}\\\\" kind=\\\\"fix\\\\" [^>]* trust=\\\\"unverified\\\\">`), block)
    assert.ok(block.includes("fails with `error: no region configured"), block)
    // The hook log holds the lesson mined, and nothing gone wrong.
    const log = readFileSync(join(w.data, "logs/codex-hook.log"), "utf8").trim().split("\n")
    assert.equal(log.length, 1, log.join("\n"))
    assert.match(log[0], /mined a fix lesson of deploy \(Inserted\)/)
    rmSync(w.root, { recursive: true, force: true }) // kept when the test fails, for a look
  } finally {
    await srv.close()
  }
})
