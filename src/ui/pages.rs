//! The dashboard's pages, rendered on the server with plain format strings (every value
//! through [`esc`]); the small script in `assets/app.js` posts the actions to the JSON API.

use std::collections::HashMap;

use axum::extract::{Path as UrlPath, Query, State};
use axum::response::{Html, IntoResponse, Response};

use super::{blocking, ApiError, Shared};
use crate::engine::ListedNote;
use crate::engine::{DayActivity, NoteFilter, NoteSort};
use crate::memory::Scope;
use crate::protocol::curate::{Notes, Review, ReviewParams};
use crate::protocol::{Cx, Method};

pub const APP_JS: &str = include_str!("assets/app.js");
pub const STYLE_CSS: &str = include_str!("assets/style.css");

/// Notes per skill page.
pub const PAGE: usize = 50;

/// Escapes text for HTML text and attribute values.
pub fn esc(s: &str) -> String {
    let mut o = String::with_capacity(s.len());
    for c in s.chars() {
        match c {
            '&' => o.push_str("&amp;"),
            '<' => o.push_str("&lt;"),
            '>' => o.push_str("&gt;"),
            '"' => o.push_str("&quot;"),
            '\'' => o.push_str("&#39;"),
            c => o.push(c),
        }
    }
    o
}

/// Percent-encodes a URL component.
pub fn enc(s: &str) -> String {
    let mut o = String::new();
    for b in s.bytes() {
        if b.is_ascii_alphanumeric() || b"-_.~".contains(&b) {
            o.push(b as char);
        } else {
            o.push_str(&format!("%{b:02X}"));
        }
    }
    o
}

fn day(ms: i64) -> String {
    crate::db::day_of(ms)
}

fn layout(ui: &Shared, title: &str, active: &str, body: &str) -> Response {
    let nav =
        [("/", "Overview"), ("/preview", "What the agent sees"), ("/review", "Review"), ("/skills", "Session skills")]
            .iter()
            .map(|(href, label)| {
                let cls = if *label == active { " class=\"active\"" } else { "" };
                format!("<a href=\"{href}\"{cls}>{label}</a>")
            })
            .collect::<Vec<_>>()
            .join("");
    let html = format!(
        "<!doctype html><html lang=\"en\"><head><meta charset=\"utf-8\"><meta name=\"viewport\" content=\"width=device-width\">\
<meta name=\"skillmem-token\" content=\"{token}\"><title>{title} · skillmem</title>\
<link rel=\"stylesheet\" href=\"/assets/style.css\"><script src=\"/assets/app.js\" defer></script></head>\
<body><header><strong>skillmem</strong><nav>{nav}</nav></header><main><h1>{title}</h1>\
<div id=\"error\" class=\"error\" hidden></div>{body}</main></body></html>",
        token = esc(&ui.token),
        title = esc(title),
    );
    Html(html).into_response()
}

fn err_page(ui: &Shared, e: ApiError) -> Response {
    let msg = e.0.to_string();
    let mut r = layout(ui, "Error", "", &format!("<p class=\"error\">{}</p>", esc(&msg)));
    *r.status_mut() = axum::http::StatusCode::BAD_REQUEST;
    r
}

// ---- overview ----------------------------------------------------------------------------

/// An SVG bar chart of notes written and used per day over the last `span` days (today
/// last), drawn here.
fn chart(active: &[DayActivity], span: i64) -> String {
    if active.is_empty() {
        return "<p class=\"muted\">No notes written or used in the last 30 days.</p>".into();
    }
    let today =
        std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map(|d| d.as_millis() as i64).unwrap_or(0);
    let days: Vec<DayActivity> = (0..span)
        .rev()
        .map(|back| {
            let d = day(today - back * 86_400_000);
            active.iter().find(|a| a.day == d).cloned().unwrap_or(DayActivity { day: d, written: 0, used: 0 })
        })
        .collect();
    let days = &days[..];
    let max = days.iter().map(|d| d.written.max(d.used)).max().unwrap_or(1).max(1) as f64;
    let (w, h, bw) = (720.0, 160.0, 720.0 / days.len() as f64);
    let mut bars = String::new();
    for (i, d) in days.iter().enumerate() {
        let x = i as f64 * bw;
        let hw = d.written as f64 / max * (h - 20.0);
        let hu = d.used as f64 / max * (h - 20.0);
        bars.push_str(&format!(
            "<g><title>{day}: {w} written, {u} used</title>\
<rect class=\"written\" x=\"{x1:.1}\" y=\"{y1:.1}\" width=\"{bw2:.1}\" height=\"{hw:.1}\"/>\
<rect class=\"used\" x=\"{x2:.1}\" y=\"{y2:.1}\" width=\"{bw2:.1}\" height=\"{hu:.1}\"/></g>",
            day = esc(&d.day),
            w = d.written,
            u = d.used,
            x1 = x + 1.0,
            x2 = x + bw / 2.0,
            y1 = h - 16.0 - hw,
            y2 = h - 16.0 - hu,
            bw2 = (bw / 2.0 - 1.0).max(1.0),
        ));
    }
    let first = esc(&days[0].day);
    let last = esc(&days[days.len() - 1].day);
    format!(
        "<svg class=\"chart\" viewBox=\"0 0 {w} {h}\" role=\"img\" aria-label=\"notes written and used per day\">{bars}\
<text x=\"0\" y=\"{ty}\">{first}</text><text x=\"{w}\" y=\"{ty}\" text-anchor=\"end\">{last}</text></svg>\
<p class=\"legend\"><span class=\"written\">■</span> written <span class=\"used\">■</span> used (recalled or hit; by each note's last use)</p>",
        ty = h - 2.0
    )
}

