//! Team memory, the engine's side: one sync (push the outbox in batches, then pull from the
//! cursor), the status, and the hook that tells the server's background task a write happened.
//!
//! The connection lock is never held across the network: the outbox is read, sent, then
//! acknowledged; a pull is fetched, embedded, then applied, each local step in its own
//! transaction. Recall never waits for the team server, and a write never fails because it is
//! down (the triggers of migration 0007 queue the change in the same transaction).

use std::collections::{HashMap, HashSet};
use std::sync::Mutex;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use super::{lock, Engine};
use skillmem_embed::embed_notes;
use skillmem_error::{Error, Result};
use skillmem_store::memory::store::{self, TeamIncoming, TeamOutboxRow};
use skillmem_team::server::{Event, EventKind, Remote};
use skillmem_team::{self as team, Share, TeamConfig};

/// Local changes sent per push transaction.
pub const PUSH_BATCH: usize = 500;
/// Rows read per pull.
pub const PULL_BATCH: i64 = 1000;

/// A note kept on this machine, and why.
#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct HeldNote {
    pub id: i64,
    pub skill: String,
    pub reason: String,
}

/// What one sync moved.
#[derive(Debug, Clone, Default, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct SyncReport {
    pub team: String,
    /// Local changes the server applied.
    pub pushed: usize,
    /// Rows pulled from the server (this machine's own changes come back too).
    pub pulled: usize,
    /// Notes new to this machine.
    pub inserted: usize,
    /// Notes changed here by the team (pins, edits, scope moves, hits).
    pub updated: usize,
    /// Notes the team purged, deleted here.
    pub removed: usize,
    /// Notes the team replaced or retired: out of recall here, kept as history.
    pub retired: usize,
    /// Notes the team brought back into recall.
    pub restored: usize,
    /// Held mined lessons released into recall by this sync: with the team's sessions counted,
    /// their support reached `memory.minedSupport` (or a person accepted one on another
    /// machine). They are shared in the same sync, as any accepted note.
    pub released: usize,
    /// Notes held back by this sync (secrets found, skills that opted out, project notes).
    pub held: Vec<HeldNote>,
    /// The last server sequence applied here.
    pub cursor: i64,
}

/// `skillmem sync status`.
#[derive(Debug, Clone, Default, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct TeamStatus {
    pub configured: bool,
    pub team: Option<String>,
    pub url: Option<String>,
    pub share: Option<String>,
    pub machine: Option<String>,
    pub cursor: i64,
    /// Local changes waiting for a push.
    pub pending: i64,
    /// Notes kept on this machine, and why.
    pub held: Vec<HeldNote>,
    pub last_push_at: Option<i64>,
    pub last_pull_at: Option<i64>,
    pub last_error: Option<String>,
    pub last_error_at: Option<i64>,
    /// The team's highest server sequence, when the server was asked and answered.
    pub server_head: Option<i64>,
    /// Why the server could not be asked.
    pub server_error: Option<String>,
    /// The team's support of this machine's mined lessons ([`TeamSupport`]).
    pub support: TeamSupport,
}

/// The team's support of this machine's mined lessons: the held ones the team's other
/// machines mined too (their sessions count toward `memory.minedSupport`), and those the
/// team's support released (their sessions here fell short; the team's, or a person's
/// acceptance on another machine, did it).
#[derive(Debug, Clone, Default, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct TeamSupport {
    /// `memory.minedSupport`: the sessions a mined lesson needs.
    pub needed: i64,
    pub held: Vec<SupportedLesson>,
    pub released: Vec<SupportedLesson>,
}

/// A mined lesson and the sessions behind it.
#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct SupportedLesson {
    pub id: i64,
    pub skill: String,
    /// Distinct sessions of this machine (its own, and those imports counted).
    pub here: i64,
    /// Sessions of the team's other machines.
    pub team: i64,
    /// The support every read counts (here and the team's, never the same sessions twice).
    pub support: i64,
    /// A person accepted it on another machine of the team.
    pub accepted_on_team: bool,
}

/// The hold of project notes when only global notes are shared: expected, so not reported.
const PROJECT_HOLD: &str = "a project note (team.share is \"global\")";

