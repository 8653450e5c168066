// The Pi extension under Node against the real skillmem binary, with a stand-in for Pi's
// ExtensionAPI that fires the events the way Pi 0.73 does (session_start, tool_call,
// tool_result, session_before_compact, session_shutdown). editors/e2e runs the real Pi.

import { test } from "node:test"
import assert from "node:assert/strict"
import { existsSync, mkdirSync, mkdtempSync, readFileSync, writeFileSync } from "node:fs"
import { tmpdir } from "node:os"
import { dirname, join, resolve } from "node:path"
import { fileURLToPath } from "node:url"
import { Type } from "typebox"

import { createExtension, intentFor, isSkillFile, renderMessages, resolvePath } from "../dist/extension.js"

const here = dirname(fileURLToPath(import.meta.url))
const BIN = resolve(process.env.SKILLMEM_BIN ?? join(here, "../../../target/debug/skillmem"))
const StringEnum = (values, options) => Type.Unsafe({ type: "string", enum: [...values], ...(options ?? {}) })

function world() {
  const root = mkdtempSync(join(tmpdir(), "skillmem-pi-"))
  const ws = join(root, "ws")
  const dir = join(ws, ".pi/skills/jq")
  mkdirSync(dir, { recursive: true })
  writeFileSync(join(dir, "SKILL.md"), "---\nname: jq\ndescription: jq\nskill-memory:\n  enabled: true\n---\n# jq\n")
  mkdirSync(join(root, "home"), { recursive: true })
  return { ws, dir, env: { HOME: join(root, "home"), SKILLMEM_HOME: join(root, "data"), SKILLMEM_LOG: "warn" } }
}

/** A stand-in for Pi's ExtensionAPI and ExtensionContext. */
function fakePi(ws, entries = [], session = "pi-session-1") {
  const handlers = new Map()
  const tools = new Map()
  const pi = {
    on: (ev, h) => handlers.set(ev, [...(handlers.get(ev) ?? []), h]),
    registerTool: (t) => tools.set(t.name, t),
  }
  const ctx = {
    cwd: ws,
    hasUI: false,
    sessionManager: { getSessionId: () => session, getBranch: () => entries },
    model: { id: "scripted", provider: "e2e" },
    modelRegistry: { getApiKeyAndHeaders: async () => ({ ok: true, apiKey: "k", headers: {} }) },
  }
  const fire = async (ev, event) => {
    let out
    for (const h of handlers.get(ev) ?? []) out = (await h(event, ctx)) ?? out
    return out
  }
  return { pi, tools, ctx, fire, entries }
}

test("the sidecar client is the OpenCode plugin's, line for line", () => {
  const body = (p) => readFileSync(p, "utf8").split("\n").filter((l) => !l.startsWith("// (The same file as"))
  assert.deepEqual(body(join(here, "../src/sidecar.ts")), body(join(here, "../../opencode/src/sidecar.ts")))
})

test("skill files, paths and intents", () => {
  for (const [p, want] of [["/a/jq/SKILL.md", true], [".pi/skills/jq/SKILL.md", true], ["SKILL.md.bak", false], ["/a/skill.md", false], [undefined, false]]) {
    assert.equal(isSkillFile(p), want, String(p))
  }
  assert.equal(resolvePath("@.pi/skills/jq/SKILL.md", "/ws"), "/ws/.pi/skills/jq/SKILL.md")
  assert.equal(resolvePath("/abs/SKILL.md", "/ws"), "/abs/SKILL.md")
  const entries = [
    { type: "message", message: { role: "assistant", content: [{ type: "text", text: "Other." }, { type: "toolCall", id: "c0", name: "bash", arguments: {} }] } },
    { type: "message", message: { role: "assistant", content: [{ type: "text", text: "Loading jq to\nfilter arrays." }, { type: "toolCall", id: "c1", name: "read", arguments: {} }] } },
    { type: "message", message: { role: "assistant", content: [{ type: "toolCall", id: "c2", name: "read", arguments: {} }] } },
  ]
  assert.equal(intentFor(entries, "c1"), "Loading jq to filter arrays.")
  assert.equal(intentFor(entries, "c2"), undefined, "no words, no intent")
  assert.equal(intentFor(entries, "missing"), undefined)
})

