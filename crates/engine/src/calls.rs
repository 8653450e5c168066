//! A session's calls and its end: every tool call a door reports is queued for the session's
//! log (written after the answer, never on a load's path), and a session's end judges each
//! note its loads showed by the calls around them ([`skillmem_store::memory::evidence`]) and counts it
//! once for the session.
//!
//! A session ends when the host says so (`skillmem/sessionEnd`), after [`IDLE_END`] without a
//! call, and when the sidecar shuts down or its input ends (the sessions open in this process);
//! at every end its calls are mined for error → fix lessons too ([`Engine::mine_session`]).

use std::collections::HashMap;
use std::sync::Mutex;
use std::time::Instant;

use serde_json::Value;

use super::{lock, Engine};
use skillmem_error::Result;
use skillmem_store::db;
use skillmem_store::memory::calls::{self, Call, IDLE_END};
use skillmem_store::memory::evidence::{self, Evidence, Later};
use skillmem_store::memory::stash::{self, IntentStash};
use skillmem_store::memory::store::{self, SessionVerdict, SessionWithheld};

/// Prefix of the session ids a door makes up when its host names none (the MCP door): a hook
/// door that reads the host's transcript gives the notes written under one the host's own
/// session ([`Engine::claim_notes`]).
pub const OWN_SESSION_PREFIX: &str = "mcp:";

/// A tool call that is not a skill load, as a door reports it.
#[derive(Debug, Clone, Default)]
pub struct ToolCall {
    pub session: String,
    /// Its place in the session ([`Engine::call_arrived`]); taken now when absent.
    pub position: Option<i64>,
    pub call_id: String,
    pub tool: String,
    pub args: Value,
    pub failed: bool,
    pub exit_code: Option<i64>,
    /// The tool's output (only a failed call's error lines are kept).
    pub output: String,
}

/// The engine's part that holds the sessions this process serves: the intents stashed
/// between a skill call's `toolBefore` and its `toolAfter`, the sessions seen and not ended
/// with each call's position, and the calls reported and not written yet (written after the
/// answer). All of it is taken in the handlers' prologues, before their first `.await`.
#[derive(Default)]
pub(super) struct OpenSessions {
    stash: Mutex<IntentStash>,
    open: Mutex<calls::Sessions>,
    pending: Mutex<Vec<Call>>,
}

impl OpenSessions {
    pub(super) fn stash_intent(&self, session_id: &str, call_id: &str, intent: &str) {
        lock(&self.stash).put(stash::key(session_id, call_id), intent.to_string(), Instant::now());
    }

    pub(super) fn take_intent(&self, session_id: &str, call_id: &str) -> Option<String> {
        lock(&self.stash).take(&stash::key(session_id, call_id), Instant::now())
    }

    /// A call of `session` arrived: its position in the session.
    fn arrive(&self, session: &str) -> i64 {
        lock(&self.open).arrive(session, db::now_ms(), Instant::now())
    }

    fn queue(&self, call: Call) {
        lock(&self.pending).push(call);
    }

    fn any_pending(&self) -> bool {
        !lock(&self.pending).is_empty()
    }

    fn take_pending(&self) -> Vec<Call> {
        std::mem::take(&mut *lock(&self.pending))
    }

    fn close(&self, session: &str) {
        lock(&self.open).close(session);
    }

    /// Closes the sessions with no call for [`IDLE_END`] and returns them.
    fn close_idle(&self) -> Vec<String> {
        lock(&self.open).idle(Instant::now(), IDLE_END)
    }

    /// Closes every open session and returns them.
    fn close_all(&self) -> Vec<String> {
        lock(&self.open).take_all()
    }
}

impl Engine {
    /// A call of `session` arrived: its position in the session. Synchronous and quick: the
    /// server calls it in the handler's prologue, so that concurrent handlers keep the order
    /// calls arrived in.
    pub fn call_arrived(&self, session: &str) -> i64 {
        self.sessions.arrive(session)
    }

    /// Records a call that is not a skill load: its arguments as text and, when it failed, its
    /// error lines, both bounded and redacted. Queued; written after the answer
    /// ([`Engine::write_pending_calls`]).
    pub fn tool_called(&self, c: ToolCall) {
        if c.session.trim().is_empty() {
            return;
        }
        let position = c.position.unwrap_or_else(|| self.call_arrived(&c.session));
        let args = skillmem_text::redact::redact(&calls::args_text(&c.args)).0;
        let errors =
            if c.failed { skillmem_text::redact::redact(&calls::error_lines(&c.output)).0 } else { String::new() };
        let (command, key_lines) = super::historian::mined_call_text(&c.tool, &c.args, c.failed, &c.output);
        let call = Call {
            session: c.session,
            position,
            call_id: c.call_id,
            tool: c.tool,
            skill: None,
            shown: vec![],
            withheld: vec![],
            args,
            command,
            failed: c.failed,
            exit_code: c.exit_code,
            errors,
            key_lines,
            at: db::now_ms(),
        };
        self.sessions.queue(call);
    }