/// Why a note is not shared, if it is not.
fn hold_reason(note: &store::TeamNote, share: Share, skill_opted_out: bool) -> Option<String> {
    if skill_opted_out {
        return Some("the skill opted out (skill-memory: { share: false })".into());
    }
    if note.scope == "project" && share == Share::Global {
        return Some(PROJECT_HOLD.into());
    }
    for text in [&note.delta, &note.intent, &note.tags] {
        if let Some(what) = skillmem_text::redact::find_secret(text) {
            return Some(format!("looks like it holds a secret ({what}); edit it out to share the note"));
        }
    }
    None
}

/// The engine's part that tells the server's background sync of each local write.
#[derive(Default)]
pub(super) struct TeamHook {
    poke: Mutex<Option<Box<dyn Fn() + Send + Sync>>>,
}

impl TeamHook {
    fn set(&self, poke: Box<dyn Fn() + Send + Sync>) {
        *lock(&self.poke) = Some(poke);
    }

    fn poke(&self) {
        if let Some(p) = lock(&self.poke).as_ref() {
            p();
        }
    }
}

impl Engine {
    /// The `[team]` configuration, if any.
    pub fn team_config(&self) -> Option<&TeamConfig> {
        self.config.team.as_ref()
    }

    fn require_team(&self) -> Result<&TeamConfig> {
        self.team_config().ok_or_else(|| {
            Error::invalid(
                "no team is configured; add a [team] section (url, team, passwordEnv) to skillmem.toml or team to initializationOptions (README, \"Team memory\")",
            )
        })
    }

    /// Sets what is called after each local write (the server's background sync, debounced).
    pub fn on_team_write(&self, poke: Box<dyn Fn() + Send + Sync>) {
        self.team.set(poke);
    }

    /// Tells the background sync that a write happened (no-op without one).
    pub(crate) fn poke_team(&self) {
        self.team.poke();
    }

    /// Syncs once with the team server: pushes every local change, then pulls every change
    /// since this machine's cursor. A failure is recorded (`sync status`) and returned; nothing
    /// local is lost (the outbox is dropped only once the server has committed it).
    pub fn team_sync(&self) -> Result<SyncReport> {
        let cfg = self.require_team()?.clone();
        let out = self.team_sync_with(&cfg);
        let mut conn = self.conn();
        let error = out.as_ref().err().map(|e| e.to_string());
        let record = |c: &mut rusqlite::Connection| store::team_record_error(c, error.as_deref());
        self.store.catalog.write_always(&mut conn, record, |_| vec![])?;
        out
    }

    fn team_begin(&self, cfg: &TeamConfig) -> Result<store::TeamLocal> {
        let mut conn = self.conn();
        let machine = team::new_machine_id(&self.config.data_dir);
        let begin = |c: &mut rusqlite::Connection| store::team_begin(c, &machine, &cfg.target());
        self.store.catalog.write_always(&mut conn, begin, |_| vec![])
    }

    fn team_sync_with(&self, cfg: &TeamConfig) -> Result<SyncReport> {
        let local = self.team_begin(cfg)?;
        let mut remote = Remote::connect(cfg)?;
        let mut report = SyncReport { team: cfg.team.clone(), cursor: local.cursor, ..Default::default() };
        self.team_push(cfg, &local.machine, &mut remote, &mut report)?;
        self.team_push_counts(&local.machine, &mut remote)?;
        self.team_push_support(&local.machine, &mut remote)?;
        self.team_pull(cfg, local.cursor, &mut remote, &mut report)?;
        self.team_pull_counts(&local.machine, &mut remote)?;
        self.team_pull_support(&local.machine, &mut remote)?;
        report.released = self.team_release_supported()?.len();
        if report.released > 0 {
            // Released lessons wait in the outbox as accepted notes: the team gets them now.
            self.team_push(cfg, &local.machine, &mut remote, &mut report)?;
        }
        Ok(report)
    }

    /// Pushes this machine's own support of each mined lesson that changed since its last push
    /// (named by its key's hash: a held lesson's text never leaves this machine). Skills that
    /// opted out of the team (`share: false`) keep theirs.
    fn team_push_support(&self, machine: &str, remote: &mut Remote) -> Result<()> {
        let mut rows = store::support_to_push(&self.conn())?;
        let mut opted_out: HashMap<String, bool> = HashMap::new();
        rows.retain(|r| {
            !*opted_out.entry(r.skill.clone()).or_insert_with(|| {
                self.skill_context(&r.skill, None).ok().is_some_and(|c| c.settings.share == Some(false))
            })
        });
        for chunk in rows.chunks(PUSH_BATCH) {
            remote.push_support(machine, chunk)?;
            store::support_sent(&mut self.conn(), chunk)?;
        }
        Ok(())
    }

