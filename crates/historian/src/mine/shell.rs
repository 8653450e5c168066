//! The shell line: a call's command redacted, split into its commands (`&&`, `;`, pipes) and
//! each read as program, subcommand, flags, arguments, environment and wrappers, and two
//! commands compared (same program? what changed between the failure and the fix?).

use skillmem_text::redact;

/// A shell line with its secrets redacted as every write path redacts them, each marker kept
/// one word of the line (quoted where it stands outside quotes), so that the line parses into
/// the same commands as before: what a session's log keeps of a call's command, mined at the
/// session's end. (`GH_TOKEN=ghp_… gh pr list` → `GH_TOKEN='[redacted: a GitHub token]' gh
/// pr list`, which still runs `gh` with `GH_TOKEN` set.)
pub fn redact_line(line: &str) -> String {
    let spans = redact::spans(line);
    let mut out = String::with_capacity(line.len());
    let mut at = 0;
    for s in &spans {
        out.push_str(&line[at..s.start]);
        let marker = redact::marker(s.what);
        if quoted_at(line, s.start) {
            out.push_str(&marker);
        } else {
            out.push('\'');
            out.push_str(&marker);
            out.push('\'');
        }
        at = s.end;
    }
    out.push_str(&line[at..]);
    out
}

/// Whether byte `at` of a shell line stands inside quotes.
fn quoted_at(line: &str, at: usize) -> bool {
    let (mut single, mut double, mut escaped) = (false, false, false);
    for c in line[..at].chars() {
        match c {
            _ if escaped => escaped = false,
            '\\' if !single => escaped = true,
            '\'' if !double => single = !single,
            '"' if !single => double = !double,
            _ => {}
        }
    }
    single || double
}

/// One command of a shell line: what runs, under what.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Parsed {
    /// `NAME=value` assignments before it, and `export`s earlier on the line.
    pub env: Vec<(String, String)>,
    /// What it runs under (`sudo`, `npx`, `uvx`, `python -m`, `uv run`, …).
    pub wrappers: Vec<String>,
    pub program: String,
    /// The first bare word after the program (`git push`, `npm install`, `kubectl get`).
    pub subcommand: Option<String>,
    pub flags: Vec<String>,
    pub args: Vec<String>,
    /// The flags and arguments as written, in order (what a lesson quotes).
    pub rest: Vec<String>,
    /// The commands that ran before it on the line (`npm ci && npm test`), `cd` left out.
    pub before: Vec<String>,
    /// The files its output redirections write (`> out.txt`, `cat <<EOF > f.py`).
    pub writes: Vec<String>,
    /// The files it appends to (`>> notes.txt`).
    pub appends: Vec<String>,
    /// The programs it was piped into, in order (`ls -R | grep x`: `grep`).
    pub piped: Vec<String>,
}

/// One command of a line as it is split: its words, the files it writes, what it is piped into.
#[derive(Default)]
struct Segment {
    words: Vec<String>,
    writes: Vec<String>,
    appends: Vec<String>,
    piped: Vec<String>,
}

/// What changed from a failed call to the one that worked.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) enum Change {
    None,
    PathOrId,
    Meaningful,
    /// The same call, with a step run before it on the line (`npm ci && npm test`).
    StepOnLine(String),
}

/// Wrappers that take no argument of their own before the program.
const WRAPPERS: &[&str] = &["sudo", "npx", "uvx", "bunx", "pnpx", "env", "time", "nohup", "exec", "command", "doas"];
/// Programs whose first bare word is a subcommand.
const NO_SUBCOMMAND: &[&str] = &[
    "python", "node", "bash", "sh", "gcc", "g++", "clang", "cc", "curl", "wget", "jq", "tsc", "pytest", "jest", "ls",
    "cat",
];

impl Parsed {
    pub(super) fn same_program(&self, other: &Parsed) -> bool {
        let same =
            program_family(&self.program) == program_family(&other.program) && self.subcommand == other.subcommand;
        // `docker-compose up` and `docker compose up`: a plugin that became a subcommand.
        let joined = |a: &Parsed, b: &Parsed| {
            b.subcommand.as_ref().is_some_and(|s| a.program == format!("{}-{s}", b.program))
                && a.subcommand.is_some()
                && a.subcommand == b.args.first().cloned()
        };
        same || joined(self, other) || joined(other, self)
    }

