//! `skillmem setup <host>`: wires skillmem into an agent host's own configuration, and
//! `doctor`'s check of that wiring.
//!
//! A host's wiring is a [`Plan`]: a few edits of the host's JSON or TOML files (an entry in an
//! array, a key of an object, a TOML table) and files of skillmem's own. Applying a plan reads
//! each file, changes only those places and writes it back with everything else as it was
//! (JSON key order and indentation, TOML comments and layout through `toml_edit`); undoing it
//! removes exactly those places. A file whose content would not change is not written, so a
//! second run changes no byte. Before a file is changed, its old content is kept next to it as
//! `<file>.skillmem-backup`.
//!
//! Must not: clobber what it did not add (other hooks, MCP servers, settings), write anything
//! when a file cannot be read as JSON/TOML (the error names the file and what to fix).

pub mod check;
pub mod json;
pub mod plans;

use std::path::{Path, PathBuf};

use json::J;
use sha2::{Digest, Sha256};

pub use check::wiring_checks;
pub use plans::{plan, Host, Where};

/// A problem that stops a setup before anything is written.
#[derive(Debug, thiserror::Error)]
#[error("{0}")]
pub struct SetupError(pub String);

type Result<T> = std::result::Result<T, SetupError>;

/// What a host needs, file by file.
#[derive(Debug, Clone)]
pub struct Plan {
    pub host: Host,
    pub ops: Vec<Op>,
    /// What to do next, after the files are written.
    pub next: Vec<String>,
}

/// One file's edits.
#[derive(Debug, Clone)]
pub enum Op {
    /// Edits of a JSON file (created when missing).
    Json { path: PathBuf, edits: Vec<JsonEdit> },
    /// Tables of a TOML file (created when missing): each table at its dotted path is made to
    /// hold these entries; undo removes the table.
    Toml { path: PathBuf, tables: Tables },
    /// A file that is skillmem's alone (written whole, removed on undo).
    File { path: PathBuf, content: String },
    /// A top-level string key of a TOML file that skillmem owns only while its value holds
    /// `marker`: set when missing or skillmem's, left alone when the user's own; undo removes it
    /// when it is skillmem's.
    TomlKey { path: PathBuf, key: String, value: String, marker: String },
    /// Codex's hook trust: for every handler of `hooks_json` whose command holds `marker`, the
    /// table `hooks.state."<hooks.json>:<event>:<group>:<handler>"` in `config` with
    /// `enabled = true` and the handler's `trusted_hash`.
    CodexTrust { hooks_json: PathBuf, config: PathBuf, marker: String },
}

/// TOML tables by their key path, with the entries each must hold.
pub type Tables = Vec<(Vec<String>, Vec<(String, TomlValue)>)>;

/// A TOML value skillmem writes.
#[derive(Debug, Clone, PartialEq)]
pub enum TomlValue {
    Str(String),
    Bool(bool),
    Strs(Vec<String>),
}

/// One edit of a JSON document.
#[derive(Debug, Clone)]
pub enum JsonEdit {
    /// The object at `at` (keys from the root, created when missing) gets `key: value`.
    Key { at: Vec<String>, key: String, value: J },
    /// The array at `at` holds `item` once: items whose compact text contains `marker` (or one
    /// of its lines, see [`is_ours`]) are skillmem's (an earlier setup's, perhaps from another
    /// path) and are replaced by it.
    Item { at: Vec<String>, item: J, marker: String },
}

/// Whether an array item is skillmem's: its compact text contains one of the marker's lines
/// (one plugin wired from a checkout, an installed package or the registry has one marker a form).
pub fn is_ours(item: &J, marker: &str) -> bool {
    let text = item.compact();
    marker.lines().any(|m| text.contains(m))
}

/// One file's change: its content before and after (`None`: no file).
#[derive(Debug, Clone, PartialEq)]
pub struct Change {
    pub path: PathBuf,
    pub before: Option<String>,
    pub after: Option<String>,
}

