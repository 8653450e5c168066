// The OpenCode hooks of skillmem: skill loads get their `<skill-memory>` block, every other
// tool call is reported (the evidence of which notes a session used), a deleted session is
// ended, the agent gets `ctx_skill_note` / `ctx_skill_recall` / `ctx_skill_feedback`, and compaction feeds the
// historian where OpenCode offers the hooks. Every hook fails open: a missing, crashed or slow sidecar leaves the
// host's data exactly as it was (see Sidecar for the restart and log-once rules).

import type { Hooks, PluginInput } from "@opencode-ai/plugin"
import { tool } from "@opencode-ai/plugin"
import { Sidecar, message, type Level, type Log } from "./sidecar.js"

/** The names agents know the note tools by. */
export const NOTE_TOOL = "ctx_skill_note"
export const RECALL_TOOL = "ctx_skill_recall"
export const FEEDBACK_TOOL = "ctx_skill_feedback"

export interface SkillmemOptions {
  /** The skillmem binary; default `$SKILLMEM_BIN`, else `skillmem` on PATH. */
  bin?: string
  /** Budget of `toolAfter` in ms (start-up of the sidecar included); default 250. */
  timeoutMs?: number
  /** Budget of the note and recall tools and of the historian calls in ms; default 5000. */
  toolTimeoutMs?: number
  /** Extra environment for the sidecar (e.g. `SKILLMEM_HOME`). */
  env?: Record<string, string>
  /** Extra `initializationOptions` (e.g. `{ memory: { enabledSkills: ["*"] } }`). */
  initializationOptions?: Record<string, unknown>
  /** Where log lines go; default OpenCode's app log, else stderr. */
  log?: Log
}

const KINDS = `Kinds:
- gotcha: a trap that cost time (a flag that does not do what it says, an input that breaks the script);
- discovery: a fact about the skill or its tools you had to find out (an undocumented option, a limit);
- fix: an error message and what fixed it (quote the error);
- workflow: a step that must not be skipped, or an order that matters.`

const NOTE_DESCRIPTION = `Save a lesson about a skill to skill memory, so that the next load of that skill shows it.
Write a note only when you hit a gotcha, made a discovery, fixed an error, or found a step that must not be skipped; never for routine progress. One lesson per note, one or two sentences, concrete enough to act on without this conversation.
${KINDS}
Notes are per project by default; use scope "global" only for lessons true in every project.
To correct a note that turned out wrong or outdated, write the corrected lesson with replaces set to that note's id (as in <note id="…">): it takes the old note's place.`

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

const FEEDBACK_DESCRIPTION = `Say whether a note from skill memory helped: verdict "useful" when you applied it and it worked, "wrong" when it does not hold (it is retired with your reason; a person can restore it). Notes marked trust="unverified" are unproven until a session uses them; your verdict counts.`

/** What `skillmem/feedback` answers. */
export type FeedbackResult = { id: number; used: number; trust: string; retiredAt?: number }

/** The feedback tool's answer to the agent. */
export function feedbackText(r: FeedbackResult): string {
  return r.retiredAt !== undefined && r.retiredAt !== null
    ? `Note ${r.id} retired as wrong (kept as history; it can be restored).`
    : `Noted: note ${r.id} helped (used in ${r.used} sessions; ${r.trust}).`
}

const RECALL_DESCRIPTION = `Read skill memory: the lessons saved for a skill (gotchas, discoveries, error fixes, workflow steps), most relevant first for the intent you give. Skill loads already show them; use this to look again with another intent.`

type Json = Record<string, unknown>

function isSkillTool(name: unknown): boolean {
  return typeof name === "string" && name.toLowerCase() === "skill"
}

/** At most this much of a failed call's output goes to skillmem (it keeps the error lines). */
const FAILED_OUTPUT_MAX = 16_000

/** The exit status a tool's metadata carries (OpenCode's bash tool: `exit`). */
export function exitStatus(metadata: unknown): number | undefined {
  const m = metadata as Json | null | undefined
  if (!m || typeof m !== "object") return undefined
  for (const k of ["exit", "exitCode", "exit_code"]) {
    const v = m[k]
    if (typeof v === "number" && Number.isFinite(v)) return v
  }
  return undefined
}

/**
 * The `toolAfter` params of a call that is not a skill load: its arguments, its exit status,
 * and its output only when it failed (skillmem keeps a failed call's error lines).
 */
