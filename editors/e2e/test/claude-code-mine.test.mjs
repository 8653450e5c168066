// Claude Code 2.1.197 for real (`claude -p`, the plugin of editors/claude-code), against the
// scripted Anthropic Messages server: the error → fix miner in a real host. Session 1 loads
// the deploy skill (memory on) through the Skill tool, runs `deployctl push web` in Bash, which
// really fails (the made-up CLI on PATH wants a region), then `deployctl push web --region …`,
// which works. SessionEnd mines the transcript: an unverified `fix` note of the skill, source
// `transcript`, with its evidence (both calls, the error line, their records), held in review
// (a mined lesson is shown once it recurs: memory.minedSupport, 2). Session 2 meets the same
// failure and fix: the lesson's support is 2 and it is released. Session 3 loads the skill
// again, and the block the model gets carries that lesson, marked unverified.

import { test } from "node:test"
import assert from "node:assert/strict"
import { spawnSync } from "node:child_process"
import { readFileSync, rmSync } from "node:fs"
import { join } from "node:path"

import { startModelServer } from "../lib/model-server.mjs"
import { DEPLOY, DEPLOY_LESSON, HOSTS, REPO, SKILLMEM, baseEnv, explain, fixWorld, notesOf, preflight, requestText, run } from "../lib/world.mjs"

test(`Claude Code ${HOSTS.claude.version}: a command that fails, then works with a flag, is a mined lesson on the next load`, { timeout: 300_000 }, async () => {
  assert.deepEqual(preflight("claude"), [])
  const w = fixWorld("claude", ".claude/skills")
  let session = 1
  const srv = await startModelServer({
    isAgent: (tools) => tools.includes("Skill"),
    script: (step) => {
      if (step === 0) return { text: "Loading deploy.", tools: [{ name: "Skill", input: { skill: DEPLOY.skill, args: DEPLOY.intent } }] }
      if (session < 3 && step === 1) return { tools: [{ name: "Bash", input: { command: DEPLOY.failing, description: "Push the build" } }] }
      if (session < 3 && step === 2) return { tools: [{ name: "Bash", input: { command: DEPLOY.fixed, description: "Push the build to a region" } }] }
      return { text: "done" }
    },
  })
  const env = {
    ...baseEnv(w),
    PATH: w.path,
    ANTHROPIC_BASE_URL: srv.url,
    ANTHROPIC_API_KEY: "sk-ant-e2e-loopback",
    CLAUDE_CONFIG_DIR: join(w.home, ".claude"),
    CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC: "1",
    DISABLE_TELEMETRY: "1",
    DISABLE_AUTOUPDATER: "1",
    DISABLE_ERROR_REPORTING: "1",
    DISABLE_BUG_COMMAND: "1",
    CLAUDE_CODE_DISABLE_FEEDBACK_SURVEY: "1",
    MCP_TIMEOUT: "30000",
  }
  const args = (prompt) => [
    "-p", prompt,
    "--plugin-dir", join(REPO, "editors/claude-code"),
    "--allowedTools", "Skill,Bash,mcp__plugin_skillmem_skillmem",
    "--output-format", "json",
    "--max-turns", "6",
  ]
  try {
    const first = await run(HOSTS.claude.bin, args("Ship the web app to staging."), { cwd: w.ws, env, timeoutMs: 120_000 })
    assert.equal(first.code, 0, explain(first, srv))
    // The host really ran both calls: the first failed with the CLI's error, the second worked.
    const s1 = requestText(srv.requests.find((r) => r.kind === "agent" && r.step === 3)?.body)
    assert.ok(s1.includes(DEPLOY.error) && s1.includes("pushed web to eu-west-1"), `both calls ran: ${s1.slice(-2000)}`)

    // Held: in review, not yet among the notes a load shows.
    assert.equal(notesOf(w, env, DEPLOY.skill).find((n) => n.kind === "fix"), undefined)
    const queue = JSON.parse(spawnSync(SKILLMEM, ["review", "--json", "--workspace", w.ws], { env, encoding: "utf8" }).stdout).notes
    const held = queue.find((n) => n.kind === "fix")
    assert.ok(held && held.pending && held.evidence.sessions === 1, `SessionEnd mined a held fix lesson: ${JSON.stringify(queue)}`)

    session = 2
    const again = await run(HOSTS.claude.bin, args("Ship the web app to staging."), { cwd: w.ws, env, timeoutMs: 120_000 })
    assert.equal(again.code, 0, explain(again, srv))
    const notes = notesOf(w, env, DEPLOY.skill)
    const mined = notes.find((n) => n.kind === "fix")
    assert.ok(mined, `the second session's SessionEnd released the lesson: ${JSON.stringify(notes)}`)
    assert.equal(mined.id, held.id)
    assert.equal(mined.evidence.sessions, 2, JSON.stringify(mined))
    assert.equal(mined.delta, DEPLOY_LESSON)
    assert.deepEqual([mined.source, mined.trust], ["transcript", "unverified"], JSON.stringify(mined))
    const ev = mined.evidence
    assert.deepEqual([ev.failedCall, ev.errorLines, ev.fixedCall], [DEPLOY.failing, [DEPLOY.error], DEPLOY.fixed], JSON.stringify(mined))
    assert.equal(ev.positions.length, 2, JSON.stringify(mined))
    assert.ok(ev.positions.every((p) => Number.isInteger(p.recordIndex)), `the transcript's records: ${JSON.stringify(mined)}`)

    session = 3
    const before = srv.requests.length
    const second = await run(HOSTS.claude.bin, args("Ship the web app to staging again."), { cwd: w.ws, env, timeoutMs: 120_000 })
    assert.equal(second.code, 0, explain(second, srv))
    const after = srv.requests.slice(before).find((r) => r.kind === "agent" && r.step === 1)
    const block = requestText(after?.body).match(/<skill-memory skill=\\"deploy\\"[^]*?<\/skill-memory>/)?.[0]
    assert.ok(block, `the load's hook context carries the block: ${explain(second, srv)}`)
    assert.match(block, new RegExp(`<note id=\\\\"${mined.id}\\\\" kind=\\\\"fix\\\\" [^>]* trust=\\\\"unverified\\\\">`), block)
    assert.ok(block.includes("fails with `error: no region configured"), block)
    // The hook log holds the lesson mined, and nothing gone wrong.
    const log = readFileSync(join(w.data, "logs/claude-code-hook.log"), "utf8").trim().split("\n")
    assert.equal(log.length, 2, log.join("\n"))
    assert.match(log[0], /mined a fix lesson of deploy \(Inserted\)/)
    assert.match(log[1], /mined a fix lesson of deploy \(Duplicate\)/)
    rmSync(w.root, { recursive: true, force: true }) // kept when the test fails, for a look
  } finally {
    await srv.close()
  }
})
