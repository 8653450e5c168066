//! Secret detection and redaction: the one place skillmem decides that a text holds a
//! credential. The team sync keeps such a note on this machine (`find_secret`), the historian
//! refuses an observation that holds one, and the other write paths (the note tool, import,
//! team pull, the dashboard's edit, `doctor --fix`) store the text with each secret replaced
//! by a marker ([`redact`]).
//!
//! The rules look for shapes, not for words alone: well-known token prefixes of the common
//! providers followed by enough key-like characters, private-key armour, a password inside a
//! URL, an `Authorization` header's credentials, a JSON web token, a `password=` / `secret:`
//! assignment of a literal, and a high-entropy value after `token=` / `key=`. A false
//! positive costs little (a marker in a note, a note kept local), a false negative leaks a key
//! into every later session of a skill, or to a whole team.
//!
//! Pure text work: no I/O, and no input can make it panic (fuzzed in `tests/fuzz/redact.rs`).

/// The marker a secret is replaced with: `[redacted: <what>]`.
pub fn marker(what: &str) -> String {
    format!("[redacted: {what}]")
}

/// What the first secret-looking thing in `text` looks like, or `None`.
pub fn find_secret(text: &str) -> Option<&'static str> {
    spans(text).first().map(|s| s.what)
}

/// `text` with every secret replaced by [`marker`], and what was found (in text order, each
/// kind once). The text is unchanged when nothing was found.
pub fn redact(text: &str) -> (String, Vec<&'static str>) {
    let found = spans(text);
    if found.is_empty() {
        return (text.to_string(), vec![]);
    }
    let mut out = String::with_capacity(text.len());
    let mut at = 0;
    let mut what: Vec<&'static str> = vec![];
    for s in &found {
        out.push_str(&text[at..s.start]);
        out.push_str(&marker(s.what));
        at = s.end;
        if !what.contains(&s.what) {
            what.push(s.what);
        }
    }
    out.push_str(&text[at..]);
    (out, what)
}

/// A lesson about to be stored by a write path other than the historian (the note tool,
/// import, a pulled team note, an edit): its text with every secret replaced by a marker, and
/// what was found; an error (in words) when redaction would leave no lesson.
pub fn redact_lesson(text: &str) -> Result<(String, Vec<&'static str>), String> {
    let (red, what) = redact(text);
    if !what.is_empty() && !leaves_a_lesson(&red) {
        return Err(format!(
            "the lesson is mostly a secret ({}); nothing was stored: write what was learned without the credential",
            what.join(", ")
        ));
    }
    Ok((red, what))
}

/// True when what is left of a redacted text still says something: at least three words of
/// three letters or more outside the markers. A text that was mostly a credential is refused
/// rather than stored as a marker and a few words.
pub fn leaves_a_lesson(redacted: &str) -> bool {
    let mut rest = String::with_capacity(redacted.len());
    let mut s = redacted;
    while let Some(i) = s.find("[redacted: ") {
        rest.push_str(&s[..i]);
        rest.push(' ');
        match s[i..].find(']') {
            Some(j) => s = &s[i + j + 1..],
            None => {
                s = "";
            }
        }
    }
    rest.push_str(s);
    rest.split(|c: char| !c.is_alphanumeric()).filter(|w| w.chars().filter(|c| c.is_alphabetic()).count() >= 3).count()
        >= 3
}

/// One secret: its byte range in the text and what it looks like.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Span {
    pub start: usize,
    pub end: usize,
    pub what: &'static str,
}

/// Every secret in `text`, in order, without overlaps (the earlier, then the longer wins).
pub fn spans(text: &str) -> Vec<Span> {
    let mut all = vec![];
    private_keys(text, &mut all);
    words(text, &mut all);
    authorization(text, &mut all);
    assignments(text, &mut all);
    flags(text, &mut all);
    short_flags(text, &mut all);
    prose(text, &mut all);
    all.sort_by_key(|s| (s.start, std::cmp::Reverse(s.end)));
    let mut out: Vec<Span> = vec![];
    for s in all {
        if s.end <= s.start {
            continue;
        }
        match out.last() {
            Some(last) if s.start < last.end => {}
            _ => out.push(s),
        }
    }
    out
}

/// `-----BEGIN ... PRIVATE KEY-----` to its END line (or the end of the text).
fn private_keys(text: &str, out: &mut Vec<Span>) {
    let mut from = 0;
    while let Some(i) = text[from..].find("-----BEGIN ") {
        let start = from + i;
        let head_end = match text[start + 11..].find("-----") {
            Some(j) => start + 11 + j + 5,
            None => break,
        };
        let head = &text[start..head_end];
        let label = &head[11..head.len() - 5];
        if !label.contains("PRIVATE KEY") || !label.chars().all(|c| c.is_ascii_uppercase() || c == ' ') {
            // Not armour of a key: look again right after this `-----BEGIN `.
            from = start + 11;
            continue;
        }
        let end = match text[head_end..].find("-----END ") {
            Some(j) => {
                let e = head_end + j + 9;
                match text[e..].find("-----") {
                    Some(k) => e + k + 5,
                    None => text.len(),
                }
            }
            None => text.len(),
        };
        out.push(Span { start, end, what: "a private key" });
        from = end;
    }
}

