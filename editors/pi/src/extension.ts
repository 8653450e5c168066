// skillmem for Pi: a skill's lessons come back every time the agent reads its SKILL.md, the
// agent gets `skill_note` / `skill_recall`, and compaction feeds the historian.
//
// Pi lists skills in its system prompt and the agent loads one by reading its SKILL.md with
// the `read` tool, so a `read` of a file named SKILL.md is a skill load: the skill's folder is
// the file's folder, its name the folder's name, and the intent is what the agent wrote in
// the same message before the call (Pi's `read` has no room for one). The block is appended
// to that tool result. Every other tool call is reported too (the evidence of which notes a
// session used), and the session's end is said before the sidecar stops. Every hook fails open: a missing, crashed or slow sidecar leaves the
// result exactly as it was. The sidecar is stopped on `session_shutdown`: a child left running
// would keep `pi -p` alive.
//
// This module takes Pi's modules as arguments (index.ts passes them), so that it runs under
// plain Node in the tests.

import { basename, dirname, isAbsolute, resolve } from "node:path"
import { homedir } from "node:os"
import { Sidecar, message, type Level, type Log } from "./sidecar.js"

export const NOTE_TOOL = "skill_note"
export const RECALL_TOOL = "skill_recall"
export const FEEDBACK_TOOL = "skill_feedback"

/** What this extension uses of Pi's `ExtensionAPI` (0.73). */
export interface PiApi {
  on(event: string, handler: (event: any, ctx: any) => unknown): void
  registerTool(def: any): void
}

/** Pi's modules, given by index.ts: typebox's `Type`, pi-ai's `StringEnum` and `complete`. */
export interface PiModules {
  Type: any
  StringEnum: (values: readonly string[], options?: Record<string, unknown>) => any
  complete?: (model: any, context: any, options?: any) => Promise<any>
}

export interface SkillmemPiOptions {
  /** The skillmem binary; default `$SKILLMEM_BIN`, else `skillmem` on PATH. */
  bin?: string
  /** Budget of one skill load's recall in ms, sidecar start included; default `$SKILLMEM_TIMEOUT_MS`, else 250. */
  timeoutMs?: number
  /** Budget of the note and recall tools and of the historian calls in ms; default 5000. */
  toolTimeoutMs?: number
  /** Budget of the historian's own summary (a model call at compaction) in ms; default 60000. */
  historianTimeoutMs?: number
  /** Extra environment for the sidecar. */
  env?: Record<string, string>
  /** Extra `initializationOptions`. */
  initializationOptions?: Record<string, unknown>
  /** Where log lines go; default Pi's notifications when it has a UI, else stderr. */
  log?: Log
}

/** What `skillmem/note` answers. */
export type NoteResult = { id: number; status: string; replaced?: number; conflictsWith?: number }

/** The note tool's answer to the agent. */
export function noteText(r: NoteResult): string {
  let s =
    r.status === "duplicate"
      ? `Already known (note ${r.id}); its weight went up.`
      : r.status === "replaced" && r.replaced !== undefined
        ? `Saved as note ${r.id}, in the place of note ${r.replaced}.`
        : `Saved as note ${r.id}.`
  if (r.conflictsWith !== undefined) {
    s += ` Note ${r.conflictsWith} reads as an older version of it; both are kept and the new one leads. If note ${r.conflictsWith} no longer holds, correct it with replaces.`
  }
  return s
}

const KINDS = `Kinds:
- gotcha: a trap that cost time (a flag that does not do what it says, an input that breaks the script);
- discovery: a fact about the skill or its tools you had to find out (an undocumented option, a limit);
- fix: an error message and what fixed it (quote the error);
- workflow: a step that must not be skipped, or an order that matters.`

const NOTE_DESCRIPTION = `Save a lesson about a skill to skill memory, so that the next time its SKILL.md is read the lesson is shown with it.
Write a note only when you hit a gotcha, made a discovery, fixed an error, or found a step that must not be skipped; never for routine progress. One lesson per note, one or two sentences, concrete enough to act on without this conversation.
${KINDS}
Notes are per project by default; use scope "global" only for lessons true in every project.
To correct a note that turned out wrong or outdated, write the corrected lesson with replaces set to that note's id (as in <note id="…">): it takes the old note's place.`

