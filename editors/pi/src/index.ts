// skillmem for Pi (@mariozechner/pi-coding-agent 0.73): every read of a skill's SKILL.md shows
// the lessons agents noted about it, the agent gets skill_note / skill_recall, and compaction
// feeds the historian. Install: docs/hosts.md ("Pi").
//
// Pi loads this file with jiti and resolves `typebox` and `@mariozechner/pi-ai` to its own
// copies; everything else lives in extension.ts.

import { Type } from "typebox"
import { StringEnum, complete } from "@mariozechner/pi-ai"
import { createExtension, type PiApi } from "./extension.js"

export default function skillmem(pi: PiApi) {
  createExtension(pi, { Type, StringEnum, complete })
}
