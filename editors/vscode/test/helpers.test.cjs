// Unit tests of the extension's pure helpers (dist/helpers.js, built by `npm run build`),
// and a check that every command the manifest declares is registered.
const test = require("node:test");
const assert = require("node:assert/strict");
const fs = require("node:fs");
const path = require("node:path");
const h = require("../dist/helpers.js");

test("SKILL.md files, any case of the extension", () => {
  const cases = [
    ["/w/skills/pdf/SKILL.md", true],
    ["/w/skills/pdf/SKILL.MD", true],
    ["/w/skills/pdf/SKILL.mD", true],
    ["/w/skills/pdf/skill.md", false],
    ["/w/skills/pdf/SKILL.markdown", false],
    ["/w/README.md", false],
    ["/w/SKILL.md.orig", false],
  ];
  for (const [p, want] of cases) assert.equal(h.isSkillMd(p), want, p);
  assert.equal(h.skillOfPath("/w/skills/pdf-tools/SKILL.md"), "pdf-tools");
  assert.equal(h.skillOfPath("/w/skills/pdf-tools/notes.md"), undefined);
});

test("the frontmatter name", () => {
  const cases = [
    ["---\nname: pdf\ndescription: d\n---\n", "pdf"],
    ["\uFEFF---\r\nname: \"pdf-tools\" # x\r\n---\r\n", "pdf-tools"],
    ["---\ndescription: d\n---\nname: body\n", undefined],
    ["---\nname:\n---\n", undefined],
    ["no frontmatter\nname: x\n", undefined],
  ];
  for (const [text, want] of cases) assert.equal(h.nameInFrontmatter(text), want, JSON.stringify(text));
});

test("note ids and skill lists typed by a person", () => {
  assert.equal(h.parseNoteId(" 17 "), 17);
  assert.equal(h.parseNoteId("#3"), 3);
  for (const bad of ["", "0", "-1", "1.5", "abc", "99999999999999999999"]) {
    assert.ok(h.parseNoteId(bad) instanceof Error, bad);
  }
  assert.deepEqual(h.parseSkillList(" pdf, jq  pdf,,git-tools "), ["pdf", "jq", "git-tools"]);
});

test("request params as PROTOCOL.md spells them", () => {
  assert.deepEqual(h.recallParams(" jq ", "  "), { skill: "jq" });
  assert.deepEqual(h.recallParams("jq", "filter arrays"), { skill: "jq", intent: "filter arrays" });
  assert.deepEqual(h.installParams(" https://x/y.git ", ""), { url: "https://x/y.git" });
  assert.deepEqual(h.installParams("file:///r", "v1"), { url: "file:///r", ref: "v1" });
  assert.deepEqual(h.seedParams("/w", "pdf jq", ".claude/skills"), { cwd: "/w", skills: ["pdf", "jq"], target: ".claude/skills" });
  assert.deepEqual(h.seedParams("/w", "pdf", "", true), { cwd: "/w", skills: ["pdf"], dryRun: true });
  assert.deepEqual(h.serverCommand(undefined), { command: "skillmem", args: ["serve"] });
  assert.deepEqual(h.serverCommand(" /opt/skillmem "), { command: "/opt/skillmem", args: ["serve"] });
});

test("a recall as Markdown", () => {
  const md = h.formatRecall("jq", {
    block: "<skill-memory/>",
    mode: "vector",
    notes: [{ id: 7, kind: "gotcha", intent: "filter", delta: "use .[]?", scope: "project", pinned: true, hits: 2 }],
  });
  assert.match(md, /# Notes of `jq` \(1, mode vector\)/);
  assert.match(md, /## #7 \(gotcha, project, pinned, 2 hits\)/);
  assert.match(md, /use \.\[\]\?/);
  assert.match(h.formatRecall("jq", { block: null, mode: "none", notes: [] }), /No notes yet/);
  assert.deepEqual(h.formatInstall({ skills: [{ name: "pdf", pinnedRef: "0123456789abcdef", warnings: ["w"] }] }), ["pdf @ 0123456789ab: w"]);
});

test("every declared command is registered, and the reverse", () => {
  const manifest = JSON.parse(fs.readFileSync(path.join(__dirname, "..", "package.json"), "utf8"));
  const declared = manifest.contributes.commands.map((c) => c.command).sort();
  const src = fs.readFileSync(path.join(__dirname, "..", "src", "extension.ts"), "utf8");
  const registered = [...src.matchAll(/registerCommand\("([^"]+)"/g)].map((m) => m[1]).sort();
  assert.deepEqual(registered, declared);
  assert.equal(manifest.dependencies["vscode-languageclient"], "11.0.0", "pinned");
  for (const m of ["skillmem/recall", "skillmem/pin", "skillmem/forget", "skillmem/skills/install", "skillmem/skills/seed"]) {
    assert.ok(src.includes(`"${m}"`), m);
  }
});
