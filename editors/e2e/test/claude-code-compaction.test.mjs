// Claude Code 2.1.197's compaction for real, the way docs/hosts.md tells a person to feed the
// historian (no hook can add instructions to Claude Code's summariser): session 1 loads the
// skill; `skillmem chunk` turns its transcript into the historian's instructions; `/compact
// <instructions>` on the resumed session must reach the summariser with them, and the
// PostCompact hook of the plugin must promote the observation in the summary.

import { test } from "node:test"
import assert from "node:assert/strict"
import { existsSync, readFileSync, readdirSync, rmSync } from "node:fs"
import { join } from "node:path"
import { spawnSync } from "node:child_process"

import { startModelServer } from "../lib/model-server.mjs"
import { HOSTS, REPO, SKILL, SKILLMEM, baseEnv, explain, preflight, run, world } from "../lib/world.mjs"

const OBSERVATION = "Validate the input with jq empty before filtering a large file."
const isCompaction = (body) => JSON.stringify(body?.messages?.at(-1) ?? "").includes("Please provide your summary")

test(`Claude Code ${HOSTS.claude.version}: /compact with skillmem's instructions feeds the historian through PostCompact`, { timeout: 300_000 }, async () => {
  assert.deepEqual(preflight("claude"), [])
  const w = world("claude-compact", ".claude/skills")
  const srv = await startModelServer({
    isAgent: (tools) => tools.includes("Skill"),
    script: (step, body) => {
      if (isCompaction(body)) {
        // The summariser: it answers the instructions only when it was given them.
        const asked = JSON.stringify(body.messages.at(-1)).includes("skill_observations")
        return { text: `<summary>Filtered a file with jq.</summary>${asked ? `\n<skill_observations>\n* ${SKILL} | workflow | ${OBSERVATION}\n</skill_observations>` : ""}` }
      }
      if (step === 0) return { text: "Loading jq.", tools: [{ name: "Skill", input: { skill: SKILL, args: "filter a large file" } }] }
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
  }
  const base = ["--plugin-dir", join(REPO, "editors/claude-code"), "--allowedTools", "Skill,mcp__plugin_skillmem_skillmem", "--output-format", "json"]
  try {
    const first = await run(HOSTS.claude.bin, ["-p", "Filter the big file with jq.", ...base], { cwd: w.ws, env, timeoutMs: 120_000 })
    assert.equal(first.code, 0, explain(first, srv))
    const sid = JSON.parse(first.stdout).session_id
    const projects = join(w.home, ".claude/projects")
    const folder = readdirSync(projects).find((d) => readdirSync(join(projects, d)).includes(`${sid}.jsonl`))
    assert.ok(folder, `the transcript of ${sid} is under ${projects}`)
    const chunk = spawnSync(SKILLMEM, ["chunk", "--format", "claude-code", "--json", join(projects, folder, `${sid}.jsonl`)], { cwd: w.ws, env, encoding: "utf8" })
    assert.equal(chunk.status, 0, chunk.stderr)
    const { instructions, skills } = JSON.parse(chunk.stdout)
    assert.deepEqual(skills, [SKILL])
    assert.match(instructions, /skill_observations/)

    const compact = await run(HOSTS.claude.bin, ["-p", `/compact ${instructions}`, "--resume", sid, ...base], { cwd: w.ws, env, timeoutMs: 120_000 })
    assert.equal(compact.code, 0, explain(compact, srv))
    assert.ok(srv.requests.some((r) => isCompaction(r.body)), `the summariser was called: ${explain(compact, srv)}`)
    const recall = spawnSync(SKILLMEM, ["recall", SKILL, "--json", "--workspace", w.ws], { env, encoding: "utf8" })
    assert.equal(recall.status, 0, recall.stderr)
    assert.match(recall.stdout, /Validate the input with jq empty/, `PostCompact promoted the observation: ${recall.stdout}`)
    const log = join(w.data, "logs/claude-code-hook.log")
    assert.equal(existsSync(log) ? readFileSync(log, "utf8") : "", "", "nothing rejected, nothing to act on")
    rmSync(w.root, { recursive: true, force: true }) // kept when the test fails, for a look
  } finally {
    await srv.close()
  }
})
