// The plugin under Node against the real skillmem binary, with a host stand-in that calls
// the hooks the way OpenCode does (tool.definition, tool.execute.before/after, custom tools,
// compaction). SKILLMEM_BIN picks the binary (default: the workspace's target/debug build).

import { test } from "node:test"
import assert from "node:assert/strict"
import { mkdtempSync, mkdirSync, writeFileSync, chmodSync, existsSync, readFileSync } from "node:fs"
import { tmpdir } from "node:os"
import { join, resolve, dirname } from "node:path"
import { fileURLToPath } from "node:url"

import { SkillmemPlugin } from "../dist/index.js"
import { createHooks } from "../dist/hooks.js"
import { tool } from "@opencode-ai/plugin"
import { Schema } from "effect"

const here = dirname(fileURLToPath(import.meta.url))
const BIN = resolve(process.env.SKILLMEM_BIN ?? join(here, "../../../target/debug/skillmem"))

const SKILL_MD = `---
name: NAME
description: test skill
skill-memory:
  enabled: true
---
# NAME
`

function world() {
  const root = mkdtempSync(join(tmpdir(), "skillmem-opencode-"))
  const ws = join(root, "ws")
  const home = join(root, "home")
  const data = join(root, "data")
  for (const d of [ws, home, data]) mkdirSync(d, { recursive: true })
  const skill = (name) => {
    const dir = join(ws, ".opencode/skills", name)
    mkdirSync(dir, { recursive: true })
    writeFileSync(join(dir, "SKILL.md"), SKILL_MD.replaceAll("NAME", name))
    return dir
  }
  return { root, ws, home, data, skill, env: { HOME: home, SKILLMEM_HOME: data, SKILLMEM_LOG: "warn" } }
}

function logger() {
  const lines = []
  const log = (level, message) => {
    if (level !== "debug") lines.push({ level, message })
  }
  return { lines, log }
}

/** A host stand-in: calls the hooks in OpenCode's order for one skill tool call. */
let calls = 0
async function loadSkill(hooks, name, dir, intent) {
  const input = { tool: "skill", sessionID: "ses_1", callID: `call_${++calls}` }
  const before = { args: intent ? { name, intent } : { name } }
  await hooks["tool.execute.before"]?.(input, before)
  const output = {
    title: `Loaded skill: ${name}`,
    output: `<skill_content name="${name}">\n# ${name}\n\nBase directory for this skill: ${dir}\n</skill_content>`,
    metadata: { name, dir },
  }
  const original = output.output
  await hooks["tool.execute.after"]?.({ ...input, args: { name } }, output)
  return { output: output.output, original }
}

/**
 * The skill tool's definition as OpenCode 1.18.33 hands it to `tool.definition`: built with
 * the host's own schema library (effect 4) and checked against the recording from the real
 * host, so that the fixture cannot drift from what the host sends.
 */
const RECORDED = JSON.parse(readFileSync(join(here, "fixtures/tool-definition-opencode-1.18.33.json"), "utf8"))
function effectDefinition() {
  const parameters = Schema.Struct({ name: Schema.String.annotate({ description: "The name of the skill from available_skills" }) })
  const output = { description: "Load a skill", parameters, jsonSchema: undefined }
  assert.deepEqual(Object.keys(output), RECORDED.outputKeys)
  assert.deepEqual(Object.keys(parameters), RECORDED.parameterKeys)
  assert.deepEqual(JSON.parse(JSON.stringify(parameters)), RECORDED.parameters)
  return output
}

test("the Effect schema stand-in is what OpenCode 1.18.33 sends", () => {
  effectDefinition()
})

test("an Effect schema's AST alone still gives a JSON Schema (no effect module of that version)", async () => {
  const { effectToJsonSchema } = await import("../dist/hooks.js")
  const s = await effectToJsonSchema({ ast: RECORDED.parameters.ast })
  assert.deepEqual(s, { type: "object", properties: { name: { type: "string", description: "The name of the skill from available_skills" } }, required: ["name"], additionalProperties: false })
  assert.equal(await effectToJsonSchema({ ast: { _tag: "Declaration" } }), undefined)
})

