// skillmem for OpenCode: skill memory on every skill load, and the note and recall tools.
//
// Install: add this file (or the package) to the `plugin` list of opencode.json; see
// docs/hosts.md. Only plugin functions may be exported from this module: OpenCode calls
// every export.

import type { Plugin } from "@opencode-ai/plugin"
import { createHooks, type SkillmemOptions } from "./hooks.js"

export const SkillmemPlugin: Plugin = async (input, options) => {
  return createHooks(input, (options ?? {}) as SkillmemOptions).hooks
}