    /// The command as a lesson quotes it: env, wrappers, program, subcommand, then its flags
    /// and arguments as written (without `cd`, redirections or what it was piped into).
    pub fn render(&self) -> String {
        let mut parts: Vec<String> = self.env.iter().map(|(k, v)| format!("{k}={v}")).collect();
        parts.extend(self.wrappers.iter().cloned());
        parts.push(self.program.clone());
        parts.extend(self.subcommand.iter().cloned());
        parts.extend(self.rest.iter().map(|w| if w.contains(' ') { format!("\"{w}\"") } else { w.clone() }));
        parts.join(" ")
    }

    pub(super) fn read_only(&self) -> bool {
        const READ: &[&str] = &[
            "cat", "ls", "head", "tail", "grep", "rg", "find", "echo", "pwd", "which", "type", "less", "wc", "sed",
            "awk", "stat", "file", "tree", "printenv", "whoami", "true", "diff", "sleep", "nl", "more", "od", "xxd",
            "hexdump", "strings", "sort", "uniq", "cut", "column", "realpath", "dirname", "basename", "du", "df",
        ];
        const GIT_READ: &[&str] = &["status", "diff", "log", "show"];
        // `git branch` and `git remote` list when given nothing, and change things otherwise.
        const GIT_LIST: &[&str] = &["branch", "remote"];
        let sub = self.subcommand.as_deref().unwrap_or("");
        READ.contains(&self.program.as_str())
            || (self.program == "git"
                && (GIT_READ.contains(&sub)
                    || (GIT_LIST.contains(&sub)
                        && self.args.is_empty()
                        && self
                            .flags
                            .iter()
                            .all(|f| ["-a", "-r", "-v", "-vv", "--list", "--show-current"].contains(&f.as_str())))))
            || self.flags.iter().any(|f| f == "--help" || f == "--version" || f == "-h")
    }

    /// A look at the program itself (`pytest --version`, `python3 -h`), not a use of it.
    pub(super) fn is_probe(&self) -> bool {
        self.args.is_empty()
            && self.flags.iter().any(|f| matches!(f.as_str(), "--version" | "--help" | "-h" | "-V" | "-version"))
    }

    /// A search, or a line piped into one: its failure is finding nothing (`grep` exits 1 on
    /// no match, and a pipeline's status is its last command's).
    pub(super) fn searches(&self) -> bool {
        const SEARCH: &[&str] = &["grep", "egrep", "fgrep", "rg", "ag", "ack", "find", "locate", "which", "whereis"];
        let search = |p: &str| SEARCH.contains(&p);
        search(&self.program)
            || matches!(self.program.as_str(), "test" | "[" | "cmp")
            || (self.program == "git" && self.subcommand.as_deref() == Some("grep"))
            || self.piped.last().is_some_and(|p| search(p) || p == "head" || p == "tail")
    }

    /// Whether the call that worked is this one changed — another flag, environment, wrapper
    /// or a sibling program, an argument added or a version swapped — rather than another
    /// call of the same program: another script, another inline program (`python -c`),
    /// another query with other words. An argument swapped for another counts when the
    /// failure's `error` names it (`Missing script: "dev"`, `invalid choice: 'x'`).
    pub(super) fn changed_in_place(&self, fixed: &Parsed, error: &str) -> bool {
        const INTERPRETERS: &[&str] = &["python", "node", "ruby", "perl", "bash", "sh", "zsh", "php", "deno", "bun"];
        const CODE: &[&str] = &["-c", "-e", "--eval", "-p", "--print", "-r"];
        if INTERPRETERS.contains(&program_family(&self.program)) {
            let code = |p: &Parsed| p.flags.iter().any(|f| CODE.contains(&f.as_str()));
            if code(self) || code(fixed) {
                // An inline program changed is the task's code changed.
                return code(self) == code(fixed) && self.args == fixed.args;
            }
            if self.args.first() != fixed.args.first() {
                return false;
            }
        }
        let name = |a: &str| -> String {
            let cut = a.char_indices().skip(1).find(|(_, c)| matches!(c, '=' | '@' | '<' | '>' | '~' | '!'));
            cut.map_or(a, |(i, _)| &a[..i]).to_string()
        };
        self.args.iter().filter(|a| !is_path_or_id(a) && !fixed.args.contains(a)).all(|gone| {
            // The same package at another version (`x==1` → `x==2`), or a variant of it
            // (`psycopg2` → `psycopg2-binary`).
            names_word(error, gone)
                || fixed.args.iter().any(|a| {
                    a != gone
                        && ((name(a) == name(gone) && name(a).len() < a.len())
                            || (gone.len() >= 3 && (a.starts_with(gone.as_str()) || gone.starts_with(a.as_str()))))
                })
        })
    }

