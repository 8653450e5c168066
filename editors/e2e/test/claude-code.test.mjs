// Claude Code 2.1.197 for real (`claude -p`), with the skillmem plugin of editors/claude-code
// (`--plugin-dir`: its hooks and its MCP server), against the scripted Anthropic Messages
// server. Session 1 loads the skill through the Skill tool (args = the intent) and writes two
// notes with the plugin's MCP `skill_note`; session 2 loads it again, and the request the model
// gets after that load must carry the `<skill-memory>` block (hook context) with the lesson
// that matches session 2's intent first; session 2 then applies that lesson (`jq -r`) in a
// Bash call. SessionEnd judges the calls of the transcript: the lesson, written in session 1
// and used in session 2, is counted used, and session 3's block says `used="1"`; it stays
// unverified until sessions that withheld it show a lift (the holdout is off here), as does the
// lesson nobody applied. The Stop/SessionEnd hooks must
// have recorded all three sessions' skill use, and the hook log must be empty.

import { test } from "node:test"
import { rmSync } from "node:fs"
import assert from "node:assert/strict"
import { existsSync, readFileSync } from "node:fs"
import { join } from "node:path"
import { spawnSync } from "node:child_process"

import { startModelServer } from "../lib/model-server.mjs"
import { HOSTS, LATER_INTENT, LESSONS, REPO, SKILL, SKILLMEM, baseEnv, explain, preflight, requestText, run, world } from "../lib/world.mjs"

const noteTool = (body) => (body?.tools ?? []).map((t) => t.name).find((n) => /^mcp__.*skillmem.*__skill_note$/.test(n))

test(`Claude Code ${HOSTS.claude.version}: a lesson noted in one session comes back on the next Skill load`, { timeout: 300_000 }, async () => {
  assert.deepEqual(preflight("claude"), [])
  const w = world("claude", ".claude/skills")
  let session = 1
  const srv = await startModelServer({
    isAgent: (tools) => tools.includes("Skill"),
    script: (step, body) => {
      if (session === 1) {
        const note = noteTool(body)
        if (step === 0) return { text: "Loading jq.", tools: [{ name: "Skill", input: { skill: SKILL, args: LESSONS.quotes.intent } }] }
        if (step === 1) {
          if (!note) return { text: "no note tool offered" }
          return { tools: Object.values(LESSONS).map((l) => ({ name: note, input: { skill: SKILL, kind: l.kind, delta: l.delta, intent: l.intent } })) }
        }
        return { text: "done" }
      }
      if (step === 0) return { text: "Loading jq.", tools: [{ name: "Skill", input: { skill: SKILL, args: LATER_INTENT } }] }
      if (step === 1 && session === 2) return { tools: [{ name: "Bash", input: { command: "jq -r '.names[]' names.json", description: "Print the names" } }] }
      return { text: "done" }
    },
  })
  const env = {
    ...baseEnv(w),
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
    const first = await run(HOSTS.claude.bin, args("Use jq to print the names for a shell loop."), { cwd: w.ws, env, timeoutMs: 120_000 })
    assert.equal(first.code, 0, explain(first, srv))
    const s1 = srv.requests.filter((r) => r.kind === "agent")
    assert.ok(noteTool(s1[0]?.body), `the plugin's MCP note tool reaches the model: ${JSON.stringify(s1[0]?.body?.tools?.map((t) => t.name))}`)
    const noted = requestText(s1.find((r) => r.step === 2)?.body)
    // Claude Code gives the model the MCP result's structured content ({ id, status }).
    assert.equal((noted.match(/Saved as note \d+|\\"status\\":\\"inserted\\"/g) ?? []).length, 2, explain(first, srv))

    session = 2
    const before = srv.requests.length
    const second = await run(HOSTS.claude.bin, args("Print the names again."), { cwd: w.ws, env, timeoutMs: 120_000 })
    assert.equal(second.code, 0, explain(second, srv))
    const after = srv.requests.slice(before).find((r) => r.kind === "agent" && r.step === 1)
    assert.ok(after, explain(second, srv))
    const text = requestText(after.body)
    const block = text.match(/<skill-memory skill=\\"jq\\"[^]*?<\/skill-memory>/)?.[0]
    assert.ok(block, `the load's hook context carries the block: ${text.slice(-3000)}`)
    const quotes = block.indexOf("jq -r prints strings")
    const slurp = block.indexOf("pass --slurp")
    assert.ok(quotes > 0, block)
    assert.ok(slurp < 0 || quotes < slurp, `the lesson matching the intent comes first: ${block}`)
    assert.doesNotMatch(block, /mode=\\"recent\\"/, "ranked by the intent (Skill args)")
    assert.equal((block.match(/ trust=\\"unverified\\">/g) ?? []).length, 2, `the agent's own notes start unverified: ${block}`)

    // Session 2 applied the quotes lesson (jq -r): at its end it was used, in another session
    // than the one that wrote it. Use alone does not trust it: trust by use needs sessions that
    // withheld the note and a lift (docs/protocol.md, "Use and trust"), and this world has no
    // holdout; the next load shows the use and still marks it unverified.
    const notes = spawnSync(SKILLMEM, ["notes", SKILL, "--json", "--workspace", w.ws], { env, encoding: "utf8" })
    assert.equal(notes.status, 0, notes.stderr)
    const listed = JSON.parse(notes.stdout).notes
    const q = listed.find((n) => n.delta === LESSONS.quotes.delta)
    const s = listed.find((n) => n.delta === LESSONS.slurp.delta)
    assert.deepEqual([q?.shown, q?.used, q?.trust], [1, 1, "unverified"], notes.stdout)
    // Written through the MCP server, given Claude Code's session 1 when its transcript was read.
    assert.match(q.sessionId, /^[0-9a-f-]{36}$/, notes.stdout)
    assert.deepEqual([s?.shown, s?.used, s?.trust], [1, 0, "unverified"], notes.stdout)
    session = 3
    const mark = srv.requests.length
    const third = await run(HOSTS.claude.bin, args("Print the names once more."), { cwd: w.ws, env, timeoutMs: 120_000 })
    assert.equal(third.code, 0, explain(third, srv))
    const load3 = srv.requests.slice(mark).find((r) => r.kind === "agent" && r.step === 1)
    const block3 = requestText(load3?.body).match(/<skill-memory skill=\\"jq\\"[^]*?<\/skill-memory>/)?.[0]
    assert.ok(block3, explain(third, srv))
    assert.match(block3, new RegExp(`<note id=\\\\"${q.id}\\\\" [^>]*used=\\\\"1\\\\" pinned=\\\\"false\\\\" written=\\\\"[0-9-]+\\\\" trust=\\\\"unverified\\\\">`), block3)

    // Stop / SessionEnd recorded every session's use; nothing for a person to act on was logged.
    const stats = spawnSync(SKILLMEM, ["stats", "--json", "--workspace", w.ws], { env, encoding: "utf8" })
    assert.equal(stats.status, 0, stats.stderr)
    const jq = JSON.parse(stats.stdout).skills.find((s) => s.skill === SKILL)
    assert.equal(jq?.sessions, 3, stats.stdout)
    assert.equal(jq?.notes, 2, stats.stdout)
    const log = join(w.data, "logs/claude-code-hook.log")
    assert.equal(existsSync(log) ? readFileSync(log, "utf8") : "", "", "the hook log stays empty")
    rmSync(w.root, { recursive: true, force: true }) // kept when the test fails, for a look
  } finally {
    await srv.close()
  }
})
