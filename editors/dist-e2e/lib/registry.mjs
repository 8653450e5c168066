// An npm registry on loopback that serves the tarballs of `cargo xtask dist` (target/dist/npm/
// or the folder given), and, when asked, the packages of installed node_modules trees (each
// packed again as npm publishes it), and nothing else: what npm and npx fetch from
// registry.npmjs.org once a release is published, without leaving this machine. `GET /<name>` answers the package's
// packument (each tarball's package.json with its dist.tarball, shasum and integrity), `GET
// /-/<file>.tgz` the tarball; every other name is a 404, as an unpublished one is. Every
// request is recorded.

import { createHash } from "node:crypto"
import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync } from "node:fs"
import { tmpdir } from "node:os"
import http from "node:http"
import { join } from "node:path"
import { spawnSync } from "node:child_process"

/** The manifest inside a tarball (`package/package.json`). */
function manifestOf(tgz) {
  const r = spawnSync("tar", ["-xzOf", tgz, "package/package.json"], { encoding: "utf8" })
  if (r.status !== 0) throw new Error(`${tgz}: ${r.stderr}`)
  return JSON.parse(r.stdout)
}

/** Every package folder of a node_modules tree, nested ones too. */
function packageDirs(nodeModules) {
  const out = []
  if (!existsSync(nodeModules)) return out
  for (const e of readdirSync(nodeModules, { withFileTypes: true })) {
    if (!e.isDirectory() || e.name.startsWith(".")) continue
    const d = join(nodeModules, e.name)
    const dirs = e.name.startsWith("@") ? readdirSync(d, { withFileTypes: true }).filter((s) => s.isDirectory()).map((s) => join(d, s.name)) : [d]
    for (const p of dirs) {
      if (existsSync(join(p, "package.json"))) out.push(p)
      out.push(...packageDirs(join(p, "node_modules")))
    }
  }
  return out
}

/** `dir`: the tarballs to serve; `trees`: node_modules folders whose packages are served too. */
export async function startRegistry(dir, { trees = [] } = {}) {
  const packages = new Map() // name -> Map(version -> { m, f, shasum, integrity })
  const tarballs = new Map()
  const add = (f, bytes, m) => {
    tarballs.set(f, bytes)
    if (!packages.has(m.name)) packages.set(m.name, new Map())
    packages.get(m.name).set(m.version, { m, f, shasum: createHash("sha1").update(bytes).digest("hex"), integrity: `sha512-${createHash("sha512").update(bytes).digest("base64")}` })
  }
  for (const f of readdirSync(dir).filter((f) => f.endsWith(".tgz"))) add(f, readFileSync(join(dir, f)), manifestOf(join(dir, f)))
  const packed = trees.length ? mkdtempSync(join(tmpdir(), "skillmem-registry-")) : null
  for (const p of trees.flatMap(packageDirs)) {
    const m = JSON.parse(readFileSync(join(p, "package.json"), "utf8"))
    if (!m.name || !m.version || packages.get(m.name)?.has(m.version)) continue
    const f = `${m.name.replace("/", "-")}-${m.version}.tgz`
    const r = spawnSync("tar", ["-czf", join(packed, f), "-C", p, "--exclude=./node_modules", "--transform", "s,^\\.,package,", "."])
    if (r.status !== 0) throw new Error(`tar of ${p}: ${r.stderr}`)
    add(f, readFileSync(join(packed, f)), m)
  }
  const requests = []
  const server = http.createServer((req, res) => {
    const url = decodeURIComponent((req.url ?? "").split("?")[0])
    requests.push(`${req.method} ${url}`)
    const base = `http://127.0.0.1:${server.address().port}`
    if (url.startsWith("/-/") && tarballs.has(url.slice(3))) {
      res.writeHead(200, { "content-type": "application/octet-stream" })
      return res.end(tarballs.get(url.slice(3)))
    }
    const name = url.slice(1)
    const all = packages.get(name)
    if (req.method !== "GET" || !all) {
      res.writeHead(404, { "content-type": "application/json" })
      return res.end(JSON.stringify({ error: "Not found" }))
    }
    const versions = {}
    for (const [v, p] of all) versions[v] = { ...p.m, _id: `${name}@${v}`, dist: { tarball: `${base}/-/${p.f}`, shasum: p.shasum, integrity: p.integrity } }
    const latest = [...all.keys()].at(-1)
    res.writeHead(200, { "content-type": "application/json" })
    res.end(JSON.stringify({ name, "dist-tags": { latest }, versions }))
  })
  await new Promise((ok) => server.listen(0, "127.0.0.1", ok))
  return {
    url: `http://127.0.0.1:${server.address().port}/`,
    names: [...packages.keys()],
    requests,
    close: () => new Promise((ok) => server.close(ok)).then(() => packed && rmSync(packed, { recursive: true, force: true })),
  }
}