const ctx = { sessionID: "ses_1", messageID: "msg_1", agent: "build", directory: "", worktree: "", abort: new AbortController().signal, metadata() {}, async ask() {} }

test("the module exports only plugin functions (OpenCode calls every export)", async () => {
  const mod = await import("../dist/index.js")
  assert.ok(Object.keys(mod).length > 0)
  for (const [name, value] of Object.entries(mod)) assert.equal(typeof value, "function", name)
})

test("a skill's second load shows what the agent noted after the first", async () => {
  assert.ok(existsSync(BIN), `build skillmem first (cargo build): ${BIN}`)
  const w = world()
  const dir = w.skill("csv-tools")
  const { lines, log } = logger()
  const hooks = await SkillmemPlugin({ directory: w.ws, worktree: w.ws }, { bin: BIN, env: w.env, log, timeoutMs: 2000 })
  try {
    // tool.definition: the skill tool gains an optional intent (JSON Schema form and jsonSchema form).
    const def = { description: "Load a skill", parameters: { type: "object", properties: { name: { type: "string" } }, required: ["name"] } }
    await hooks["tool.definition"]({ toolID: "skill" }, def)
    assert.equal(def.parameters.properties.intent.type, "string")
    assert.deepEqual(def.parameters.required, ["name"])
    // What OpenCode 1.18.33 really sends (recorded from the host, test/fixtures): an Effect
    // schema and no jsonSchema. The hook derives the JSON Schema and sets jsonSchema.
    const real = effectDefinition()
    await hooks["tool.definition"]({ toolID: "skill" }, real)
    assert.deepEqual(real.jsonSchema.required, ["name"])
    assert.equal(real.jsonSchema.properties.name.type, "string")
    assert.equal(real.jsonSchema.properties.name.description, "The name of the skill from available_skills")
    assert.equal(real.jsonSchema.properties.intent.type, "string", JSON.stringify(real.jsonSchema))
    assert.equal(real.parameters.ast._tag, "Objects", "the Effect schema itself is left as it was")
    // A host that already gives a jsonSchema gets it extended.
    const withJson = { description: "x", parameters: effectDefinition().parameters, jsonSchema: { type: "object", properties: { name: { type: "string" } } } }
    await hooks["tool.definition"]({ toolID: "skill" }, withJson)
    assert.ok(withJson.jsonSchema.properties.intent)
    // Older OpenCode hands the plugin a zod object: it is extended, not replaced.
    const zodForm = { description: "x", parameters: tool.schema.object({ name: tool.schema.string() }) }
    await hooks["tool.definition"]({ toolID: "skill" }, zodForm)
    assert.ok(zodForm.parameters.shape.intent)
    assert.ok(zodForm.parameters.safeParse({ name: "a" }).success, "intent stays optional")
    const bash = { description: "Run", parameters: { type: "object", properties: { command: { type: "string" } } } }
    await hooks["tool.definition"]({ toolID: "bash" }, bash)
    assert.equal(bash.parameters.properties.intent, undefined)

    const first = await loadSkill(hooks, "csv-tools", dir, "split a CSV export")
    assert.equal(first.output, first.original, "nothing to recall yet: output untouched")

    const noted = await hooks.tool.ctx_skill_note.execute(
      { skill: "csv-tools", kind: "gotcha", delta: "Excel exports start with a UTF-8 BOM; read them with utf-8-sig.", intent: "read an Excel export" },
      ctx,
    )
    assert.match(noted, /Saved as note \d+/)
    const again = await hooks.tool.ctx_skill_note.execute(
      { skill: "csv-tools", kind: "gotcha", delta: "Excel exports start with a UTF-8 BOM; read them with utf-8-sig.", intent: "read an Excel export" },
      ctx,
    )
    assert.match(again, /Already known/)

    const second = await loadSkill(hooks, "csv-tools", dir, "the first header has a BOM")
    assert.ok(second.output.startsWith(second.original + "\n\n<skill-memory skill=\"csv-tools\""), second.output)
    assert.match(second.output, /UTF-8 BOM/)
    assert.match(second.output, /ctx_skill_note/, "the guidance names the host's note tool")

    // A correction with the host's own tool takes the old note's place.
    const oldId = Number(/note (\d+)/.exec(noted)[1])
    const fixed = await hooks.tool.ctx_skill_note.execute(
      { skill: "csv-tools", kind: "gotcha", delta: "Excel exports start with a UTF-8 BOM; read them with encoding utf-8-sig, never plain utf-8.", replaces: oldId },
      ctx,
    )
    assert.match(fixed, new RegExp(`Saved as note \\d+, in the place of note ${oldId}\\.`), fixed)
    const third = await loadSkill(hooks, "csv-tools", dir, "the first header has a BOM")
    assert.match(third.output, /never plain utf-8/)
    assert.doesNotMatch(third.output, new RegExp(`<note id="${oldId}"`), "the replaced note left recall")

    const recalled = await hooks.tool.ctx_skill_recall.execute({ skill: "csv-tools", intent: "BOM" }, ctx)
    assert.match(recalled, /<skill-memory/)
    const none = await hooks.tool.ctx_skill_recall.execute({ skill: "nope" }, ctx)
    assert.match(none, /could not recall: .*nope/)

    // Other tools' output is left untouched (they are reported as the session's activity).
    const out = { title: "", output: "ls output", metadata: {} }
    await hooks["tool.execute.after"]({ tool: "bash", sessionID: "ses_1", callID: "c", args: {} }, out)
    assert.equal(out.output, "ls output")
    assert.deepEqual(lines.filter((l) => l.level !== "info"), [])
  } finally {
    await hooks.dispose()
  }
})

