// The dashboard in a real browser: Debian's headless Chromium driven by playwright-core,
// against `skillmem ui --no-open --port 0` on a temporary data directory. It opens the
// dashboard, searches, pins, edits and forgets a note, runs the preview, installs a skill from
// a local git repository, checks the page each time, and saves screenshots.
import { test } from "node:test";
import assert from "node:assert/strict";
import { spawn, execFileSync } from "node:child_process";
import { mkdtempSync, mkdirSync, writeFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, dirname, resolve } from "node:path";
import { fileURLToPath } from "node:url";
import { chromium } from "playwright-core";

const here = dirname(fileURLToPath(import.meta.url));
const BIN = process.env.SKILLMEM_BIN || resolve(here, "../../../target/debug/skillmem");
const CHROMIUM = process.env.CHROMIUM || "/usr/bin/chromium";
const SHOTS = process.env.SKILLMEM_UI_SHOTS || resolve(here, "../screenshots");

function world() {
  const root = mkdtempSync(join(tmpdir(), "skillmem-ui-e2e-"));
  const w = { root, home: join(root, "home"), data: join(root, "data"), ws: join(root, "ws") };
  for (const d of [w.home, w.data, w.ws]) mkdirSync(d, { recursive: true });
  w.env = { ...process.env, HOME: w.home, SKILLMEM_HOME: w.data, SKILLMEM_LOG: "warn" };
  for (const name of ["jq", "git-rebase"]) {
    const dir = join(w.ws, ".claude/skills", name);
    mkdirSync(dir, { recursive: true });
    writeFileSync(join(dir, "SKILL.md"), `---\nname: ${name}\ndescription: ${name} test skill\nskill-memory:\n  enabled: true\n---\n# ${name}\n`);
  }
  return w;
}

function cli(w, args) {
  return execFileSync(BIN, args, { cwd: w.ws, env: w.env, encoding: "utf8" });
}

function note(w, skill, kind, delta, intent = "") {
  const out = cli(w, ["note", skill, "--kind", kind, "--delta", delta, ...(intent ? ["--intent", intent] : []), "--json"]);
  return JSON.parse(out).id;
}

// A local git repository holding one skill.
function skillRepo(w) {
  const repo = join(w.root, "skills-repo");
  const dir = join(repo, "skills", "pdf-tools");
  mkdirSync(dir, { recursive: true });
  writeFileSync(join(dir, "SKILL.md"), "---\nname: pdf-tools\ndescription: Split, merge and inspect PDF files\n---\n# pdf-tools\n");
  const env = { ...w.env, GIT_AUTHOR_NAME: "t", GIT_AUTHOR_EMAIL: "t@example.com", GIT_COMMITTER_NAME: "t", GIT_COMMITTER_EMAIL: "t@example.com" };
  for (const args of [["init", "-q", "-b", "main"], ["add", "."], ["commit", "-q", "-m", "pdf-tools"]]) {
    execFileSync("git", args, { cwd: repo, env });
  }
  return repo;
}

// Starts `skillmem ui` and resolves with its printed URL.
function startUi(w) {
  const child = spawn(BIN, ["ui", "--no-open", "--port", "0"], { cwd: w.ws, env: w.env, stdio: ["ignore", "pipe", "inherit"] });
  return new Promise((res, rej) => {
    let buf = "";
    child.on("exit", (code) => rej(new Error(`skillmem ui exited with ${code}`)));
    child.stdout.on("data", (d) => {
      buf += d;
      const m = buf.match(/http:\/\/127\.0\.0\.1:\d+\/\?token=[0-9a-f]+/);
      if (m) res({ child, url: m[0] });
    });
  });
}

