// Pure helpers of the extension: no `vscode` import, so `node --test` can load them.

import * as path from "node:path";

/** True for a file named SKILL.md, any case of the extension (as agents accept it). */
export function isSkillMd(fsPath: string): boolean {
  const base = path.basename(fsPath);
  return base.startsWith("SKILL.") && base.slice("SKILL.".length).toLowerCase() === "md";
}

/** The glob the language client's document selector and activation use. */
export const SKILL_MD_GLOB = "**/SKILL.[mM][dD]";

/** The skill a SKILL.md belongs to: the name of its folder. */
export function skillOfPath(fsPath: string): string | undefined {
  if (!isSkillMd(fsPath)) return undefined;
  const dir = path.basename(path.dirname(fsPath));
  return dir.length > 0 && dir !== "." && dir !== path.sep ? dir : undefined;
}

/** The `name:` of a SKILL.md's frontmatter, when written on one line. */
export function nameInFrontmatter(text: string): string | undefined {
  const lines = text.replace(/^\uFEFF/, "").split(/\r?\n/);
  if (lines[0]?.trimEnd() !== "---") return undefined;
  for (const line of lines.slice(1)) {
    if (line.trimEnd() === "---") return undefined;
    const m = /^name:\s*(.*?)\s*(#.*)?$/.exec(line);
    if (m) {
      const v = m[1].replace(/^(["'])(.*)\1$/, "$2").trim();
      return v.length > 0 ? v : undefined;
    }
  }
  return undefined;
}

/** A note id typed by a person: a positive whole number, or an error that says so. */
export function parseNoteId(input: string): number | Error {
  const t = input.trim().replace(/^#/, "");
  if (!/^\d+$/.test(t) || Number(t) <= 0 || !Number.isSafeInteger(Number(t))) {
    return new Error(`"${input}" is not a note id; type the number shown as id="..." in a recall`);
  }
  return Number(t);
}

/** Skill names typed as a list: separated by commas or spaces, without duplicates. */
export function parseSkillList(input: string): string[] {
  const out: string[] = [];
  for (const s of input.split(/[\s,]+/)) {
    if (s.length > 0 && !out.includes(s)) out.push(s);
  }
  return out;
}

export interface RecallParams {
  skill: string;
  intent?: string;
  maxTokens?: number;
  limit?: number;
}

export function recallParams(skill: string, intent?: string): RecallParams {
  const p: RecallParams = { skill: skill.trim() };
  if (intent !== undefined && intent.trim().length > 0) p.intent = intent.trim();
  return p;
}

export interface InstallParams {
  url: string;
  ref?: string;
}

export function installParams(url: string, ref?: string): InstallParams {
  const p: InstallParams = { url: url.trim() };
  if (ref !== undefined && ref.trim().length > 0) p.ref = ref.trim();
  return p;
}

export interface SeedParams {
  cwd: string;
  skills: string[];
  target?: string;
  dryRun?: boolean;
}

export function seedParams(cwd: string, skills: string, target?: string, dryRun?: boolean): SeedParams {
  const p: SeedParams = { cwd, skills: parseSkillList(skills) };
  if (target !== undefined && target.trim().length > 0) p.target = target.trim();
  if (dryRun) p.dryRun = true;
  return p;
}

/** One note of a `skillmem/recall` result. */
export interface RecalledNote {
  id: number;
  kind: string;
  intent?: string | null;
  delta: string;
  scope: string;
  pinned: boolean;
  hits: number;
  score?: number;
}

export interface RecallResult {
  block: string | null;
  mode: string;
  notes: RecalledNote[];
}

/** A recall as Markdown, one heading per note, for a read-only preview. */
export function formatRecall(skill: string, r: RecallResult): string {
  const head = `# Notes of \`${skill}\` (${r.notes.length}, mode ${r.mode})\n`;
  if (r.notes.length === 0) return `${head}\nNo notes yet.\n`;
  const notes = r.notes.map((n) => {
    const flags = [n.kind, n.scope, n.pinned ? "pinned" : undefined, `${n.hits} hits`].filter(Boolean).join(", ");
    const intent = n.intent ? `\n_when:_ ${n.intent}\n` : "";
    return `## #${n.id} (${flags})\n${intent}\n${n.delta}\n`;
  });
  return `${head}\n${notes.join("\n")}`;
}

/** A line per installed skill, with its warnings. */
export function formatInstall(r: { skills: { name: string; pinnedRef: string; warnings?: string[] }[] }): string[] {
  return r.skills.map((s) => {
    const w = s.warnings && s.warnings.length > 0 ? `: ${s.warnings.join("; ")}` : "";
    return `${s.name} @ ${s.pinnedRef.slice(0, 12)}${w}`;
  });
}

/** The command line of the server: `<path> serve` (the language client appends `--stdio`). */
export function serverCommand(configured: string | undefined): { command: string; args: string[] } {
  const command = configured !== undefined && configured.trim().length > 0 ? configured.trim() : "skillmem";
  return { command, args: ["serve"] };
}