pub async fn overview(State(ui): State<Shared>) -> Response {
    let engine = ui.engine.clone();
    let got = blocking(move || {
        let stats = engine.stats(None, Some(0))?;
        let projects = engine.projects_seen()?;
        let activity = engine.activity(30)?;
        let index = engine.vector_index().map(|ix| (ix.len(), ix.warming()));
        let pending = engine.review_pending()?;
        let here = (engine.config().data_dir.clone(), engine.project_id().to_string());
        Ok((stats, projects, activity, index, here, pending))
    })
    .await;
    let (stats, projects, activity, index, (data_dir, project), pending) = match got {
        Ok(v) => v,
        Err(e) => return err_page(&ui, e),
    };
    let mut b = String::new();
    b.push_str("<section class=\"facts\"><dl>");
    let embedder = match (&stats.embedding.model, stats.embedding.dim) {
        (Some(m), Some(d)) => format!("{m} (dim {d})"),
        _ => "off (notes are recalled by their words)".into(),
    };
    let index = match index {
        Some((n, true)) => format!("loading ({n} vectors so far)"),
        Some((n, false)) => format!("ready, {n} vectors"),
        None => "none".into(),
    };
    for (k, v) in [
        ("Data directory", data_dir.display().to_string()),
        ("This project", project.clone()),
        ("Embedder", embedder),
        ("Vector index", index),
        ("Notes visible here", format!("{} ({} pinned)", stats.notes, stats.pinned)),
        ("Without a current vector", stats.embedding.stale.to_string()),
    ] {
        b.push_str(&format!("<dt>{}</dt><dd>{}</dd>", esc(k), esc(&v)));
    }
    b.push_str("</dl></section>");
    if pending > 0 {
        b.push_str(&format!(
            "<p id=\"pending\"><a href=\"/review\">{pending} promoted observation(s) wait for review</a> (not recalled until accepted)</p>"
        ));
    }
    b.push_str("<h2>Skills with memory</h2>");
    if stats.skills.is_empty() {
        b.push_str("<p class=\"muted\">No skill has notes yet.</p>");
    } else {
        b.push_str("<table id=\"skills\"><thead><tr><th>Skill</th><th>Notes</th><th>Pinned</th><th>Recalls</th><th>Sessions</th><th></th></tr></thead><tbody>");
        for s in &stats.skills {
            b.push_str(&format!(
                "<tr><td><a href=\"/skill/{href}\">{name}</a></td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td><a href=\"/preview?skill={href}\">preview</a></td></tr>",
                s.notes,
                s.pinned,
                s.recalls,
                s.sessions,
                href = enc(&s.skill),
                name = esc(&s.skill)
            ));
        }
        b.push_str("</tbody></table>");
    }
    b.push_str("<h2>Notes written and used, last 30 days</h2>");
    b.push_str(&chart(&activity, 30));
    b.push_str("<h2>Projects seen</h2><ul class=\"projects\">");
    for (p, n) in &projects {
        b.push_str(&format!("<li><code>{}</code> · {n} notes</li>", esc(p)));
    }
    if projects.is_empty() {
        b.push_str("<li class=\"muted\">none yet</li>");
    }
    b.push_str("</ul>");
    layout(&ui, "Overview", "Overview", &b)
}

// ---- skill -------------------------------------------------------------------------------

fn opt<'a>(q: &'a HashMap<String, String>, k: &str) -> Option<&'a str> {
    q.get(k).map(String::as_str).filter(|s| !s.is_empty())
}

fn select(name: &str, current: Option<&str>, options: &[(&str, &str)]) -> String {
    let mut s = format!("<select name=\"{name}\">");
    for (v, label) in options {
        let sel = if current == Some(*v) || (current.is_none() && v.is_empty()) { " selected" } else { "" };
        s.push_str(&format!("<option value=\"{}\"{sel}>{}</option>", esc(v), esc(label)));
    }
    s.push_str("</select>");
    s
}