/// The changes a plan makes (or, with `undo`, takes back), without writing anything. Files
/// that would not change are left out.
pub fn changes(plan: &Plan, undo: bool) -> Result<Vec<Change>> {
    let mut out: Vec<Change> = vec![];
    for op in &plan.ops {
        let path = op_path(op);
        // A later op on the same file (Codex's config) sees the earlier ones' result.
        let current = match out.iter().find(|c| c.path == path) {
            Some(c) => c.after.clone(),
            None => read(path)?,
        };
        let after = match op {
            Op::Json { path, edits } => json_op(path, current.as_deref(), edits, undo)?,
            Op::Toml { path, tables } => toml_op(path, current.as_deref(), tables, undo)?,
            Op::TomlKey { path, key, value, marker } => {
                toml_key_op(path, current.as_deref(), key, value, marker, undo)?
            }
            Op::File { content, .. } => {
                if undo {
                    None
                } else {
                    Some(content.clone())
                }
            }
            Op::CodexTrust { hooks_json, config, marker } => {
                let edited = out.iter().find(|c| c.path == *hooks_json);
                // Undo takes back the trust of the handlers the file holds now; setup trusts
                // those the edited file will hold.
                let hooks = match (edited, undo) {
                    (Some(c), true) => c.before.clone(),
                    (Some(c), false) => c.after.clone(),
                    (None, _) => read(hooks_json)?,
                };
                let tables = codex_trust(hooks_json, hooks.as_deref(), marker)?;
                toml_op(config, current.as_deref(), &tables, undo)?
            }
        };
        match out.iter_mut().find(|c| c.path == path) {
            Some(c) => c.after = after,
            None => out.push(Change { path: path.to_path_buf(), before: current, after }),
        }
    }
    out.retain(|c| c.before != c.after);
    Ok(out)
}

fn op_path(op: &Op) -> &Path {
    match op {
        Op::Json { path, .. } | Op::Toml { path, .. } | Op::File { path, .. } | Op::TomlKey { path, .. } => path,
        Op::CodexTrust { config, .. } => config,
    }
}

fn read(path: &Path) -> Result<Option<String>> {
    match std::fs::read_to_string(path) {
        Ok(s) => Ok(Some(s)),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
        Err(e) => Err(SetupError(format!("cannot read {}: {e}", path.display()))),
    }
}

/// Writes the changes: each file's old content to `<file>.skillmem-backup` first, then the
/// new content through a temporary file renamed into place. A file whose new content is
/// `None` (setup's own) is removed.
pub fn write(changes: &[Change]) -> Result<()> {
    for c in changes {
        let fail = |what: &str, e: std::io::Error| SetupError(format!("cannot {what} {}: {e}", c.path.display()));
        // A file undo removes was setup's own: no backup of it.
        if let (Some(before), Some(_)) = (&c.before, &c.after) {
            std::fs::write(backup_path(&c.path), before).map_err(|e| fail("back up", e))?;
        }
        match &c.after {
            Some(text) => {
                if let Some(dir) = c.path.parent() {
                    std::fs::create_dir_all(dir).map_err(|e| fail("create the folder of", e))?;
                }
                let mut tmp = c.path.as_os_str().to_owned();
                tmp.push(".skillmem-tmp");
                let tmp = PathBuf::from(tmp);
                std::fs::write(&tmp, text).map_err(|e| fail("write", e))?;
                std::fs::rename(&tmp, &c.path).map_err(|e| fail("write", e))?;
            }
            None => std::fs::remove_file(&c.path).map_err(|e| fail("remove", e))?,
        }
    }
    Ok(())
}

/// Where a file's content before setup's last change of it is kept.
pub fn backup_path(path: &Path) -> PathBuf {
    let mut s = path.as_os_str().to_owned();
    s.push(".skillmem-backup");
    PathBuf::from(s)
}

