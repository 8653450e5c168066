// A scripted model server on loopback that speaks the streaming APIs the hosts use:
// Anthropic Messages (`POST /v1/messages`, Claude Code), OpenAI chat completions
// (`POST /v1/chat/completions`, OpenCode, Pi, Copilot CLI), the Gemini API
// (`POST /v1beta/models/<m>:streamGenerateContent`, Gemini CLI) and the OpenAI Responses API
// (`POST /v1/responses`, Codex). Every request body is recorded.
//
// A request is an agent turn when it offers the tool named by `isAgent(tools)`; its step is
// the number of assistant messages already in the conversation (0 for the first turn of a
// session), and `script(step, request)` says what the model answers: text, or tool calls.
// Every other request (titles, summaries, quota probes) gets a short text answer.

import http from "node:http"

/** @typedef {{ text?: string, tools?: { name: string, input: object }[], promptTokens?: number }} Reply */

/** `side(body)`, if given, answers the requests that are not agent turns (else "ok"). */
export async function startModelServer({ script, isAgent, side = () => ({ text: "ok" }) }) {
  const requests = []
  let ids = 0
  const server = http.createServer(async (req, res) => {
    const chunks = []
    for await (const c of req) chunks.push(c)
    const raw = Buffer.concat(chunks).toString("utf8")
    let body = null
    try {
      body = raw ? JSON.parse(raw) : null
    } catch {
      body = null
    }
    const url = (req.url ?? "").split("?")[0]
    const record = { method: req.method, url, body, raw }
    requests.push(record)
    try {
      if (req.method === "GET" && /\/models$/.test(url)) {
        return json(res, 200, { object: "list", data: [{ id: "scripted", object: "model", created: 0, owned_by: "e2e" }] })
      }
      if (req.method === "POST" && url.endsWith("/messages/count_tokens")) {
        return json(res, 200, { input_tokens: 100 })
      }
      if (req.method === "POST" && url.endsWith("/messages")) {
        const tools = (body?.tools ?? []).map((t) => t.name)
        const agent = isAgent(tools, body)
        const step = (body?.messages ?? []).filter((m) => m.role === "assistant").length
        record.kind = agent ? "agent" : "side"
        record.step = step
        const reply = agent ? script(step, body, "anthropic") : side(body)
        return anthropic(res, body, reply, () => `toolu_${++ids}`)
      }
      if (req.method === "POST" && url.endsWith("/chat/completions")) {
        const tools = (body?.tools ?? []).map((t) => t.function?.name ?? t.name)
        const agent = isAgent(tools, body)
        const step = (body?.messages ?? []).filter((m) => m.role === "assistant").length
        record.kind = agent ? "agent" : "side"
        record.step = step
        const reply = agent ? script(step, body, "openai") : side(body)
        return openai(res, body, reply, () => `call_${++ids}`)
      }
      if (req.method === "POST" && /:countTokens$/.test(url)) {
        return json(res, 200, { totalTokens: 100 })
      }
      if (req.method === "POST" && /:(stream)?[gG]enerateContent$/.test(url)) {
        const tools = (body?.tools ?? []).flatMap((t) => (t.functionDeclarations ?? []).map((f) => f.name))
        const agent = isAgent(tools, body)
        const step = (body?.contents ?? []).filter((m) => m.role === "model").length
        record.kind = agent ? "agent" : "side"
        record.step = step
        const reply = agent ? script(step, body, "gemini") : side(body)
        return gemini(res, url, reply)
      }
      if (req.method === "POST" && url.endsWith("/responses")) {
        const tools = (body?.tools ?? []).flatMap((t) => (t.type === "namespace" ? (t.tools ?? []).map((x) => `${t.name}${x.name}`) : [t.name ?? t.function?.name]))
        const agent = isAgent(tools, body)
        const items = Array.isArray(body?.input) ? body.input : []
        const step = items.filter((m) => m.type === "function_call" || (m.type === "message" && m.role === "assistant")).length
        record.kind = agent ? "agent" : "side"
        record.step = step
        const reply = agent ? script(step, body, "responses") : side(body)
        return responses(res, body, reply, () => `call_${++ids}`)
      }
      json(res, 404, { error: { type: "not_found", message: `no route ${req.method} ${url}` } })
    } catch (e) {
      json(res, 500, { error: { type: "api_error", message: String(e?.stack ?? e) } })
    }
  })
  await new Promise((resolve) => server.listen(0, "127.0.0.1", resolve))
  const { port } = server.address()
  return {
    url: `http://127.0.0.1:${port}`,
    requests,
    close: () =>
      new Promise((resolve) => {
        server.closeAllConnections?.()
        server.close(() => resolve())
      }),
  }
}

function json(res, status, value) {
  const s = JSON.stringify(value)
  res.writeHead(status, { "content-type": "application/json", "content-length": Buffer.byteLength(s) })
  res.end(s)
}

function sse(res) {
  res.writeHead(200, { "content-type": "text/event-stream", "cache-control": "no-cache", connection: "close" })
}