test("the dashboard in headless Chromium", { timeout: 120_000 }, async () => {
  const w = world();
  const ids = {
    raw: note(w, "jq", "gotcha", "jq -r prints raw strings; without it every string keeps its quotes", "print names from a JSON list"),
    nul: note(w, "jq", "fix", "Cannot iterate over null: guard with .[]? before iterating an optional array", "iterate over items"),
    slurp: note(w, "jq", "discovery", "jq --slurp reads every input document into one array", "combine JSON files"),
    valid: note(w, "jq", "workflow", "validate a large file with `jq empty` before a long pipeline"),
    onto: note(w, "git-rebase", "gotcha", "git rebase --onto needs the old base as its second argument"),
  };
  // One load of git-rebase: its note counts a recall (the chart's "used" bar).
  cli(w, ["recall", "git-rebase", "--intent", "rebase onto main"]);
  const repo = skillRepo(w);
  const { child, url } = await startUi(w);
  mkdirSync(SHOTS, { recursive: true });
  const profile = mkdtempSync(join(tmpdir(), "skillmem-ui-chromium-"));
  const browser = await chromium.launchPersistentContext(profile, {
    executablePath: CHROMIUM,
    headless: true,
    viewport: { width: 1280, height: 860 },
    args: ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run", "--disable-background-networking", "--disable-component-update", "--disable-sync"],
  });
  try {
    const page = browser.pages()[0] || (await browser.newPage());
    const errors = [];
    page.on("pageerror", (e) => errors.push(e.message));
    page.on("dialog", (d) => d.accept());

    // Overview: the token becomes a cookie and leaves the address bar.
    await page.goto(url);
    assert.ok(!page.url().includes("token="), page.url());
    assert.match(await page.textContent("#skills"), /jq/);
    assert.ok(await page.$("svg.chart"));
    await page.screenshot({ path: join(SHOTS, "overview.png"), fullPage: true });

    // Skill page, then search.
    await page.click('#skills a[href="/skill/jq"]');
    await page.waitForSelector("#notes");
    assert.match(await page.textContent("#count"), /^4 notes/);
    await page.fill('input[name="q"]', "slurp");
    await Promise.all([page.waitForURL(/q=slurp/), page.click('form.filters button[type="submit"]')]);
    assert.match(await page.textContent("#count"), /^1 notes/);
    assert.ok(await page.$(`#note-${ids.slurp}`));
    assert.equal(await page.$(`#note-${ids.raw}`), null);
    await page.goto(new URL("/skill/jq", url).href);

    // Pin.
    await page.click(`#note-${ids.raw} button:has-text("Pin")`);
    await page.waitForSelector(`#note-${ids.raw}.pinned`);
    // Edit (re-embeds).
    await page.click(`#note-${ids.valid} details.edit summary`);
    await page.fill(`#note-${ids.valid} textarea`, "validate the file with `jq empty` first; a long pipeline hides the parse error");
    await page.click(`#note-${ids.valid} form button[type="submit"]`);
    await page.waitForFunction((id) => document.querySelector(`#note-${id} .delta`)?.textContent.includes("hides the parse error"), ids.valid);
    // Forget (confirmed).
    await page.click(`#note-${ids.nul} button.danger`);
    await page.waitForSelector(`#note-${ids.nul}`, { state: "detached" });
    assert.match(await page.textContent("#count"), /^3 notes/);
    await page.screenshot({ path: join(SHOTS, "skill.png"), fullPage: true });

    // The store agrees (through the CLI, another door to the same engine).
    const listed = JSON.parse(cli(w, ["notes", "jq", "--json"]));
    assert.equal(listed.total, 3);
    assert.equal(listed.notes.find((n) => n.id === ids.raw).pinned, true);
    assert.match(listed.notes.find((n) => n.id === ids.valid).delta, /hides the parse error/);

    // Preview: the block, each note's rung; no recall counted.
    await page.goto(new URL("/preview?skill=jq", url).href);
    await page.fill('input[name="intent"]', "print raw names without quotes");
    await Promise.all([page.waitForURL(/intent=/), page.click('form.filters button[type="submit"]')]);
    const block = await page.textContent("#block");
    assert.match(block, /<skill-memory/);
    assert.match(block, /raw strings/);
    const rungs = await page.$$eval("#preview-notes td.rung", (tds) => tds.map((t) => t.textContent));
    assert.ok(rungs.length >= 3 && rungs.some((r) => r === "vector" || r === "fts"), rungs.join(","));
    await page.screenshot({ path: join(SHOTS, "preview.png"), fullPage: true });
    const after = JSON.parse(cli(w, ["notes", "jq", "--json"]));
    assert.ok(after.notes.every((n) => n.recalls === 0), "the preview counted a recall");

    // Session skills: install from a local git repository, with progress.
    await page.goto(new URL("/skills", url).href);
    assert.ok(await page.$("#no-sources"));
    await page.fill('#install input[name="url"]', repo);
    await page.click('#install button[type="submit"]');
    await page.waitForSelector(".source .skill-list li", { timeout: 60_000 });
    assert.match(await page.textContent(".skill-list"), /pdf-tools/);
    assert.match(await page.textContent("#progress"), /done: pdf-tools/);
    await page.screenshot({ path: join(SHOTS, "skills.png"), fullPage: true });
    const sources = JSON.parse(cli(w, ["skills", "list", "--json"]));
    assert.equal(sources.sources[0].skills[0].name, "pdf-tools");

    assert.deepEqual(errors, [], "no script errors");
  } finally {
    await browser.close();
    child.kill();
    rmSync(profile, { recursive: true, force: true });
    rmSync(w.root, { recursive: true, force: true });
  }
});