/// A line diff of a change, for `--dry-run`: `-` lines removed, `+` lines added, two lines
/// of context around each run of changes.
pub fn diff(c: &Change) -> String {
    let a: Vec<&str> = c.before.as_deref().map(|s| s.lines().collect()).unwrap_or_default();
    let b: Vec<&str> = c.after.as_deref().map(|s| s.lines().collect()).unwrap_or_default();
    let head = match (&c.before, &c.after) {
        (None, _) => format!("+++ {} (new file)", c.path.display()),
        (_, None) => format!("--- {} (removed)", c.path.display()),
        _ => format!("*** {}", c.path.display()),
    };
    // Longest common subsequence: settings files are a few hundred lines at most.
    let (n, m) = (a.len(), b.len());
    let mut l = vec![vec![0u32; m + 1]; n + 1];
    for i in (0..n).rev() {
        for j in (0..m).rev() {
            l[i][j] = if a[i] == b[j] { l[i + 1][j + 1] + 1 } else { l[i + 1][j].max(l[i][j + 1]) };
        }
    }
    let mut lines: Vec<(char, &str)> = vec![];
    let (mut i, mut j) = (0, 0);
    while i < n || j < m {
        if i < n && j < m && a[i] == b[j] {
            lines.push((' ', a[i]));
            i += 1;
            j += 1;
        } else if i < n && (j == m || l[i + 1][j] >= l[i][j + 1]) {
            lines.push(('-', a[i]));
            i += 1;
        } else {
            lines.push(('+', b[j]));
            j += 1;
        }
    }
    const CONTEXT: usize = 2;
    let near = |k: usize| {
        let lo = k.saturating_sub(CONTEXT);
        let hi = (k + CONTEXT + 1).min(lines.len());
        lines[lo..hi].iter().any(|(t, _)| *t != ' ')
    };
    let mut out = vec![head];
    let mut skipped = false;
    for (k, (t, text)) in lines.iter().enumerate() {
        if near(k) {
            if skipped {
                out.push("  ...".into());
                skipped = false;
            }
            out.push(format!("{t} {text}"));
        } else {
            skipped = true;
        }
    }
    out.join("\n")
}

/// A file that undo leaves empty was made by setup when setup never changed it before (every
/// change of a file that existed leaves a backup): undo removes it.
fn created_by_setup(path: &Path) -> bool {
    !backup_path(path).exists()
}

// ---- JSON ----------------------------------------------------------------------------------

/// The lines of `//` comments a file starts with (Copilot CLI writes its `config.json` so), kept
/// as they are above the JSON.
fn comment_header(text: &str) -> (&str, &str) {
    let mut at = 0;
    for line in text.split_inclusive('\n') {
        let t = line.trim();
        if !(t.starts_with("//") || (t.is_empty() && at > 0)) {
            break;
        }
        at += line.len();
    }
    text.split_at(at)
}

fn json_op(path: &Path, current: Option<&str>, edits: &[JsonEdit], undo: bool) -> Result<Option<String>> {
    let (header, text) = comment_header(current.unwrap_or_default());
    let mut doc = if text.trim().is_empty() {
        J::Obj(vec![])
    } else {
        J::parse(text).map_err(|e| {
            SetupError(format!(
                "{} is not plain JSON ({e}); skillmem setup does not keep comments or trailing commas: \
                 remove them, or add skillmem's entries by hand (--dry-run on a copy without them shows them); \
                 nothing was changed",
                path.display()
            ))
        })?
    };
    if !matches!(doc, J::Obj(_)) {
        return Err(SetupError(format!(
            "{} does not hold a JSON object; fix the file first, nothing was changed",
            path.display()
        )));
    }
    let original = doc.clone();
    for e in edits {
        if undo {
            unapply(&mut doc, e);
        } else {
            apply(&mut doc, e, path)?;
        }
    }
    if doc == original {
        return Ok(current.map(str::to_string));
    }
    if undo && blank_object(&doc) && created_by_setup(path) {
        return Ok(None);
    }
    if undo {
        // Back to what the file was before setup: its very bytes, when they say the same.
        if let Some(old) =
            read(&backup_path(path))?.filter(|old| J::parse(comment_header(old).1).is_ok_and(|j| j == doc))
        {
            return Ok(Some(old));
        }
    }
    let indent = current.map(json::indent_of).unwrap_or_else(|| b"  ".to_vec());
    Ok(Some(format!("{header}{}", doc.pretty(&indent))))
}

fn blank_object(j: &J) -> bool {
    matches!(j, J::Obj(es) if es.is_empty())
}

/// The object at `at`, made when missing (a non-object in the way is an error).
fn object_at<'a>(doc: &'a mut J, at: &[String], path: &Path) -> Result<&'a mut Vec<(String, J)>> {
    let mut cur = doc;
    for (depth, key) in at.iter().enumerate() {
        let J::Obj(es) = cur else {
            return Err(not_a(path, &at[..depth], "an object"));
        };
        if !es.iter().any(|(k, _)| k == key) {
            es.push((key.clone(), J::Obj(vec![])));
        }
        cur = &mut es.iter_mut().find(|(k, _)| k == key).expect("just made").1;
    }
    match cur {
        J::Obj(es) => Ok(es),
        _ => Err(not_a(path, at, "an object")),
    }
}

