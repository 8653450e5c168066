// Small checks the packaged-host tests share.

import { existsSync, readdirSync } from "node:fs"
import { delimiter, join } from "node:path"

/** The folders of PATH that hold a `skillmem`. */
export function noSkillmemOn(path) {
  return path.split(delimiter).filter((d) => d && existsSync(join(d, "skillmem")))
}

/** The file names of the launcher's and the linux-x64 package's tarballs in DIST/npm. */
export function namesOf(dist) {
  const files = readdirSync(join(dist, "npm"))
  return {
    launcher: files.find((f) => /^skillmem-\d/.test(f)),
    linux: files.find((f) => f.startsWith("skillmem-cli-linux-x64-")),
    opencode: files.find((f) => f.startsWith("skillmem-opencode-")),
  }
}
