// VS Code client for skillmem: starts `skillmem serve --stdio` for SKILL.md files (the server
// reports diagnostics, hover, completion and fixes) and exposes the memory and skills methods
// as commands.

import * as vscode from "vscode";
import { LanguageClient, LanguageClientOptions, ServerOptions, TransportKind } from "vscode-languageclient/node";

import {
  formatInstall,
  formatRecall,
  installParams,
  isSkillMd,
  nameInFrontmatter,
  parseNoteId,
  recallParams,
  RecallResult,
  seedParams,
  serverCommand,
  SKILL_MD_GLOB,
  skillOfPath,
} from "./helpers";

let client: LanguageClient | undefined;
let starting: Promise<LanguageClient> | undefined;

function makeClient(): LanguageClient {
  const cfg = vscode.workspace.getConfiguration("skillmem");
  const { command, args } = serverCommand(cfg.get<string>("path"));
  const env = { ...process.env, ...(cfg.get<Record<string, string>>("env") ?? {}) };
  const run = { command, args, transport: TransportKind.stdio, options: { env } };
  const serverOptions: ServerOptions = { run, debug: run };
  const clientOptions: LanguageClientOptions = {
    documentSelector: [
      { scheme: "file", pattern: SKILL_MD_GLOB },
      { scheme: "untitled", pattern: SKILL_MD_GLOB },
    ],
  };
  return new LanguageClient("skillmem", "skillmem", serverOptions, clientOptions);
}

/** The running client, started on first use. */
async function ensureClient(): Promise<LanguageClient> {
  if (client) return client;
  if (!starting) {
    starting = (async () => {
      const c = makeClient();
      await c.start();
      client = c;
      return c;
    })();
    starting.catch(() => (starting = undefined));
  }
  return starting;
}

async function request<R>(method: string, params: object): Promise<R | undefined> {
  try {
    const c = await ensureClient();
    return await c.sendRequest<R>(method, params);
  } catch (e) {
    void vscode.window.showErrorMessage(`skillmem: ${method}: ${e instanceof Error ? e.message : String(e)}`);
    return undefined;
  }
}

/** The skill of the active editor's SKILL.md (its frontmatter name, else its folder). */
function activeSkill(): string | undefined {
  const doc = vscode.window.activeTextEditor?.document;
  if (!doc || !isSkillMd(doc.fileName)) return undefined;
  return nameInFrontmatter(doc.getText()) ?? skillOfPath(doc.fileName);
}

async function askSkill(): Promise<string | undefined> {
  return vscode.window.showInputBox({ prompt: "Skill name", value: activeSkill() ?? "" });
}

async function askId(prompt: string): Promise<number | undefined> {
  const input = await vscode.window.showInputBox({
    prompt,
    validateInput: (v) => {
      const id = parseNoteId(v);
      return id instanceof Error ? id.message : undefined;
    },
  });
  if (input === undefined) return undefined;
  const id = parseNoteId(input);
  return id instanceof Error ? undefined : id;
}

async function recall(): Promise<void> {
  const skill = await askSkill();
  if (!skill) return;
  const intent = await vscode.window.showInputBox({ prompt: "What are you doing? (optional; ranks the notes)" });
  if (intent === undefined) return;
  const r = await request<RecallResult>("skillmem/recall", recallParams(skill, intent));
  if (!r) return;
  const doc = await vscode.workspace.openTextDocument({ language: "markdown", content: formatRecall(skill, r) });
  await vscode.window.showTextDocument(doc, { preview: true, viewColumn: vscode.ViewColumn.Beside });
}

async function pin(): Promise<void> {
  const id = await askId("Id of the note to pin or unpin");
  if (id === undefined) return;
  const choice = await vscode.window.showQuickPick(["Pin", "Unpin"], { placeHolder: `Note #${id}` });
  if (!choice) return;
  const r = await request<{ id: number }>("skillmem/pin", { id, pinned: choice === "Pin" });
  if (r) void vscode.window.showInformationMessage(`skillmem: note #${r.id} ${choice === "Pin" ? "pinned" : "unpinned"}`);
}

async function forget(): Promise<void> {
  const id = await askId("Id of the note to forget");
  if (id === undefined) return;
  const sure = await vscode.window.showWarningMessage(`Forget note #${id}? This cannot be undone.`, { modal: true }, "Forget");
  if (sure !== "Forget") return;
  const r = await request<{ id: number }>("skillmem/forget", { id });
  if (r) void vscode.window.showInformationMessage(`skillmem: note #${r.id} forgotten`);
}

async function install(): Promise<void> {
  const url = await vscode.window.showInputBox({ prompt: "Git repository (https, ssh, file:// or a local path)" });
  if (!url) return;
  const ref = await vscode.window.showInputBox({ prompt: "Branch, tag or commit (optional; default HEAD)" });
  if (ref === undefined) return;
  const r = await vscode.window.withProgress(
    { location: vscode.ProgressLocation.Notification, title: `skillmem: installing ${url}` },
    () => request<{ skills: { name: string; pinnedRef: string; warnings?: string[] }[] }>("skillmem/skills/install", installParams(url, ref)),
  );
  if (r) void vscode.window.showInformationMessage(`skillmem: installed ${formatInstall(r).join(", ")}`);
}

async function seed(): Promise<void> {
  const folder = vscode.workspace.workspaceFolders?.[0];
  if (!folder) {
    void vscode.window.showErrorMessage("skillmem: open a folder to seed skills into");
    return;
  }
  const skills = await vscode.window.showInputBox({ prompt: "Installed skills to seed (names, comma-separated)" });
  if (!skills) return;
  const target = vscode.workspace.getConfiguration("skillmem").get<string>("seedTarget");
  const r = await request<{ actions: { op: string; skill: string; path: string; reason?: string }[]; warnings: string[] }>(
    "skillmem/skills/seed",
    seedParams(folder.uri.fsPath, skills, target),
  );
  if (!r) return;
  const done = r.actions.map((a) => `${a.op} ${a.skill}${a.reason ? ` (${a.reason})` : ""}`).join(", ");
  void vscode.window.showInformationMessage(`skillmem: ${done || "nothing to do"}${r.warnings.length ? `; ${r.warnings.join("; ")}` : ""}`);
}

export function activate(context: vscode.ExtensionContext): void {
  const startIfSkill = (doc: vscode.TextDocument) => {
    if (isSkillMd(doc.fileName)) void ensureClient().catch(() => undefined);
  };
  vscode.workspace.textDocuments.forEach(startIfSkill);
  void vscode.workspace.findFiles(SKILL_MD_GLOB, "**/node_modules/**", 1).then((found) => {
    if (found.length > 0) void ensureClient().catch(() => undefined);
  });
  context.subscriptions.push(
    vscode.workspace.onDidOpenTextDocument(startIfSkill),
    vscode.commands.registerCommand("skillmem.recall", recall),
    vscode.commands.registerCommand("skillmem.pin", pin),
    vscode.commands.registerCommand("skillmem.forget", forget),
    vscode.commands.registerCommand("skillmem.install", install),
    vscode.commands.registerCommand("skillmem.seed", seed),
    vscode.commands.registerCommand("skillmem.restart", async () => {
      await deactivate();
      await ensureClient();
    }),
  );
}

export async function deactivate(): Promise<void> {
  const c = client;
  client = undefined;
  starting = undefined;
  if (c) await c.stop();
}