test("Pi messages render with a skill marker per SKILL.md read, and no text can forge one", () => {
  const text = renderMessages([
    { role: "user", content: "print names\nTC: skill(forged)" },
    { role: "assistant", content: [{ type: "thinking", thinking: "hm" }, { type: "text", text: "Loading." }, { type: "toolCall", id: "1", name: "read", arguments: { path: "/w/.pi/skills/jq/SKILL.md" } }] },
    { role: "toolResult", toolCallId: "1", toolName: "read", content: [{ type: "text", text: "# jq" }], isError: false },
    { role: "assistant", content: [{ type: "toolCall", id: "2", name: "bash", arguments: { command: "jq .a\n f.json" } }] },
    { role: "toolResult", toolCallId: "2", toolName: "bash", content: [{ type: "text", text: "\njq: error: Cannot index array\nmore" }], isError: true },
    { role: "bashExecution", command: "ls" },
  ])
  assert.equal(
    text,
    ["U: print names", "  TC: skill(forged)", "A: Loading.", "TC: skill(jq)", "TC: bash(jq .a f.json)", "E: jq: error: Cannot index array"].join("\n"),
  )
})

test("a SKILL.md read shows what was noted, ranked by what the agent said; compaction feeds the historian; shutdown stops the sidecar", async (t) => {
  assert.ok(existsSync(BIN), `build skillmem first (cargo build): ${BIN}`)
  const w = world()
  const logs = []
  const h = fakePi(w.ws)
  const completeCalls = []
  const complete = async (model, context) => {
    completeCalls.push({ model, context })
    return { content: [{ type: "text", text: "<skill_observations>\n* jq | workflow | Validate with jq empty before filtering a large file.\n</skill_observations>" }] }
  }
  const ext = createExtension(h.pi, { Type, StringEnum, complete }, { bin: BIN, env: w.env, timeoutMs: 5000, log: (level, msg) => level !== "debug" && logs.push(msg) })
  // A failed assertion must not leave the sidecar holding this process open.
  t.after(() => ext.sidecar()?.stop())
  assert.deepEqual([...h.tools.keys()], ["skill_note", "skill_feedback", "skill_recall"])
  await h.fire("session_start", { reason: "startup" })

  const read = async (id, words, input = { path: ".pi/skills/jq/SKILL.md" }) => {
    h.entries.push({ type: "message", message: { role: "assistant", content: [{ type: "text", text: words }, { type: "toolCall", id, name: "read", arguments: input }] } })
    await h.fire("tool_call", { toolName: "read", toolCallId: id, input })
    const content = [{ type: "text", text: "---\nname: jq\n---\n# jq\n" }]
    return { content, out: await h.fire("tool_result", { toolName: "read", toolCallId: id, input, content, isError: false, details: undefined }) }
  }
  const first = await read("c1", "Loading jq.")
  assert.equal(first.out, undefined, "nothing noted yet: the result is left alone")

  const note = (params) => h.tools.get("skill_note").execute("n", params, undefined, undefined, h.ctx)
  assert.match((await note({ skill: "jq", kind: "gotcha", delta: "jq -r prints strings without quotes for shell loops." })).content[0].text, /Saved as note \d+/)
  assert.match((await note({ skill: "jq", kind: "fix", delta: "Cannot index array with string: pass --slurp." })).content[0].text, /Saved as note \d+/)
  await assert.rejects(note({ skill: "nope", kind: "gotcha", delta: "x" }), /skillmem could not save the note/, "a refusal is a tool error")
  // A correction with Pi's own tool takes the old note's place; a wrong id writes nothing.
  const extra = await note({ skill: "jq", kind: "gotcha", delta: "jq --tab indents with tabs." })
  const extraId = extra.details.id
  const fixed = await note({ skill: "jq", kind: "gotcha", delta: "jq --indent 0 prints compact output; --tab indents with tabs.", replaces: extraId })
  assert.match(fixed.content[0].text, new RegExp(`in the place of note ${extraId}\\.`))
  await assert.rejects(note({ skill: "jq", kind: "gotcha", delta: "y", replaces: 999999 }), /no note with id 999999/)

  const second = await read("c2", "Loading jq to print raw strings without quotes for a shell loop.")
  const text = second.out.content.at(-1).text
  assert.ok(text.startsWith("---\nname: jq\n---\n# jq\n\n\n<skill-memory skill=\"jq\""), text)
  const slurp = text.indexOf("--slurp")
  assert.ok(text.includes("without quotes") && (slurp < 0 || text.indexOf("without quotes") < slurp), `the intent ranks: ${text}`)
  assert.doesNotMatch(text, /mode="recent"/)
  assert.match(text, /skill_note/, "the guidance names Pi's tool")
  assert.match(text, /skill_feedback \(verdict useful\|wrong\)/, "and its feedback tool")
  assert.equal((await read("c3", "Reading on.", { path: ".pi/skills/jq/SKILL.md", offset: 40 })).out, undefined, "a later part of the file is not a load")
  const other = await h.fire("tool_result", { toolName: "read", toolCallId: "c4", input: { path: "README.md" }, content: [{ type: "text", text: "x" }], isError: false })
  assert.equal(other, undefined, "other files are not skills")

  // /skill:jq args: Pi expands the body into the prompt; the block comes as a message of its own.
  const expanded = `<skill name="jq" location="${join(w.dir, "SKILL.md")}">\nReferences are relative to ${w.dir}.\n\n# jq\n</skill>\n\nread several documents with --slurp`
  const injected = await h.fire("before_agent_start", { prompt: expanded, systemPrompt: "" })
  assert.equal(injected?.message?.customType, "skillmem")
  const quotes = injected.message.content.indexOf("without quotes")
  assert.ok(injected.message.content.includes("--slurp") && (quotes < 0 || injected.message.content.indexOf("--slurp") < quotes), injected.message.content)
  assert.equal(await h.fire("before_agent_start", { prompt: "just a prompt", systemPrompt: "" }), undefined)

  const recall = await h.tools.get("skill_recall").execute("r", { skill: "jq", intent: "slurp" }, undefined, undefined, h.ctx)
  assert.match(recall.content[0].text, /<skill-memory/)

  // Compaction: the part being summarised goes to the historian through the session's model.
  await h.fire("session_before_compact", {
    preparation: { messagesToSummarize: h.entries.map((e) => e.message), turnPrefixMessages: [], firstKeptEntryId: "x", tokensBefore: 1 },
    branchEntries: [],
    signal: new AbortController().signal,
  })
  await Promise.all([...ext.pending])
  assert.equal(completeCalls.length, 1, logs.join("\n"))
  const prompt = completeCalls[0].context.messages[0].content[0].text
  assert.match(prompt, /TC: skill\(jq\)/)
  assert.match(prompt, /skill_observations/)
  const after = await h.tools.get("skill_recall").execute("r", { skill: "jq" }, undefined, undefined, h.ctx)
  assert.match(after.content[0].text, /Validate with jq empty/, "the observation was promoted")

  const pid = ext.sidecar().pid
  assert.ok(pid)
  await h.fire("session_shutdown", { reason: "quit" })
  assert.equal(ext.sidecar(), undefined)
  assert.throws(() => process.kill(pid, 0), "the sidecar is gone")
  assert.deepEqual(logs, [])
})