pub async fn skill(
    State(ui): State<Shared>,
    UrlPath(name): UrlPath<String>,
    Query(q): Query<HashMap<String, String>>,
) -> Response {
    let page: usize = opt(&q, "page").and_then(|p| p.parse().ok()).unwrap_or(1).max(1);
    let filter = NoteFilter {
        skill: Some(name.clone()),
        project_id: opt(&q, "project").filter(|p| *p != "*").map(str::to_string),
        all_projects: opt(&q, "project") == Some("*"),
        kind: opt(&q, "kind").and_then(|k| k.parse().ok()),
        scope: opt(&q, "scope").and_then(|s| s.parse().ok()),
        source: opt(&q, "source").and_then(|s| s.parse().ok()),
        pinned: match opt(&q, "pinned") {
            Some("yes") => Some(true),
            Some("no") => Some(false),
            _ => None,
        },
        search: opt(&q, "q").map(str::to_string),
        sort: match opt(&q, "sort") {
            Some("hits") => NoteSort::Hits,
            Some("recalls") => NoteSort::Recalls,
            Some("used") => NoteSort::Used,
            _ => NoteSort::Recent,
        },
        offset: Some((page - 1) * PAGE),
        limit: Some(PAGE),
        include_superseded: opt(&q, "history").is_some_and(|h| !h.is_empty()),
        pending: false,
        session_id: opt(&q, "session").map(str::to_string),
        trust: opt(&q, "trust").and_then(crate::memory::evidence::Trust::parse),
    };
    let want_dups = opt(&q, "dups").is_some();
    let engine = ui.engine.clone();
    let skill_name = name.clone();
    let got = blocking(move || {
        let notes = Notes::run(&engine, filter, &Cx::quiet_as(crate::protocol::Actor::Person))?;
        let projects = engine.projects_seen()?;
        let dups = if want_dups { Some(engine.duplicates_of(&skill_name)?) } else { None };
        Ok((notes, projects, dups, engine.project_id().to_string()))
    })
    .await;
    let (notes, projects, dups, here) = match got {
        Ok(v) => v,
        Err(e) => return err_page(&ui, e),
    };
    let mut b = String::new();
    // Filters: a GET form, so every view has its URL.
    let mut project_opts: Vec<(String, String)> = vec![(String::new(), format!("this project ({here})"))];
    for (p, _) in &projects {
        if *p != here {
            project_opts.push((p.clone(), p.clone()));
        }
    }
    project_opts.push(("*".into(), "every project".into()));
    let project_opts: Vec<(&str, &str)> = project_opts.iter().map(|(a, b)| (a.as_str(), b.as_str())).collect();
    b.push_str(&format!(
        "<form class=\"filters\" method=\"get\" action=\"/skill/{}\">\
<input type=\"search\" name=\"q\" placeholder=\"search the notes\" value=\"{}\" aria-label=\"search\">{}{}{}{}{}{}{}{}\
<button type=\"submit\">Apply</button></form>",
        enc(&name),
        esc(opt(&q, "q").unwrap_or("")),
        select("project", opt(&q, "project"), &project_opts),
        select(
            "kind",
            opt(&q, "kind"),
            &[
                ("", "any kind"),
                ("gotcha", "gotcha"),
                ("discovery", "discovery"),
                ("fix", "fix"),
                ("workflow", "workflow")
            ]
        ),
        select("scope", opt(&q, "scope"), &[("", "any scope"), ("project", "project"), ("global", "global")]),
        select(
            "source",
            opt(&q, "source"),
            &[
                ("", "any source"),
                ("agent", "agent"),
                ("historian", "historian"),
                ("import", "import"),
                ("team", "team"),
                ("transcript", "mined from a session")
            ]
        ),
        select("pinned", opt(&q, "pinned"), &[("", "pinned or not"), ("yes", "pinned"), ("no", "not pinned")]),
        select(
            "trust",
            opt(&q, "trust"),
            &[("", "trusted or not"), ("trusted", "trusted"), ("unverified", "unverified")]
        ),
        select(
            "sort",
            opt(&q, "sort"),
            &[("", "newest first"), ("used", "most used"), ("hits", "most hits"), ("recalls", "most recalls")]
        ),
        select("history", opt(&q, "history"), &[("", "current notes"), ("yes", "with replaced and retired notes")]),
    ));
    let pages = (notes.total as usize).div_ceil(PAGE).max(1);
    b.push_str(&format!(
        "<p class=\"count\" id=\"count\">{} notes · page {page} of {pages} · <a href=\"/preview?skill={}\">preview what the agent sees</a></p>",
        notes.total,
        enc(&name)
    ));
    b.push_str("<table id=\"notes\"><thead><tr><th>#</th><th>Lesson</th><th>Kind</th><th>Scope</th><th>Source</th><th title=\"sessions that used it / sessions shown it\">Used</th><th>Hits</th><th>Recalls</th><th>Written</th><th>Actions</th></tr></thead><tbody>");
    for n in &notes.notes {
        let id = n.id;
        let pin = if n.pinned {
            format!("<button data-act=\"/api/pin\" data-body='{{\"id\":{id},\"pinned\":false}}'>Unpin</button>")
        } else {
            format!("<button data-act=\"/api/pin\" data-body='{{\"id\":{id},\"pinned\":true}}'>Pin</button>")
        };
        // A note of the history: what replaced it or why it was retired, restore or delete for good.
        if let Some(at) = n.retired_at {
            let state = match n.superseded_by {
                Some(by) => format!("replaced by <a href=\"#note-{by}\">#{by}</a> on {}", day(at)),
                None => format!("retired on {}", day(at)),
            };
            let why = n.reason.as_deref().map(|r| format!(": {}", esc(r))).unwrap_or_default();
            b.push_str(&format!(
                "<tr id=\"note-{id}\" class=\"retired\"><td><a href=\"/note/{id}\" title=\"its versions\">{id}</a></td><td class=\"lesson\"><div class=\"delta\">{delta}</div>\
<div class=\"intent\">{state}{why}</div>{prov}</td><td>{kind}</td><td>{scope}</td><td>{source}</td><td>{uses}</td><td>{hits}</td><td>{recalls}</td><td>{written}</td>\
<td class=\"actions\"><button data-act=\"/api/restore\" data-body='{{\"id\":{id}}}'>Restore</button>\
<button class=\"danger\" data-act=\"/api/purge\" data-body='{{\"id\":{id}}}' data-confirm=\"Delete note {id} and its older versions for good? This cannot be undone.\">Delete for good</button></td></tr>",
                delta = esc(&n.delta),
                prov = provenance(n),
                kind = esc(&n.kind),
                scope = n.scope.as_str(),
                source = esc(&n.source),
                uses = uses_cell(n),
                hits = n.hits,
                recalls = n.recalls,
                written = day(n.created_at),
            ));
            continue;
        }
        let other = if n.scope == Scope::Project { "global" } else { "project" };
        b.push_str(&format!(
            "<tr id=\"note-{id}\" class=\"{cls}\"><td><a href=\"/note/{id}\" title=\"its versions\">{id}</a></td><td class=\"lesson\"><div class=\"delta\">{pinmark}{delta}</div>{intent}{prov}\
<details class=\"edit\"><summary>Edit</summary><form data-act=\"/api/edit\" data-body='{{\"id\":{id}}}'>\
<textarea name=\"delta\" rows=\"3\">{delta}</textarea><button type=\"submit\">Save</button></form></details></td>\
<td>{kind}</td><td>{scope}</td><td>{source}</td><td>{uses}</td><td>{hits}</td><td>{recalls}</td><td>{day}{vec}</td>\
<td class=\"actions\">{pin}<button data-act=\"/api/move\" data-body='{{\"id\":{id},\"scope\":\"{other}\"}}'>Make {other}</button>\
<button class=\"danger\" data-act=\"/api/forget\" data-body='{{\"id\":{id}}}' data-confirm=\"Retire note {id}? It leaves recall and can be restored from the history.\">Forget</button>\
<button class=\"danger\" data-act=\"/api/purge\" data-body='{{\"id\":{id}}}' data-confirm=\"Delete note {id} and its older versions for good? This cannot be undone.\">Delete for good</button></td></tr>",
            cls = if n.pinned { "pinned" } else { "" },
            pinmark = badges(n),
            delta = esc(&n.delta),
            prov = provenance(n),
            intent = if n.intent.is_empty() {
                String::new()
            } else {
                format!("<div class=\"intent\">while: {}</div>", esc(&n.intent))
            },
            kind = esc(&n.kind),
            scope = n.scope.as_str(),
            source = esc(&n.source),
            uses = uses_cell(n),
            hits = n.hits,
            recalls = n.recalls,
            day = day(n.created_at),
            vec = if n.current_vector { "" } else { " <span class=\"badge warn\" title=\"no vector of the current embedder; run skillmem distill\">no vector</span>" },
        ));
    }
    b.push_str("</tbody></table>");
    if notes.notes.is_empty() {
        b.push_str("<p class=\"muted\" id=\"empty\">No notes match.</p>");
    }
    // Pages: the same filters, another page.
    if pages > 1 {
        let mut base: Vec<(String, String)> =
            q.iter().filter(|(k, v)| *k != "page" && !v.is_empty()).map(|(k, v)| (k.clone(), v.clone())).collect();
        base.sort();
        let qs = |p: usize| {
            let mut parts: Vec<String> = base.iter().map(|(k, v)| format!("{}={}", enc(k), enc(v))).collect();
            parts.push(format!("page={p}"));
            format!("/skill/{}?{}", enc(&name), parts.join("&"))
        };
        b.push_str("<nav class=\"pages\">");
        if page > 1 {
            b.push_str(&format!("<a href=\"{}\" rel=\"prev\">← newer</a>", esc(&qs(page - 1))));
        }
        if page < pages {
            b.push_str(&format!("<a href=\"{}\" rel=\"next\">older →</a>", esc(&qs(page + 1))));
        }
        b.push_str("</nav>");
    }
    b.push_str("<h2>Near-duplicate pairs</h2>");
    match dups {
        None => b.push_str(&format!(
            "<p><a id=\"find-dups\" href=\"/skill/{}?dups=1\">Find near-duplicate pairs</a> (as <code>skillmem distill</code> reports them)</p>",
            enc(&name)
        )),
        Some((pairs, warnings)) => {
            for w in warnings {
                b.push_str(&format!("<p class=\"muted\">{}</p>", esc(&w)));
            }
            if pairs.is_empty() {
                b.push_str("<p class=\"muted\" id=\"no-dups\">No near-duplicate pairs.</p>");
            } else {
                b.push_str("<table id=\"dups\"><thead><tr><th>Keep</th><th>Merge into it</th><th>Similarity</th><th></th></tr></thead><tbody>");
                for p in pairs {
                    b.push_str(&format!(
                        "<tr><td>#{a}</td><td>#{bb}</td><td>{s:.3}</td><td><button data-act=\"/api/merge\" data-body='{{\"keep\":{a},\"drop\":{bb}}}'>Merge</button></td></tr>",
                        a = p.a,
                        bb = p.b,
                        s = p.similarity
                    ));
                }
                b.push_str("</tbody></table>");
            }
        }
    }
    layout(&ui, &format!("Skill {name}"), "", &b)
}

