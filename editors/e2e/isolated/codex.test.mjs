// Codex CLI 0.171.0 for real (`codex exec --json`), wired only by `skillmem setup codex` (the
// PostToolUse hook in $CODEX_HOME/hooks.json, its trust and the MCP server in config.toml),
// against the scripted Responses API server (a `model_provider` with `wire_api = "responses"`).
// Codex has no skill tool: the model reads SKILL.md with `exec_command`, which hooks see as
// `Bash`; the hook reads what the agent said before the call from the rollout. Session 1 reads
// the skill and writes two notes with the MCP tool (`skill_note` in the `mcp__skillmem`
// namespace); session 2 reads it again, and the developer message Codex adds after the read
// must carry the block, the matching lesson first. Run in a network namespace of its own
// (.ci/test); plugins, update checks, analytics and feedback are off besides.

import { test } from "node:test"
import assert from "node:assert/strict"
import { spawnSync } from "node:child_process"
import { existsSync, mkdirSync, readFileSync, rmSync, writeFileSync } from "node:fs"
import { join } from "node:path"

import { startModelServer } from "../lib/model-server.mjs"
import { HOSTS, LATER_INTENT, LESSONS, SKILL, SKILLMEM, baseEnv, explain, preflight, run, setup, world } from "../lib/world.mjs"

/** The lesson the compaction's summary observes. */
const COMPACTED = { kind: "gotcha", delta: "jq exits 0 even when the filter matches nothing; pass -e so that a null or false result fails the shell loop." }

