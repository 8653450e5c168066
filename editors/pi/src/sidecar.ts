// (The same file as editors/opencode/src/sidecar.ts; test/sidecar-copy.test.mjs keeps them equal.)
// One `skillmem serve` child per workspace, spoken to with vscode-jsonrpc over stdio.
//
// Owns the process's life: it starts on first use, and when it is missing, crashes or its
// `initialize` fails, every pending call fails fast, the failure is logged once, and the next
// call starts a fresh child. Callers give each call a time budget; a late answer is dropped,
// never awaited past the budget. Nothing here throws into the host: callers catch.

import { spawn, type ChildProcess } from "node:child_process"
import { existsSync } from "node:fs"
import { pathToFileURL } from "node:url"
import {
  ErrorCodes,
  ResponseError,
  createMessageConnection,
  StreamMessageReader,
  StreamMessageWriter,
  type MessageConnection,
} from "vscode-jsonrpc/node"

export type Level = "debug" | "info" | "warn" | "error"
export type Log = (level: Level, message: string) => void

export interface SidecarOptions {
  /** The skillmem binary (a path, or a name on PATH). */
  bin: string
  /** The workspace: its project identity and skill folders apply. */
  directory: string
  /** Environment of the child (defaults to this process's). */
  env?: NodeJS.ProcessEnv
  /** Sent as `initializationOptions`. */
  initializationOptions?: Record<string, unknown>
  log: Log
}

/** Rejects after `ms` with a timeout error; the inner promise keeps running and is ignored. */
export function within<T>(p: Promise<T>, ms: number, what: string): Promise<T> {
  let timer: NodeJS.Timeout | undefined
  const timeout = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`${what} took longer than ${ms} ms`)), ms)
  })
  return Promise.race([p, timeout]).finally(() => clearTimeout(timer))
}

export class Sidecar {
  private child?: ChildProcess
  private conn?: MessageConnection
  private ready?: Promise<MessageConnection>
  private failing = false
  private stderrTail: string[] = []
  /** How many children were started (tests and diagnostics). */
  starts = 0

  constructor(private readonly opts: SidecarOptions) {}

  /** The running child's pid, if any. */
  get pid(): number | undefined {
    return this.child?.pid
  }

  /** Starts the child when it is not running; resolves once `initialize` has answered. */
  start(): Promise<MessageConnection> {
    if (!this.ready) {
      const ready = this.spawn()
      this.ready = ready
      ready.catch((e) => {
        if (this.ready === ready) this.reset(`start failed: ${message(e)}`)
      })
    }
    return this.ready
  }

  /** A request within `budgetMs` (start-up included). Throws on failure or lateness. */
  async request<T>(method: string, params: unknown, budgetMs: number): Promise<T> {
    const call = this.start().then((c) => c.sendRequest(method, params) as Promise<T>)
    try {
      const r = await within(call, budgetMs, method)
      this.recovered()
      return r
    } catch (e) {
      // An error response is an answer: the sidecar is healthy.
      if (isAnswer(e)) this.recovered()
      throw e
    }
  }

  /** A notification, sent in order with later requests once the child is up. */
  notify(method: string, params: unknown): void {
    this.start()
      .then((c) => c.sendNotification(method, params))
      .catch((e) => this.fail(method, e))
  }

  /** Logs a failure once per streak; the next call after a dead child starts a new one. */
  fail(what: string, e: unknown): void {
    if (isAnswer(e)) {
      this.opts.log("debug", `skillmem: ${what}: ${message(e)}`)
      return
    }
    if (this.failing) {
      this.opts.log("debug", `skillmem: ${what} failed again: ${message(e)}`)
      return
    }
    this.failing = true
    const tail = this.stderrTail.length ? ` (sidecar stderr: ${this.stderrTail.join(" | ")})` : ""
    this.opts.log(
      "warn",
      `skillmem: ${what} failed: ${message(e)}${tail}. Skills load as without skillmem until it answers again (a sidecar that died is restarted on the next call).`,
    )
  }