// ---- preview -----------------------------------------------------------------------------

// ---- one note's versions -----------------------------------------------------------------

/// A note's versions, oldest first: each one's text, when it was written, and what replaced it
/// or why it was retired; the current one is marked.
pub async fn note_versions(State(ui): State<Shared>, UrlPath(id): UrlPath<i64>) -> Response {
    use crate::protocol::memory::{IdParams, VersionsOf};
    let engine = ui.engine.clone();
    let got =
        blocking(move || VersionsOf::run(&engine, IdParams { id }, &Cx::quiet_as(crate::protocol::Actor::Person)))
            .await;
    let v = match got {
        Ok(v) => v,
        Err(e) => return err_page(&ui, e),
    };
    let mut b = format!(
        "<p><a href=\"/skill/{}?history=yes#note-{id}\">← {}</a> · {} versions, oldest first</p>",
        enc(&v.skill),
        esc(&v.skill),
        v.versions.len()
    );
    b.push_str("<table id=\"versions\"><thead><tr><th>#</th><th>Lesson</th><th>Kind</th><th>Written</th><th>State</th></tr></thead><tbody>");
    for n in &v.versions {
        let state = match (n.retired_at, n.superseded_by) {
            (None, _) => "<span class=\"badge\">current</span>".to_string(),
            (Some(at), Some(by)) => format!("replaced by <a href=\"/note/{by}\">#{by}</a> on {}", day(at)),
            (Some(at), None) => format!("retired on {}", day(at)),
        };
        let why = n.reason.as_deref().map(|r| format!(": {}", esc(r))).unwrap_or_default();
        b.push_str(&format!(
            "<tr id=\"version-{vid}\" class=\"{cls}\"><td>{vid}</td><td class=\"lesson\"><div class=\"delta\">{delta}</div>{ev}</td><td>{kind}</td><td>{day}</td><td>{state}{why}</td></tr>",
            vid = n.id,
            cls = if n.id == id { "this" } else if n.retired_at.is_some() { "retired" } else { "" },
            delta = esc(&n.delta),
            ev = n.evidence.as_ref().map(|e| evidence(e, true)).unwrap_or_default(),
            kind = esc(&n.kind),
            day = day(n.created_at),
        ));
    }
    b.push_str("</tbody></table>");
    layout(&ui, &format!("Note {id}: its versions"), "", &b)
}

