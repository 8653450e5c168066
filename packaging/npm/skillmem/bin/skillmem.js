#!/usr/bin/env node
// The `skillmem` command of the npm package: runs the binary of this platform's package
// (@skillmem/cli-<platform>-<arch>, one of the optionalDependencies npm installed), passing
// arguments, standard streams and the exit status through.
"use strict"
const { spawnSync } = require("node:child_process")
const path = require("node:path")

function binary() {
  if (process.env.SKILLMEM_BIN) return process.env.SKILLMEM_BIN
  const pkg = `@skillmem/cli-${process.platform}-${process.arch}`
  const exe = process.platform === "win32" ? "skillmem.exe" : "skillmem"
  try {
    return path.join(path.dirname(require.resolve(`${pkg}/package.json`)), "bin", exe)
  } catch {
    process.stderr.write(
      `skillmem: ${pkg} is not installed. It is an optional dependency of skillmem: ` +
        `reinstall without --no-optional / --omit=optional, or install it yourself (npm i -g ${pkg}). ` +
        `Other ways to install: the Install section of skillmem's README.\n`,
    )
    process.exit(1)
  }
}

const r = spawnSync(binary(), process.argv.slice(2), { stdio: "inherit" })
if (r.error) {
  process.stderr.write(`skillmem: cannot run ${r.error.path || "the binary"}: ${r.error.message}\n`)
  process.exit(1)
}
if (r.signal) process.kill(process.pid, r.signal)
process.exit(r.status ?? 1)