test("the review queue in headless Chromium", { timeout: 120_000 }, async () => {
  const w = world();
  writeFileSync(join(w.ws, "skillmem.toml"), "[historian]\nreview = true\n");
  const output = join(w.root, "summary.txt");
  writeFileSync(
    output,
    "Summary.\n<skill_observations>\n" +
      "* jq | gotcha | jq -r prints raw strings; without it every string keeps its JSON quotes.\n" +
      "* jq | fix | jq --slurp reads a stream of objects into one array; without it `length` counts each object.\n" +
      "* jq | gotcha | jq `.[]?` skips values that are not arrays instead of failing on them.\n" +
      "</skill_observations>\n",
  );
  const promoted = JSON.parse(cli(w, ["observe", output, "--session", "sess-42", "--json"])).promoted;
  assert.equal(promoted.length, 3);
  assert.ok(promoted.every((p) => p.pending === true));
  const [raw, slurp, opt] = promoted.map((p) => p.id);
  const { child, url } = await startUi(w);
  mkdirSync(SHOTS, { recursive: true });
  const profile = mkdtempSync(join(tmpdir(), "skillmem-ui-chromium-"));
  const browser = await chromium.launchPersistentContext(profile, {
    executablePath: CHROMIUM,
    headless: true,
    viewport: { width: 1280, height: 860 },
    args: ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run", "--disable-background-networking", "--disable-component-update", "--disable-sync"],
  });
  try {
    const page = browser.pages()[0] || (await browser.newPage());
    const errors = [];
    page.on("pageerror", (e) => errors.push(e.message));
    await page.goto(url);
    await page.click('header nav a[href="/review"]');
    await page.waitForSelector("#queue");
    assert.match(await page.textContent("#pending-count"), /^3 waiting/);
    assert.match(await page.textContent(`#note-${raw} .provenance`), /sess-42/);
    await page.screenshot({ path: join(SHOTS, "review.png"), fullPage: true });

    // Accept.
    await page.click(`#note-${raw} button.accept`);
    await page.waitForSelector(`#note-${raw}`, { state: "detached" });
    // Edit, then accept.
    await page.click(`#note-${slurp} details.edit summary`);
    await page.fill(`#note-${slurp} textarea`, "jq -s reads every input into one array.");
    await page.click(`#note-${slurp} form.edit-accept button[type="submit"]`);
    await page.waitForSelector(`#note-${slurp}`, { state: "detached" });
    // Reject, with a reason: kept below, restorable.
    await page.fill(`#note-${opt} form.reject input[name="reason"]`, "we never use .[]?");
    await page.click(`#note-${opt} form.reject button[type="submit"]`);
    await page.waitForSelector("#queue-empty");
    assert.match(await page.textContent("#rejected"), /we never use/);

    const listed = JSON.parse(cli(w, ["notes", "jq", "--json"]));
    assert.equal(listed.total, 2);
    assert.ok(listed.notes.some((n) => n.delta === "jq -s reads every input into one array."));
    const recalled = JSON.parse(cli(w, ["recall", "jq", "--json"]));
    assert.match(recalled.block, /raw strings/);
    assert.doesNotMatch(recalled.block, /skips values/);

    // Undo the rejection: back in the queue.
    await page.click(`#rejected #note-${opt} button`);
    await page.waitForSelector(`#queue #note-${opt}`);
    assert.match(await page.textContent("#pending-count"), /^1 waiting/);

    // Provenance on a note links to its session's other notes.
    await page.goto(new URL("/skill/jq", url).href);
    assert.match(await page.textContent(`#note-${raw} .provenance`), /historian · host cli · session sess-42/);
    await Promise.all([page.waitForURL(/\/session\?id=sess-42/), page.click(`#note-${raw} .provenance a.session`)]);
    // The three, and the historian's text of the one edited before it was accepted.
    assert.match(await page.textContent("#count"), /^4 notes written in session/);
    assert.ok(await page.$(`#note-${opt}`));
    await page.screenshot({ path: join(SHOTS, "session.png"), fullPage: true });
    assert.deepEqual(errors, [], "no script errors");
  } finally {
    await browser.close();
    child.kill();
    rmSync(profile, { recursive: true, force: true });
    rmSync(w.root, { recursive: true, force: true });
  }
});
