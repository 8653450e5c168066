// Claude Code 2.1.197's compaction for real, with no person in the loop: session 1 loads the
// skill; then the session is compacted, by `/compact` with no arguments or automatically when
// the context is full. The plugin's PreCompact hook prints the historian's instructions, which
// Claude Code appends to its compaction prompt ("Additional Instructions:"); the scripted
// summariser answers the observations only when it finds them there; the PostCompact hook
// promotes them. What the instructions cost is in skillmem's historian log.

import { test } from "node:test"
import assert from "node:assert/strict"
import { existsSync, readFileSync, rmSync } from "node:fs"
import { join } from "node:path"
import { spawnSync } from "node:child_process"

import { startModelServer } from "../lib/model-server.mjs"
import { HOSTS, REPO, SKILL, SKILLMEM, baseEnv, explain, preflight, run, world } from "../lib/world.mjs"

const OBSERVATION = "Validate the input with jq empty before filtering a large file."
const isCompaction = (body) => JSON.stringify(body?.messages?.at(-1) ?? "").includes("Please provide your summary")

/** Runs session 1 (a skill load), then `second` on the resumed session; returns what was seen. */
async function compactOnce(name, { firstTokens, second, extraEnv }) {
  const w = world(name, ".claude/skills")
  const srv = await startModelServer({
    isAgent: (tools) => tools.includes("Skill"),
    script: (step, body) => {
      if (isCompaction(body)) {
        // The summariser: it answers the instructions only when it was given them.
        const asked = JSON.stringify(body.messages.at(-1)).includes("skill_observations")
        return { text: `<summary>Filtered a file with jq.</summary>${asked ? `\n<skill_observations>\n* ${SKILL} | workflow | ${OBSERVATION}\n</skill_observations>` : ""}` }
      }
      if (step === 0) return { text: "Loading jq.", tools: [{ name: "Skill", input: { skill: SKILL, args: "filter a large file" } }] }
      return { text: "done", promptTokens: firstTokens }
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
  }
  const base = ["--plugin-dir", join(REPO, "editors/claude-code"), "--allowedTools", "Skill,mcp__plugin_skillmem_skillmem", "--output-format", "json"]
  try {
    const first = await run(HOSTS.claude.bin, ["-p", "Filter the big file with jq.", ...base], { cwd: w.ws, env, timeoutMs: 120_000 })
    assert.equal(first.code, 0, explain(first, srv))
    const sid = JSON.parse(first.stdout).session_id
    const r = await run(HOSTS.claude.bin, ["-p", second, "--resume", sid, ...base], { cwd: w.ws, env: { ...env, ...extraEnv }, timeoutMs: 120_000 })
    assert.equal(r.code, 0, explain(r, srv))
    const compaction = srv.requests.find((q) => isCompaction(q.body))
    assert.ok(compaction, `the summariser was called: ${explain(r, srv)}`)
    const prompt = JSON.stringify(compaction.body.messages.at(-1))
    assert.match(prompt, /Additional Instructions:.*future sessions: jq\./s, "PreCompact's instructions reached the compaction prompt")
    const recall = spawnSync(SKILLMEM, ["recall", SKILL, "--json", "--workspace", w.ws], { env, encoding: "utf8" })
    assert.equal(recall.status, 0, recall.stderr)
    assert.match(recall.stdout, /Validate the input with jq empty/, `PostCompact promoted the observation: ${recall.stdout}`)
    const log = join(w.data, "logs/claude-code-hook.log")
    assert.equal(existsSync(log) ? readFileSync(log, "utf8") : "", "", "nothing rejected, nothing to act on")
    const costs = readFileSync(join(w.data, "logs/historian.log"), "utf8")
    assert.match(costs, /PreCompact \((manual|auto)\): historian instructions for jq added to the compaction prompt: \d+ characters \(~\d+ input tokens\)/, costs)
    assert.match(costs, /PostCompact: historian block of \d+ characters \(~\d+ output tokens of the summary\): 1 promoted, 0 rejected/, costs)
    console.log(`# ${name}: ${costs.trim().split("\n").map((l) => l.replace(/^\d+ /, "")).join(" | ")}; compaction request ${compaction.raw.length} bytes`)
    rmSync(w.root, { recursive: true, force: true }) // kept when the test fails, for a look
  } finally {
    await srv.close()
  }
}

test(`Claude Code ${HOSTS.claude.version}: /compact alone feeds the historian (PreCompact instructions, PostCompact promotion)`, { timeout: 300_000 }, async () => {
  assert.deepEqual(preflight("claude"), [])
  await compactOnce("claude-compact", { firstTokens: 100, second: "/compact", extraEnv: {} })
})

test(`Claude Code ${HOSTS.claude.version}: automatic compaction feeds the historian with no hand step`, { timeout: 300_000 }, async () => {
  assert.deepEqual(preflight("claude"), [])
  // Session 1's last turn reports a nearly full context; a window of 200k tokens and a
  // threshold of 50% make the resumed session compact before its first turn.
  await compactOnce("claude-autocompact", {
    firstTokens: 199_000,
    second: "Go on with the next file.",
    extraEnv: { CLAUDE_CODE_AUTO_COMPACT_WINDOW: "200000", CLAUDE_AUTOCOMPACT_PCT_OVERRIDE: "50" },
  })
})