test("every tool call is reported and a deleted session counts the notes it used", async () => {
  const w = world()
  const dir = w.skill("aws-deploy")
  const { lines, log } = logger()
  const { hooks, sidecar } = createHooks({ directory: w.ws }, { bin: BIN, env: w.env, log, timeoutMs: 2000 })
  try {
    await hooks.tool.ctx_skill_note.execute(
      { skill: "aws-deploy", kind: "gotcha", delta: "aws s3 sync skips files of the same size; pass `--exact-timestamps` after a rebuild." },
      ctx,
    )
    const bash = async (callID, command, exit, output) => {
      const out = { title: command, output, metadata: { output, exit, description: "run it" } }
      await hooks["tool.execute.after"]({ tool: "bash", sessionID: "ses_use", callID, args: { command } }, out)
      assert.equal(out.output, output, "the result is untouched")
    }
    await bash("c1", "ls dist", 0, "index.html")
    const input = { tool: "skill", sessionID: "ses_use", callID: "c2" }
    const loaded = { title: "", output: `# aws-deploy\n\nBase directory for this skill: ${dir}\n`, metadata: { name: "aws-deploy", dir } }
    await hooks["tool.execute.after"]({ ...input, args: { name: "aws-deploy" } }, loaded)
    assert.match(loaded.output, /<skill-memory/)
    assert.match(loaded.output, / trust="unverified">/, "the agent's own note is unproven")
    assert.match(loaded.output, /ctx_skill_feedback \(verdict useful\|wrong\)/, "the guidance names the feedback tool")
    await bash("c3", "aws s3 sync dist s3://site", 1, "fatal error: Unable to locate credentials")
    await bash("c4", "aws s3 sync dist s3://site --exact-timestamps", 0, "upload: dist/index.html")
    await hooks.event({ event: { type: "session.deleted", properties: { info: { id: "ses_use" } } } })
    const r = await sidecar.request("skillmem/notes", { skill: "aws-deploy" }, 5000)
    // The agent's note (the session's end also mined c3 → c4 into a fix note of its own).
    const n = r.notes.find((x) => x.source === "agent")
    assert.deepEqual([n.shown, n.used, n.ignored], [1, 1, 0])
    assert.ok(n.usedAt > 0)
    // Used in another session than the one that wrote it (ses_1), but no session withheld it
    // yet, so its lift is unknown: counted, still unverified (docs/protocol.md, "Use and trust").
    assert.equal(n.trust, "unverified")
    // The agent's feedback: useful counts a use in its session, wrong retires.
    const said = await hooks.tool.ctx_skill_feedback.execute({ id: n.id, verdict: "useful" }, { ...ctx, sessionID: "ses_2" })
    assert.equal(said, `Noted: note ${n.id} helped (used in 2 sessions; trusted).`)
    const wrong = await hooks.tool.ctx_skill_feedback.execute({ id: n.id, verdict: "wrong", reason: "gone in v2" }, ctx)
    assert.match(wrong, /retired as wrong/)
    assert.deepEqual(lines.filter((l) => l.level !== "info"), [])
  } finally {
    await hooks.dispose()
  }
})