    pub(super) fn change_to(&self, fixed: &Parsed) -> Change {
        let core = self.change_of_call(fixed);
        if core == Change::Meaningful {
            return core;
        }
        let had = before_steps(&self.before);
        let new = before_steps(&fixed.before);
        match fixed.before.iter().zip(&new).rev().find(|(_, n)| !had.contains(n)) {
            Some((step, _)) => Change::StepOnLine(step.clone()),
            None => core,
        }
    }

    fn change_of_call(&self, fixed: &Parsed) -> Change {
        let meaningful = self.env != fixed.env
            || self.wrappers != fixed.wrappers
            || self.program != fixed.program
            || flag_names(&self.flags) != flag_names(&fixed.flags);
        if meaningful {
            return Change::Meaningful;
        }
        let mut task_bound = false;
        // Flags of the same names whose values differ, and the positional arguments.
        for (a, b) in self.flags.iter().zip(&fixed.flags) {
            if a != b {
                let (va, vb) = (a.split_once('=').map_or("", |x| x.1), b.split_once('=').map_or("", |x| x.1));
                if is_path_or_id(va) && is_path_or_id(vb) {
                    task_bound = true;
                } else {
                    return Change::Meaningful;
                }
            }
        }
        if self.args != fixed.args && self.read_only() {
            return Change::PathOrId;
        }
        if self.args != fixed.args {
            let gone: Vec<&String> = self.args.iter().filter(|a| !fixed.args.contains(a)).collect();
            let new: Vec<&String> = fixed.args.iter().filter(|a| !self.args.contains(a)).collect();
            if !gone.iter().chain(&new).all(|a| is_path_or_id(a)) {
                return Change::Meaningful;
            }
            task_bound = true;
        }
        if task_bound {
            Change::PathOrId
        } else {
            Change::None
        }
    }

    /// What it selects to run: its task paths and the values of its selecting flags (`-k
    /// name`, `-t pattern`).
    pub(super) fn selected(&self) -> Vec<String> {
        let mut out: Vec<String> = self.args.iter().filter(|a| is_path_or_id(a)).cloned().collect();
        for (i, w) in self.rest.iter().enumerate() {
            if matches!(w.as_str(), "-k" | "-t" | "--testNamePattern" | "-p" | "--package" | "--test") {
                out.extend(self.rest.get(i + 1).cloned());
            }
        }
        out
    }

    /// The change only narrows which tests or files run (a path, `-k name`, `--lib`).
    pub(super) fn only_selection_changed(&self, fixed: &Parsed) -> bool {
        // Which tests run, and how much a run prints about them.
        const SELECT: &[&str] = &[
            "-k",
            "-t",
            "--lib",
            "--test",
            "--testNamePattern",
            "--",
            "-p",
            "--package",
            "--run",
            "-x",
            "--bail",
            "-v",
            "-vv",
            "-vvv",
            "-q",
            "-s",
            "--tb",
            "-rs",
            "-ra",
            "-rA",
            "-l",
            "--no-header",
            "--durations",
            "--verbose",
        ];
        if self.env != fixed.env || self.wrappers != fixed.wrappers || self.program != fixed.program {
            return false;
        }
        let extra: Vec<&String> = fixed.flags.iter().filter(|f| !self.flags.contains(f)).collect();
        extra.iter().all(|f| SELECT.contains(&f.split('=').next().unwrap_or(f)))
    }
}