fn not_a(path: &Path, at: &[String], what: &str) -> SetupError {
    SetupError(format!(
        "{}: \"{}\" is not {what}; fix it by hand first, nothing was changed",
        path.display(),
        at.join(".")
    ))
}

fn apply(doc: &mut J, e: &JsonEdit, path: &Path) -> Result<()> {
    match e {
        JsonEdit::Key { at, key, value } => {
            let es = object_at(doc, at, path)?;
            match es.iter_mut().find(|(k, _)| k == key) {
                Some((_, v)) => *v = value.clone(),
                None => es.push((key.clone(), value.clone())),
            }
        }
        JsonEdit::Item { at, item, marker } => {
            let (last, parent) = at.split_last().expect("an item edit names its array");
            let es = object_at(doc, parent, path)?;
            if !es.iter().any(|(k, _)| k == last) {
                es.push((last.clone(), J::Arr(vec![])));
            }
            let slot = &mut es.iter_mut().find(|(k, _)| k == last).expect("just made").1;
            let J::Arr(items) = slot else {
                return Err(not_a(path, at, "an array"));
            };
            let first = items.iter().position(|i| is_ours(i, marker));
            items.retain(|i| !is_ours(i, marker));
            let at = first.unwrap_or(items.len()).min(items.len());
            items.insert(at, item.clone());
        }
    }
    Ok(())
}

/// Removes what `e` adds; the objects and arrays that this leaves empty go too.
fn unapply(doc: &mut J, e: &JsonEdit) {
    type Entries = Vec<(String, J)>;
    fn walk(j: &mut J, at: &[String], leaf: &dyn Fn(&mut Entries) -> bool) -> bool {
        let J::Obj(es) = j else { return false };
        match at.split_first() {
            None => leaf(es),
            Some((key, rest)) => {
                let Some((_, child)) = es.iter_mut().find(|(k, _)| k == key) else { return false };
                let removed = walk(child, rest, leaf);
                if removed && blank_object(child) {
                    es.retain(|(k, _)| k != key);
                }
                removed
            }
        }
    }
    match e {
        JsonEdit::Key { at, key, .. } => {
            walk(doc, at, &|es| {
                let n = es.len();
                es.retain(|(k, _)| k != key);
                es.len() != n
            });
        }
        JsonEdit::Item { at, marker, .. } => {
            let (last, parent) = at.split_last().expect("an item edit names its array");
            walk(doc, parent, &|es| {
                let Some((_, J::Arr(items))) = es.iter_mut().find(|(k, _)| k == last) else { return false };
                let n = items.len();
                items.retain(|i| !is_ours(i, marker));
                let (removed, empty) = (items.len() != n, items.is_empty());
                if removed && empty {
                    es.retain(|(k, _)| k != last);
                }
                removed
            });
        }
    }
}

// ---- TOML ----------------------------------------------------------------------------------

fn toml_op(path: &Path, current: Option<&str>, tables: &Tables, undo: bool) -> Result<Option<String>> {
    let text = current.unwrap_or_default();
    let mut doc: toml_edit::DocumentMut = text.parse().map_err(|e| {
        SetupError(format!("{} is not valid TOML ({e}); fix it first, nothing was changed", path.display()))
    })?;
    for (at, entries) in tables {
        if undo {
            remove_table(doc.as_table_mut(), at);
        } else {
            let t = table_at(doc.as_table_mut(), at, path)?;
            for (k, v) in entries {
                let want = toml_value(v);
                let same = t.get(k).and_then(|i| i.as_value()).is_some_and(|have| same_value(have, &want));
                if !same {
                    t.insert(k, toml_edit::Item::Value(want));
                }
            }
        }
    }
    finish_toml(path, current, doc.to_string(), undo)
}