fn is_key_char(c: char) -> bool {
    c.is_ascii_alphanumeric() || c == '_' || c == '-'
}

fn key_len(s: &str) -> usize {
    s.chars().take_while(|c| is_key_char(*c)).count() // ASCII only: chars are bytes
}

fn mixed(s: &str) -> bool {
    s.chars().any(|c| c.is_ascii_digit()) && s.chars().any(|c| c.is_ascii_alphabetic())
}

/// (prefix, minimum key characters after it, what it is). Longer prefixes of one family come
/// first, so that an Anthropic key is not called a generic `sk-` key.
const PREFIXES: &[(&str, usize, &str)] = &[
    ("sk-ant-", 20, "an Anthropic API key"),
    ("sk-proj-", 20, "an OpenAI API key"),
    ("sk-svcacct-", 20, "an OpenAI API key"),
    ("sk-live-", 16, "a live secret key (sk-live-…)"),
    ("sk_live_", 16, "a Stripe secret key"),
    ("sk_test_", 16, "a Stripe secret key"),
    ("rk_live_", 16, "a Stripe restricted key"),
    ("rk_test_", 16, "a Stripe restricted key"),
    ("whsec_", 20, "a Stripe webhook secret"),
    ("sk-", 20, "an API key (sk-…)"),
    ("ghp_", 30, "a GitHub token"),
    ("gho_", 30, "a GitHub token"),
    ("ghu_", 30, "a GitHub token"),
    ("ghs_", 30, "a GitHub token"),
    ("ghr_", 30, "a GitHub token"),
    ("github_pat_", 30, "a GitHub token"),
    ("glpat-", 20, "a GitLab token"),
    ("xoxb-", 10, "a Slack token"),
    ("xoxp-", 10, "a Slack token"),
    ("xoxa-", 10, "a Slack token"),
    ("xoxs-", 10, "a Slack token"),
    ("xoxe-", 10, "a Slack token"),
    ("xapp-", 10, "a Slack token"),
    ("AKIA", 16, "an AWS access key"),
    ("ASIA", 16, "an AWS access key"),
    ("AIza", 30, "a Google API key"),
    ("ya29.", 30, "a Google OAuth token"),
    ("npm_", 30, "an npm token"),
    ("pypi-", 30, "a PyPI token"),
    ("hf_", 30, "a Hugging Face token"),
    ("dop_v1_", 30, "a DigitalOcean token"),
    ("SG.", 30, "a SendGrid key"),
    ("cio", 30, "a crates.io token"),
    ("dckr_pat_", 20, "a Docker Hub token"),
    ("shpat_", 30, "a Shopify token"),
    ("shpss_", 30, "a Shopify token"),
    ("glsa_", 30, "a Grafana token"),
    ("glrt-", 20, "a GitLab runner token"),
    ("lin_api_", 30, "a Linear API key"),
    ("pscale_tkn_", 30, "a PlanetScale token"),
    ("sntrys_", 30, "a Sentry token"),
    ("sbp_", 30, "a Supabase token"),
    ("PMAK-", 30, "a Postman API key"),
    ("ATATT", 30, "an Atlassian API token"),
    ("pul-", 30, "a Pulumi token"),
    ("HRKU-", 30, "a Heroku API key"),
];

/// Token prefixes, JSON web tokens and URL passwords, word by word.
fn words(text: &str, out: &mut Vec<Span>) {
    let sep = |c: char| c.is_whitespace() || "\"'`()[]{}<>,;".contains(c);
    let mut start = 0;
    for (i, c) in text.char_indices().chain(std::iter::once((text.len(), ' '))) {
        if i < text.len() && !sep(c) {
            continue;
        }
        if i > start {
            word(text, start, &text[start..i], out);
        }
        start = i + c.len_utf8();
    }
}

fn word(_text: &str, at: usize, w: &str, out: &mut Vec<Span>) {
    // A prefix starts the word, or follows a `=` or `:` (KEY=sk-…): only those places are
    // tried (no prefix holds `=` or `:`, so two tries of one prefix never overlap). Searching
    // the word for each prefix instead took about 5% of the CPU of a note's write.
    let starts: Vec<usize> = std::iter::once(0)
        .chain(w.bytes().enumerate().filter(|(_, b)| *b == b'=' || *b == b':').map(|(i, _)| i + 1))
        .collect();
    for (prefix, min, what) in PREFIXES {
        for &p in &starts {
            if !w[p..].starts_with(prefix) {
                continue;
            }
            let rest = &w[p + prefix.len()..];
            let n = key_len(rest);
            // A key mixes letters and digits; a long word of letters after "sk-" is prose.
            if n >= *min && mixed(&rest[..n]) {
                out.push(Span { start: at + p, end: at + p + prefix.len() + n, what });
                return;
            }
        }
    }
    if let Some((s, e)) = jwt(w) {
        out.push(Span { start: at + s, end: at + e, what: "a JSON web token" });
        return;
    }
    if let Some((s, e)) = url_password(w) {
        out.push(Span { start: at + s, end: at + e, what: "a password in a URL" });
    }
}

