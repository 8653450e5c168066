// The hosts under test are exactly the pinned versions (package.json, package-lock.json).

import { test } from "node:test"
import assert from "node:assert/strict"
import { readFileSync } from "node:fs"
import { join } from "node:path"
import { spawnSync } from "node:child_process"

import { E2E, HOSTS } from "../lib/world.mjs"

test("the installed hosts are the pinned versions", () => {
  const pinned = JSON.parse(readFileSync(join(E2E, "package.json"), "utf8")).devDependencies
  const installed = (name) => JSON.parse(readFileSync(join(E2E, "node_modules", name, "package.json"), "utf8")).version
  assert.equal(installed("@anthropic-ai/claude-code"), pinned["@anthropic-ai/claude-code"])
  assert.equal(installed("opencode-ai"), pinned["opencode-ai"])
  assert.equal(installed("@mariozechner/pi-coding-agent"), pinned["@mariozechner/pi-coding-agent"])
  for (const name of ["@google/gemini-cli", "@openai/codex", "@github/copilot"]) assert.equal(installed(name), pinned[name], name)
  assert.equal(installed(`@openai/codex-${process.platform}-${process.arch}`).split("-")[0], pinned["@openai/codex"])
  assert.equal(installed(`@github/copilot-${process.platform}-${process.arch}`), pinned["@github/copilot"])
  const env = { PATH: process.env.PATH, HOME: "/nonexistent", DISABLE_AUTOUPDATER: "1" }
  const claude = spawnSync(HOSTS.claude.bin, ["--version"], { env, encoding: "utf8", timeout: 60_000 })
  assert.match(claude.stdout, new RegExp(`^${HOSTS.claude.version.replaceAll(".", "\\.")} `), claude.stderr)
  const opencode = spawnSync(HOSTS.opencode.bin, ["--version"], { env, encoding: "utf8", timeout: 60_000 })
  assert.equal(opencode.stdout.trim(), HOSTS.opencode.version, opencode.stderr)
  // Codex's own binary (the native one the tests run); Gemini's and Copilot's are started only
  // inside the network namespace of isolated/, so their packages' versions stand for them.
  const codex = spawnSync(HOSTS.codex.bin, ["--version"], { env, encoding: "utf8", timeout: 60_000 })
  assert.equal(codex.stdout.trim(), `codex-cli ${HOSTS.codex.version}`, codex.stderr)
})