    /// Pulls the other machines' support of mined lessons changed since the support cursor.
    fn team_pull_support(&self, machine: &str, remote: &mut Remote) -> Result<()> {
        let mut cursor = store::support_cursor(&self.conn())?;
        loop {
            let rows = remote.pull_support(machine, cursor, PULL_BATCH)?;
            let Some(last) = rows.last().map(|r| r.0) else { return Ok(()) };
            let n = rows.len();
            let support: Vec<_> = rows.into_iter().map(|r| r.1).collect();
            store::support_apply(&mut self.conn(), machine, &support, last)?;
            cursor = last;
            if n < PULL_BATCH as usize {
                return Ok(());
            }
        }
    }

    /// Releases the held mined lessons whose support, with the team's sessions counted, reached
    /// `memory.minedSupport` (or that a person accepted on another machine), through the one
    /// release path: the team's trigger then queues each as an accepted note.
    fn team_release_supported(&self) -> Result<Vec<i64>> {
        let needed = i64::from(self.config.memory.mined_support.max(1));
        let mut conn = self.conn();
        let release = |c: &mut rusqlite::Connection| {
            let ids = store::held_supported(c, needed)?;
            store::release_all(c, &ids)
        };
        let released = self.store.catalog.write(&mut conn, release, Vec::clone)?;
        for id in &released {
            tracing::info!("team sync: held mined lesson {id} released: its support across the team reached {needed}");
        }
        Ok(released)
    }

    /// Pushes this machine's own counts of the shared notes whose counts changed since their
    /// last push (after the notes themselves, so the server has every note they name).
    fn team_push_counts(&self, machine: &str, remote: &mut Remote) -> Result<()> {
        let rows = store::counts_to_push(&self.conn())?;
        for chunk in rows.chunks(PUSH_BATCH) {
            let counts: Vec<_> = chunk.iter().map(|(_, c)| c.clone()).collect();
            remote.push_counts(machine, &counts)?;
            store::counts_sent(&mut self.conn(), chunk)?;
        }
        Ok(())
    }

    /// Pulls the other machines' counts changed since the counts cursor (after the notes, so
    /// that the notes they name are here), and keeps them beside this machine's own.
    fn team_pull_counts(&self, machine: &str, remote: &mut Remote) -> Result<()> {
        let mut cursor = store::counts_cursor(&self.conn())?;
        loop {
            let rows = remote.pull_counts(machine, cursor, PULL_BATCH)?;
            let Some(last) = rows.last().map(|r| r.0) else { return Ok(()) };
            let n = rows.len();
            let counts: Vec<_> = rows.into_iter().map(|r| r.1).collect();
            let mut conn = self.conn();
            let apply = |c: &mut rusqlite::Connection| store::counts_apply(c, machine, &counts, last);
            let touched = |t: &Result<Vec<i64>>| t.as_deref().unwrap_or(&[]).to_vec();
            self.store.catalog.write_always(&mut conn, apply, touched)?;
            cursor = last;
            if n < PULL_BATCH as usize {
                return Ok(());
            }
        }
    }

    fn team_push(&self, cfg: &TeamConfig, machine: &str, remote: &mut Remote, report: &mut SyncReport) -> Result<()> {
        let mut opted_out: HashMap<String, bool> = HashMap::new();
        loop {
            let rows = store::team_outbox(&self.conn(), PUSH_BATCH)?;
            let Some(upto) = rows.last().map(|r| r.id) else { return Ok(()) };
            for r in &rows {
                if let Some(n) = &r.note {
                    if !opted_out.contains_key(&n.skill) {
                        let out =
                            self.skill_context(&n.skill, None).ok().is_some_and(|c| c.settings.share == Some(false));
                        opted_out.insert(n.skill.clone(), out);
                    }
                }
            }
            let (events, assigned) = events_of(&rows, cfg.share, &opted_out);
            for (id, _, held) in &assigned {
                let reported = held.as_ref().filter(|r| r.as_str() != PROJECT_HOLD);
                if let (Some(reason), Some(r)) = (reported, rows.iter().find(|r| r.note_id == *id)) {
                    if let Some(n) = &r.note {
                        if !report.held.iter().any(|h| h.id == *id) {
                            report.held.push(HeldNote { id: *id, skill: n.skill.clone(), reason: reason.clone() });
                        }
                    }
                }
            }
            let pushed = if events.is_empty() { Default::default() } else { remote.push(machine, &events)? };
            report.pushed += pushed.applied;
            let mut conn = self.conn();
            let mut forgotten = vec![];
            for uid in &pushed.forgotten {
                match assigned.iter().find(|a| a.1 == *uid) {
                    Some(a) => forgotten.push(a.0),
                    None => forgotten.extend(store::team_note_id(&conn, uid)?),
                }
            }
            let ack = |c: &mut rusqlite::Connection| store::team_ack(c, upto, &assigned, &forgotten);
            let removed = self.store.catalog.write(&mut conn, ack, Vec::clone)?;
            if let Some(ix) = self.embedding.index.as_deref() {
                for id in &removed {
                    ix.remove(*id);
                }
            }
            report.removed += removed.len();
        }
    }