pub async fn preview(State(ui): State<Shared>, Query(q): Query<HashMap<String, String>>) -> Response {
    let skill = opt(&q, "skill").map(str::to_string);
    let intent = opt(&q, "intent").map(str::to_string);
    let engine = ui.engine.clone();
    let (sk, it) = (skill.clone(), intent.clone());
    let got = blocking(move || {
        let stats = engine.stats(None, Some(0))?;
        let prev = sk.as_ref().map(|s| engine.preview(s, it.as_deref(), None, None));
        Ok((stats, prev))
    })
    .await;
    let (stats, prev) = match got {
        Ok(v) => v,
        Err(e) => return err_page(&ui, e),
    };
    let mut b = String::from(
        "<p class=\"muted\">The exact block a load of the skill would append to its tool result for this intent. A preview does not count as a recall.</p>",
    );
    let names: Vec<(&str, &str)> = stats.skills.iter().map(|s| (s.skill.as_str(), s.skill.as_str())).collect();
    b.push_str(&format!(
        "<form class=\"filters\" method=\"get\" action=\"/preview\">{}<input name=\"intent\" size=\"50\" placeholder=\"what the agent is about to do\" value=\"{}\" aria-label=\"intent\"><button type=\"submit\">Preview</button></form>",
        select("skill", skill.as_deref(), &names),
        esc(intent.as_deref().unwrap_or(""))
    ));
    match prev {
        None => {}
        Some(Err(e)) => b.push_str(&format!("<p class=\"error\">{}</p>", esc(&e.to_string()))),
        Some(Ok(p)) => match &p.block {
            None => b.push_str(
                "<p class=\"muted\" id=\"block-empty\">Nothing to recall: the load would append nothing.</p>",
            ),
            Some(block) => {
                b.push_str(&format!(
                    "<p>Answered by the <strong id=\"mode\">{}</strong> rung · {} notes · about {} tokens</p>",
                    p.mode.as_str(),
                    p.notes.len(),
                    p.tokens
                ));
                b.push_str("<table id=\"preview-notes\"><thead><tr><th>#</th><th>Lesson</th><th>Kind</th><th>Score</th><th>Found by</th></tr></thead><tbody>");
                for n in &p.notes {
                    b.push_str(&format!(
                        "<tr><td>{}</td><td>{}{}</td><td>{}</td><td>{:.3}</td><td class=\"rung\">{}</td></tr>",
                        n.id,
                        if n.pinned { "<span class=\"badge\">pinned</span> " } else { "" },
                        esc(&n.delta),
                        esc(&n.kind),
                        n.score,
                        if n.pinned && n.rung == crate::memory::RecallMode::Recent {
                            "pinned"
                        } else {
                            n.rung.as_str()
                        }
                    ));
                }
                b.push_str("</tbody></table>");
                b.push_str(&format!("<h2>The block</h2><pre id=\"block\">{}</pre>", esc(block)));
            }
        },
    }
    layout(&ui, "What the agent sees", "What the agent sees", &b)
}

// ---- session skills ----------------------------------------------------------------------