  private recovered(): void {
    if (this.failing) {
      this.failing = false
      this.opts.log("info", "skillmem: the sidecar answers again")
    }
  }

  private async spawn(): Promise<MessageConnection> {
    this.starts++
    this.stderrTail = []
    const cwd = existsSync(this.opts.directory) ? this.opts.directory : undefined
    const child = spawn(this.opts.bin, ["serve"], {
      cwd,
      env: this.opts.env ?? process.env,
      stdio: ["pipe", "pipe", "pipe"],
    })
    this.child = child
    const died = new Promise<never>((_, reject) => {
      child.once("error", (e) => {
        reject(new Error(`cannot run ${this.opts.bin}: ${message(e)}`))
        if (this.child === child) this.reset(`cannot run ${this.opts.bin}`)
      })
      child.once("exit", (code, signal) => {
        reject(new Error(`skillmem serve exited (${signal ?? `code ${code}`})`))
        if (this.child === child) this.reset("exited")
      })
    })
    died.catch(() => {})
    // A write to a dead child must not become an uncaught exception in the host.
    child.stdin?.on("error", () => {})
    child.stdout?.on("error", () => {})
    child.stderr?.setEncoding("utf8")
    child.stderr?.on("data", (chunk: string) => {
      for (const line of chunk.split("\n")) {
        if (line.trim()) this.stderrTail.push(line.trim())
      }
      this.stderrTail = this.stderrTail.slice(-3)
    })
    const conn = createMessageConnection(
      new StreamMessageReader(child.stdout!),
      new StreamMessageWriter(child.stdin!),
    )
    conn.onNotification("window/logMessage", (p: { type?: number; message?: string }) => {
      const level: Level = p.type === 1 ? "error" : p.type === 2 ? "warn" : "debug"
      this.opts.log(level, `skillmem: ${p.message ?? ""}`)
    })
    conn.onRequest(() => null)
    conn.onError(() => {})
    conn.listen()
    this.conn = conn
    const init = conn.sendRequest("initialize", {
      processId: process.pid,
      rootUri: pathToFileURL(this.opts.directory).href,
      capabilities: {},
      initializationOptions: this.opts.initializationOptions ?? {},
    })
    try {
      await Promise.race([init, died])
    } catch (e) {
      // A refused initialize leaves an unusable sidecar: a failure, not an answer.
      throw new Error(`initialize failed: ${message(e)}`)
    }
    conn.sendNotification("initialized", {})
    return conn
  }

  /** Forgets the current child (killing it if alive) so that the next call starts anew. */
  reset(why: string): void {
    this.opts.log("debug", `skillmem: sidecar reset: ${why}`)
    const { child, conn } = this
    this.child = undefined
    this.conn = undefined
    this.ready = undefined
    try {
      conn?.dispose()
    } catch {}
    if (child && child.exitCode === null && child.signalCode === null) child.kill()
  }

  /** `shutdown` + `exit` within a short budget, then kill. */
  async stop(): Promise<void> {
    const { conn, child } = this
    if (conn) {
      try {
        await within(conn.sendRequest("shutdown"), 500, "shutdown")
        await conn.sendNotification("exit")
      } catch {}
    }
    if (child) {
      await within(
        new Promise<void>((resolve) => {
          if (child.exitCode !== null || child.signalCode !== null) resolve()
          else child.once("exit", () => resolve())
        }),
        500,
        "exit",
      ).catch(() => {})
    }
    this.reset("stopped")
  }
}

export function message(e: unknown): string {
  if (e instanceof Error) return e.message
  return String(e)
}

/** True for a JSON-RPC error response (the sidecar answered), false for a transport failure. */
export function isAnswer(e: unknown): boolean {
  // vscode-jsonrpc raises these itself when the connection breaks: they are failures.
  const local: number[] = [ErrorCodes.MessageWriteError, ErrorCodes.MessageReadError, ErrorCodes.PendingResponseRejected, ErrorCodes.ConnectionInactive]
  return e instanceof ResponseError && !local.includes(e.code)
}