/** Anthropic Messages, streamed (or one JSON message when `stream` is false). */
function anthropic(res, body, reply, nextId) {
  const model = body?.model ?? "scripted"
  const blocks = []
  if (reply.text) blocks.push({ type: "text", text: reply.text })
  for (const t of reply.tools ?? []) blocks.push({ type: "tool_use", id: nextId(), name: t.name, input: t.input })
  const stop = reply.tools?.length ? "tool_use" : "end_turn"
  const usage = { input_tokens: reply.promptTokens ?? 100, output_tokens: 20, cache_creation_input_tokens: 0, cache_read_input_tokens: 0 }
  const message = { id: `msg_${Date.now()}`, type: "message", role: "assistant", model, content: blocks, stop_reason: stop, stop_sequence: null, usage }
  if (!body?.stream) return json(res, 200, message)
  sse(res)
  const ev = (type, data) => res.write(`event: ${type}\ndata: ${JSON.stringify({ type, ...data })}\n\n`)
  ev("message_start", { message: { ...message, content: [], stop_reason: null, usage: { ...usage, output_tokens: 1 } } })
  blocks.forEach((b, index) => {
    if (b.type === "text") {
      ev("content_block_start", { index, content_block: { type: "text", text: "" } })
      ev("content_block_delta", { index, delta: { type: "text_delta", text: b.text } })
    } else {
      ev("content_block_start", { index, content_block: { type: "tool_use", id: b.id, name: b.name, input: {} } })
      ev("content_block_delta", { index, delta: { type: "input_json_delta", partial_json: JSON.stringify(b.input) } })
    }
    ev("content_block_stop", { index })
  })
  ev("message_delta", { delta: { stop_reason: stop, stop_sequence: null }, usage: { output_tokens: 20 } })
  ev("message_stop", {})
  res.end()
}

/** OpenAI chat completions, streamed (or one JSON completion when `stream` is false). */
function openai(res, body, reply, nextId) {
  const model = body?.model ?? "scripted"
  const id = `chatcmpl-${Date.now()}`
  const created = Math.floor(Date.now() / 1000)
  const calls = (reply.tools ?? []).map((t) => ({ id: nextId(), type: "function", function: { name: t.name, arguments: JSON.stringify(t.input) } }))
  const finish = calls.length ? "tool_calls" : "stop"
  const prompt = reply.promptTokens ?? 100
  const usage = { prompt_tokens: prompt, completion_tokens: 20, total_tokens: prompt + 20 }
  if (!body?.stream) {
    return json(res, 200, {
      id, object: "chat.completion", created, model, usage,
      choices: [{ index: 0, finish_reason: finish, message: { role: "assistant", content: reply.text ?? null, ...(calls.length ? { tool_calls: calls } : {}) } }],
    })
  }
  sse(res)
  const chunk = (delta, finish_reason = null, extra = {}) =>
    res.write(`data: ${JSON.stringify({ id, object: "chat.completion.chunk", created, model, choices: [{ index: 0, delta, finish_reason }], ...extra })}\n\n`)
  chunk({ role: "assistant", content: "" })
  if (reply.text) chunk({ content: reply.text })
  calls.forEach((c, index) => chunk({ tool_calls: [{ index, ...c }] }))
  chunk({}, finish)
  if (body?.stream_options?.include_usage) {
    res.write(`data: ${JSON.stringify({ id, object: "chat.completion.chunk", created, model, choices: [], usage })}\n\n`)
  }
  res.write("data: [DONE]\n\n")
  res.end()
}

/** The Gemini API: `streamGenerateContent?alt=sse` (one SSE event) or `generateContent` (JSON). */
function gemini(res, url, reply) {
  const parts = []
  if (reply.text) parts.push({ text: reply.text })
  for (const t of reply.tools ?? []) parts.push({ functionCall: { name: t.name, args: t.input } })
  const prompt = reply.promptTokens ?? 100
  const value = {
    candidates: [{ content: { role: "model", parts }, finishReason: "STOP", index: 0 }],
    usageMetadata: { promptTokenCount: prompt, candidatesTokenCount: 20, totalTokenCount: prompt + 20 },
    modelVersion: "scripted",
  }
  if (!/:stream/.test(url)) return json(res, 200, value)
  sse(res)
  res.write(`data: ${JSON.stringify(value)}\n\n`)
  res.end()
}

/** The OpenAI Responses API, streamed: output items, then `response.completed`. */
function responses(res, body, reply, nextId) {
  const id = `resp_${Date.now()}`
  const output = []
  if (reply.text) {
    output.push({ type: "message", id: `msg_${nextId()}`, role: "assistant", status: "completed", content: [{ type: "output_text", text: reply.text, annotations: [] }] })
  }
  for (const t of reply.tools ?? []) {
    const call = nextId()
    output.push({ type: "function_call", id: `fc_${call}`, call_id: call, name: t.name, arguments: JSON.stringify(t.input), status: "completed", ...(t.namespace ? { namespace: t.namespace } : {}) })
  }
  const prompt = reply.promptTokens ?? 100
  const usage = { input_tokens: prompt, input_tokens_details: { cached_tokens: 0 }, output_tokens: 20, output_tokens_details: { reasoning_tokens: 0 }, total_tokens: prompt + 20 }
  const response = { id, object: "response", created_at: Math.floor(Date.now() / 1000), status: "completed", model: body?.model ?? "scripted", output, usage }
  sse(res)
  let seq = 0
  const ev = (type, data) => res.write(`event: ${type}\ndata: ${JSON.stringify({ type, sequence_number: seq++, ...data })}\n\n`)
  ev("response.created", { response: { ...response, status: "in_progress", output: [] } })
  output.forEach((item, output_index) => {
    ev("response.output_item.added", { output_index, item })
    ev("response.output_item.done", { output_index, item })
  })
  ev("response.completed", { response })
  res.end()
}