test("a bash call that fails after a skill load and works changed leaves a fix note when the session ends", async () => {
  const w = world()
  const dir = w.skill("npm")
  const { lines, log } = logger()
  const { hooks, sidecar } = createHooks({ directory: w.ws }, { bin: BIN, env: w.env, log, timeoutMs: 2000 })
  try {
    const input = { tool: "skill", sessionID: "ses_mine", callID: "c1" }
    const loaded = { title: "", output: `# npm\n\nBase directory for this skill: ${dir}\n`, metadata: { name: "npm", dir } }
    await hooks["tool.execute.after"]({ ...input, args: { name: "npm" } }, loaded)
    const bash = async (callID, command, exit, output) => {
      const out = { title: command, output, metadata: { output, exit, description: "install" } }
      await hooks["tool.execute.after"]({ tool: "bash", sessionID: "ses_mine", callID, args: { command, description: "install" } }, out)
    }
    await bash("c2", "npm ci", 1, "npm ERR! code ERESOLVE\nnpm ERR! ERESOLVE unable to resolve dependency tree\nnpm ERR! Found: react@18.2.0")
    await bash("c3", "npm ci --legacy-peer-deps", 0, "added 312 packages in 9s")
    assert.deepEqual((await sidecar.request("skillmem/notes", { skill: "npm" }, 5000)).notes, [], "nothing before the end")
    await hooks.event({ event: { type: "session.deleted", properties: { info: { id: "ses_mine" } } } })
    // A mined lesson is held in review until another session mines it (memory.minedSupport).
    assert.deepEqual((await sidecar.request("skillmem/notes", { skill: "npm" }, 5000)).notes, [], "held, not shown")
    const { notes } = await sidecar.request("skillmem/notes", { skill: "npm", pending: true }, 5000)
    assert.equal(notes.length, 1)
    const n = notes[0]
    assert.deepEqual([n.kind, n.source, n.trust, n.sessionId, n.pending], ["fix", "transcript", "unverified", "ses_mine", true])
    assert.equal(n.delta, "`npm ci` fails with `ERESOLVE unable to resolve dependency tree`; `npm ci --legacy-peer-deps` works.")
    const { key, sessions, ...quoted } = n.evidence
    assert.ok(key.startsWith("npm ci |"), key)
    assert.equal(sessions, 1)
    assert.deepEqual(quoted, {
      failedCall: "npm ci",
      errorLines: ["ERESOLVE unable to resolve dependency tree", "Found: react@18.2.0", "code ERESOLVE"],
      fixedCall: "npm ci --legacy-peer-deps",
      positions: [{ callId: "c2" }, { callId: "c3" }],
    })
    assert.deepEqual(lines.filter((l) => l.level !== "info"), [])
  } finally {
    await hooks.dispose()
  }
})