const RECALL_DESCRIPTION = `Read skill memory: the lessons saved for a skill (gotchas, discoveries, error fixes, workflow steps), most relevant first for the intent you give. Reading a skill's SKILL.md already shows them; use this to look again with another intent.`

const GUIDELINES = [
  "Before you read a skill's SKILL.md, say in one short sentence what you are about to do with the skill: skill memory ranks the lessons it appends to the file by that sentence.",
  `Use ${NOTE_TOOL} when, while using a skill, you hit a gotcha, find something out, fix an error or find a step that must not be skipped; never for routine progress.`,
]

const HISTORIAN_PROMPT = `You are the historian of a coding-agent session. The conversation below is a part of the session that is being compacted. Follow the instructions and answer only with what they ask for.`

/** True for a path whose file is a skill's SKILL.md. */
export function isSkillFile(path: unknown): path is string {
  return typeof path === "string" && basename(path.trim()) === "SKILL.md"
}

/** The absolute path a `read` call names (Pi strips a leading `@`, expands `~`). */
export function resolvePath(path: string, cwd: string): string {
  let p = path.trim().replace(/^@/, "")
  if (p === "~" || p.startsWith("~/")) p = homedir() + p.slice(1)
  return isAbsolute(p) ? p : resolve(cwd, p)
}

function textOf(content: unknown): string {
  if (typeof content === "string") return content
  if (!Array.isArray(content)) return ""
  return content
    .filter((b: any) => b?.type === "text" && typeof b.text === "string")
    .map((b: any) => b.text)
    .join("\n")
}

/** At most this much of a failed call's output goes to skillmem (it keeps the error lines). */
const FAILED_OUTPUT_MAX = 16_000

/**
 * The `toolAfter` params of a call that is not a skill load (Pi's `tool_result` event): its
 * input as the arguments, `isError`, an exit status its details carry, and its output only
 * when it failed.
 */
export function activityParams(sessionId: string, event: any): Record<string, unknown> {
  const failed = event?.isError === true
  const details = event?.details
  const exit = ["exitCode", "exit", "exit_code"]
    .map((k) => (details && typeof details === "object" ? details[k] : undefined))
    .find((v) => typeof v === "number")
  return {
    sessionId,
    callId: String(event?.toolCallId ?? ""),
    tool: event.toolName,
    args: event?.input ?? {},
    output: failed ? textOf(event?.content).slice(-FAILED_OUTPUT_MAX) : "",
    isError: failed,
    metadata: exit === undefined ? null : { exit },
  }
}

/** What the agent wrote in the message that holds tool call `id`: the call's intent. */
export function intentFor(entries: any[], id: string): string | undefined {
  for (let i = entries.length - 1; i >= 0; i--) {
    const m = entries[i]?.type === "message" ? entries[i].message : entries[i]
    if (m?.role !== "assistant" || !Array.isArray(m.content)) continue
    if (!m.content.some((b: any) => b?.type === "toolCall" && b.id === id)) continue
    const t = textOf(m.content).replace(/\s+/g, " ").trim()
    return t ? t.slice(0, 500) : undefined
  }
  return undefined
}

function oneLine(s: string, max: number): string {
  const t = s.replace(/\s+/g, " ").trim()
  return t.length > max ? `${t.slice(0, max - 1)}…` : t
}

/**
 * Pi's messages as the compact text skillmem's historian reads (`format: "text"`): `U:` / `A:`
 * lines, `TC: tool(summary)` per call, `E:` for a failed call, and `TC: skill(<name>)` for every
 * read of a SKILL.md. Continuation lines are indented, so no text can pass for a marker.
 */
export function renderMessages(messages: any[]): string {
  const out: string[] = []
  const push = (prefix: string, text: string) => {
    const t = text.trim().slice(0, 2000)
    if (!t) return
    const [first, ...rest] = t.split("\n")
    out.push(`${prefix}: ${first}`, ...rest.map((l) => `  ${l}`))
  }
  for (const m of messages ?? []) {
    if (m?.role === "user") push("U", textOf(m.content))
    else if (m?.role === "assistant" && Array.isArray(m.content)) {
      for (const b of m.content) {
        if (b?.type === "text") push("A", b.text ?? "")
        else if (b?.type === "toolCall") {
          const args = b.arguments ?? {}
          if (b.name === "read" && isSkillFile(args.path)) {
            out.push(`TC: skill(${basename(dirname(args.path.trim()))})`)
          } else {
            const s = args.command ?? args.path ?? args.pattern ?? args.url ?? args.query ?? JSON.stringify(args)
            out.push(`TC: ${b.name}(${oneLine(String(s), 240)})`)
          }
        }
      }
    } else if (m?.role === "toolResult" && m.isError) {
      const first = textOf(m.content).split("\n").find((l) => l.trim())
      if (first) out.push(`E: ${oneLine(first, 240)}`)
    }
  }
  return out.join("\n")
}