/// A TOML file's new text, or `None` when undo leaves empty a file setup created; on undo, the
/// backup's very bytes when they say the same.
fn finish_toml(path: &Path, current: Option<&str>, after: String, undo: bool) -> Result<Option<String>> {
    let text = current.unwrap_or_default();
    if after == text {
        return Ok(current.map(str::to_string));
    }
    if undo && after.trim().is_empty() && created_by_setup(path) {
        return Ok(None);
    }
    if undo {
        let same = |a: &str, b: &str| matches!((toml::from_str::<toml::Table>(a), toml::from_str::<toml::Table>(b)), (Ok(x), Ok(y)) if x == y);
        if let Some(old) = read(&backup_path(path))?.filter(|old| same(old, &after)) {
            return Ok(Some(old));
        }
    }
    Ok(Some(after))
}

fn toml_key_op(
    path: &Path,
    current: Option<&str>,
    key: &str,
    value: &str,
    marker: &str,
    undo: bool,
) -> Result<Option<String>> {
    let text = current.unwrap_or_default();
    let mut doc: toml_edit::DocumentMut = text.parse().map_err(|e| {
        SetupError(format!("{} is not valid TOML ({e}); fix it first, nothing was changed", path.display()))
    })?;
    let have = doc.get(key).map(|i| i.as_str().map(str::to_string));
    let ours = matches!(&have, Some(Some(h)) if h.contains(marker));
    match (undo, &have) {
        (true, _) if ours => {
            doc.remove(key);
        }
        (false, None) => {
            doc.insert(key, toml_edit::value(value));
        }
        (false, Some(Some(h))) if ours && h != value => {
            doc.insert(key, toml_edit::value(value));
        }
        // The user's own value (or skillmem's, unchanged): left as it is.
        _ => {}
    }
    finish_toml(path, current, doc.to_string(), undo)
}

/// The string value of a top-level `key` of a TOML file, if the file says one.
pub fn toml_key(path: &Path, key: &str) -> Option<String> {
    let text = std::fs::read_to_string(path).ok()?;
    let doc: toml_edit::DocumentMut = text.parse().ok()?;
    doc.get(key)?.as_str().map(str::to_string)
}

fn toml_value(v: &TomlValue) -> toml_edit::Value {
    match v {
        TomlValue::Str(s) => s.as_str().into(),
        TomlValue::Bool(b) => (*b).into(),
        TomlValue::Strs(items) => {
            let mut a = toml_edit::Array::new();
            for i in items {
                a.push(i.as_str());
            }
            toml_edit::Value::Array(a)
        }
    }
}

fn same_value(have: &toml_edit::Value, want: &toml_edit::Value) -> bool {
    use toml_edit::Value as V;
    match (have, want) {
        (V::String(a), V::String(b)) => a.value() == b.value(),
        (V::Boolean(a), V::Boolean(b)) => a.value() == b.value(),
        (V::Array(a), V::Array(b)) => a.len() == b.len() && a.iter().zip(b.iter()).all(|(x, y)| same_value(x, y)),
        _ => false,
    }
}

fn table_at<'a>(root: &'a mut toml_edit::Table, at: &[String], path: &Path) -> Result<&'a mut toml_edit::Table> {
    let mut cur = root;
    for (depth, key) in at.iter().enumerate() {
        let last = depth + 1 == at.len();
        if !cur.contains_key(key) {
            let mut t = toml_edit::Table::new();
            t.set_implicit(!last);
            cur.insert(key, toml_edit::Item::Table(t));
        }
        let item = cur.get_mut(key).expect("just made");
        if let Some(inline) = item.as_inline_table_mut().map(std::mem::take) {
            *item = toml_edit::Item::Table(inline.into_table());
        }
        cur = item.as_table_mut().ok_or_else(|| {
            SetupError(format!(
                "{}: {} is not a table; fix it by hand first, nothing was changed",
                path.display(),
                at[..=depth].join(".")
            ))
        })?;
    }
    Ok(cur)
}

fn remove_table(root: &mut toml_edit::Table, at: &[String]) -> bool {
    match at.split_first() {
        None => false,
        Some((key, [])) => root.remove(key).is_some(),
        Some((key, rest)) => {
            let Some(t) = root.get_mut(key).and_then(|i| i.as_table_mut()) else { return false };
            let removed = remove_table(t, rest);
            let empty = t.is_empty();
            if removed && empty {
                root.remove(key);
            }
            removed
        }
    }
}

// ---- Codex hook trust ----------------------------------------------------------------------