export function activityParams(inp: { sessionID: string; callID: string; tool: string; args?: unknown }, output: any): Json {
  const exit = exitStatus(output?.metadata)
  const failed = exit !== undefined && exit !== 0
  const text = typeof output?.output === "string" ? output.output : ""
  return {
    sessionId: inp.sessionID,
    callId: inp.callID,
    tool: inp.tool,
    args: inp.args ?? {},
    output: failed ? text.slice(-FAILED_OUTPUT_MAX) : "",
    ...(failed ? { isError: true } : {}),
    metadata: exit === undefined ? null : { exit },
  }
}

function isJsonSchemaObject(v: unknown): v is Json {
  return (
    !!v &&
    typeof v === "object" &&
    Object.getPrototypeOf(v) === Object.prototype &&
    ((v as Json).type === "object" || typeof (v as Json).properties === "object")
  )
}

/** An Effect schema (effect 4, as OpenCode 1.18 gives tool parameters): a Struct with an AST. */
function isEffectSchema(v: unknown): v is { ast: Json } {
  const ast = (v as { ast?: Json } | null)?.ast
  return !!v && typeof v === "object" && !!ast && typeof ast === "object" && typeof ast._tag === "string"
}

/**
 * The JSON Schema of an Effect schema: effect's own conversion (`Schema.toJsonSchemaDocument`),
 * else, for an object of plain fields, a schema built from the AST directly. Undefined when
 * neither gives an object schema.
 */
export async function effectToJsonSchema(schema: { ast: Json }): Promise<Json | undefined> {
  try {
    const S: any = await import("effect/Schema")
    const doc = S.toJsonSchemaDocument(schema)
    const out = doc?.schema as Json | undefined
    if (isJsonSchemaObject(out)) {
      const defs = doc.definitions as Json | undefined
      return defs && Object.keys(defs).length ? { ...out, $defs: defs } : { ...out }
    }
  } catch {
    // An effect of another major version, or a schema it cannot convert: read the AST.
  }
  return fromAst(schema.ast)
}

function fromAst(ast: Json): Json | undefined {
  if (ast?._tag !== "Objects" || !Array.isArray(ast.propertySignatures)) return undefined
  const properties: Json = {}
  const required: string[] = []
  for (const ps of ast.propertySignatures as Json[]) {
    if (typeof ps?.name !== "string") return undefined
    const type = ps.type as Json
    const prop = scalar(type)
    if (!prop) return undefined
    properties[ps.name] = prop
    const optional = (type as any)?.context?.isOptional === true || ps.isOptional === true
    if (!optional) required.push(ps.name)
  }
  return { type: "object", properties, required, additionalProperties: false }
}

function scalar(t: Json): Json | undefined {
  const kinds: Record<string, string> = { String: "string", Number: "number", Boolean: "boolean" }
  const type = kinds[t?._tag as string]
  if (!type) return undefined
  const description = (t.annotations as Json | undefined)?.description
  return typeof description === "string" ? { type, description } : { type }
}

function defaultLog(input: Partial<PluginInput>): Log {
  const app = (input.client as any)?.app
  return (level: Level, msg: string) => {
    if (level === "debug") return
    if (app?.log) {
      Promise.resolve(app.log({ body: { service: "skillmem", level, message: msg } })).catch(() =>
        process.stderr.write(`${msg}\n`),
      )
    } else {
      process.stderr.write(`${msg}\n`)
    }
  }
}