pub async fn session_skills(State(ui): State<Shared>) -> Response {
    let engine = ui.engine.clone();
    let got = blocking(move || Ok((engine.skills_list()?, engine.skills_audit(&[])?))).await;
    let (list, audited) = match got {
        Ok(v) => v,
        Err(e) => return err_page(&ui, e),
    };
    // The audit's verdict of each installed skill (the same as `skills audit`), and its loads.
    let verdict_of = |name: &str| audited.reports.iter().find(|r| r.skill == name).map(|r| r.verdict);
    let loads_of = |name: &str| list.usage.iter().find(|u| u.skill == name);
    let mut b = String::new();
    b.push_str(
        "<h2>Install from a git URL</h2><form id=\"install\" class=\"filters\" data-act=\"/api/skills/install\" data-job=\"1\" data-list=\"skills\">\
<input name=\"url\" size=\"50\" placeholder=\"https://… or /path/to/repo\" aria-label=\"url\" required>\
<input name=\"ref\" size=\"12\" placeholder=\"ref (optional)\" aria-label=\"ref\">\
<input name=\"path\" size=\"20\" placeholder=\"folder (optional)\" aria-label=\"path\">\
<input name=\"skills\" size=\"24\" placeholder=\"skills, comma separated (optional)\" aria-label=\"skills\">\
<input name=\"as\" size=\"14\" placeholder=\"install as (one skill)\" aria-label=\"as\">\
<label><input type=\"checkbox\" name=\"list\"> only list what it offers</label><button type=\"submit\">Install</button></form>\
<p class=\"muted\">Found: the plugins of <code>.claude-plugin/marketplace.json</code>, <code>skills/&lt;name&gt;/SKILL.md</code>, else every folder holding a SKILL.md at any depth. A folder, skill names (or a subpath, to pick one of two skills of one name) and a new name for one chosen skill narrow what installs.</p>\
<pre id=\"progress\" class=\"progress\" hidden></pre>",
    );
    b.push_str("<h2>Installed sources</h2>");
    if list.sources.is_empty() {
        b.push_str("<p class=\"muted\" id=\"no-sources\">No session skills installed.</p>");
    }
    for s in &list.sources {
        let body = serde_json::json!({ "source": s.source }).to_string();
        b.push_str(&format!(
            "<section class=\"source\"><h3><code>{src}</code></h3><p>ref <code>{rref}</code> · pinned <code>{pin}</code>{chosen}</p>\
<p class=\"actions\"><button data-act=\"/api/skills/update\" data-job=\"1\" data-body='{body}'>Update</button>\
<button class=\"danger\" data-act=\"/api/skills/remove\" data-body='{body}' data-confirm=\"Remove {src} and its skills?\">Remove</button></p><ul class=\"skill-list\">",
            src = esc(&s.source),
            rref = esc(s.requested_ref.as_deref().unwrap_or("HEAD")),
            pin = esc(&s.pinned_ref.chars().take(12).collect::<String>()),
            body = esc(&body),
            chosen = if s.choices.is_empty() {
                String::new()
            } else {
                let c: Vec<String> = s
                    .choices
                    .iter()
                    .map(|c| if c.is_all() { "(every skill)".into() } else { serde_json::to_string(c).unwrap_or_default() })
                    .collect();
                format!(" · chosen <code class=\"choices\">{}</code>", esc(&c.join(" ")))
            },
        ));
        for k in &s.skills {
            let from = match &k.plugin {
                Some(p) => format!(" <span class=\"muted\">plugin {} · {}</span>", esc(p), esc(&k.subpath)),
                None if !k.subpath.is_empty() => format!(" <span class=\"muted\">{}</span>", esc(&k.subpath)),
                None => String::new(),
            };
            let verdict = match verdict_of(&k.name) {
                Some(v) => format!(
                    " <span class=\"badge audit-{v}\" title=\"skillmem skills audit {n}\">audit: {v}</span>",
                    v = v.as_str(),
                    n = esc(&k.name)
                ),
                None => String::new(),
            };
            let loads = match loads_of(&k.name) {
                Some(u) => format!(
                    " <span class=\"muted loads\">{} load(s), last {} ({})</span>",
                    u.loads,
                    crate::db::day_of(u.last_used),
                    esc(&u.hosts.join(", "))
                ),
                None => " <span class=\"muted loads\">never seen loaded</span>".into(),
            };
            b.push_str(&format!(
                "<li><strong>{}</strong>{from}{verdict}{loads} {}{}</li>",
                esc(&k.name),
                esc(&k.description),
                if k.warnings.is_empty() {
                    String::new()
                } else {
                    format!(" <span class=\"badge warn\">{}</span>", esc(&k.warnings.join("; ")))
                }
            ));
        }
        b.push_str("</ul></section>");
    }
    b.push_str(
        "<h2>Seed into a folder</h2><form id=\"seed\" class=\"filters\" data-act=\"/api/skills/seed\" data-list=\"skills\" data-show=\"seed-result\">\
<input name=\"cwd\" size=\"40\" placeholder=\"/abs/path/of/the/session\" aria-label=\"folder\" required>\
<input name=\"skills\" size=\"30\" placeholder=\"skill names, comma separated\" aria-label=\"skills\" required>\
<input name=\"target\" size=\"16\" placeholder=\".claude/skills\" aria-label=\"target\">\
<label><input type=\"checkbox\" name=\"dryRun\"> dry run</label><button type=\"submit\">Seed</button></form>\
<pre id=\"seed-result\" class=\"progress\" hidden></pre>",
    );
    layout(&ui, "Session skills", "Session skills", &b)
}

// ---- provenance --------------------------------------------------------------------------

/// The badges before a current note's lesson: pinned, unverified.
fn badges(n: &ListedNote) -> String {
    let mut s = String::new();
    if n.pinned {
        s.push_str("<span class=\"badge\">pinned</span> ");
    }
    if n.evidence.trust == crate::memory::evidence::Trust::Unverified {
        s.push_str("<span class=\"badge unverified\" title=\"no person has checked it and no use with lift behind it yet\">unverified</span> ");
    }
    s
}

/// A note's use, as its row shows it: sessions that used it of those shown it, and the ones
/// where the error it names came back.
fn uses_cell(n: &ListedNote) -> String {
    let e = &n.evidence;
    let ignored =
        if e.ignored > 0 { format!(" <span class=\"muted\">({} ignored)</span>", e.ignored) } else { String::new() };
    let lift = if e.withheld > 0 {
        format!(
            " <span class=\"muted\" title=\"withheld from {} sessions (its specific appeared anyway in {}); lift: use rate when shown minus the rate when withheld, smoothed\">withheld {}, lift {:+.2}</span>",
            e.withheld, e.appeared, e.withheld, e.lift
        )
    } else {
        String::new()
    };
    format!(
        "<span class=\"uses\" title=\"used in {} of {} sessions shown it\">{} / {}</span>{ignored}{lift}",
        e.used, e.shown, e.used, e.shown
    )
}

/// Where a note came from, as a line under its lesson: its source, host, session (a link to
/// the session's other notes) and, for the historian, the transcript and where in it.
pub fn provenance(n: &ListedNote) -> String {
    let mut parts = vec![format!("<span class=\"src\">{}</span>", esc(&n.source))];
    if let Some(o) = n.origin_source {
        parts.push(format!("first written by the {}", esc(o.as_str())));
    }
    if let Some(h) = &n.origin.host {
        parts.push(format!("host <span class=\"host\">{}</span>", esc(h)));
    }
    if let Some(s) = &n.session_id {
        parts.push(format!(
            "session <a class=\"session\" href=\"/session?id={}\" title=\"this session's other notes\">{}</a>",
            enc(s),
            esc(s)
        ));
    }
    if let Some(t) = &n.origin.transcript {
        let at = n.origin.transcript_at.as_deref().map(|a| format!(" ({})", esc(a))).unwrap_or_default();
        parts.push(format!("transcript <code class=\"transcript\">{}</code>{at}", esc(t)));
    }
    let ev = n.backing.as_ref().map(|e| evidence(e, false)).unwrap_or_default();
    format!("<div class=\"provenance\">from {}</div>{ev}", parts.join(" · "))
}