/// `header.payload.signature`, base64url, both first parts JSON objects (`eyJ`), possibly
/// after `key=` / `key:` in the same word.
fn jwt(w: &str) -> Option<(usize, usize)> {
    let s = w.find("eyJ")?;
    let before = &w[..s];
    if !(before.is_empty() || before.ends_with('=') || before.ends_with(':')) {
        return None;
    }
    let body = &w[s..];
    let n = body.chars().take_while(|c| is_key_char(*c) || *c == '.').count();
    let token = &body[..n];
    let parts: Vec<&str> = token.split('.').collect();
    let ok = parts.len() == 3 && parts[1].starts_with("eyJ") && parts.iter().all(|p| p.len() >= 8);
    ok.then_some((s, s + n))
}

/// `scheme://user:password@host`: the range of a non-empty password in the userinfo of a URL.
fn url_password(w: &str) -> Option<(usize, usize)> {
    let i = w.find("://")?;
    let rest_at = i + 3;
    let rest = &w[rest_at..];
    let authority = rest.split(['/', '?', '#']).next().unwrap_or("");
    let (userinfo, host) = authority.rsplit_once('@')?;
    let (user, pw) = userinfo.split_once(':')?;
    // Placeholders are not secrets.
    let lower = pw.to_ascii_lowercase();
    let placeholder = pw.is_empty()
        || pw.starts_with('$')
        || pw.starts_with('<')
        || pw.starts_with('{')
        || pw.starts_with('[')
        || pw.chars().all(|c| c == '*' || c == 'x' || c == 'X' || c == '.')
        || ["password", "pass", "secret", "pw", "pwd", "changeme", "redacted", "passwd", "mypassword"]
            .contains(&lower.as_str());
    if placeholder || host.is_empty() {
        return None;
    }
    let start = rest_at + user.len() + 1;
    Some((start, start + pw.len()))
}

/// `Authorization: <scheme> <credentials>`, `Bearer <token>`, `Authorization: token …`: the
/// credentials, when they look like a key (long enough, letters and digits).
fn authorization(text: &str, out: &mut Vec<Span>) {
    let lower = text.to_ascii_lowercase();
    let cred = |at: usize, min: usize| -> Option<(usize, usize)> {
        let rest = &text[at..];
        let n = rest.chars().take_while(|c| c.is_ascii_alphanumeric() || "-_.=+/~".contains(*c)).count();
        let key = &rest[..n];
        (n >= min && mixed(key)).then_some((at, at + n))
    };
    let mut from = 0;
    while let Some(i) = lower[from..].find("authorization") {
        let mut at = from + i + "authorization".len();
        from = at;
        let rest = &lower[at..];
        let skipped = rest.len() - rest.trim_start_matches(['"', '\'']).len();
        at += skipped;
        let rest = &lower[at..];
        let Some(r) = rest.trim_start().strip_prefix([':', '=']) else { continue };
        at += rest.len() - r.len();
        let r2 = r.trim_start_matches([' ', '\t', '"', '\'']);
        at += r.len() - r2.len();
        // An optional scheme word (Bearer, Basic, token, Digest...).
        let scheme = r2.chars().take_while(|c| c.is_ascii_alphabetic()).count();
        let after = &r2[scheme..];
        if scheme > 0 && after.starts_with(' ') {
            at += scheme + 1;
        }
        if let Some((s, e)) = cred(at, 8) {
            out.push(Span { start: s, end: e, what: "an Authorization header's credentials" });
            from = e;
        }
    }
    let mut from = 0;
    while let Some(i) = lower[from..].find("bearer ") {
        let at = from + i + "bearer ".len();
        from = at;
        if let Some((s, e)) = cred(at, 20) {
            out.push(Span { start: s, end: e, what: "a bearer token" });
            from = e;
        }
    }
}

/// Names whose literal value is a secret as soon as it is long enough.
const SECRET_NAMES: &[&str] = &[
    "password",
    "passwd",
    "passphrase",
    "pwd",
    "secret",
    "api_key",
    "apikey",
    "api-key",
    "access_key",
    "secret_key",
    "access_token",
    "auth_token",
    "private_key",
    "client_secret",
];

/// Names whose value is a secret only when it looks random (`token=`, `key=`): these words
/// name ordinary things too (`sort key=name`, `token=EOF`).
const KEYISH_NAMES: &[&str] = &["token", "key", "auth", "credential", "credentials", "sig", "signature"];