/// Whether `text` holds `word` whole (not inside a longer word).
fn names_word(text: &str, word: &str) -> bool {
    let inner = |c: char| c.is_alphanumeric() || c == '_' || c == '-' || c == '.';
    !word.is_empty()
        && text.match_indices(word).any(|(i, _)| {
            let before = text[..i].chars().next_back();
            let after = text[i + word.len()..].chars().next();
            !before.is_some_and(inner) && !after.is_some_and(|c| inner(c) && c != '.')
        })
}

fn flag_names(flags: &[String]) -> Vec<&str> {
    flags.iter().map(|f| f.split('=').next().unwrap_or(f)).collect()
}

/// The commands before on the line, with their paths and ids left out.
fn before_steps(before: &[String]) -> Vec<String> {
    before.iter().map(|b| b.split_whitespace().filter(|w| !is_path_or_id(w)).collect::<Vec<_>>().join(" ")).collect()
}

/// `python3` and `python`, `pip3` and `pip`, `g++-12` and `g++` are one program.
pub(super) fn program_family(p: &str) -> &str {
    let base = p.rsplit('/').next().unwrap_or(p);
    base.trim_end_matches(|c: char| c.is_ascii_digit() || c == '.' || c == '-')
}

fn is_trivial(p: &Parsed) -> bool {
    matches!(p.program.as_str(), "cd" | "export" | "source" | "." | "set" | "pushd" | "popd" | "unset" | "")
}

/// A path, URL, file name, number, hash, uuid or name with a generated suffix: what a task
/// names and another task would not.
pub fn is_path_or_id(word: &str) -> bool {
    let w = word.trim_matches(|c| c == '\'' || c == '"');
    if w.is_empty() {
        return false;
    }
    let path = w.contains('/') || w.starts_with('.') || w.starts_with('~') || w.contains("://") || has_extension(w);
    let digits = w.chars().filter(char::is_ascii_digit).count();
    let number = digits == w.len();
    let hex = w.len() >= 7 && digits > 0 && w.chars().all(|c| c.is_ascii_hexdigit());
    let suffixed = w.rsplit(['-', '_']).next().is_some_and(|tail| {
        tail.len() >= 4 && tail.chars().any(|c| c.is_ascii_digit()) && tail.chars().all(|c| c.is_ascii_alphanumeric())
    }) && w.contains(['-', '_']);
    path || number || hex || suffixed
}

fn has_extension(w: &str) -> bool {
    w.rsplit_once('.').is_some_and(|(stem, ext)| {
        !stem.is_empty()
            && (1..=5).contains(&ext.len())
            && ext.chars().all(|c| c.is_ascii_alphanumeric())
            && ext.chars().any(|c| c.is_ascii_alphabetic())
            && !stem.chars().all(|c| c.is_ascii_digit() || c == '.')
    })
}