    fn team_pull(&self, cfg: &TeamConfig, mut cursor: i64, remote: &mut Remote, report: &mut SyncReport) -> Result<()> {
        let with_project = cfg.share == Share::GlobalAndProject;
        let model = self.embedding.model_id();
        loop {
            let mut rows = remote.pull(cursor, PULL_BATCH)?;
            let Some(last) = rows.last().map(|r| r.seq) else { break };
            report.pulled += rows.len();
            // A teammate's secret never reaches this store: redacted, or not applied when
            // nothing but the secret would be left (it stays on the server, where it came from).
            for r in rows.iter_mut().filter(|r| !r.deleted) {
                let (intent, _) = skillmem_text::redact::redact(&r.note.intent);
                r.note.intent = intent;
                match skillmem_text::redact::redact_lesson(&r.note.delta) {
                    Ok((delta, what)) => {
                        if !what.is_empty() {
                            tracing::warn!(
                                "team sync: pulled note {} held {}; stored redacted",
                                r.uid,
                                what.join(", ")
                            );
                        }
                        r.note.delta = delta;
                    }
                    Err(why) => {
                        tracing::warn!("team sync: pulled note {} not applied: {why}", r.uid);
                        r.deleted = true;
                    }
                }
            }
            // Vectors are not shared: this machine embeds what is new or changed to it.
            let keys: Vec<(String, String)> = rows.iter().map(|r| (r.uid.clone(), r.note.delta.clone())).collect();
            let needs = store::team_needs_vector(&self.conn(), &keys)?;
            let mut incoming: Vec<TeamIncoming> = rows
                .into_iter()
                .map(|r| TeamIncoming { uid: r.uid, deleted: r.deleted, note: r.note, vector: None })
                .collect();
            if let Some(e) = &self.embedding.embedder {
                let which: Vec<usize> = (0..incoming.len()).filter(|i| needs[*i] && !incoming[*i].deleted).collect();
                for chunk_i in which.chunks(64) {
                    let pairs: Vec<(&str, &str)> = chunk_i
                        .iter()
                        .map(|i| (incoming[*i].note.intent.as_str(), incoming[*i].note.delta.as_str()))
                        .collect();
                    match embed_notes(e.as_ref(), &pairs) {
                        Ok(vs) => {
                            for (i, v) in chunk_i.iter().zip(vs) {
                                if v.len() == e.dim() {
                                    incoming[*i].vector = Some(v);
                                }
                            }
                        }
                        // Found by their words meanwhile; `distill` embeds them later.
                        Err(why) => tracing::warn!("team sync: cannot embed pulled notes: {why}"),
                    }
                }
            }
            let mut conn = self.conn();
            let apply =
                |c: &mut rusqlite::Connection| store::team_apply(c, &incoming, last, model.as_deref(), with_project);
            let touched = |a: &store::TeamApplied| {
                a.inserted.iter().chain(&a.updated).chain(&a.removed).chain(&a.retired).copied().collect()
            };
            let applied = self.store.catalog.write(&mut conn, apply, touched)?;
            self.pieces_missing();
            drop(conn);
            if let Some(ix) = self.embedding.index.as_deref() {
                for id in applied.removed.iter().chain(&applied.retired) {
                    ix.remove(*id);
                }
                let back: Vec<i64> = applied.reembedded.iter().chain(&applied.restored).copied().collect();
                if !back.is_empty() {
                    let conn = self.conn();
                    store::ensure_vectors(&conn, ix, &back)?;
                }
            }
            // A lesson that reads as another version of one of this machine's notes forms a
            // conflicting pair with it here too, so the newer leads in this machine's blocks.
            if !applied.reembedded.is_empty() {
                let t = skillmem_store::memory::sameness::Thresholds {
                    merge: self.config.memory.dedup_threshold,
                    subject: self.config.memory.conflict_threshold,
                };
                let mut conn = self.conn();
                let index = self.embedding.index.as_deref();
                let pair =
                    |c: &mut rusqlite::Connection| store::pair_written_elsewhere(c, &applied.reembedded, t, index);
                let pairs = self.store.catalog.write_always(&mut conn, pair, |_| vec![])?;
                if pairs > 0 {
                    tracing::debug!("team sync: {pairs} conflicting pair(s) with notes pulled");
                }
            }
            report.inserted += applied.inserted.len();
            report.updated += applied.updated.len();
            report.removed += applied.removed.len();
            report.retired += applied.retired.len();
            report.restored += applied.restored.len();
            cursor = last;
            report.cursor = last;
            if incoming.len() < PULL_BATCH as usize {
                break;
            }
        }
        Ok(())
    }