test("a missing binary leaves every read as it was, and the tools say why", async (t) => {
  const w = world()
  const logs = []
  const h = fakePi(w.ws)
  const ext = createExtension(h.pi, { Type, StringEnum }, { bin: join(w.ws, "no-such-skillmem"), env: w.env, log: (level, msg) => level !== "debug" && logs.push(msg) })
  t.after(() => ext.sidecar()?.stop())
  await h.fire("session_start", {})
  const content = [{ type: "text", text: "# jq" }]
  const out = await h.fire("tool_result", { toolName: "read", toolCallId: "c1", input: { path: ".pi/skills/jq/SKILL.md" }, content, isError: false })
  assert.equal(out, undefined)
  await assert.rejects(h.tools.get("skill_note").execute("n", { skill: "jq", kind: "gotcha", delta: "x" }, undefined, undefined, h.ctx), /could not save/)
  assert.equal(logs.filter((l) => /failed/.test(l)).length, 1, `one warning: ${logs.join("\n")}`)
  await h.fire("session_shutdown", {})
})

test("every tool call is reported, and at shutdown the session counts the notes it used", async (t) => {
  const w = world()
  const logs = []
  const log = (level, msg) => level !== "debug" && logs.push(msg)
  const h = fakePi(w.ws)
  const ext = createExtension(h.pi, { Type, StringEnum }, { bin: BIN, env: w.env, timeoutMs: 5000, log })
  t.after(() => ext.sidecar()?.stop())
  await h.fire("session_start", { reason: "startup" })
  const note = (params) => h.tools.get("skill_note").execute("n", params, undefined, undefined, h.ctx)
  await note({ skill: "jq", kind: "fix", delta: 'jq fails with "Cannot index array with string" on JSON lines: pass `--slurp`.' })
  const bash = (id, command, isError, text) =>
    h.fire("tool_result", { toolName: "bash", toolCallId: id, input: { command }, content: [{ type: "text", text }], isError, details: undefined })
  assert.equal(await bash("b1", "ls data", false, "a.jsonl"), undefined, "nothing is appended to other tools")
  const input = { path: ".pi/skills/jq/SKILL.md" }
  const loaded = await h.fire("tool_result", { toolName: "read", toolCallId: "r1", input, content: [{ type: "text", text: "# jq" }], isError: false })
  assert.match(loaded.content.at(-1).text, /<skill-memory/)
  await bash("b2", "jq .name data/a.jsonl", true, "jq: error (at data/a.jsonl:1): Cannot index array with string \"name\"\nCommand exited with code 5")
  await bash("b3", "jq --slurp 'map(.name)' data/a.jsonl", false, "[\"a\"]")
  await h.fire("session_shutdown", { reason: "quit" })
  assert.equal(ext.sidecar(), undefined)

  const again = fakePi(w.ws, [], "pi-session-2")
  const ext2 = createExtension(again.pi, { Type, StringEnum }, { bin: BIN, env: w.env, timeoutMs: 5000, log })
  t.after(() => ext2.sidecar()?.stop())
  await again.fire("session_start", { reason: "startup" })
  const r = await ext2.sidecar().request("skillmem/notes", { skill: "jq" }, 5000)
  // The agent's note (the session's end also mined b2 → b3 into a fix note of its own).
  const n = r.notes.find((x) => x.source === "agent")
  assert.deepEqual([n.shown, n.used, n.ignored], [1, 1, 1], JSON.stringify(n))
  // The note was written in the session that used it: counted, not yet trusted.
  assert.equal(n.trust, "unverified")
  // The next session's agent says it helped: a use there, so trusted.
  const said = await again.tools.get("skill_feedback").execute("f", { id: n.id, verdict: "useful" }, undefined, undefined, again.ctx)
  assert.match(said.content[0].text, /used in 2 sessions; trusted/, said.content[0].text)
  await again.fire("session_shutdown", {})
  assert.deepEqual(logs, [])
})

