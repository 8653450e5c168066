// OpenCode 1.18.33's auto-compaction for real: the skill load's turn reports a context near the
// model's limit, so OpenCode compacts before the next step. The plugin's
// experimental.session.compacting hook must add skillmem's instructions to the compaction
// prompt, and after the session.compacted event the summary's observation must be promoted.

import { test } from "node:test"
import assert from "node:assert/strict"
import { rmSync, writeFileSync } from "node:fs"
import { join } from "node:path"
import { pathToFileURL } from "node:url"
import { spawnSync } from "node:child_process"

import { startModelServer } from "../lib/model-server.mjs"
import { HOSTS, REPO, SKILL, SKILLMEM, baseEnv, explain, preflight, run, world } from "../lib/world.mjs"

const OBSERVATION = "Validate the input with jq empty before filtering a large file."
const asksForObservations = (body) => JSON.stringify(body ?? "").includes("skill_observations")

test(`OpenCode ${HOSTS.opencode.version}: compaction carries skillmem's instructions, and the summary's observation becomes a note`, { timeout: 600_000 }, async () => {
  assert.deepEqual(preflight("opencode"), [])
  const w = world("opencode-compact", ".agents/skills")
  const srv = await startModelServer({
    isAgent: (tools) => tools.includes("skill"),
    script: (step) =>
      step === 0
        ? { text: "Loading jq.", tools: [{ name: "skill", input: { name: SKILL, intent: "filter a large file" } }], promptTokens: 99_000 }
        : { text: "done" },
    // The compaction agent has no tools: a side request. It answers the instructions when given them.
    side: (body) =>
      asksForObservations(body)
        ? { text: `## Summary\nFiltered a file with jq.\n<skill_observations>\n* ${SKILL} | workflow | ${OBSERVATION}\n</skill_observations>` }
        : { text: "ok" },
  })
  const plugin = pathToFileURL(join(REPO, "editors/opencode/src/index.ts")).href
  writeFileSync(
    join(w.ws, "opencode.json"),
    JSON.stringify({
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
    const r = await run(HOSTS.opencode.bin, ["run", "--print-logs", "Filter the big file with jq."], { cwd: w.ws, env, timeoutMs: 300_000 })
    assert.equal(r.code, 0, explain(r, srv))
    const compaction = srv.requests.find((q) => q.kind === "side" && JSON.stringify(q.body).includes("<conversation>"))
    assert.ok(compaction, `OpenCode compacted: ${explain(r, srv)}`)
    assert.ok(asksForObservations(compaction.body), "the plugin's instructions joined the compaction prompt")
    const recall = spawnSync(SKILLMEM, ["recall", SKILL, "--json", "--workspace", w.ws], { env, encoding: "utf8" })
    assert.equal(recall.status, 0, recall.stderr)
    assert.match(recall.stdout, /Validate the input with jq empty/, `the summary's observation was promoted: ${recall.stdout}`)
    rmSync(w.root, { recursive: true, force: true }) // kept when the test fails, for a look
  } finally {
    await srv.close()
  }
})