/// What backs a note: the failed call, its error lines, the call that worked or the step,
/// and where they are; folded under the lesson unless `open`.
pub fn evidence(e: &crate::memory::Backing, open: bool) -> String {
    use crate::memory::CallPosition;
    let mut rows = vec![];
    let mut row = |what: &str, text: &str| {
        rows.push(format!("<dt>{what}</dt><dd><code>{}</code></dd>", esc(text)));
    };
    if let Some(c) = &e.failed_call {
        row("failed", c);
    }
    for l in &e.error_lines {
        row("error", l);
    }
    if let Some(s) = &e.step {
        row("until", s);
    }
    if let Some(c) = &e.fixed_call {
        row("worked", c);
    }
    if !e.positions.is_empty() {
        let at: Vec<String> = e
            .positions
            .iter()
            .map(|p| match p {
                CallPosition::RecordIndex(i) => format!("record {i}"),
                CallPosition::CallId(id) => format!("call {id}"),
            })
            .collect();
        rows.push(format!("<dt>at</dt><dd>{}</dd>", esc(&at.join(", "))));
    }
    format!(
        "<details class=\"evidence\"{}><summary>evidence</summary><dl>{}</dl></details>",
        if open { " open" } else { "" },
        rows.concat()
    )
}

// ---- review ------------------------------------------------------------------------------

pub async fn review(State(ui): State<Shared>, Query(q): Query<HashMap<String, String>>) -> Response {
    let skill = opt(&q, "skill").map(str::to_string);
    let engine = ui.engine.clone();
    let got = blocking(move || {
        let p = ReviewParams { skill, limit: Some(PAGE), include_rejected: true, ..Default::default() };
        let queue = Review::run(&engine, p, &Cx::quiet_as(crate::protocol::Actor::Person))?;
        let team = engine.team_support()?;
        Ok((queue, engine.config().historian.review, engine.config().memory.mined_support, team))
    })
    .await;
    let (queue, on, support, team) = match got {
        Ok(v) => v,
        Err(e) => return err_page(&ui, e),
    };
    let waiting: Vec<&ListedNote> = queue.notes.iter().filter(|n| n.retired_at.is_none()).collect();
    let rejected: Vec<&ListedNote> = queue.notes.iter().filter(|n| n.retired_at.is_some()).collect();
    let mut b = String::new();
    b.push_str(if on {
        "<p class=\"muted\">The historian's promoted observations wait here until you accept them (<code>historian.review</code> is on). Nothing here is recalled yet.</p>"
    } else {
        "<p class=\"muted\"><code>historian.review</code> is off: the historian's observations go straight into recall. Notes queued while it was on still wait here.</p>"
    });
    b.push_str(&format!(
        "<p class=\"muted\">Lessons mined from sessions' calls are held here until {support} sessions mined the same lesson (<code>memory.minedSupport</code>), or you accept them.</p>"
    ));
    b.push_str(&team_support(&team));
    b.push_str(&format!("<p class=\"count\" id=\"pending-count\">{} waiting</p>", waiting.len()));
    if waiting.is_empty() {
        b.push_str("<p class=\"muted\" id=\"queue-empty\">Nothing waits for review.</p>");
    } else {
        b.push_str("<table id=\"queue\"><thead><tr><th>#</th><th>Skill</th><th>Lesson</th><th>Kind</th><th>Scope</th><th>Written</th><th>Decision</th></tr></thead><tbody>");
        for n in &waiting {
            let id = n.id;
            let corrects = n
                .review_replaces
                .map(|r| format!("<div class=\"intent\">corrects note #{r}: replaces it once accepted</div>"))
                .unwrap_or_default();
            let on_team = team
                .held
                .iter()
                .find(|l| l.id == id)
                .map(|l| format!(", {} of them on the team's other machines", l.team))
                .unwrap_or_default();
            let corrects = match (n.held, n.support) {
                (true, Some(seen)) => format!(
                    "{corrects}<div class=\"intent held\">held: mined in {seen} of the {support} sessions it needs{on_team}</div>"
                ),
                _ => corrects,
            };
            b.push_str(&format!(
                "<tr id=\"note-{id}\" class=\"pending\"><td>{id}</td><td><a href=\"/skill/{href}\">{skill}</a></td>\
<td class=\"lesson\"><div class=\"delta\">{delta}</div>{corrects}{prov}\
<details class=\"edit\"><summary>Edit, then accept</summary><form class=\"edit-accept\" data-act=\"/api/reviewDecide\" data-body='{{\"id\":{id},\"decision\":\"accept\"}}'>\
<textarea name=\"delta\" rows=\"3\">{delta}</textarea><button type=\"submit\">Save and accept</button></form></details></td>\
<td>{kind}</td><td>{scope}</td><td>{day}</td>\
<td class=\"actions\"><button class=\"accept\" data-act=\"/api/reviewDecide\" data-body='{{\"id\":{id},\"decision\":\"accept\"}}'>Accept</button>\
<form class=\"reject\" data-act=\"/api/reviewDecide\" data-body='{{\"id\":{id},\"decision\":\"reject\"}}'>\
<input name=\"reason\" size=\"18\" placeholder=\"why not (kept)\" aria-label=\"reason\"><button class=\"danger\" type=\"submit\">Reject</button></form></td></tr>",
                href = enc(&n.skill),
                skill = esc(&n.skill),
                delta = esc(&n.delta),
                prov = provenance(n),
                kind = esc(&n.kind),
                scope = n.scope.as_str(),
                day = day(n.created_at),
            ));
        }
        b.push_str("</tbody></table>");
    }
    if !rejected.is_empty() {
        b.push_str("<h2>Rejected</h2><p class=\"muted\">Kept as retired notes with the reason; restore puts one back in the queue.</p>");
        b.push_str("<table id=\"rejected\"><thead><tr><th>#</th><th>Skill</th><th>Lesson</th><th>Why</th><th></th></tr></thead><tbody>");
        for n in &rejected {
            let id = n.id;
            b.push_str(&format!(
                "<tr id=\"note-{id}\" class=\"retired\"><td>{id}</td><td>{skill}</td><td class=\"lesson\">{delta}</td><td>{why}</td>\
<td class=\"actions\"><button data-act=\"/api/restore\" data-body='{{\"id\":{id}}}'>Restore to the queue</button></td></tr>",
                skill = esc(&n.skill),
                delta = esc(&n.delta),
                why = esc(n.reason.as_deref().unwrap_or("")),
            ));
        }
        b.push_str("</tbody></table>");
    }
    layout(&ui, "Review", "Review", &b)
}