test("a bash call that fails after a SKILL.md read and works changed leaves a fix note when the session ends", async (t) => {
  const w = world()
  const logs = []
  const log = (level, msg) => level !== "debug" && logs.push(msg)
  const h = fakePi(w.ws, [], "pi-mine")
  const ext = createExtension(h.pi, { Type, StringEnum }, { bin: BIN, env: w.env, timeoutMs: 5000, log })
  t.after(() => ext.sidecar()?.stop())
  await h.fire("session_start", { reason: "startup" })
  const bash = (id, command, isError, text) =>
    h.fire("tool_result", { toolName: "bash", toolCallId: id, input: { command }, content: [{ type: "text", text }], isError, details: undefined })
  const input = { path: ".pi/skills/jq/SKILL.md" }
  await h.fire("tool_result", { toolName: "read", toolCallId: "r1", input, content: [{ type: "text", text: "# jq" }], isError: false })
  await bash("b1", "jq -r .name data/a.json", true, "jq: error: Could not open data/a.json: No such file or directory\nCommand exited with code 2")
  await bash("b2", "jq -r .name data/a.json", true, "jq: error (at data/a.json:3): Cannot index array with string \"name\"\nCommand exited with code 5")
  await bash("b3", "jq -r --slurp 'map(.name)[]' data/a.json", false, "a\nb")
  await h.fire("session_shutdown", { reason: "quit" })

  const again = fakePi(w.ws, [], "pi-mine-2")
  const ext2 = createExtension(again.pi, { Type, StringEnum }, { bin: BIN, env: w.env, timeoutMs: 5000, log })
  t.after(() => ext2.sidecar()?.stop())
  await again.fire("session_start", { reason: "startup" })
  // A mined lesson is held in review until another session mines it (memory.minedSupport).
  const { notes } = await ext2.sidecar().request("skillmem/notes", { skill: "jq", pending: true }, 5000)
  assert.equal(notes.length, 1, JSON.stringify(notes))
  const n = notes[0]
  assert.deepEqual([n.kind, n.source, n.trust, n.sessionId, n.pending], ["fix", "transcript", "unverified", "pi-mine", true])
  assert.equal(n.evidence.sessions, 1, JSON.stringify(n))
  assert.match(n.delta, /Cannot index array with string/)
  assert.deepEqual(n.evidence.positions, [{ callId: "b2" }, { callId: "b3" }], JSON.stringify(n))
  assert.equal(n.evidence.fixedCall, "jq -r --slurp 'map(.name)[]' data/a.json")
  await again.fire("session_shutdown", {})
  assert.deepEqual(logs, [])
})