test(`Codex CLI ${HOSTS.codex.version}: a lesson noted in one session comes back when the SKILL.md is read again`, { timeout: 300_000 }, async () => {
  assert.deepEqual(preflight("codex"), [])
  const w = world("codex", ".agents/skills")
  const read = { name: "exec_command", input: { cmd: `cat .agents/skills/${SKILL}/SKILL.md` } }
  let session = 1
  const srv = await startModelServer({
    isAgent: (tools) => tools.includes("exec_command"),
    script: (step, body) => {
      if (session === 3) return { text: "done" }
      if (session === 4) {
        if (JSON.stringify(body.input ?? []).includes("Another language model started")) return { text: "done" }
        if (step === 0) return { text: `I will read the jq skill to ${LATER_INTENT}.`, tools: [read], promptTokens: 50_000 }
        return { text: "done", promptTokens: 50_000 }
      }
      if (step === 0) return { text: `I will read the jq skill to ${session === 1 ? LESSONS.quotes.intent : LATER_INTENT}.`, tools: [read] }
      if (session === 1 && step === 2) {
        return { tools: Object.values(LESSONS).map((l) => ({ name: "skill_note", namespace: "mcp__skillmem", input: { skill: SKILL, kind: l.kind, delta: l.delta, intent: l.intent } })) }
      }
      return { text: "done" }
    },
    // The compaction request (no tools): a summary that ends with the historian's block.
    side: (body) =>
      JSON.stringify(body).includes("## Skill observations (skillmem)")
        ? { text: `The agent read the jq skill and printed the names.\n\n<skill_observations>\n* ${SKILL} | ${COMPACTED.kind} | ${COMPACTED.delta}\n</skill_observations>` }
        : { text: "ok" },
  })
  const codexHome = join(w.home, ".codex")
  mkdirSync(codexHome, { recursive: true })
  // Codex's own settings (not skillmem's): the loopback provider, no retries, no update check,
  // analytics, feedback or plugins.
  writeFileSync(
    join(codexHome, "config.toml"),
    [
      `model = "scripted"`,
      `model_provider = "e2e"`,
      `check_for_update_on_startup = false`,
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
  const env = { ...baseEnv(w), CODEX_HOME: codexHome, E2E_API_KEY: "e2e-loopback" }
  const out = setup(w, "codex")
  assert.match(out, /trust/, out)
  const args = (prompt) => ["exec", "--json", "--skip-git-repo-check", "--dangerously-bypass-approvals-and-sandbox", "-C", w.ws, prompt]
  try {
    const first = await run(HOSTS.codex.bin, args("Use jq to print the names for a shell loop."), { cwd: w.ws, env, timeoutMs: 120_000 })
    assert.equal(first.code, 0, explain(first, srv))
    assert.equal((first.stdout.match(/"status":"inserted"/g) ?? []).length, 2, `both notes saved: ${explain(first, srv)}`)
    const notes = spawnSync(SKILLMEM, ["notes", "--json", "--workspace", w.ws], { env, encoding: "utf8" })
    assert.match(notes.stdout, /pass --slurp/, `the notes are in the hook's data directory: ${notes.stdout}${notes.stderr}`)

    session = 2
    const before = srv.requests.length
    const second = await run(HOSTS.codex.bin, args("Print the names again."), { cwd: w.ws, env, timeoutMs: 120_000 })
    assert.equal(second.code, 0, explain(second, srv))
    const after = srv.requests.slice(before).find((r) => r.kind === "agent" && r.step === 2)
    assert.ok(after, explain(second, srv))
    const dev = (after.body.input ?? []).filter((i) => i.type === "message" && i.role === "developer").map((i) => JSON.stringify(i.content))
    const block = dev.join("\n").match(/<skill-memory skill=\\"jq\\"[^]*?<\/skill-memory>[^"]*/)?.[0]
    assert.ok(block, `a developer message after the read carries the block: ${JSON.stringify(after.body.input).slice(-3000)}`)
    const quotes = block.indexOf("jq -r prints strings")
    const slurp = block.indexOf("pass --slurp")
    assert.ok(quotes > 0 && slurp > 0, block)
    assert.ok(quotes < slurp, `the lesson matching the intent comes first: ${block}`)
    assert.doesNotMatch(block, /mode=\\"recent\\"/, "ranked by what the agent said before the read")
    assert.match(block, /mcp__skillmem__skill_note/, "the guidance names Codex's note tool")

    // Session 3: the prompt mentions the skill as `$jq` (Codex inlines it: no read); the
    // UserPromptSubmit hook gives the block with the prompt as the intent.
    session = 3
    const before3 = srv.requests.length
    const third = await run(HOSTS.codex.bin, args(`$${SKILL} ${LATER_INTENT}`), { cwd: w.ws, env, timeoutMs: 120_000 })
    assert.equal(third.code, 0, explain(third, srv))
    const first3 = srv.requests.slice(before3).find((r) => r.kind === "agent")
    const seen = JSON.stringify(first3?.body?.input ?? [])
    const block3 = seen.match(/<skill-memory skill=\\"jq\\"[^]*?<\/skill-memory>/)?.[0]
    assert.ok(block3, `the prompt's turn carries the block: ${seen.slice(-4000)}`)
    assert.ok(block3.indexOf("jq -r prints strings") < block3.indexOf("pass --slurp"), block3)
    assert.doesNotMatch(block3, /mode=\\"recent\\"/, "ranked by the prompt")

    // Session 4: Codex's own auto-compaction (a low model_auto_compact_token_limit, the turn
    // reports 50,000 input tokens). The compaction request must carry the compact prompt setup
    // wrote (Codex's instruction, then the historian's); the server's summary ends with an
    // observation, which the PostCompact hook promotes; after it, SessionStart (compact) gives
    // the dropped block back to the next request.
    session = 4
    const config = join(codexHome, "config.toml")
    writeFileSync(config, `model_auto_compact_token_limit = 1000\n${readFileSync(config, "utf8")}`)
    const before4 = srv.requests.length
    const fourth = await run(HOSTS.codex.bin, args("Print the names once more."), { cwd: w.ws, env, timeoutMs: 120_000 })
    assert.equal(fourth.code, 0, explain(fourth, srv))
    const reqs4 = srv.requests.slice(before4)
    const compaction = reqs4.find((r) => r.raw.includes("## Skill observations (skillmem)"))
    assert.ok(compaction, `a compaction request with skillmem's compact prompt: ${explain(fourth, srv)}`)
    assert.match(compaction.raw, /CONTEXT CHECKPOINT COMPACTION/, "Codex's own instruction is kept")
    const notes4 = spawnSync(SKILLMEM, ["notes", "--json", "--workspace", w.ws], { env, encoding: "utf8" })
    assert.ok(notes4.stdout.includes(COMPACTED.delta), `the summary's observation is a note: ${notes4.stdout}${notes4.stderr}`)
    const resumed = reqs4.slice(reqs4.indexOf(compaction) + 1).find((r) => r.kind === "agent")
    assert.ok(resumed, explain(fourth, srv))
    const resumedText = JSON.stringify(resumed.body.input ?? [])
    assert.match(resumedText, /Another language model started/, "the request after the compaction")
    assert.match(resumedText, /<skill-memory skill=\\"jq\\"/, `the block is back after the compaction: ${resumedText.slice(-4000)}`)
    const log = join(w.data, "logs/codex-hook.log")
    assert.ok(!existsSync(log), existsSync(log) ? readFileSync(log, "utf8") : "")
    rmSync(w.root, { recursive: true, force: true }) // kept when the test fails, for a look
  } finally {
    await srv.close()
  }
})
