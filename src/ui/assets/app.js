// skillmem ui: posts the page's actions to the JSON API with the token header, then reloads.
// Written for this dashboard (no library); served from the binary.
"use strict";
const token = document.querySelector('meta[name="skillmem-token"]').content;

function showError(msg) {
  const el = document.getElementById("error");
  el.textContent = msg;
  el.hidden = false;
}

async function post(path, body) {
  const r = await fetch(path, {
    method: "POST",
    headers: { "content-type": "application/json", "x-skillmem-token": token },
    body: JSON.stringify(body),
  });
  const j = await r.json().catch(() => ({}));
  if (!r.ok) throw new Error(j.error || r.status + " " + r.statusText);
  return j;
}

// A long operation: follow its job until it is done, showing each progress message.
async function follow(job, out) {
  out.hidden = false;
  for (;;) {
    const r = await fetch("/api/jobs/" + job);
    const j = await r.json();
    out.textContent = j.messages.join("\n") + (j.percent != null ? "\n" + j.percent + "%" : "");
    if (j.done) {
      if (j.error) throw new Error(j.error);
      return j.result;
    }
    await new Promise((res) => setTimeout(res, 250));
  }
}

async function act(el, body) {
  if (el.dataset.confirm && !window.confirm(el.dataset.confirm)) return;
  document.body.classList.add("busy");
  try {
    const r = await post(el.dataset.act, body);
    if (el.dataset.job) {
      const out = document.getElementById("progress");
      const result = await follow(r.job, out);
      if (result.offered) {
        const lines = result.offered.map(
          (o) =>
            o.name + "  " + (o.plugin || "-") + "  " + o.subpath + (o.description ? "  " + o.description : "") +
            (o.problem ? "\n    problem: " + o.problem : ""),
        );
        out.textContent += "\noffered: " + result.offered.length + " skill(s), nothing installed\n" + lines.join("\n");
        return;
      }
      const refused = (result.refused || []).map((x) => x.name + " (" + x.subpath + "): " + x.reason);
      const added = (result.skills || []).map((s) => s.name).join(", ");
      const removed = (result.removed || []).join(", ");
      out.textContent += "\ndone: " + (added || "no skills") + (removed ? "; removed: " + removed : "");
      if (refused.length) out.textContent += "\nnot installed:\n" + refused.join("\n");
      sessionStorage.setItem("skillmem-last", out.textContent);
    }
    if (el.dataset.show) {
      const out = document.getElementById(el.dataset.show);
      out.hidden = false;
      out.textContent = JSON.stringify(r, null, 2);
      return;
    }
    location.reload();
  } catch (e) {
    showError(e.message);
  } finally {
    document.body.classList.remove("busy");
  }
}

document.addEventListener("click", (e) => {
  const b = e.target.closest("button[data-act]");
  if (!b) return;
  e.preventDefault();
  act(b, JSON.parse(b.dataset.body || "{}"));
});

document.addEventListener("submit", (e) => {
  const f = e.target.closest("form[data-act]");
  if (!f) return;
  e.preventDefault();
  const body = JSON.parse(f.dataset.body || "{}");
  for (const [k, v] of new FormData(f)) {
    if (v === "on") body[k] = true;
    else if (k === f.dataset.list) body[k] = v.split(",").map((s) => s.trim()).filter(Boolean);
    else if (v !== "") body[k] = v;
  }
  act(f, body);
});

window.addEventListener("DOMContentLoaded", () => {
  const last = sessionStorage.getItem("skillmem-last");
  const out = document.getElementById("progress");
  if (last && out) {
    out.hidden = false;
    out.textContent = last;
    sessionStorage.removeItem("skillmem-last");
  }
});