/// `password=…`, `api_key: …`, `SECRET="…"`: a secret-named key assigned a literal value of
/// eight or more characters (not a placeholder such as `$VAR` or `<your key>`); `token=…`,
/// `key=…`: a value of 16 or more characters that looks random.
fn assignments(text: &str, out: &mut Vec<Span>) {
    let lower = text.to_ascii_lowercase();
    let bytes = lower.as_bytes();
    let mut i = 0;
    while i < bytes.len() {
        // The end of a name: `=` or `:` after optional quotes and spaces.
        let c = bytes[i];
        if c != b'=' && c != b':' {
            i += 1;
            continue;
        }
        let eq = i;
        i += 1;
        // `==`, `:=`, `://` are not assignments of a secret.
        if bytes.get(eq + 1).is_some_and(|b| *b == b'=' || *b == b'/') {
            continue;
        }
        let mut ne = eq;
        while ne > 0 && matches!(bytes[ne - 1], b' ' | b'"' | b'\'') {
            ne -= 1;
        }
        let mut ns = ne;
        while ns > 0 && (bytes[ns - 1].is_ascii_alphanumeric() || matches!(bytes[ns - 1], b'_' | b'-' | b'.')) {
            ns -= 1;
        }
        if ns == ne {
            continue;
        }
        let name = &lower[ns..ne];
        let last = name.rsplit(['_', '-', '.']).next().unwrap_or(name);
        let secret_name = SECRET_NAMES.iter().any(|n| name == *n || name.ends_with(&format!("_{n}")))
            || SECRET_NAMES.contains(&last)
            || name.contains("password")
            || name.contains("secret");
        // `TF_TOKEN_app_terraform_io=…`: a keyish word anywhere in the name (the value must
        // still look random).
        let keyish = KEYISH_NAMES.contains(&last) || name.split(['_', '-', '.']).any(|p| KEYISH_NAMES.contains(&p));
        if !secret_name && !keyish {
            continue;
        }
        // The value: after spaces and one opening quote.
        let mut vs = eq + 1;
        while vs < bytes.len() && bytes[vs] == b' ' {
            vs += 1;
        }
        while vs < bytes.len() && matches!(bytes[vs], b'"' | b'\'') {
            vs += 1;
        }
        let value_text = &text[vs..];
        if value_text.starts_with(['$', '<', '{', '%', '[', '*']) {
            continue;
        }
        let n: usize = value_text
            .char_indices()
            .find(|(_, c)| c.is_whitespace() || "\"'`,;)".contains(*c))
            .map(|(j, _)| j)
            .unwrap_or(value_text.len());
        let v = &value_text[..n];
        let v = v.trim_end_matches(['.', ':']);
        let vl = v.to_ascii_lowercase();
        let placeholder = vl.contains("xxxx")
            || vl.contains("****")
            || vl.contains("...")
            || vl.contains('…')
            || vl.starts_with("your")
            || ["password", "changeme", "redacted", "secret", "none", "null", "true", "false"].contains(&vl.as_str());
        let count = v.chars().count();
        let hit = if placeholder {
            false
        } else if secret_name {
            count >= 8
        } else {
            count >= 16 && looks_random(v)
        };
        if hit {
            let what = if keyish && !secret_name {
                "a high-entropy token or key value"
            } else {
                "a password or secret assigned in the text"
            };
            out.push(Span { start: vs, end: vs + v.len(), what });
            i = vs + v.len();
        }
    }
}

