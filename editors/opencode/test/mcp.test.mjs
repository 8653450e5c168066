// `skillmem mcp` with the official MCP TypeScript SDK (the client family Claude Code and many
// other hosts are built on): protocol negotiation, tool listing and calls over stdio.

import { test } from "node:test"
import assert from "node:assert/strict"
import { mkdtempSync, mkdirSync, writeFileSync } from "node:fs"
import { tmpdir } from "node:os"
import { join, resolve, dirname } from "node:path"
import { fileURLToPath } from "node:url"

import { Client } from "@modelcontextprotocol/sdk/client/index.js"
import { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js"

const here = dirname(fileURLToPath(import.meta.url))
const BIN = resolve(process.env.SKILLMEM_BIN ?? join(here, "../../../target/debug/skillmem"))

test("the TypeScript SDK client lists and calls the tools", async () => {
  const root = mkdtempSync(join(tmpdir(), "skillmem-mcp-"))
  const ws = join(root, "ws")
  const skill = join(ws, ".claude/skills/jq")
  mkdirSync(skill, { recursive: true })
  writeFileSync(join(skill, "SKILL.md"), "---\nname: jq\ndescription: t\nskill-memory:\n  enabled: true\n---\n# jq\n")
  const transport = new StdioClientTransport({
    command: BIN,
    args: ["mcp"],
    cwd: ws,
    env: { HOME: join(root, "home"), SKILLMEM_HOME: join(root, "data"), PATH: process.env.PATH ?? "" },
    stderr: "ignore",
  })
  const client = new Client({ name: "skillmem-test", version: "0.0.0" })
  await client.connect(transport)
  try {
    assert.equal(client.getServerVersion()?.name, "skillmem")
    const { tools } = await client.listTools()
    assert.deepEqual(tools.map((t) => t.name).sort(), [
      "skill_feedback", "skill_forget", "skill_note", "skill_pin", "skill_recall",
      "skills_audit", "skills_install", "skills_install_locked", "skills_list", "skills_lock", "skills_remove",
      "skills_resolve", "skills_seed", "skills_update", "skills_verify",
    ])
    const seed = tools.find((t) => t.name === "skills_seed")
    assert.deepEqual(seed.inputSchema.required, ["cwd", "skills"])
    const note = tools.find((t) => t.name === "skill_note")
    assert.deepEqual(note.inputSchema.required, ["skill", "kind", "delta"])
    assert.match(note.description, /gotcha/)

    const saved = await client.callTool({
      name: "skill_note",
      arguments: { skill: "jq", kind: "fix", delta: "jq: Cannot index array with string: iterate with .[] first.", intent: "index an array" },
    })
    assert.notEqual(saved.isError, true, JSON.stringify(saved))
    assert.match(saved.content[0].text, /Saved as note \d+/)
    const recalled = await client.callTool({ name: "skill_recall", arguments: { skill: "jq", intent: "index array" } })
    assert.match(recalled.content[0].text, /<skill-memory skill="jq"/)
    const refused = await client.callTool({ name: "skill_note", arguments: { skill: "jq", kind: "fix", delta: "  " } })
    assert.equal(refused.isError, true)
    assert.match(refused.content[0].text, /delta/)

    // Session skills (installs are covered by tests/mcp.rs): results and refusals.
    const listed = await client.callTool({ name: "skills_list", arguments: {} })
    assert.deepEqual(listed.structuredContent, { sources: [], usage: [] })
    const resolved = await client.callTool({ name: "skills_resolve", arguments: { task: ["ghost"] } })
    assert.deepEqual(resolved.structuredContent, { skills: [], dropped: ["ghost"] })
    const unseeded = await client.callTool({ name: "skills_seed", arguments: { cwd: ws, skills: ["ghost"] } })
    assert.equal(unseeded.isError, true)
    assert.match(unseeded.content[0].text, /ghost/)
  } finally {
    await client.close()
  }
})
