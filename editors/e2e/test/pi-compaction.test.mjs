// Pi 0.73.1's auto-compaction for real: session 1 reads the skill's SKILL.md, and its last turn
// reports a context near the model's window, so Pi compacts when the agent ends. The
// extension must send the compacted part to skillmem, run the historian on the session's
// model (the scripted server answers it with a <skill_observations> block), and promote the
// observation, all before `pi -p` ends.

import { test } from "node:test"
import assert from "node:assert/strict"
import { mkdirSync, rmSync, writeFileSync } from "node:fs"
import { join } from "node:path"
import { spawnSync } from "node:child_process"

import { startModelServer } from "../lib/model-server.mjs"
import { HOSTS, REPO, SKILL, SKILLMEM, baseEnv, explain, preflight, run, world } from "../lib/world.mjs"

const OBSERVATION = "Validate the input with jq empty before filtering a large file."

test(`Pi ${HOSTS.pi.version}: compaction feeds the historian, and its observation becomes a note`, { timeout: 300_000 }, async () => {
  assert.deepEqual(preflight("pi"), [])
  const w = world("pi", ".pi/skills")
  const srv = await startModelServer({
    isAgent: (tools) => tools.includes("read"),
    script: (step) => {
      if (step === 0) return { text: "Loading the jq skill to filter a large file.", tools: [{ name: "read", input: { path: `.pi/skills/${SKILL}/SKILL.md` } }] }
      // A context near the window: Pi compacts once the agent ends.
      return { text: "done", promptTokens: 95_000 }
    },
    side: (body) =>
      JSON.stringify(body).includes("skill_observations")
        ? { text: `<skill_observations>\n* ${SKILL} | workflow | ${OBSERVATION}\n</skill_observations>` }
        : { text: "## Goal\nFilter a file with jq." },
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
  // Keep almost nothing: everything before the last message is compacted.
  writeFileSync(join(agentDir, "settings.json"), JSON.stringify({ compaction: { enabled: true, reserveTokens: 16_384, keepRecentTokens: 1 } }))
  const env = { ...baseEnv(w), PI_OFFLINE: "1", PI_SKIP_VERSION_CHECK: "1", PI_TELEMETRY: "0", SKILLMEM_TIMEOUT_MS: "10000" }
  try {
    const r = await run(process.execPath, [HOSTS.pi.bin, "--offline", "-e", join(REPO, "editors/pi/src/index.ts"), "--provider", "e2e", "--model", "scripted", "-p", "Filter the big file with jq."], { cwd: w.ws, env, timeoutMs: 120_000 })
    assert.equal(r.code, 0, explain(r, srv))
    assert.ok(!r.timedOut, "pi -p ended on its own")
    const historian = srv.requests.find((q) => q.kind === "side" && JSON.stringify(q.body).includes("skill_observations"))
    assert.ok(historian, `the historian ran on the session's model: ${explain(r, srv)}`)
    assert.match(JSON.stringify(historian.body), /TC: skill\(jq\)/, "the chunk marks the skill's load")
    const recall = spawnSync(SKILLMEM, ["recall", SKILL, "--json", "--workspace", w.ws], { env, encoding: "utf8" })
    assert.equal(recall.status, 0, recall.stderr)
    assert.match(recall.stdout, new RegExp(OBSERVATION.replaceAll(".", "\\.")), `the observation was promoted: ${recall.stdout}`)
    rmSync(w.root, { recursive: true, force: true }) // kept when the test fails, for a look
  } finally {
    await srv.close()
  }
})