test("activityParams: the exit status says failed, and only a failed call's output is sent", async () => {
  const { activityParams } = await import("../dist/hooks.js")
  const inp = { sessionID: "s", callID: "c", tool: "bash", args: { command: "npm ci" } }
  assert.deepEqual(activityParams(inp, { output: "ok", metadata: { exit: 0, output: "ok" } }), {
    sessionId: "s", callId: "c", tool: "bash", args: { command: "npm ci" }, output: "", metadata: { exit: 0 },
  })
  const failed = activityParams(inp, { output: "npm ERR! code ERESOLVE", metadata: { exit: 1 } })
  assert.equal(failed.isError, true)
  assert.equal(failed.output, "npm ERR! code ERESOLVE")
  assert.equal(activityParams({ ...inp, tool: "read" }, { output: "x", metadata: {} }).metadata, null)
})

test("toolAfter fits in its 250 ms budget once the sidecar is warm", async () => {
  const w = world()
  const dir = w.skill("jq")
  const { log } = logger()
  const { hooks, sidecar } = createHooks({ directory: w.ws }, { bin: BIN, env: w.env, log })
  try {
    const t0 = performance.now()
    await sidecar.start()
    console.log(`sidecar cold start (spawn + initialize): ${(performance.now() - t0).toFixed(1)} ms`)
    await hooks.tool.ctx_skill_note.execute({ skill: "jq", kind: "fix", delta: "jq: error: Cannot index array with string: use .[] first." }, ctx)
    const times = []
    for (let i = 0; i < 20; i++) {
      const t = performance.now()
      const r = await loadSkill(hooks, "jq", dir, "index an array")
      times.push(performance.now() - t)
      assert.match(r.output, /<skill-memory/)
    }
    times.sort((a, b) => a - b)
    console.log(`toolAfter round trip over 20 loads: median ${times[10].toFixed(1)} ms, max ${times[19].toFixed(1)} ms`)
  } finally {
    await hooks.dispose()
  }
})

test("a missing binary fails open: output untouched, one log line, no throw", async () => {
  const w = world()
  const dir = w.skill("csv-tools")
  const { lines, log } = logger()
  const hooks = await SkillmemPlugin({ directory: w.ws }, { bin: join(w.root, "no-such-skillmem"), env: w.env, log })
  try {
    for (let i = 0; i < 3; i++) {
      const t = performance.now()
      const r = await loadSkill(hooks, "csv-tools", dir)
      assert.equal(r.output, r.original)
      assert.ok(performance.now() - t < 2000)
    }
    const def = { description: "d", parameters: { type: "object", properties: {} } }
    await hooks["tool.definition"]({ toolID: "skill" }, def)
    assert.deepEqual(def.parameters, { type: "object", properties: {} })
    const noted = await hooks.tool.ctx_skill_note.execute({ skill: "csv-tools", kind: "fix", delta: "x" }, ctx)
    assert.match(noted, /could not save the note/)
    const warns = lines.filter((l) => l.level === "warn")
    assert.equal(warns.length, 1, JSON.stringify(lines))
    assert.match(warns[0].message, /no-such-skillmem/)
  } finally {
    await hooks.dispose()
  }
})

test("a sidecar that never answers costs at most the budget", async () => {
  const w = world()
  const dir = w.skill("csv-tools")
  const fake = join(w.root, "silent-skillmem")
  writeFileSync(fake, "#!/bin/sh\nexec sleep 30\n")
  chmodSync(fake, 0o755)
  const { lines, log } = logger()
  const hooks = await SkillmemPlugin({ directory: w.ws }, { bin: fake, env: w.env, log, timeoutMs: 250 })
  try {
    const t = performance.now()
    const r = await loadSkill(hooks, "csv-tools", dir)
    const took = performance.now() - t
    assert.equal(r.output, r.original)
    // The budget is what ends the wait (generous upper bound: CI machines are shared).
    assert.ok(took >= 240 && took < 2000, `took ${took} ms`)
    assert.equal(lines.filter((l) => l.level === "warn").length, 1)
    assert.match(lines[0].message, /longer than 250 ms/)
  } finally {
    await hooks.dispose()
  }
})