    /// Records the calls a hook door read from the host's transcript at the session's end
    /// (the hosts whose calls do not reach skillmem one by one), each at the time the
    /// transcript gives it (`at`, ms): the loads the hooks recorded sit among them by time.
    /// Skill loads are left out (the hooks recorded them, with what they showed); so are calls
    /// with no time. Returns how many were recorded.
    pub fn transcript_calls(&self, session: &str, calls: &[(Option<i64>, skillmem_historian::mine::Call)]) -> usize {
        let mut n = 0;
        for (k, (at, c)) in calls.iter().enumerate() {
            let Some(at) = at else { continue };
            if skillmem_store::memory::provenance::is_skill_tool(&c.tool) {
                continue;
            }
            self.tool_called(ToolCall {
                session: session.to_string(),
                position: Some(calls::position_at(*at, k as i64)),
                call_id: match &c.position {
                    skillmem_historian::mine::Position::CallId(id) => id.clone(),
                    skillmem_historian::mine::Position::RecordIndex(i) => format!("record:{i}"),
                },
                tool: c.tool.clone(),
                args: serde_json::json!({ "command": c.command }),
                failed: c.failed,
                exit_code: None,
                output: c.output.clone(),
            });
            n += 1;
        }
        n
    }

    /// The notes `ids`, written through the MCP door under a session id of its own making,
    /// belong to the host's session `session` (a hook door read so in the transcript): a use
    /// in that same session then does not make them trusted. Returns how many changed.
    pub fn claim_notes(&self, session: &str, ids: &[i64]) -> Result<usize> {
        if ids.is_empty() || session.trim().is_empty() {
            return Ok(0);
        }
        let mut conn = self.conn();
        let claim = |c: &mut rusqlite::Connection| store::claim_for_session(c, session, ids, OWN_SESSION_PREFIX);
        self.store.catalog.write_always(&mut conn, claim, |_| ids.to_vec())
    }

    /// Queues a skill load for the session's log: the load later calls are compared against,
    /// and the notes its block showed.
    pub(super) fn skill_load_called(
        &self,
        session: &str,
        position: Option<i64>,
        call_id: &str,
        skill: &str,
        shown: &[i64],
        withheld: &[i64],
    ) {
        if session.trim().is_empty() {
            return;
        }
        let position = position.unwrap_or_else(|| self.call_arrived(session));
        let call = Call {
            session: session.to_string(),
            position,
            call_id: call_id.to_string(),
            tool: "skill".into(),
            skill: Some(skill.to_string()),
            shown: shown.to_vec(),
            withheld: withheld.to_vec(),
            at: db::now_ms(),
            ..Default::default()
        };
        self.sessions.queue(call);
    }

    /// Calls wait to be written.
    pub(crate) fn calls_pending(&self) -> bool {
        self.sessions.any_pending()
    }

    /// Writes the queued calls in one transaction; a failure is logged (the log is evidence,
    /// never a reason to fail a host's call).
    ///
    /// The connection is locked before the queue is taken: a session's end that finds the
    /// queue empty then knows every call taken before it is committed (otherwise a writer that
    /// has taken the queue and not yet written it lets an end read a log without its last
    /// calls).
    pub fn write_pending_calls(&self) {
        let mut conn = self.store.conn_as_is();
        let queued = self.sessions.take_pending();
        if queued.is_empty() {
            return;
        }
        // No note changes: the catalog stays as it is (it would reload every note otherwise).
        let record = |c: &mut rusqlite::Connection| store::record_calls(c, &self.project_id, &queued);
        if let Err(e) = self.store.catalog.write_always(&mut conn, record, |_| vec![]) {
            tracing::warn!("{} tool calls were not recorded: {e}", queued.len());
        }
    }

    /// Ends `session`: its accounting is written when this returns. A session with no
    /// recorded call is a no-op.
    pub fn end_session(&self, session: &str) -> Result<()> {
        self.sessions.close(session);
        let counted = self.account_session(session);
        self.mine_ended(session);
        counted
    }