    /// The team's support of this machine's mined lessons (`sync status`, the dashboard's
    /// review page): what the other machines' sessions hold up, and what they released.
    pub fn team_support(&self) -> Result<TeamSupport> {
        let needed = i64::from(self.config.memory.mined_support.max(1));
        let mut out = TeamSupport { needed, ..Default::default() };
        for b in store::team_backed(&self.conn())? {
            let released = b.released_by_team(needed);
            let l = SupportedLesson {
                id: b.note_id,
                skill: b.skill,
                here: b.here,
                team: b.team,
                support: b.support,
                accepted_on_team: b.vouched_team,
            };
            if b.held {
                out.held.push(l);
            } else if released {
                out.released.push(l);
            }
        }
        Ok(out)
    }

    /// The local sync state; with `probe`, the server is asked for the team's head too.
    pub fn team_status(&self, probe: bool) -> Result<TeamStatus> {
        let cfg = self.team_config().cloned();
        let conn = self.conn();
        let local = store::team_local(&conn)?;
        let pending = store::team_pending(&conn)?;
        let held = store::team_held(&conn)?
            .into_iter()
            .filter(|h| h.reason != PROJECT_HOLD)
            .map(|h| HeldNote { id: h.note_id, skill: h.skill, reason: h.reason })
            .collect();
        drop(conn);
        let support = self.team_support()?;
        let mut st = TeamStatus {
            configured: cfg.is_some(),
            team: cfg.as_ref().map(|c| c.team.clone()),
            url: cfg.as_ref().map(|c| c.url.clone()),
            share: cfg.as_ref().map(|c| c.share.as_str().to_string()),
            pending,
            held,
            support,
            ..Default::default()
        };
        if let Some(l) = local {
            st.machine = Some(l.machine);
            st.cursor = l.cursor;
            st.last_push_at = l.last_push_at;
            st.last_pull_at = l.last_pull_at;
            st.last_error = l.last_error;
            st.last_error_at = l.last_error_at;
        }
        if let (true, Some(cfg)) = (probe, &cfg) {
            match Remote::connect(cfg).and_then(|mut r| r.head()) {
                Ok(h) => st.server_head = Some(h),
                Err(e) => st.server_error = Some(e.to_string()),
            }
        }
        Ok(st)
    }
}

/// A note's uid, and why it is held back (if it is), as recorded after a push.
type Assigned = (i64, String, Option<String>);