/// An event name of Codex's `hooks.json` (`PostToolUse`) as its trust keys spell it
/// (`post_tool_use`).
fn codex_event_key(event: &str) -> String {
    let mut out = String::new();
    for (i, c) in event.chars().enumerate() {
        if c.is_ascii_uppercase() {
            if i > 0 {
                out.push('_');
            }
            out.push(c.to_ascii_lowercase());
        } else {
            out.push(c);
        }
    }
    out
}

/// The hash Codex trusts a handler by: `sha256:<hex>` of the compact JSON, keys sorted, of
/// `{event_name, matcher?, hooks: [the handler, async and timeout filled in]}` (checked
/// against the `currentHash` of `codex app-server`'s `hooks/list`, Codex 0.171.0).
pub fn codex_hook_hash(event: &str, matcher: Option<&str>, handler: &J) -> String {
    let mut h: Vec<(String, J)> = match handler {
        J::Obj(es) => es.clone(),
        _ => vec![],
    };
    if !h.iter().any(|(k, _)| k == "async") {
        h.push(("async".into(), J::Bool(false)));
    }
    if !h.iter().any(|(k, _)| k == "timeout") {
        h.push(("timeout".into(), J::n(600)));
    }
    let mut id =
        vec![("event_name".to_string(), J::s(codex_event_key(event))), ("hooks".into(), J::Arr(vec![J::Obj(h)]))];
    if let Some(m) = matcher {
        id.push(("matcher".into(), J::s(m)));
    }
    let text = sorted(&J::Obj(id)).compact();
    let digest = Sha256::digest(text.as_bytes());
    format!("sha256:{}", digest.iter().map(|b| format!("{b:02x}")).collect::<String>())
}

fn sorted(j: &J) -> J {
    match j {
        J::Obj(es) => {
            let mut es: Vec<(String, J)> = es.iter().map(|(k, v)| (k.clone(), sorted(v))).collect();
            es.sort_by(|a, b| a.0.cmp(&b.0));
            J::Obj(es)
        }
        J::Arr(items) => J::Arr(items.iter().map(sorted).collect()),
        other => other.clone(),
    }
}

/// Every handler of a Codex `hooks.json` whose command holds `marker`: (trust key, hash).
pub fn codex_trusted(hooks_json: &Path, text: Option<&str>, marker: &str) -> Result<Vec<(String, String)>> {
    let Some(text) = text.filter(|t| !t.trim().is_empty()) else { return Ok(vec![]) };
    let doc = J::parse(text).map_err(|e| {
        SetupError(format!("{} is not valid JSON ({e}); fix it first, nothing was changed", hooks_json.display()))
    })?;
    let mut out = vec![];
    let Some(J::Obj(events)) = doc.get("hooks") else { return Ok(out) };
    for (event, groups) in events {
        for (g, group) in groups.items().iter().enumerate() {
            let matcher = group.get("matcher").and_then(J::as_str);
            for (h, handler) in group.get("hooks").map(J::items).unwrap_or_default().iter().enumerate() {
                if handler.get("command").and_then(J::as_str).is_some_and(|c| c.contains(marker)) {
                    let key = format!("{}:{}:{g}:{h}", hooks_json.display(), codex_event_key(event));
                    out.push((key, codex_hook_hash(event, matcher, handler)));
                }
            }
        }
    }
    Ok(out)
}

fn codex_trust(hooks_json: &Path, text: Option<&str>, marker: &str) -> Result<Tables> {
    Ok(codex_trusted(hooks_json, text, marker)?
        .into_iter()
        .map(|(key, hash)| {
            (
                vec!["hooks".into(), "state".into(), key],
                vec![("enabled".into(), TomlValue::Bool(true)), ("trusted_hash".into(), TomlValue::Str(hash))],
            )
        })
        .collect())
}

/// A command line for `sh -c`: the binary's path, quoted when it needs it, then the arguments.
pub fn shell_command(exe: &Path, args: &str) -> String {
    format!("{} {args}", shell_quote(&exe.display().to_string()))
}

/// One word for `sh`: as it is when it is plain, else in single quotes.
pub fn shell_quote(p: &str) -> String {
    let plain = !p.is_empty() && p.chars().all(|c| c.is_ascii_alphanumeric() || "/._-+,:@%".contains(c));
    if plain {
        p.to_string()
    } else {
        format!("'{}'", p.replace('\'', r"'\''"))
    }
}

#[cfg(test)]
mod tests;
