// An npm registry on loopback that serves the tarballs of `cargo xtask dist` (target/dist/npm/
// or the folder given) and nothing else: what npm and npx fetch from registry.npmjs.org once a
// release is published, without leaving this machine. `GET /<name>` answers the package's
// packument (each tarball's package.json with its dist.tarball, shasum and integrity), `GET
// /-/<file>.tgz` the tarball; every other name is a 404, as an unpublished one is. Every
// request is recorded.

import { createHash } from "node:crypto"
import { readdirSync, readFileSync } from "node:fs"
import http from "node:http"
import { join } from "node:path"
import { spawnSync } from "node:child_process"

/** The manifest inside a tarball (`package/package.json`). */
function manifestOf(tgz) {
  const r = spawnSync("tar", ["-xzOf", tgz, "package/package.json"], { encoding: "utf8" })
  if (r.status !== 0) throw new Error(`${tgz}: ${r.stderr}`)
  return JSON.parse(r.stdout)
}

export async function startRegistry(dir) {
  const files = readdirSync(dir).filter((f) => f.endsWith(".tgz"))
  const packages = new Map()
  const tarballs = new Map()
  for (const f of files) {
    const bytes = readFileSync(join(dir, f))
    const m = manifestOf(join(dir, f))
    tarballs.set(f, bytes)
    packages.set(m.name, { m, f, shasum: createHash("sha1").update(bytes).digest("hex"), integrity: `sha512-${createHash("sha512").update(bytes).digest("base64")}` })
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
    const p = packages.get(url.slice(1))
    if (req.method !== "GET" || !p) {
      res.writeHead(404, { "content-type": "application/json" })
      return res.end(JSON.stringify({ error: "Not found" }))
    }
    const version = { ...p.m, _id: `${p.m.name}@${p.m.version}`, dist: { tarball: `${base}/-/${p.f}`, shasum: p.shasum, integrity: p.integrity } }
    res.writeHead(200, { "content-type": "application/json" })
    res.end(JSON.stringify({ name: p.m.name, "dist-tags": { latest: p.m.version }, versions: { [p.m.version]: version } }))
  })
  await new Promise((ok) => server.listen(0, "127.0.0.1", ok))
  return {
    url: `http://127.0.0.1:${server.address().port}/`,
    names: [...packages.keys()],
    requests,
    close: () => new Promise((ok) => server.close(ok)),
  }
}