/// Turns outbox rows into the events to push, and the uids (and holds) to record here.
fn events_of(rows: &[TeamOutboxRow], share: Share, opted_out: &HashMap<String, bool>) -> (Vec<Event>, Vec<Assigned>) {
    let mut events = vec![];
    let mut assigned: Vec<Assigned> = vec![];
    // Notes sent whole in this batch: their later hit events are already counted.
    let mut whole: HashSet<i64> = HashSet::new();
    // uid and hold decided in this batch, per note.
    let mut decided: HashMap<i64, (String, Option<String>)> = HashMap::new();
    for r in rows {
        let Some(kind) = EventKind::parse(&r.kind) else { continue };
        if kind == EventKind::Forget {
            if let Some(uid) = &r.uid {
                events.push(Event { id: r.id, kind, uid: uid.clone(), note: None, hits: 0 });
            }
            continue;
        }
        let Some(n) = &r.note else { continue };
        // The successor's team id, when it was decided earlier in this batch.
        let mut n = n.clone();
        if n.superseded_by.is_none() {
            n.superseded_by = r.successor.and_then(|s| decided.get(&s)).filter(|d| d.1.is_none()).map(|d| d.0.clone());
        }
        let n = &n;
        let held = hold_reason(n, share, opted_out.get(&n.skill).copied().unwrap_or(false));
        let known = decided.get(&r.note_id).cloned().or_else(|| r.uid.clone().map(|u| (u, r.held.clone())));
        let uid = known
            .as_ref()
            .map(|k| k.0.clone())
            .unwrap_or_else(|| team::note_uid(&n.skill, &n.scope, &n.project_id, &n.norm_hash, &n.delta));
        let was_shared = matches!(&known, Some((_, None)));
        if held.is_some() || !was_shared || known.is_none() {
            decided.insert(r.note_id, (uid.clone(), held.clone()));
            assigned.retain(|a| a.0 != r.note_id);
            assigned.push((r.note_id, uid.clone(), held.clone()));
        }
        if held.is_some() {
            continue;
        }
        if !was_shared {
            // First time the team sees it: the whole note. An outbox 'note' event carries the
            // hits it was written with (later hits follow as their own events); any other
            // event sends the note as it is now.
            let (hits, now_whole) = if kind == EventKind::Note { (r.hits, false) } else { (n.hits, true) };
            if now_whole {
                whole.insert(r.note_id);
            }
            events.push(Event { id: r.id, kind: EventKind::Note, uid: uid.clone(), note: Some(n.clone()), hits });
            decided.insert(r.note_id, (uid.clone(), None));
            // A retirement or restore of a note the team may have from another machine (the
            // same lesson) applies to that row too.
            if matches!(kind, EventKind::Retire | EventKind::Restore) {
                events.push(Event { id: r.id, kind, uid, note: Some(n.clone()), hits: 0 });
            }
            continue;
        }
        if kind == EventKind::Hit && whole.contains(&r.note_id) {
            continue;
        }
        // A note the team has already (a held lesson a pull mapped onto the team's row, then
        // released here): its write counts as the team's hit, its hits are the team's already.
        let hits = if kind == EventKind::Note { 0 } else { r.hits };
        events.push(Event { id: r.id, kind, uid, note: Some(n.clone()), hits });
    }
    (events, assigned)
}

#[cfg(test)]
mod tests {
    use super::*;
    use skillmem_store::memory::store::TeamNote;

    fn note(delta: &str, scope: &str, hits: i64) -> TeamNote {
        TeamNote {
            skill: "deploy".into(),
            scope: scope.into(),
            project_id: if scope == "project" { "p".into() } else { String::new() },
            origin_project: "p".into(),
            source: "agent".into(),
            kind: "gotcha".into(),
            intent: String::new(),
            delta: delta.into(),
            tags: "[]".into(),
            pinned: false,
            hits,
            norm_hash: skillmem_store::memory::norm_hash(delta),
            created_at: 1,
            updated_at: 1,
            retired_at: None,
            superseded_by: None,
            reason: None,
            evidence: None,
        }
    }

    fn row(
        id: i64,
        kind: &str,
        note_id: i64,
        uid: Option<&str>,
        held: Option<&str>,
        hits: i64,
        n: Option<TeamNote>,
    ) -> TeamOutboxRow {
        TeamOutboxRow {
            id,
            kind: kind.into(),
            note_id,
            uid: uid.map(Into::into),
            held: held.map(Into::into),
            hits,
            note: n,
            successor: None,
        }
    }