/// `--password VALUE`, `--client-secret 'VALUE'`, `--token VALUE`: a command line's long flag
/// whose name ends in a secret's word, and the word after it, under the rules of [`assignments`] (eight
/// characters for a secret name, 16 random-looking ones for a keyish one; placeholders such as
/// `$PW`, `<password>`, `"$(cat pw)"` are not secrets). `--password=…` is an assignment.
fn flags(text: &str, out: &mut Vec<Span>) {
    let mut from = 0;
    while let Some(i) = text[from..].find("--") {
        let at = from + i;
        from = at + 2;
        if at > 0 && !text[..at].ends_with(|c: char| c.is_whitespace() || "`'\"(".contains(c)) {
            continue;
        }
        let name_len =
            text[at + 2..].chars().take_while(|c| c.is_ascii_alphanumeric() || *c == '-' || *c == '_').count();
        let name = text[at + 2..at + 2 + name_len].to_ascii_lowercase();
        let rest = &text[at + 2 + name_len..];
        let Some(after) = rest.strip_prefix(' ') else { continue };
        let last = name.rsplit(['_', '-']).next().unwrap_or(&name);
        // The flag's name ends in the secret's word: `--password-stdin` and `--password-file`
        // take no secret on the line.
        let secret_name = SECRET_NAMES.contains(&name.replace('-', "_").as_str()) || SECRET_NAMES.contains(&last);
        let keyish = KEYISH_NAMES.contains(&last);
        if !secret_name && !keyish {
            continue;
        }
        let quoted = after.starts_with(['\'', '"']);
        let v_at = at + 2 + name_len + 1 + usize::from(quoted);
        let value = &text[v_at..];
        if value.starts_with(['$', '<', '{', '%', '[', '*', '-']) {
            continue;
        }
        let stop = |c: char| if quoted { "'\"".contains(c) } else { c.is_whitespace() || "\"'`,;)".contains(c) };
        let n = value.char_indices().find(|(_, c)| stop(*c)).map(|(j, _)| j).unwrap_or(value.len());
        let v = value[..n].trim_end_matches(['.', ':']);
        let vl = v.to_ascii_lowercase();
        let placeholder = vl.contains("xxxx")
            || vl.contains("****")
            || vl.contains("...")
            || vl.contains('…')
            || vl.starts_with("your")
            || v.chars().all(|c| c.is_ascii_uppercase() || c == '_')
            || ["password", "changeme", "redacted", "secret", "none", "null"].contains(&vl.as_str());
        let count = v.chars().count();
        let hit = !placeholder && if secret_name { count >= 8 } else { count >= 16 && looks_random(v) };
        if hit {
            let what = if secret_name {
                "a password or secret on a command line"
            } else {
                "a high-entropy token or key value"
            };
            out.push(Span { start: v_at, end: v_at + v.len(), what });
            from = v_at + v.len();
        }
    }
}

/// `-p'VALUE'` (mysql, mysqldump, mariadb: the password glued to `-p`) and `pass:VALUE`
/// (openssl's `-pass`, `-passin`, `-passout`): a value of eight characters or more with
/// letters and a digit or a symbol, not a placeholder. Glued and bare (`-pS3cret99`), `-p`
/// counts only after a MySQL client's name: it also starts other tools' flags (`-pthread`,
/// `-platform=linux_amd64`, `-p8080:80`).
fn short_flags(text: &str, out: &mut Vec<Span>) {
    for (lead, what) in [("-p", "a password glued to -p on a command line"), ("pass:", "an openssl pass: password")] {
        let mut from = 0;
        while let Some(i) = text[from..].find(lead) {
            let at = from + i;
            from = at + lead.len();
            if at > 0 && !text[..at].ends_with(|c: char| c.is_whitespace() || "`'\"(".contains(c)) {
                continue;
            }
            let rest = &text[at + lead.len()..];
            let quoted = rest.starts_with(['\'', '"']);
            let mysql = || {
                let before = text[..at].to_ascii_lowercase();
                ["mysql", "mariadb"].iter().any(|m| before.contains(m))
            };
            if lead == "-p" && !quoted && !mysql() {
                continue;
            }
            let v_at = at + lead.len() + usize::from(quoted);
            let value = &text[v_at..];
            if value.starts_with(['$', '<', '{', '%', '[', '*', '-', ' ']) {
                continue;
            }
            let stop = |c: char| if quoted { "'\"".contains(c) } else { c.is_whitespace() || "\"'`,;)".contains(c) };
            let n = value.char_indices().find(|(_, c)| stop(*c)).map(|(j, _)| j).unwrap_or(value.len());
            let v = value[..n].trim_end_matches(['.', ':']);
            let vl = v.to_ascii_lowercase();
            let letters = v.chars().any(|c| c.is_alphabetic());
            let other = v.chars().any(|c| !c.is_alphabetic());
            let placeholder = vl.contains("xxxx")
                || vl.contains("****")
                || vl.contains("...")
                || vl.starts_with("your")
                || ["password", "changeme", "redacted", "secret"].iter().any(|p| vl.starts_with(p));
            if !placeholder && letters && other && v.chars().count() >= 8 && !v.contains(char::is_whitespace) {
                out.push(Span { start: v_at, end: v_at + v.len(), what });
                from = v_at + v.len();
            }
        }
    }
}

/// Words that name a password in prose ("the vault password is …").
const PROSE_SECRET_NAMES: &[&str] = &["password", "passphrase", "passwd", "secret"];