/// The team's support of this machine's mined lessons, as `skillmem sync status` lists it: the
/// held ones the team's other machines mined too, and those their sessions released. Nothing
/// when the team backs none.
fn team_support(t: &crate::engine::TeamSupport) -> String {
    if t.held.is_empty() && t.released.is_empty() {
        return String::new();
    }
    let line = |l: &crate::engine::SupportedLesson, what: &str, kind: &str| {
        let accepted = if l.accepted_on_team { ", accepted on another machine" } else { "" };
        format!(
            "<li id=\"team-{kind}-{id}\"><a href=\"/note/{id}\">#{id}</a> ({skill}) {what}: {here} session(s) here + {team} on the team's other machines = {support} of {needed}{accepted}</li>",
            id = l.id,
            skill = esc(&l.skill),
            here = l.here,
            team = l.team,
            support = l.support,
            needed = t.needed,
        )
    };
    let mut b = format!(
        "<section id=\"team-support\"><h2>The team's support</h2><p class=\"count\" id=\"team-support-count\">{} held lesson(s) with the team's support, {} released by it</p><ul>",
        t.held.len(),
        t.released.len()
    );
    for l in &t.held {
        b.push_str(&line(l, "held", "held"));
    }
    for l in &t.released {
        b.push_str(&line(l, "released by the team", "released"));
    }
    b.push_str("</ul></section>");
    b
}

// ---- a session's notes -------------------------------------------------------------------

/// Every note written in one host session, of every skill and project, with the history and
/// the review queue: what the provenance line's session link opens.
pub async fn session(State(ui): State<Shared>, Query(q): Query<HashMap<String, String>>) -> Response {
    let Some(id) = opt(&q, "id").map(str::to_string) else {
        return err_page(&ui, ApiError(crate::error::Error::invalid("which session? open /session?id=SESSION")));
    };
    let engine = ui.engine.clone();
    let sid = id.clone();
    let got = blocking(move || {
        let base = NoteFilter {
            session_id: Some(sid),
            all_projects: true,
            include_superseded: true,
            limit: Some(1_000),
            ..Default::default()
        };
        let notes = Notes::run(&engine, base.clone(), &Cx::quiet_as(crate::protocol::Actor::Person))?;
        // Waiting for review (the rejected ones are history, listed above).
        let pending = Notes::run(
            &engine,
            NoteFilter { pending: true, include_superseded: false, ..base },
            &Cx::quiet_as(crate::protocol::Actor::Person),
        )?;
        Ok((notes, pending))
    })
    .await;
    let (notes, pending) = match got {
        Ok(v) => v,
        Err(e) => return err_page(&ui, e),
    };
    let mut all: Vec<&ListedNote> = notes.notes.iter().chain(pending.notes.iter()).collect();
    all.sort_by_key(|n| (n.created_at, n.id));
    let mut b = format!(
        "<p class=\"count\" id=\"count\">{} notes written in session <code>{}</code>, of every skill and project, oldest first</p>",
        all.len(),
        esc(&id)
    );
    if all.is_empty() {
        b.push_str("<p class=\"muted\" id=\"empty\">No note names this session.</p>");
    } else {
        b.push_str("<table id=\"notes\"><thead><tr><th>#</th><th>Skill</th><th>Lesson</th><th>Kind</th><th>State</th><th>Written</th></tr></thead><tbody>");
        for n in all {
            let state = match (n.pending, n.retired_at, n.superseded_by) {
                (true, None, _) => "<a href=\"/review\">waiting for review</a>".to_string(),
                (_, Some(_), Some(by)) => format!("replaced by #{by}"),
                (_, Some(_), None) => {
                    format!("retired{}", n.reason.as_deref().map(|r| format!(": {}", esc(r))).unwrap_or_default())
                }
                _ => "current".to_string(),
            };
            b.push_str(&format!(
                "<tr id=\"note-{id}\"><td>{id}</td><td><a href=\"/skill/{href}?project=*#note-{id}\">{skill}</a></td>\
<td class=\"lesson\"><div class=\"delta\">{delta}</div>{prov}</td><td>{kind}</td><td>{state}</td><td>{day}</td></tr>",
                id = n.id,
                href = enc(&n.skill),
                skill = esc(&n.skill),
                delta = esc(&n.delta),
                prov = provenance(n),
                kind = esc(&n.kind),
                day = day(n.created_at),
            ));
        }
        b.push_str("</tbody></table>");
    }
    layout(&ui, "Session", "", &b)
}