test("a crashed sidecar is restarted on the next call", async () => {
  const w = world()
  const dir = w.skill("csv-tools")
  const { lines, log } = logger()
  const { hooks, sidecar } = createHooks({ directory: w.ws }, { bin: BIN, env: w.env, log, timeoutMs: 2000 })
  try {
    await sidecar.start()
    await hooks.tool.ctx_skill_note.execute({ skill: "csv-tools", kind: "workflow", delta: "Sort by the split column first." }, ctx)
    const pid = sidecar.pid
    process.kill(pid, "SIGKILL")
    await new Promise((r) => setTimeout(r, 100))
    const r = await loadSkill(hooks, "csv-tools", dir)
    assert.match(r.output, /Sort by the split column first/)
    assert.notEqual(sidecar.pid, pid)
    assert.equal(sidecar.starts, 2)
    assert.deepEqual(lines.filter((l) => l.level === "warn"), [])
  } finally {
    await hooks.dispose()
  }
})

test("a sidecar that exits at start (unwritable data dir) fails open and logs why", async () => {
  const w = world()
  const dir = w.skill("csv-tools")
  const blocker = join(w.root, "a-file")
  writeFileSync(blocker, "x")
  const { lines, log } = logger()
  const hooks = await SkillmemPlugin(
    { directory: w.ws },
    { bin: BIN, env: { ...w.env, SKILLMEM_HOME: join(blocker, "data") }, log, timeoutMs: 2000 },
  )
  try {
    const r = await loadSkill(hooks, "csv-tools", dir)
    assert.equal(r.output, r.original)
    const warns = lines.filter((l) => l.level === "warn")
    assert.equal(warns.length, 1, JSON.stringify(lines))
    assert.match(warns[0].message, /data directory/)
  } finally {
    await hooks.dispose()
  }
})

test("compaction: the historian's instructions join the prompt and the summary's observations are promoted", async () => {
  const w = world()
  const dir = w.skill("csv-tools")
  const { lines, log } = logger()
  const messages = [
    { info: { id: "m1", role: "user", sessionID: "ses_1" }, parts: [{ type: "text", text: "split the export by region" }] },
    {
      info: { id: "m2", role: "assistant", sessionID: "ses_1" },
      parts: [{ type: "tool", tool: "skill", callID: "c1", state: { status: "completed", input: { name: "csv-tools" }, output: `Base directory for this skill: ${dir}`, metadata: { dir } } }],
    },
  ]
  const client = { session: { messages: async () => ({ data: messages }) } }
  const hooks = await SkillmemPlugin({ directory: w.ws, client }, { bin: BIN, env: w.env, log })
  try {
    const out = { context: [] }
    await hooks["experimental.session.compacting"]({ sessionID: "ses_1" }, out)
    assert.equal(out.context.length, 1)
    assert.match(out.context[0], /<skill_observations>/)
    assert.match(out.context[0], /csv-tools/)
    // OpenCode writes the summary as an assistant message with summary: true.
    messages.push({
      info: { id: "m3", role: "assistant", sessionID: "ses_1", summary: true },
      parts: [{ type: "text", text: "Summary of the work.\n<skill_observations>\n* csv-tools | workflow | Sort by the split column before splitting; the splitter streams.\n</skill_observations>" }],
    })
    await hooks.event({ event: { type: "session.compacted", properties: { sessionID: "ses_1" } } })
    const recalled = await hooks.tool.ctx_skill_recall.execute({ skill: "csv-tools" }, ctx)
    assert.match(recalled, /Sort by the split column/)
    // A second compaction sends only the new messages: none with a skill, so no instructions.
    const again = { context: [] }
    messages.push({ info: { id: "m4", role: "user", sessionID: "ses_1" }, parts: [{ type: "text", text: "thanks" }] })
    await hooks["experimental.session.compacting"]({ sessionID: "ses_1" }, again)
    assert.deepEqual(again.context, [])
    assert.deepEqual(lines.filter((l) => l.level === "warn" || l.level === "error"), [])
  } finally {
    await hooks.dispose()
  }
})