    #[test]
    fn a_replacement_names_its_successor_and_a_retirement_reaches_the_teams_row() {
        let newer = note("pin serde_yaml to 0.9", "global", 0);
        let retired =
            |delta: &str| TeamNote { retired_at: Some(5), reason: Some("outdated".into()), ..note(delta, "global", 0) };
        let rows = vec![
            // The new version, first shared in this batch, and the old one it replaced.
            row(1, "note", 20, None, None, 0, Some(newer.clone())),
            TeamOutboxRow {
                successor: Some(20),
                ..row(2, "retire", 21, Some("u21"), None, 0, Some(retired("pin serde_yaml to 0.8")))
            },
            // Retired before this machine ever shared it: the whole note, then the retirement
            // (another machine may have given the team the same lesson).
            row(3, "retire", 22, None, None, 0, Some(retired("use yarn --frozen-lockfile"))),
            // A restore of a shared note.
            row(4, "restore", 23, Some("u23"), None, 0, Some(note("run vacuum after the migration", "global", 1))),
        ];
        let (events, _) = events_of(&rows, Share::Global, &HashMap::new());
        let got: Vec<(i64, EventKind)> = events.iter().map(|e| (e.id, e.kind)).collect();
        assert_eq!(
            got,
            vec![
                (1, EventKind::Note),
                (2, EventKind::Retire),
                (3, EventKind::Note),
                (3, EventKind::Retire),
                (4, EventKind::Restore)
            ]
        );
        let successor = events[1].note.as_ref().and_then(|n| n.superseded_by.clone());
        assert_eq!(successor.as_deref(), Some(events[0].uid.as_str()), "the old version names the new one by team id");
        assert_eq!(events[2].note.as_ref().and_then(|n| n.retired_at), Some(5));
        assert_eq!(events[2].uid, events[3].uid);
    }

    #[test]
    fn outbox_rows_become_events() {
        let ok = note("use --no-cache", "global", 2);
        let secret = note("token ghp_0123456789abcdefghijABCDEFGHIJ0123456789", "global", 0);
        let rows = vec![
            // A new note, then a hit on it in the same batch: note (hits 0) + hit.
            row(1, "note", 10, None, None, 0, Some(ok.clone())),
            row(2, "hit", 10, None, None, 1, Some(ok.clone())),
            // A note with a secret: held, no event.
            row(3, "note", 11, None, None, 0, Some(secret)),
            // A note held before, edited clean: sent whole with its current hits; its later
            // hit in the batch is already counted.
            row(4, "edit", 12, Some("u12"), Some("secret"), 0, Some(ok.clone())),
            row(5, "hit", 12, Some("u12"), Some("secret"), 1, Some(ok.clone())),
            // A project note with share = global: held silently.
            row(6, "note", 13, None, None, 0, Some(note("repo builds with make", "project", 0))),
            // A forget of a shared note, a forget of a note the team never had.
            row(7, "forget", 14, Some("u14"), None, 0, None),
            row(8, "forget", 15, None, None, 0, None),
            // A pin of a note deleted since: nothing to send.
            row(9, "pin", 16, Some("u16"), None, 0, None),
            // A held lesson a pull mapped onto the team's row, released here: the note again,
            // adding none of the hits the team gave it.
            row(10, "note", 17, Some("u17"), None, 3, Some(ok.clone())),
        ];
        let (events, assigned) = events_of(&rows, Share::Global, &HashMap::new());
        let got: Vec<(i64, EventKind, i64)> = events.iter().map(|e| (e.id, e.kind, e.hits)).collect();
        assert_eq!(
            got,
            vec![
                (1, EventKind::Note, 0),
                (2, EventKind::Hit, 1),
                (4, EventKind::Note, 2),
                (7, EventKind::Forget, 0),
                (10, EventKind::Note, 0)
            ]
        );
        assert_eq!(events[4].uid, "u17");
        assert_eq!(events[2].uid, "u12", "a uid, once given, is kept");
        let held: Vec<(i64, bool)> = assigned.iter().map(|a| (a.0, a.2.is_some())).collect();
        assert_eq!(held, vec![(10, false), (11, true), (12, false), (13, true)]);
        assert!(assigned[1].2.as_deref().unwrap().contains("GitHub token"));
        assert_eq!(assigned[3].2.as_deref(), Some(PROJECT_HOLD));
        // With global+project, the project note goes; an opted-out skill holds everything.
        let (events, _) = events_of(&rows[5..6], Share::GlobalAndProject, &HashMap::new());
        assert_eq!(events.len(), 1);
        let out = HashMap::from([("deploy".to_string(), true)]);
        let (events, assigned) = events_of(&rows[..2], Share::Global, &out);
        assert!(events.is_empty());
        assert!(assigned[0].2.as_deref().unwrap().contains("opted out"));
    }
}