    /// Ends the sessions of this process with no call for [`IDLE_END`]; returns how many.
    pub fn end_idle_sessions(&self) -> usize {
        let idle = self.sessions.close_idle();
        self.account_all(idle)
    }

    /// Ends every session open in this process (shutdown, end of input); returns how many.
    pub fn end_open_sessions(&self) -> usize {
        let open = self.sessions.close_all();
        self.write_pending_calls();
        self.account_all(open)
    }

    fn account_all(&self, sessions: Vec<String>) -> usize {
        let n = sessions.len();
        for s in sessions {
            if let Err(e) = self.account_session(&s) {
                tracing::warn!("session {s}: its notes' use was not counted: {e}");
            }
            self.mine_ended(&s);
        }
        n
    }

    /// Judges every note the session's loads showed (from the first load that showed it) and
    /// writes the session's verdicts.
    fn account_session(&self, session: &str) -> Result<()> {
        self.write_pending_calls();
        let mut conn = self.conn();
        let log = store::session_calls(&conn, session)?;
        if log.is_empty() {
            return Ok(());
        }
        // Each note shown, at the load that first showed it (sets, not scans: a long session
        // shows thousands of notes).
        let mut first: Vec<(i64, usize)> = vec![];
        let mut seen = std::collections::HashSet::new();
        for (i, c) in log.iter().enumerate().filter(|(_, c)| c.skill.is_some()) {
            for id in &c.shown {
                if seen.insert(*id) {
                    first.push((*id, i));
                }
            }
        }
        fn judged(c: &Call) -> Later<'_> {
            Later { args: &c.args, errors: &c.errors, read_only: calls::reads_only(&c.tool) }
        }
        // The calls that are not skill loads, judged once: a note's calls before and after its
        // load are the two sides of one split of this list.
        let plain: Vec<usize> = (0..log.len()).filter(|&i| log[i].skill.is_none()).collect();
        let plain_judged: Vec<Later<'_>> = plain.iter().map(|&i| judged(&log[i])).collect();
        let split = |load: usize| plain.partition_point(|&i| i < load);
        // The store's other sessions, those of each skill loaded here first: a note's base
        // rate is read from those that were not shown it. Each session's log is read once,
        // whichever skills compare against it.
        let mut lists: HashMap<String, Vec<(String, bool)>> = HashMap::new();
        let mut refs: HashMap<String, store::Reference> = HashMap::new();
        for c in &log {
            if let Some(skill) = &c.skill {
                if !lists.contains_key(skill) {
                    let list = store::reference_sessions(&conn, skill, session)?;
                    for (s, _) in &list {
                        if !refs.contains_key(s) {
                            refs.insert(s.clone(), store::reference(&conn, s)?);
                        }
                    }
                    lists.insert(skill.clone(), list);
                }
            }
        }
        // Each reference session's calls as judged, once (not once a note: a session's end
        // judges every note it showed), and each skill's view of them: from its first load.
        let judged_refs: HashMap<&str, Vec<Later<'_>>> = refs
            .iter()
            .map(|(s, r)| {
                let calls = r.calls.iter().map(|c| Later { args: &c.args, errors: &c.errors, read_only: c.read_only });
                (s.as_str(), calls.collect())
            })
            .collect();
        let prepared: HashMap<&str, Vec<Prepared<'_>>> = lists
            .iter()
            .map(|(skill, list)| {
                let view = list
                    .iter()
                    .filter_map(|(s, same_skill)| {
                        let r = refs.get(s)?;
                        let (k, from) = r.first_load.get(skill).copied().unwrap_or((0, 0));
                        let calls = &judged_refs.get(s.as_str())?[k..];
                        Some(Prepared { session: &r.session, same_skill: *same_skill, shown: &r.shown, from, calls })
                    })
                    .collect();
                (skill.as_str(), view)
            })
            .collect();
        let mut verdicts = Vec::with_capacity(first.len());
        for (id, load) in first {
            let Some(note) = store::get(&conn, id)? else { continue };
            let skill = log[load].skill.as_deref().unwrap_or_default();
            let references = reference_for(prepared.get(skill).map_or(&[][..], Vec::as_slice), &note);
            let reference: Vec<&[&[Later<'_>]]> = references.iter().map(Vec::as_slice).collect();
            // The load is a skill call, so no plain call is at its index.
            let k = split(load);
            let (before, later) = plain_judged.split_at(k);
            let v = evidence::judge_in(&note.delta, before, later, &reference);
            verdicts.push(SessionVerdict {
                note: id,
                used_at: v.used.map(|i| log[plain[k + i]].at),
                ignored: v.ignored,
            });
        }
        // The notes a load withheld and no load showed: did their specific appear anyway?
        let mut held: Vec<(i64, usize)> = vec![];
        for (i, c) in log.iter().enumerate().filter(|(_, c)| c.skill.is_some()) {
            for id in &c.withheld {
                // Neither shown nor withheld by an earlier load.
                if seen.insert(*id) {
                    held.push((*id, i));
                }
            }
        }
        let mut withheld = Vec::with_capacity(held.len());
        for (id, load) in held {
            let Some(note) = store::get(&conn, id)? else { continue };
            let (before, later) = plain_judged.split_at(split(load));
            // Any specific that would count as a use, common or not: a step done anyway must
            // not look rarer when withheld than when shown (no base rate here).
            let v = evidence::judge(&note.delta, before, later, &[]);
            withheld.push(SessionWithheld { note: id, appeared: v.used.is_some() });
        }
        let touched: Vec<i64> = verdicts.iter().map(|v| v.note).chain(withheld.iter().map(|w| w.note)).collect();
        let account = |c: &mut rusqlite::Connection| store::account(c, session, &verdicts, &withheld);
        self.store.catalog.write_always(&mut conn, account, |_| touched.clone())?;
        drop(conn);
        // The counts moved: the team gets this machine's new counts at the next sync.
        self.poke_team();
        for d in self.decay(Some(&touched))? {
            tracing::info!("note {} retired: {}", d.id, d.reason);
        }
        Ok(())
    }

    /// Retires the notes among `ids` (every note with evidence when `None`) that were shown in
    /// `memory.retireUnusedAfter` sessions and never used, when a use of them could be seen
    /// ([`evidence::decay_reason`]); returns them. Judged at a session's end and by `distill`.
    pub fn decay(&self, ids: Option<&[i64]>) -> Result<Vec<Decayed>> {
        let after = self.config.memory.retire_unused_after;
        if after == 0 {
            return Ok(vec![]);
        }
        let due = {
            let conn = self.conn();
            let mut due = store::unused_after(&conn, i64::from(after))?;
            if let Some(ids) = ids {
                let ids: std::collections::HashSet<i64> = ids.iter().copied().collect();
                due.retain(|id| ids.contains(id));
            }
            let evidence = store::evidence_of(&conn, &due)?;
            let mut out = vec![];
            for id in due {
                let Some(note) = store::get(&conn, id)? else { continue };
                if note.retired_at.is_some() || note.superseded_by.is_some() {
                    continue;
                }
                let e = evidence.get(&id).copied().unwrap_or_default();
                if let Some(reason) = evidence::decay_reason(&e, note.pinned, &note.delta, after) {
                    out.push(Decayed { id, skill: note.skill, reason });
                }
            }
            out
        };
        for d in &due {
            self.forget(d.id, Some(&d.reason))?;
        }
        Ok(due)
    }

    /// A person wrote, edited, pinned, accepted or confirmed the notes `ids`: trusted from now
    /// on (docs/protocol.md, "Use and trust").
    pub fn vouch(&self, ids: &[i64]) -> Result<()> {
        let mut conn = self.conn();
        let written = self.store.catalog.write_always(&mut conn, |c| store::vouch(c, ids), |_| ids.to_vec());
        drop(conn);
        self.poke_team();
        written
    }

    /// Feedback on note `id`: `useful` counts as a use in `session` (a person's confirmation is
    /// a person's act too); `wrong` retires the note with the reason (restorable).
    pub fn feedback(&self, f: Feedback<'_>) -> Result<FeedbackResult> {
        let id = f.id;
        let n = store::visible_note(&self.conn(), id, &self.project_id)?;
        if n.pending {
            return Err(skillmem_error::Error::invalid(format!(
                "note {id} waits for review: accept or reject it (skillmem review) rather than give feedback"
            )));
        }
        match f.verdict {
            Verdict::Useful => {
                if n.retired_at.is_some() || n.superseded_by.is_some() {
                    return Err(skillmem_error::Error::invalid(format!(
                        "note {id} is retired or replaced; skillmem restore {id} brings it back first"
                    )));
                }
                let session = f.session.map(str::trim).filter(|s| !s.is_empty());
                match (session, f.person) {
                    (Some(s), _) => {
                        let mut conn = self.conn();
                        let count = |c: &mut rusqlite::Connection| store::count_use(c, s, id, db::now_ms());
                        self.store.catalog.write_always(&mut conn, count, |_| vec![id])?;
                    }
                    (None, false) => {
                        return Err(skillmem_error::Error::invalid(
                            "sessionId is required: the session the note helped in (a use counts once per session)",
                        ))
                    }
                    (None, true) => {}
                }
                // `useful` feedback trusts the note directly, as a person's act does: it needs no
                // lift (docs/protocol.md, "Trust").
                self.vouch(&[id])?;
            }
            Verdict::Wrong => {
                let reason = match f.reason.map(str::trim).filter(|r| !r.is_empty()) {
                    Some(r) => format!("wrong: {r}"),
                    None => "wrong".to_string(),
                };
                if n.retired_at.is_none() {
                    self.forget(id, Some(&reason))?;
                }
            }
        }
        let conn = self.conn();
        let e = store::evidence_of(&conn, &[id])?.remove(&id).unwrap_or_default().with_trust();
        let retired_at = store::get(&conn, id)?.and_then(|n| n.retired_at);
        Ok(FeedbackResult { id, used: e.used, trust: e.trust, retired_at })
    }

    /// The evidence of notes by id (shown, used, ignored, when last used, trust).
    pub fn evidence_of(&self, ids: &[i64]) -> Result<HashMap<i64, Evidence>> {
        store::evidence_of(&self.conn(), ids)
    }
}

/// How many sessions of the note's skill make its base rate alone: with fewer, the store's
/// other sessions are added (a young skill's few sessions say little of what is typed anyway).
pub const SKILL_REFERENCE_MIN: usize = 10;

/// The sessions a note's base rate is read from ([`evidence::distinctive`]): of `others`, those
/// that were not shown it and did not write it, each its calls after the skill's load. The
/// sessions of its skill first; when they are fewer than [`SKILL_REFERENCE_MIN`], the store's
/// other sessions are a second set, and a specific must be rare in both: what the skill's own
/// few sessions type anyway (its repository's paths) is no rarer for the other skills' sessions
/// never typing it.
fn reference_for<'p, 'a>(others: &'p [Prepared<'a>], note: &skillmem_store::memory::Note) -> Vec<Vec<&'p [Later<'a>]>> {
    let shown = |r: &Prepared<'a>| r.shown.get(&note.id).is_some_and(|last| *last >= r.from);
    let fits = |r: &&Prepared<'a>| note.session_id.as_deref() != Some(r.session) && !shown(r);
    let calls = |r: &'p Prepared<'a>| r.calls;
    let same: Vec<&[Later<'a>]> = others.iter().filter(|r| r.same_skill).filter(fits).map(calls).collect();
    if same.len() >= SKILL_REFERENCE_MIN {
        return vec![same];
    }
    vec![same, others.iter().filter(fits).map(calls).collect()]
}

/// One of the store's other sessions as a base rate reads it for one skill
/// ([`store::Reference`]): its calls after its first load of the skill as judged (all of them
/// when it did not load it), and the notes its loads showed from that load on (`shown` with a
/// last load at or after `from`).
struct Prepared<'a> {
    session: &'a str,
    same_skill: bool,
    shown: &'a HashMap<i64, u32>,
    from: u32,
    calls: &'a [Later<'a>],
}