/// Splits a shell line into words and operators: quotes and backslashes kept out of the
/// words, `&&`, `||`, `;`, `|` and newlines as operators, a redirection as the operator `>`
/// (output) or `<` (input) followed by its target. A here-document's body (`cat <<'EOF' >
/// f` … `EOF`) is no command: its lines are dropped, up to and with its delimiter.
fn words(line: &str) -> Vec<(String, bool)> {
    let mut out: Vec<(String, bool)> = vec![];
    let mut cur = String::new();
    let mut has = false;
    let mut chars = line.chars().peekable();
    // The delimiters of the here-documents opened on the current line.
    let mut heredocs: Vec<String> = vec![];
    let flush = |cur: &mut String, has: &mut bool, out: &mut Vec<(String, bool)>| {
        if *has {
            out.push((std::mem::take(cur), false));
            *has = false;
        }
    };
    while let Some(c) = chars.next() {
        match c {
            '\'' => {
                has = true;
                for d in chars.by_ref() {
                    if d == '\'' {
                        break;
                    }
                    cur.push(d);
                }
            }
            '"' => {
                has = true;
                while let Some(d) = chars.next() {
                    match d {
                        '"' => break,
                        '\\' => {
                            if let Some(e) = chars.next() {
                                cur.push(e);
                            }
                        }
                        _ => cur.push(d),
                    }
                }
            }
            '\\' => {
                if let Some(e) = chars.next() {
                    if e != '\n' {
                        cur.push(e);
                        has = true;
                    }
                }
            }
            '\n' if !heredocs.is_empty() => {
                flush(&mut cur, &mut has, &mut out);
                for delim in std::mem::take(&mut heredocs) {
                    let mut body_line = String::new();
                    for d in chars.by_ref() {
                        if d != '\n' {
                            body_line.push(d);
                            continue;
                        }
                        if body_line.trim() == delim {
                            break;
                        }
                        body_line.clear();
                    }
                }
                out.push((";".into(), true));
            }
            '&' | '|' | ';' | '\n' => {
                flush(&mut cur, &mut has, &mut out);
                let mut op = c.to_string();
                if (c == '&' || c == '|') && chars.peek() == Some(&c) {
                    chars.next();
                    op.push(c);
                }
                if op == "&" && chars.peek() == Some(&'>') {
                    // `&>file`
                    chars.next();
                    out.push((">".into(), true));
                    continue;
                }
                out.push((if op == "\n" { ";".into() } else { op }, true));
            }
            '>' | '<' => {
                // `2>&1`, `>file`, `2>/dev/null`: the redirection and its target are dropped.
                if has && cur.chars().all(|d| d.is_ascii_digit()) {
                    cur.clear();
                    has = false;
                }
                flush(&mut cur, &mut has, &mut out);
                let mut op = c.to_string();
                while chars.peek().is_some_and(|&d| d == '>' || d == '<' || d == '&') {
                    op.extend(chars.next());
                }
                if op == "<<" {
                    // `<<-` and `<< 'EOF'`: the delimiter, unquoted.
                    while chars.peek().is_some_and(|&d| d == ' ' || d == '\t' || d == '-') {
                        chars.next();
                    }
                    let mut delim = String::new();
                    while let Some(&d) = chars.peek() {
                        if d.is_whitespace() || matches!(d, ';' | '&' | '|' | '>' | '<') {
                            break;
                        }
                        chars.next();
                        if d != '\'' && d != '"' && d != '\\' {
                            delim.push(d);
                        }
                    }
                    if !delim.is_empty() {
                        heredocs.push(delim);
                    }
                    continue;
                }
                let op = match (c, op.starts_with(">>")) {
                    ('<', _) => "<",
                    (_, true) => ">>",
                    _ => ">",
                };
                out.push((op.into(), true));
            }
            c if c.is_whitespace() => flush(&mut cur, &mut has, &mut out),
            c => {
                cur.push(c);
                has = true;
            }
        }
    }
    flush(&mut cur, &mut has, &mut out);
    out
}

/// The command of a shell line that a failure is about: the first that is not `cd`,
/// `export` or an assignment, the first of its pipeline; `None` for an empty line.
pub fn parse(line: &str) -> Option<Parsed> {
    parse_all(line).into_iter().next()
}

/// Every command of a shell line, in order, each with the commands before it on the line
/// (`cd`, `export` and assignments are no commands; a pipeline is its producer).
pub fn parse_all(line: &str) -> Vec<Parsed> {
    let toks = words(line);
    // Each command's words, the files its redirections write, and what it was piped into.
    let mut segments: Vec<Segment> = vec![Segment::default()];
    let mut piped = false;
    // After `>`, `>>` or `<`: the next word is the redirection's target.
    let mut target: Option<&str> = None;
    for (w, op) in toks {
        let seg = segments.last_mut().expect("one segment at least");
        if let Some(redirect) = target.take() {
            if !op {
                if !w.starts_with('&') && !w.chars().all(|c| c.is_ascii_digit()) && w != "/dev/null" {
                    match redirect {
                        ">" => seg.writes.push(w),
                        ">>" => seg.appends.push(w),
                        _ => {}
                    }
                }
                continue;
            }
        }
        if op {
            match w.as_str() {
                ">" => target = Some(">"),
                ">>" => target = Some(">>"),
                "<" => target = Some("<"),
                "|" => {
                    piped = true;
                    seg.piped.push(String::new());
                }
                _ => {
                    piped = false;
                    segments.push(Segment::default());
                }
            }
            continue;
        }
        if !piped {
            seg.words.push(w);
        } else if let Some(last) = seg.piped.last_mut().filter(|l| l.is_empty()) {
            *last = w.rsplit('/').next().unwrap_or(&w).to_string();
        }
    }
    let mut env: Vec<(String, String)> = vec![];
    let mut out: Vec<Parsed> = vec![];
    for seg in segments.into_iter().filter(|s| !s.words.is_empty()) {
        if seg.words[0] == "export" {
            env.extend(seg.words[1..].iter().filter_map(|w| assignment(w)));
            continue;
        }
        let mut p = parse_segment(&seg.words, env.clone());
        if is_trivial(&p) {
            continue;
        }
        p.before = out.iter().map(Parsed::render).collect();
        p.writes = seg.writes;
        p.appends = seg.appends;
        p.piped = seg.piped.into_iter().filter(|p| !p.is_empty()).collect();
        out.push(p);
    }
    out
}