/// "The vault password is `Tr0ub4dor&3-infra`", "the API token was 9fK2…": a secret's name,
/// then *is*, *was* or *set to*, then one word (in quotes or backticks or bare). For a
/// password's name the word must look like a password: eight characters or more, letters
/// and something else (a digit or a symbol), no placeholder (`$VAR`, `<…>`, `changeme`); for
/// `token` or `key` it must look random, as in [`assignments`]. "The password is required",
/// "the key is `name`" and "the token is in the keychain" are prose.
fn prose(text: &str, out: &mut Vec<Span>) {
    let lower = text.to_ascii_lowercase();
    for (name, secret) in PROSE_SECRET_NAMES
        .iter()
        .map(|n| (*n, true))
        .chain(["token", "key"].iter().map(|n| (*n, false)))
        .chain([("credential", true), ("auth", true), ("login", true)])
    {
        let mut from = 0;
        while let Some(i) = lower[from..].find(name) {
            let at = from + i;
            from = at + name.len();
            if lower[..at].ends_with(|c: char| c.is_ascii_alphanumeric()) {
                continue;
            }
            let rest = &lower[at + name.len()..];
            let rest = rest.strip_prefix('s').unwrap_or(rest);
            const VERBS: [&str; 5] = [" is ", " was ", " are ", " were ", " set to "];
            // "the password for the admin user is …": what it is for, a few words, then the verb.
            let rest = match rest.strip_prefix(" for ") {
                Some(r) => {
                    let mut end = r.len().min(40);
                    while !r.is_char_boundary(end) {
                        end -= 1;
                    }
                    let window = &r[..end];
                    match VERBS.iter().filter_map(|v| window.find(v)).min() {
                        Some(k) if !window[..k].contains([',', '.', ';']) => &r[k..],
                        _ => continue,
                    }
                }
                None => rest,
            };
            let Some(after) = VERBS.iter().find_map(|v| rest.strip_prefix(v)) else {
                continue;
            };
            let mut v_at = text.len() - after.len();
            if matches!(name, "credential" | "auth" | "login") {
                // "credentials are deploy / S3cr3t-pw9": the password after the user's name.
                let Some(cut) = user_and_password(&text[v_at..]) else { continue };
                v_at += cut;
            }
            let quote = text[v_at..].chars().next().filter(|c| "`'\"".contains(*c));
            if let Some(q) = quote {
                v_at += q.len_utf8();
            }
            let value = &text[v_at..];
            let n = value
                .char_indices()
                .find(|(_, c)| match quote {
                    Some(q) => *c == q,
                    None => c.is_whitespace(),
                })
                .map(|(j, _)| j)
                .unwrap_or(value.len());
            let v = value[..n].trim_end_matches(['.', ',', ';', ':', ')', '—']);
            let vl = v.to_ascii_lowercase();
            if v.is_empty()
                || v.starts_with(['$', '<', '{', '%', '[', '*'])
                || vl.contains("xxxx")
                || vl.contains("****")
                || vl.contains("...")
                || vl.contains('…')
                || ["changeme", "redacted", "password", "secret"].contains(&vl.as_str())
            {
                continue;
            }
            let letters = v.chars().any(|c| c.is_alphabetic());
            let other = v.chars().any(|c| !c.is_alphabetic());
            let hit = if secret {
                v.chars().count() >= 8 && letters && other && !v.chars().any(char::is_whitespace)
            } else {
                v.chars().count() >= 16 && looks_random(v)
            };
            if hit {
                out.push(Span { start: v_at, end: v_at + v.len(), what: "a password or secret written in prose" });
                from = v_at + v.len();
            }
        }
    }
}

/// In "deploy / S3cr3t-pw9" or "deploy:S3cr3t-pw9", where the password starts.
fn user_and_password(s: &str) -> Option<usize> {
    let user = s.find([' ', ':'])?;
    if user == 0 || !s[..user].chars().all(|c| c.is_alphanumeric() || "._-@".contains(c)) {
        return None;
    }
    let rest = &s[user..];
    let sep = [" / ", ":", " : "].iter().find(|p| rest.starts_with(*p))?;
    Some(user + sep.len())
}