test("compaction fails open when the host has no session client", async () => {
  const w = world()
  const { lines, log } = logger()
  const hooks = await SkillmemPlugin({ directory: w.ws }, { bin: BIN, env: w.env, log })
  try {
    const out = { context: [] }
    await hooks["experimental.session.compacting"]({ sessionID: "ses_1" }, out)
    await hooks.event({ event: { type: "session.compacted", properties: { sessionID: "ses_1" } } })
    await hooks.event({ event: { type: "session.idle", properties: {} } })
    assert.deepEqual(out.context, [])
    assert.deepEqual(lines.filter((l) => l.level === "warn" || l.level === "error"), [])
  } finally {
    await hooks.dispose()
  }
})

test("a read-only or missing workspace: nothing is written there, skills still recall", async () => {
  const w = world()
  const dir = w.skill("csv-tools")
  chmodSync(join(w.ws, ".opencode/skills/csv-tools"), 0o555)
  chmodSync(join(w.ws, ".opencode/skills"), 0o555)
  chmodSync(join(w.ws, ".opencode"), 0o555)
  chmodSync(w.ws, 0o555)
  const { lines, log } = logger()
  try {
    for (const directory of [w.ws, join(w.root, "no-such-workspace")]) {
      const hooks = await SkillmemPlugin({ directory }, { bin: BIN, env: w.env, log, timeoutMs: 2000 })
      try {
        // The first load tells the sidecar where the skill lives (metadata.dir), as OpenCode does.
        await loadSkill(hooks, "csv-tools", dir)
        const noted = await hooks.tool.ctx_skill_note.execute({ skill: "csv-tools", kind: "gotcha", delta: `Lesson seen from ${directory}.` }, ctx)
        assert.match(noted, /Saved as note/, directory)
        const r = await loadSkill(hooks, "csv-tools", dir)
        assert.match(r.output, /<skill-memory/, directory)
      } finally {
        await hooks.dispose()
      }
    }
    assert.deepEqual(lines.filter((l) => l.level === "warn" || l.level === "error"), [])
  } finally {
    chmodSync(w.ws, 0o755)
  }
})

test("a sidecar that dies in the middle of a call is a failure (logged once), then restarted", async () => {
  const w = world()
  const dir = w.skill("csv-tools")
  // A stand-in that answers initialize, then dies on the first request after it.
  const fake = join(w.root, "dying-skillmem")
  writeFileSync(
    fake,
    `#!/usr/bin/env node
let buf = Buffer.alloc(0); let n = 0
process.stdin.on("data", (d) => {
  buf = Buffer.concat([buf, d])
  for (;;) {
    const h = buf.indexOf("\\r\\n\\r\\n"); if (h < 0) return
    const len = Number(/Content-Length: (\\d+)/i.exec(buf.slice(0, h).toString())[1])
    if (buf.length < h + 4 + len) return
    const msg = JSON.parse(buf.slice(h + 4, h + 4 + len).toString()); buf = buf.slice(h + 4 + len)
    if (msg.method === "initialize") {
      const body = JSON.stringify({ jsonrpc: "2.0", id: msg.id, result: { capabilities: {} } })
      process.stdout.write("Content-Length: " + Buffer.byteLength(body) + "\\r\\n\\r\\n" + body)
    } else if (msg.id !== undefined && ++n >= 1) process.exit(3)
  }
})
`,
  )
  chmodSync(fake, 0o755)
  const { lines, log } = logger()
  const { hooks, sidecar } = createHooks({ directory: w.ws }, { bin: fake, env: w.env, log, timeoutMs: 2000 })
  try {
    for (let i = 0; i < 2; i++) {
      const r = await loadSkill(hooks, "csv-tools", dir)
      assert.equal(r.output, r.original)
    }
    assert.equal(lines.filter((l) => l.level === "warn").length, 1, JSON.stringify(lines))
    assert.ok(sidecar.starts >= 2, "restarted on the next call")
  } finally {
    await hooks.dispose()
  }
})