/** The hooks and the sidecar behind them (the sidecar is exposed for tests). */
export function createHooks(
  input: Partial<PluginInput> & { directory: string },
  options: SkillmemOptions = {},
): { hooks: Hooks; sidecar: Sidecar } {
  const log = options.log ?? defaultLog(input)
  const budget = options.timeoutMs ?? 250
  const toolBudget = options.toolTimeoutMs ?? 5000
  const sidecar = new Sidecar({
    bin: options.bin ?? process.env.SKILLMEM_BIN ?? "skillmem",
    // The repository root when there is one (OpenCode reports "/" as the worktree outside git).
    directory: input.worktree && input.worktree !== "/" ? input.worktree : input.directory,
    env: options.env ? { ...process.env, ...options.env } : process.env,
    initializationOptions: {
      ...(options.initializationOptions ?? {}),
      memory: {
        ...((options.initializationOptions?.memory as Json) ?? {}),
        noteTool: NOTE_TOOL,
        feedbackTool: FEEDBACK_TOOL,
      },
    },
    log,
  })
  // Warm up so that the first skill load fits in the budget; a failure is logged once.
  sidecar.start().catch((e) => sidecar.fail("start", e))

  let intentProperty: Json | undefined
  let noSchemaLogged = false
  const historianMissing = { logged: false }
  const sent = new Map<string, number>() // sessionID → messages already given to the historian
  const compacting = new Set<string>()
  const sessions = new Set<string>() // sessions whose calls were reported and not ended

  async function intentSchema(toolID: string): Promise<Json | undefined> {
    if (intentProperty) return intentProperty
    const r = await sidecar.request<{ parameters: Json }>(
      "skillmem/toolDefinition",
      { tool: toolID, parameters: { type: "object", properties: {} } },
      Math.min(toolBudget, 1000),
    )
    const p = (r.parameters?.properties as Json | undefined)?.intent as Json | undefined
    if (p) intentProperty = p
    return p
  }

  async function sessionMessages(sessionID: string): Promise<any[] | undefined> {
    const session = (input.client as any)?.session
    if (!session?.messages) return undefined
    const r = await session.messages({ path: { id: sessionID } })
    return Array.isArray(r) ? r : Array.isArray(r?.data) ? r.data : undefined
  }

  function historianUnavailable(e: unknown): boolean {
    // -32601: this skillmem has no historian methods yet.
    if ((e as { code?: number })?.code === -32601) {
      if (!historianMissing.logged) {
        historianMissing.logged = true
        log("info", "skillmem: this skillmem build has no historian; compaction runs without it")
      }
      return true
    }
    return false
  }

  const hooks: Hooks = {
    // The sidecar says once what `intent` looks like; after that it is added here, without a
    // round trip on every LLM request (toolDefinition is idempotent and only adds `intent`).
    "tool.definition": async (inp, output) => {
      if (!isSkillTool(inp.toolID)) return
      try {
        const out = output as { parameters: any; jsonSchema?: unknown }
        const withIntent = async (schema: Json): Promise<Json> => {
          const p = await intentSchema(inp.toolID)
          const props = (schema.properties as Json | undefined) ?? {}
          if (!p || "intent" in props) return schema
          return { ...schema, properties: { ...props, intent: p } }
        }
        let derived: Json | undefined
        if (isJsonSchemaObject(out.jsonSchema)) {
          out.jsonSchema = await withIntent(out.jsonSchema)
        } else if (isJsonSchemaObject(out.parameters)) {
          out.parameters = await withIntent(out.parameters)
        } else if (isEffectSchema(out.parameters) && (derived = await effectToJsonSchema(out.parameters))) {
          // OpenCode 1.18 hands over an Effect schema and no jsonSchema; a jsonSchema set here is
          // what the model sees, and OpenCode passes the extra argument on to the hooks.
          out.jsonSchema = await withIntent(derived)
        } else if (out.parameters && typeof out.parameters.extend === "function" && out.parameters.shape) {
          // A zod object (OpenCode before Effect schemas): extend it with an optional intent.
          if (!("intent" in out.parameters.shape)) {
            const p = await intentSchema(inp.toolID)
            if (p) {
              const desc = typeof p.description === "string" ? p.description : "What you are about to do with this skill."
              out.parameters = out.parameters.extend({ intent: tool.schema.string().optional().describe(desc) })
            }
          }
        } else {
          if (!noSchemaLogged) {
            noSchemaLogged = true
            log("warn", "skillmem: the skill tool's parameters have no schema this plugin can extend; skill loads rank without an intent")
          }
        }
      } catch (e) {
        sidecar.fail("toolDefinition", e)
      }
    },

    "tool.execute.before": async (inp, output) => {
      if (!isSkillTool(inp.tool)) return
      sidecar.notify("skillmem/toolBefore", {
        sessionId: inp.sessionID,
        callId: inp.callID,
        tool: inp.tool,
        args: output?.args ?? {},
      })
    },

    "tool.execute.after": async (inp, output) => {
      if (typeof inp?.sessionID === "string") sessions.add(inp.sessionID)
      if (!isSkillTool(inp.tool)) {
        // Every other call is the session's activity: reported without waiting for the answer
        // (skillmem answers it with nothing to append), in the order calls finish.
        sidecar
          .request("skillmem/toolAfter", activityParams(inp, output), toolBudget)
          .catch((e) => sidecar.fail("toolAfter", e))
        return
      }
      if (!output || typeof output.output !== "string") return
      try {
        const r = await sidecar.request<{ append: string | null }>(
          "skillmem/toolAfter",
          {
            sessionId: inp.sessionID,
            callId: inp.callID,
            tool: inp.tool,
            args: inp.args ?? {},
            output: output.output,
            metadata: output.metadata ?? null,
          },
          budget,
        )
        if (typeof r?.append === "string" && r.append) output.output += r.append
      } catch (e) {
        sidecar.fail("toolAfter", e)
      }
    },

    tool: {
      [NOTE_TOOL]: tool({
        description: NOTE_DESCRIPTION,
        args: {
          skill: tool.schema.string().describe("The skill the lesson is about (its name, as loaded)"),
          kind: tool.schema.enum(["gotcha", "discovery", "fix", "workflow"]).describe("The kind of lesson"),
          delta: tool.schema.string().describe("The lesson itself, in one or two sentences"),
          intent: tool.schema.string().optional().describe("What you were doing when you learned it"),
          scope: tool.schema
            .enum(["project", "global"])
            .optional()
            .describe("project (default): this project only; global: every project"),
          replaces: tool.schema
            .number()
            .int()
            .optional()
            .describe("The id of a note this lesson corrects (wrong or outdated): the new note takes its place"),
        },
        async execute(args, ctx) {
          try {
            const r = await sidecar.request<NoteResult>("skillmem/note", { sessionId: ctx?.sessionID, ...args }, toolBudget)
            return noteText(r)
          } catch (e) {
            sidecar.fail("note", e)
            return `skillmem could not save the note: ${message(e)}`
          }
        },
      }),
      [FEEDBACK_TOOL]: tool({
        description: FEEDBACK_DESCRIPTION,
        args: {
          id: tool.schema.number().int().describe("The note's id, as in <note id=\"…\">"),
          verdict: tool.schema.enum(["useful", "wrong"]).describe("useful: it helped; wrong: it does not hold"),
          reason: tool.schema.string().optional().describe("Why (kept with a note retired as wrong)"),
        },
        async execute(args, ctx) {
          try {
            const r = await sidecar.request<FeedbackResult>(
              "skillmem/feedback",
              { sessionId: ctx?.sessionID, ...args },
              toolBudget,
            )
            return feedbackText(r)
          } catch (e) {
            sidecar.fail("feedback", e)
            return `skillmem could not take the feedback: ${message(e)}`
          }
        },
      }),
      [RECALL_TOOL]: tool({
        description: RECALL_DESCRIPTION,
        args: {
          skill: tool.schema.string().describe("The skill whose lessons to read"),
          intent: tool.schema.string().optional().describe("What you are about to do (ranks the lessons)"),
        },
        async execute(args) {
          try {
            const r = await sidecar.request<{ block: string | null }>("skillmem/recall", args, toolBudget)
            return r.block ?? `No lessons saved for ${args.skill} yet.`
          } catch (e) {
            sidecar.fail("recall", e)
            return `skillmem could not recall: ${message(e)}`
          }
        },
      }),
    },

    // Historian: the new part of the session goes to skillmem, its instructions join the
    // compaction prompt, and the summary OpenCode writes comes back as observations.
    "experimental.session.compacting": async (inp, output) => {
      try {
        const all = await sessionMessages(inp.sessionID)
        if (!all) return
        const from = Math.min(sent.get(inp.sessionID) ?? 0, all.length)
        const messages = all.slice(from)
        if (!messages.length) return
        const r = await sidecar.request<{ instructions?: string }>(
          "skillmem/transcriptChunk",
          { sessionId: inp.sessionID, format: "opencode", messages },
          toolBudget,
        )
        sent.set(inp.sessionID, all.length)
        if (r?.instructions) {
          output.context.push(r.instructions)
          compacting.add(inp.sessionID)
        }
      } catch (e) {
        if (!historianUnavailable(e)) sidecar.fail("transcriptChunk", e)
      }
    },

    event: async ({ event }) => {
      const ev = event as { type: string; properties?: Json }
      if (ev.type === "session.deleted") {
        // The session is over: skillmem counts which notes it used.
        const id = (ev.properties?.info as Json | undefined)?.id ?? ev.properties?.sessionID
        if (typeof id !== "string" || !sessions.delete(id)) return
        try {
          await sidecar.request("skillmem/sessionEnd", { sessionId: id }, toolBudget)
        } catch (e) {
          sidecar.fail("sessionEnd", e)
        }
        return
      }
      if (ev.type !== "session.compacted") return
      const sessionID = ev.properties?.sessionID
      if (typeof sessionID !== "string" || !compacting.delete(sessionID)) return
      try {
        const all = await sessionMessages(sessionID)
        const summary = [...(all ?? [])].reverse().find((m) => m?.info?.role === "assistant" && m?.info?.summary)
        if (!summary) return
        const text = (summary.parts ?? [])
          .filter((p: any) => p?.type === "text" && typeof p.text === "string")
          .map((p: any) => p.text)
          .join("\n")
        if (!text) return
        await sidecar.request("skillmem/historianResult", { sessionId: sessionID, output: text }, toolBudget)
      } catch (e) {
        if (!historianUnavailable(e)) sidecar.fail("historianResult", e)
      }
    },

    dispose: async () => {
      // The sessions still open end with the sidecar's shutdown.
      sessions.clear()
      await sidecar.stop()
    },
  }
  return { hooks, sidecar }
}