/// A value that looks generated: letters and digits mixed, few repeats (Shannon entropy of at
/// least 3.5 bits a character), no spaces.
fn looks_random(v: &str) -> bool {
    if !mixed(v) || v.chars().any(char::is_whitespace) {
        return false;
    }
    let mut counts = std::collections::HashMap::new();
    let mut n = 0f64;
    for c in v.chars() {
        *counts.entry(c).or_insert(0f64) += 1.0;
        n += 1.0;
    }
    let h: f64 = counts.values().map(|k| -(k / n) * (k / n).log2()).sum();
    h >= 3.5
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn table_of_texts() {
        // (text, what the first secret found looks like)
        let cases: &[(&str, Option<&str>)] = &[
            ("deploy needs --no-cache on the staging cluster", None),
            ("export OPENAI_API_KEY=sk-proj-abc123DEF456ghi789JKL012mno", Some("an OpenAI API key")),
            ("use sk-ant-api03-AbCdEf0123456789xyzXYZ for the call", Some("an Anthropic API key")),
            ("the sk- prefix marks keys: sk-something-like-this-is-prose", None),
            ("token ghp_0123456789abcdefghijABCDEFGHIJ0123456789", Some("a GitHub token")),
            ("github_pat_11ABCDEFG0123456789_abcdefghijklmnopqrstuvwxyz", Some("a GitHub token")),
            ("gho_16C7e42F292c6912E7710c838347Ae178B4a", Some("a GitHub token")),
            ("cargo login cioQ7w2Ee9Rt4Yu1Io8Pa3Sd6Fg0Hj5Kl", Some("a crates.io token")),
            ("CARGO_REGISTRY_TOKEN=cioZ1x2C3v4B5n6M7a8S9d0F1g2H3j4K5", Some("a crates.io token")),
            ("the cioperations folder is not a token", None),
            ("docker login -p dckr_pat_Ab3De6Gh9Jk2Mn5Pq8St1", Some("a Docker Hub token")),
            ("LINEAR=lin_api_0aB1cD2eF3gH4iJ5kL6mN7oP8qR9sT0uV1wX", Some("a Linear API key")),
            ("AWS key AKIAIOSFODNN7EXAMPLE in ~/.aws/credentials", Some("an AWS access key")),
            ("-----BEGIN RSA PRIVATE KEY-----\nMIIE...", Some("a private key")),
            ("-----BEGIN CERTIFICATE-----\nMIIE...", None),
            ("connect with postgres://deploy:hunter2secret@db.internal/app", Some("a password in a URL")),
            ("connect with postgres://deploy@db.internal/app", None),
            ("connect with postgres://deploy:$PGPASSWORD@db.internal/app", None),
            ("connect with postgres://user:password@localhost/app", None),
            (
                "curl -H 'Authorization: Bearer abcdef0123456789ABCDEF0123' https://x",
                Some("an Authorization header's credentials"),
            ),
            ("Authorization: Basic dXNlcjpodW50ZXIy", Some("an Authorization header's credentials")),
            ("send a bearer token in the Authorization header", None),
            ("the Authorization: header must come first", None),
            ("password=Tr0ub4dor&3 in the config", Some("a password or secret assigned in the text")),
            ("set password: $DB_PASSWORD from the vault", None),
            ("api_key = \"<your key>\"", None),
            ("the password field is required", None),
            ("POSTGRES_PASSWORD=Xk93mPq7vLr2 is expected", Some("a password or secret assigned in the text")),
            (
                "eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxMjM0NTY3ODkwIn0.dozjgNryP4J3jVmNHl0w5N_XgL0n3I9PlFUP0THsR8U",
                Some("a JSON web token"),
            ),
            ("jq -r '.items[] | .name' works on arrays", None),
            ("xoxb-123456789012-abcdefghij", Some("a Slack token")),
            // a prefix counts at a word's start or after `=` or `:`, not inside a word
            ("set GH_TOKEN:ghp_0123456789abcdefghijABCDEFGHIJ0123456789 in CI", Some("a GitHub token")),
            ("a=sk-tiny:sk-proj-abc123DEF456ghi789JKL012mno", Some("an OpenAI API key")),
            ("the file mask-proj-abc123DEF456ghi789JKL012mno.txt", None),
            ("AIzaSyD-9tSrke72PouQMnMX-a7eZSW0jkFMBWY", Some("a Google API key")),
            ("sk-live-51HxT9kL2mQ8vR3nZ7pW4cY6", Some("a live secret key (sk-live-…)")),
            ("sk_live_51HxT9kL2mQ8vR3nZ7pW4cY6", Some("a Stripe secret key")),
            ("?token=9fK2xQ7mLp4RvT8wZ3nB6cY1 in the URL", Some("a high-entropy token or key value")),
            ("key=name sorts by name; token=EOF ends a heredoc", None),
            ("sort with key=created_at_timestamp_value", None),
            ("`a == b` and `x := 1` and https://example.com", None),
            // a keyish word inside the name
            (
                "export TF_TOKEN_app_terraform_io=2AZeIwpn0e5FbZ.atlasv1.PRpe9tMD11d0K6ZGxPB8WJ before init",
                Some("a high-entropy token or key value"),
            ),
            ("MY_TOKEN_FILE=tokens.txt is read at start", None),
            // a secret-named flag and its value
            (
                "helm repo add x https://charts --username deploy --password 'Zq8!fakeFAKE-pw-2291'",
                Some("a password or secret on a command line"),
            ),
            ("mysql --password hunter2secret -h db", Some("a password or secret on a command line")),
            ("pass --password \"$DB_PASSWORD\" or --password <password> from the vault", None),
            ("--password PASSWORD and --password-stdin read it from stdin", None),
            ("docker login --username AWS --password-stdin ACCOUNT.dkr.ecr.REGION.amazonaws.com", None),
            ("--db-password hunter2secret is seen by ps", Some("a password or secret on a command line")),
            (
                "gpg --pinentry-mode loopback --passphrase 'Qm7!rT2x#Lp9vZ4e' signs unattended",
                Some("a password or secret on a command line"),
            ),
            ("gpg --passphrase-file pw.txt or --passphrase-fd 0 reads it", None),
            // a password glued to -p, an openssl pass: argument
            (
                "mysql -h db -u admin -p'Zt7#qLw2!rPx9vKm' app < dump.sql",
                Some("a password glued to -p on a command line"),
            ),
            ("mysqldump -uroot -pS3cr3tPassw0rd shop", Some("a password glued to -p on a command line")),
            ("mysql -p prompts for it; -p'$MYSQL_PW' reads the variable", None),
            ("gcc -pthread -pedantic, docker run -p8080:80 -p 443:443, mkdir -p a/b", None),
            ("ssh -p2222 host; cp -pr src dst; -pfoo", None),
            ("terraform providers lock -platform=linux_amd64 -platform=darwin_arm64", None),
            ("openssl pkcs12 -export -passout pass:Exp0rt!Pw9 -out a.p12", Some("an openssl pass: password")),
            ("openssl ... -passin pass:$PW or -passin env:PW or file:pw.txt", None),
            ("`gh auth login --with-token` reads a token from stdin; --token is not a flag", None),
            ("--token 9fK2xQ7mLp4RvT8wZ3nB6cY1 on the command line", Some("a high-entropy token or key value")),
            // a password written in prose
            (
                "The vault password is `Tr0ub4dor&3-infra`; pass --vault-password-file.",
                Some("a password or secret written in prose"),
            ),
            (
                "PKCS#12 export password is changeit-7Hq!x2 — Java expects it",
                Some("a password or secret written in prose"),
            ),
            (
                "the admin passwords were reset; the API token was 9fK2xQ7mLp4RvT8wZ3nB6cY1",
                Some("a password or secret written in prose"),
            ),
            ("The password is required and the passphrase is optional.", None),
            ("the password is stored in the keychain; the key is `name`", None),
            ("the password is `$VAULT_PASS` from the environment", None),
            ("The password is at least 12 characters long.", None),
            ("the key is sort_by_created_at", None),
            ("the secret is that `--frozen` skips the check", None),
            ("a password is 8+ characters", None),
            (
                "Basic auth credentials for the site are admin / Tr0ub4dor&3-stage, in .htpasswd",
                Some("a password or secret written in prose"),
            ),
            ("the credentials are deploy:Xk93mPq7vLr2 on the box", Some("a password or secret written in prose")),
            ("credentials are read from ~/.aws/credentials", None),
            ("the credentials are admin / admin", None),
            (
                "Basic auth for the staging site is admin / Tr0ub4dor&3-staging.",
                Some("a password or secret written in prose"),
            ),
            ("the password for the admin user is Zq8-fake-2291x", Some("a password or secret written in prose")),
            ("the password for a service account is rotated monthly", None),
            ("auth is handled by the proxy: login is user:pass form", None),
            ("the password for the café box is Zq8-fake-2291x", Some("a password or secret written in prose")),
            ("the password for éééééééééééééééééééééééé is Zq8-fake-2291x", None),
        ];
        for (text, want) in cases {
            assert_eq!(find_secret(text), *want, "{text:?}");
        }
    }

    #[test]
    fn redaction_table() {
        // (text, redacted, what)
        let cases: &[(&str, &str, &[&str])] = &[
            ("nothing here", "nothing here", &[]),
            (
                "curl -H 'Authorization: Bearer sk-live-51HxT9kL2mQ8vR3nZ7pW4cY6' https://api",
                "curl -H 'Authorization: Bearer [redacted: a live secret key (sk-live-…)]' https://api",
                &["a live secret key (sk-live-…)"],
            ),
            (
                "psql postgres://app:s3cr3tPassw0rd@db:5432/app fails without sslmode",
                "psql postgres://app:[redacted: a password in a URL]@db:5432/app fails without sslmode",
                &["a password in a URL"],
            ),
            (
                "GH=ghp_0123456789abcdefghijABCDEFGHIJ0123456789 and AKIAIOSFODNN7EXAMPLE",
                "GH=[redacted: a GitHub token] and [redacted: an AWS access key]",
                &["a GitHub token", "an AWS access key"],
            ),
            (
                "key:\n-----BEGIN OPENSSH PRIVATE KEY-----\nb3BlbnNzaC1rZXk\n-----END OPENSSH PRIVATE KEY-----\nthen ssh",
                "key:\n[redacted: a private key]\nthen ssh",
                &["a private key"],
            ),
        ];
        for (text, want, what) in cases {
            let (r, w) = redact(text);
            assert_eq!((r.as_str(), w.as_slice()), (*want, *what), "{text:?}");
            assert!(find_secret(&r).is_none(), "redacted text still has a secret: {r:?}");
        }
    }

    #[test]
    fn what_is_left() {
        assert!(leaves_a_lesson("use [redacted: a GitHub token] with the gh api call for private repos"));
        assert!(!leaves_a_lesson("token [redacted: a GitHub token]"));
        assert!(!leaves_a_lesson("[redacted: a private key]"));
        assert!(!leaves_a_lesson("[redacted: unclosed"));
    }
}