fn assignment(w: &str) -> Option<(String, String)> {
    let (k, v) = w.split_once('=')?;
    let ok = !k.is_empty()
        && k.chars().all(|c| c.is_ascii_alphanumeric() || c == '_')
        && !k.starts_with(|c: char| c.is_ascii_digit());
    ok.then(|| (k.to_string(), v.to_string()))
}

fn parse_segment(seg: &[String], mut env: Vec<(String, String)>) -> Parsed {
    let mut i = 0;
    let mut wrappers = vec![];
    while i < seg.len() {
        if let Some(a) = assignment(&seg[i]) {
            env.push(a);
            i += 1;
            continue;
        }
        let w = seg[i].as_str();
        let base = w.rsplit('/').next().unwrap_or(w);
        if WRAPPERS.contains(&base) {
            wrappers.push(base.to_string());
            i += 1;
            // `sudo -E`, `env -i`, `npx -y`: the wrapper's own flags.
            while i < seg.len() && seg[i].starts_with('-') {
                wrappers.push(seg[i].clone());
                i += 1;
            }
            continue;
        }
        if base == "timeout" {
            wrappers.push(base.to_string());
            i += 1;
            if i < seg.len() && seg[i].chars().next().is_some_and(|c| c.is_ascii_digit()) {
                i += 1;
            }
            continue;
        }
        // `python -m pytest`, `python3 -m pip`: the module is the program.
        if program_family(base) == "python" && seg.get(i + 1).is_some_and(|m| m == "-m") && i + 2 < seg.len() {
            wrappers.push(format!("{w} -m"));
            i += 2;
            continue;
        }
        // `uv run X`, `poetry run X`, `pnpm dlx X`, `bundle exec X`, `pipenv run X`.
        let runner = matches!(
            (base, seg.get(i + 1).map(String::as_str)),
            ("uv" | "poetry" | "pipenv" | "pdm" | "hatch" | "rye", Some("run"))
                | ("pnpm" | "yarn", Some("dlx"))
                | ("bundle", Some("exec"))
                | ("npm", Some("exec"))
        );
        if runner && i + 2 < seg.len() {
            wrappers.push(format!("{base} {}", seg[i + 1]));
            i += 2;
            while i < seg.len() && seg[i].starts_with('-') {
                wrappers.push(seg[i].clone());
                i += 1;
            }
            continue;
        }
        break;
    }
    let Some(program) = seg.get(i) else {
        return Parsed { env, wrappers, ..Parsed::default() };
    };
    let program = program.rsplit('/').next().unwrap_or(program).to_string();
    let mut p = Parsed { env, wrappers, program, ..Parsed::default() };
    let takes_sub = !NO_SUBCOMMAND.contains(&program_family(&p.program));
    for w in &seg[i + 1..] {
        let sub = p.subcommand.is_none();
        if w.starts_with('-') && w.len() > 1 {
            p.flags.push(w.clone());
        } else if takes_sub
            && p.subcommand.is_none()
            && p.flags.is_empty()
            && p.args.is_empty()
            && w.chars().all(|c| c.is_ascii_alphanumeric() || c == '-' || c == ':' || c == '_')
            && w.chars().next().is_some_and(|c| c.is_ascii_alphabetic())
        {
            p.subcommand = Some(w.clone());
        } else {
            p.args.push(w.clone());
        }
        if !(sub && p.subcommand.is_some()) {
            p.rest.push(w.clone());
        }
    }
    p
}