/// A note retired because it was shown and never used ([`Engine::decay`]).
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize, schemars::JsonSchema)]
pub struct Decayed {
    pub id: i64,
    pub skill: String,
    /// "unused: shown in N sessions, never used"
    pub reason: String,
}

/// What a host or a person says of a note ([`Engine::feedback`]).
#[derive(Debug, Clone, Copy)]
pub struct Feedback<'a> {
    pub id: i64,
    pub verdict: Verdict,
    pub session: Option<&'a str>,
    pub reason: Option<&'a str>,
    /// A person gives it (the dashboard, a CLI in a person's terminal).
    pub person: bool,
}

/// `useful` or `wrong`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum Verdict {
    /// The note helped: a use in the session.
    Useful,
    /// The note is wrong: it is retired with the reason (restorable).
    Wrong,
}

impl Verdict {
    pub fn parse(s: &str) -> Option<Verdict> {
        match s.trim() {
            "useful" => Some(Verdict::Useful),
            "wrong" => Some(Verdict::Wrong),
            _ => None,
        }
    }
}

/// What `skillmem/feedback` answers.
#[derive(Debug, Clone, serde::Serialize, serde::Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct FeedbackResult {
    pub id: i64,
    /// Sessions that used the note, this one included.
    pub used: i64,
    pub trust: skillmem_store::memory::evidence::Trust,
    /// When the note was retired (a `wrong` verdict), ms since the epoch.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub retired_at: Option<i64>,
}