/** Registers the hooks and tools on `pi`; returns the sidecar getter (for tests). */
export function createExtension(pi: PiApi, mods: PiModules, options: SkillmemPiOptions = {}) {
  const envBudget = Number(process.env.SKILLMEM_TIMEOUT_MS)
  const budget = options.timeoutMs ?? (envBudget > 0 ? envBudget : 250)
  const toolBudget = options.toolTimeoutMs ?? 5000
  const historianBudget = options.historianTimeoutMs ?? 60000
  let lastCtx: any
  const log: Log =
    options.log ??
    ((level: Level, msg: string) => {
      if (level === "debug" && !process.env.SKILLMEM_PI_DEBUG) return
      if (lastCtx?.hasUI && lastCtx.ui?.notify) lastCtx.ui.notify(msg, level === "error" ? "error" : level === "warn" ? "warning" : "info")
      else process.stderr.write(`${msg}\n`)
    })
  let sidecar: Sidecar | undefined
  const intents = new Map<string, string>()
  const sessions = new Set<string>() // sessions whose calls were reported
  const pending = new Set<Promise<unknown>>()

  function side(ctx: any): Sidecar {
    if (ctx) lastCtx = ctx
    if (!sidecar) {
      const directory = typeof ctx?.cwd === "string" && ctx.cwd ? ctx.cwd : process.cwd()
      sidecar = new Sidecar({
        bin: options.bin ?? process.env.SKILLMEM_BIN ?? "skillmem",
        directory,
        env: options.env ? { ...process.env, ...options.env } : process.env,
        initializationOptions: {
          ...(options.initializationOptions ?? {}),
          memory: {
            ...((options.initializationOptions?.memory as Record<string, unknown>) ?? {}),
            noteTool: NOTE_TOOL,
            feedbackTool: FEEDBACK_TOOL,
          },
        },
        log,
      })
      const s = sidecar
      s.start().catch((e) => s.fail("start", e))
    }
    return sidecar
  }

  function sessionId(ctx: any): string | undefined {
    try {
      return ctx?.sessionManager?.getSessionId?.()
    } catch {
      return undefined
    }
  }

  // Warm up, so that the first skill load fits in the budget.
  pi.on("session_start", async (_event, ctx) => {
    side(ctx)
  })

  // The intent: what the agent wrote in the message that asks for the SKILL.md.
  pi.on("tool_call", async (event, ctx) => {
    if (event?.toolName !== "read" || !isSkillFile(event.input?.path)) return
    try {
      const entries = ctx?.sessionManager?.getBranch?.() ?? []
      const intent = intentFor(entries, event.toolCallId)
      if (intent) intents.set(event.toolCallId, intent)
      if (intents.size > 256) intents.delete(intents.keys().next().value as string)
    } catch (e) {
      log("debug", `skillmem: no intent for ${event.toolCallId}: ${message(e)}`)
    }
  })

  pi.on("tool_result", async (event, ctx) => {
    const load = event?.toolName === "read" && !event.isError && isSkillFile(event.input?.path)
    if (!load) {
      // The session's activity: reported without waiting (nothing is appended to it).
      const sid = sessionId(ctx)
      if (!sid || typeof event?.toolName !== "string") return
      const s = side(ctx)
      sessions.add(sid)
      s.request("skillmem/toolAfter", activityParams(sid, event), toolBudget).catch((e) => s.fail("toolAfter", e))
      return
    }
    const intent = intents.get(event.toolCallId)
    intents.delete(event.toolCallId)
    // A read of a later part of the file is not a load.
    if (Number(event.input?.offset ?? 1) > 1) return
    const s = side(ctx)
    const cwd = typeof ctx?.cwd === "string" ? ctx.cwd : process.cwd()
    const dir = dirname(resolvePath(event.input.path, cwd))
    const content: any[] = Array.isArray(event.content) ? event.content : []
    try {
      const r = await s.request<{ append: string | null }>(
        "skillmem/toolAfter",
        {
          sessionId: sessionId(ctx),
          callId: event.toolCallId,
          tool: "skill",
          args: { name: basename(dir), ...(intent ? { intent } : {}) },
          output: textOf(content),
          metadata: { dir },
        },
        budget,
      )
      if (typeof r?.append !== "string" || !r.append) return
      const last = content[content.length - 1]
      if (last?.type === "text" && typeof last.text === "string") {
        return { content: [...content.slice(0, -1), { ...last, text: last.text + r.append }] }
      }
      return { content: [...content, { type: "text", text: r.append.replace(/^\n+/, "") }] }
    } catch (e) {
      s.fail("toolAfter", e)
      return
    }
  })

  // `/skill:name args`: Pi puts the skill's body into the prompt itself (no read); the block
  // joins the prompt as a message of its own, with the command's arguments as the intent.
  pi.on("before_agent_start", async (event, ctx) => {
    const m = /^<skill name="([^"]*)" location="([^"]+)">/.exec(typeof event?.prompt === "string" ? event.prompt : "")
    if (!m || !isSkillFile(m[2])) return
    const s = side(ctx)
    const dir = dirname(m[2])
    const end = event.prompt.indexOf("</skill>")
    const intent = end >= 0 ? event.prompt.slice(end + "</skill>".length).trim().slice(0, 500) : ""
    try {
      const r = await s.request<{ append: string | null }>(
        "skillmem/toolAfter",
        {
          sessionId: sessionId(ctx),
          callId: `skill-command-${Date.now()}`,
          tool: "skill",
          args: { name: basename(dir), ...(intent ? { intent } : {}) },
          output: "",
          metadata: { dir },
        },
        budget,
      )
      if (typeof r?.append !== "string" || !r.append.trim()) return
      return { message: { customType: "skillmem", content: r.append.trim(), display: true } }
    } catch (e) {
      s.fail("toolAfter", e)
      return
    }
  })

  const { Type, StringEnum } = mods
  pi.registerTool({
    name: NOTE_TOOL,
    label: "Skill note",
    description: NOTE_DESCRIPTION,
    promptSnippet: "Save a lesson about a skill (gotcha, discovery, fix, workflow) to skill memory",
    promptGuidelines: GUIDELINES,
    parameters: Type.Object({
      skill: Type.String({ description: "The skill the lesson is about (its name: the folder of its SKILL.md)" }),
      kind: StringEnum(["gotcha", "discovery", "fix", "workflow"], { description: "The kind of lesson" }),
      delta: Type.String({ description: "The lesson itself, in one or two sentences" }),
      intent: Type.Optional(Type.String({ description: "What you were doing when you learned it" })),
      scope: Type.Optional(StringEnum(["project", "global"], { description: "project (default): this project only; global: every project" })),
      replaces: Type.Optional(Type.Integer({ description: "The id of a note this lesson corrects (wrong or outdated): the new note takes its place" })),
    }),
    async execute(_id: string, params: any, _signal: unknown, _onUpdate: unknown, ctx: any) {
      const r = await side(ctx)
        .request<NoteResult>("skillmem/note", { sessionId: sessionId(ctx), ...params }, toolBudget)
        .catch((e) => {
          throw new Error(`skillmem could not save the note: ${message(e)}`)
        })
      const text = noteText(r)
      return { content: [{ type: "text", text }], details: r }
    },
  })
  pi.registerTool({
    name: FEEDBACK_TOOL,
    label: "Skill feedback",
    description:
      'Say whether a note from skill memory helped: verdict "useful" when you applied it and it worked, "wrong" when it does not hold (it is retired with your reason; a person can restore it). Notes marked trust="unverified" are unproven until a session uses them.',
    promptSnippet: "Say whether a skill-memory note helped (useful) or is wrong",
    parameters: Type.Object({
      id: Type.Integer({ description: "The note's id, as in <note id=\"…\">" }),
      verdict: StringEnum(["useful", "wrong"], { description: "useful: it helped; wrong: it does not hold" }),
      reason: Type.Optional(Type.String({ description: "Why (kept with a note retired as wrong)" })),
    }),
    async execute(_id: string, params: any, _signal: unknown, _onUpdate: unknown, ctx: any) {
      const r = await side(ctx)
        .request<{ id: number; used: number; trust: string; retiredAt?: number | null }>(
          "skillmem/feedback",
          { sessionId: sessionId(ctx), ...params },
          toolBudget,
        )
        .catch((e) => {
          throw new Error(`skillmem could not take the feedback: ${message(e)}`)
        })
      const text =
        r.retiredAt !== undefined && r.retiredAt !== null
          ? `Note ${r.id} retired as wrong (kept as history; it can be restored).`
          : `Noted: note ${r.id} helped (used in ${r.used} sessions; ${r.trust}).`
      return { content: [{ type: "text", text }], details: r }
    },
  })
  pi.registerTool({
    name: RECALL_TOOL,
    label: "Skill recall",
    description: RECALL_DESCRIPTION,
    parameters: Type.Object({
      skill: Type.String({ description: "The skill whose lessons to read" }),
      intent: Type.Optional(Type.String({ description: "What you are about to do (ranks the lessons)" })),
    }),
    async execute(_id: string, params: any, _signal: unknown, _onUpdate: unknown, ctx: any) {
      const r = await side(ctx)
        .request<{ block: string | null }>("skillmem/recall", params, toolBudget)
        .catch((e) => {
          throw new Error(`skillmem could not recall: ${message(e)}`)
        })
      return { content: [{ type: "text", text: r.block ?? `No lessons saved for ${params.skill} yet.` }], details: {} }
    },
  })

  // Historian. Pi's summariser takes no extra instructions, so the part being compacted is
  // rendered here, skillmem says what to look for, and a call of the session's own model
  // writes the observations; compaction itself goes on as Pi does it, without waiting.
  async function historian(event: any, ctx: any): Promise<void> {
    const s = side(ctx)
    const prep = event?.preparation ?? {}
    const text = renderMessages([...(prep.messagesToSummarize ?? []), ...(prep.turnPrefixMessages ?? [])])
    if (!text) return
    const sid = sessionId(ctx)
    const chunk = await s.request<{ instructions?: string; rendered?: string }>(
      "skillmem/transcriptChunk",
      { sessionId: sid, format: "text", text },
      toolBudget,
    )
    if (!chunk?.instructions) return // no skill with memory was used
    const model = ctx?.model
    if (!model || !mods.complete) {
      log("info", "skillmem: no model to run the historian with; compaction runs without it")
      return
    }
    const auth = await ctx.modelRegistry?.getApiKeyAndHeaders?.(model)
    if (auth && auth.ok === false) {
      log("warn", `skillmem: historian skipped: ${auth.error ?? "no credentials for the session's model"}`)
      return
    }
    const prompt = `${HISTORIAN_PROMPT}\n\n${chunk.instructions}\n\n<conversation>\n${chunk.rendered ?? text}\n</conversation>`
    const controller = new AbortController()
    const timer = setTimeout(() => controller.abort(), historianBudget)
    try {
      const reply = await mods.complete(
        model,
        { messages: [{ role: "user", content: [{ type: "text", text: prompt }], timestamp: Date.now() }] },
        { apiKey: auth?.apiKey, headers: auth?.headers, maxTokens: 2048, signal: controller.signal },
      )
      const output = textOf(reply?.content)
      if (!output.trim()) return
      await s.request("skillmem/historianResult", { sessionId: sid, output }, toolBudget)
    } finally {
      clearTimeout(timer)
    }
  }

  pi.on("session_before_compact", async (event, ctx) => {
    const job = historian(event, ctx).catch((e) => sidecar?.fail("historian", e) ?? log("warn", `skillmem: historian: ${message(e)}`))
    pending.add(job)
    job.finally(() => pending.delete(job))
    // Nothing returned: Pi compacts as it always does.
  })

  pi.on("session_shutdown", async (_event, ctx) => {
    if (pending.size) {
      await Promise.race([Promise.allSettled([...pending]), new Promise((r) => setTimeout(r, toolBudget))])
    }
    // The session is over: skillmem counts which notes it used.
    const sid = sessionId(ctx)
    if (sidecar && sid && sessions.delete(sid)) {
      await sidecar.request("skillmem/sessionEnd", { sessionId: sid }, toolBudget).catch((e) => sidecar?.fail("sessionEnd", e))
    }
    const s = sidecar
    sidecar = undefined
    await s?.stop()
  })

  return { sidecar: () => sidecar, pending }
}
