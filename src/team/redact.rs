//! The redaction pass: a note that looks like it holds a secret is never pushed to the team
//! server; it stays on this machine, and `skillmem sync` reports it with what was found.
//!
//! The rules look for shapes, not for words alone: well-known token prefixes followed by
//! enough key-like characters, private-key armour, a password inside a URL, a bearer token,
//! a JSON web token, and `password=`/`api_key: ` style assignments whose value is long enough
//! to be a secret. A false positive costs little (one note stays local and is reported), a
//! false negative leaks a key to a whole team.

/// What the first secret-looking thing in `text` looks like, or `None`.
pub fn find_secret(text: &str) -> Option<&'static str> {
    if text.contains("PRIVATE KEY-----") || text.contains("BEGIN OPENSSH PRIVATE KEY") {
        return Some("a private key");
    }
    for word in text.split(|c: char| c.is_whitespace() || "\"'`()[]{}<>,;".contains(c)) {
        if let Some(what) = token(word) {
            return Some(what);
        }
        if url_password(word) {
            return Some("a password in a URL");
        }
    }
    if bearer(text) {
        return Some("a bearer token");
    }
    assignment(text)
}

fn key_chars(s: &str) -> usize {
    s.chars().take_while(|c| c.is_ascii_alphanumeric() || *c == '_' || *c == '-').count()
}

/// A word that starts with a known token prefix followed by enough key characters.
fn token(word: &str) -> Option<&'static str> {
    // (prefix, minimum key characters after it, what it is)
    const PREFIXES: &[(&str, usize, &str)] = &[
        ("sk-ant-", 20, "an Anthropic API key"),
        ("sk-proj-", 20, "an OpenAI API key"),
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
        ("AKIA", 16, "an AWS access key"),
        ("ASIA", 16, "an AWS access key"),
        ("AIza", 30, "a Google API key"),
        ("npm_", 30, "an npm token"),
        ("pypi-", 30, "a PyPI token"),
        ("hf_", 30, "a Hugging Face token"),
        ("sk_live_", 20, "a Stripe key"),
        ("rk_live_", 20, "a Stripe key"),
    ];
    for (prefix, min, what) in PREFIXES {
        // The prefix starts the word, or follows a `=` or `:` (KEY=sk-…).
        let Some(at) = word.find(prefix) else { continue };
        let before = &word[..at];
        if !(before.is_empty() || before.ends_with('=') || before.ends_with(':')) {
            continue;
        }
        let rest = &word[at + prefix.len()..];
        let n = key_chars(rest);
        // A key mixes letters and digits; a long word of letters after "sk-" is prose.
        let key = &rest[..n];
        if n >= *min && key.chars().any(|c| c.is_ascii_digit()) && key.chars().any(|c| c.is_ascii_alphabetic()) {
            return Some(what);
        }
    }
    jwt(word).then_some("a JSON web token")
}

/// `header.payload.signature`, base64url, both first parts JSON objects (`eyJ`).
fn jwt(word: &str) -> bool {
    let parts: Vec<&str> = word.split('.').collect();
    parts.len() == 3
        && parts[0].starts_with("eyJ")
        && parts[1].starts_with("eyJ")
        && parts.iter().all(|p| p.len() >= 8 && key_chars(p) == p.len())
}

/// `scheme://user:password@host`: a non-empty password in the userinfo of a URL.
fn url_password(word: &str) -> bool {
    let Some(i) = word.find("://") else { return false };
    let rest = &word[i + 3..];
    let authority = rest.split(['/', '?', '#']).next().unwrap_or("");
    let Some((userinfo, host)) = authority.rsplit_once('@') else { return false };
    let Some((_, pw)) = userinfo.split_once(':') else { return false };
    // Placeholders are not secrets.
    let placeholder = pw.is_empty()
        || pw.starts_with('$')
        || pw.starts_with('<')
        || pw.starts_with('{')
        || pw.chars().all(|c| c == '*' || c == 'x' || c == 'X' || c == '.')
        || ["password", "pass", "secret", "pw", "pwd", "changeme", "redacted"]
            .contains(&pw.to_ascii_lowercase().as_str());
    !placeholder && !host.is_empty()
}

/// `Bearer <20+ key characters>` / `Authorization: token …`.
fn bearer(text: &str) -> bool {
    let lower = text.to_ascii_lowercase();
    for marker in ["bearer ", "authorization: token "] {
        let mut from = 0;
        while let Some(i) = lower[from..].find(marker) {
            let start = from + i + marker.len();
            let rest = &text[start..];
            let n = rest.chars().take_while(|c| c.is_ascii_alphanumeric() || "-_.=+/".contains(*c)).count();
            let key = &rest[..n];
            if n >= 20 && key.chars().any(|c| c.is_ascii_digit()) && key.chars().any(|c| c.is_ascii_alphabetic()) {
                return true;
            }
            from = start;
        }
    }
    false
}

/// `password=…`, `api_key: …`, `SECRET="…"`: a secret-named key assigned a literal value of
/// eight or more characters (not a placeholder such as `$VAR` or `<your key>`).
fn assignment(text: &str) -> Option<&'static str> {
    const NAMES: &[&str] = &[
        "password",
        "passwd",
        "api_key",
        "apikey",
        "api-key",
        "secret",
        "access_token",
        "auth_token",
        "private_key",
        "client_secret",
    ];
    let lower = text.to_ascii_lowercase();
    for name in NAMES {
        let mut from = 0;
        while let Some(i) = lower[from..].find(name) {
            let after = from + i + name.len();
            from = after;
            let rest = text[after..].trim_start_matches(['"', '\'']);
            let Some(rest) = rest.trim_start().strip_prefix(['=', ':']) else { continue };
            let value = rest.trim_start().trim_start_matches(['"', '\'']);
            if value.starts_with(['$', '<', '{', '%']) {
                continue;
            }
            let n = value.chars().take_while(|c| !c.is_whitespace() && !"\"'`,;)".contains(*c)).count();
            let v: String = value.chars().take(n).collect();
            let vl = v.to_ascii_lowercase();
            if n >= 8
                && !vl.contains("xxxx")
                && !vl.contains("****")
                && !["password", "changeme", "redacted"].contains(&vl.as_str())
            {
                return Some("a password or secret assigned in the text");
            }
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::find_secret;

    #[test]
    fn table_of_texts() {
        // (text, is a secret found)
        let cases: &[(&str, bool)] = &[
            ("deploy needs --no-cache on the staging cluster", false),
            ("export OPENAI_API_KEY=sk-proj-abc123DEF456ghi789JKL012mno", true),
            ("use sk-ant-api03-AbCdEf0123456789xyzXYZ for the call", true),
            ("the sk- prefix marks keys: sk-something-like-this-is-prose", false),
            ("token ghp_0123456789abcdefghijABCDEFGHIJ0123456789", true),
            ("AWS key AKIAIOSFODNN7EXAMPLE in ~/.aws/credentials", true),
            ("-----BEGIN RSA PRIVATE KEY-----\nMIIE...", true),
            ("connect with postgres://deploy:hunter2secret@db.internal/app", true),
            ("connect with postgres://deploy@db.internal/app", false),
            ("connect with postgres://deploy:$PGPASSWORD@db.internal/app", false),
            ("connect with postgres://user:password@localhost/app", false),
            ("curl -H 'Authorization: Bearer abcdef0123456789ABCDEF0123' https://x", true),
            ("send a bearer token in the Authorization header", false),
            ("password=Tr0ub4dor&3 in the config", true),
            ("set password: $DB_PASSWORD from the vault", false),
            ("api_key = \"<your key>\"", false),
            ("the password field is required", false),
            ("eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxMjM0NTY3ODkwIn0.dozjgNryP4J3jVmNHl0w5N_XgL0n3I9PlFUP0THsR8U", true),
            ("jq -r '.items[] | .name' works on arrays", false),
            ("xoxb-123456789012-abcdefghij", true),
        ];
        for (text, secret) in cases {
            assert_eq!(find_secret(text).is_some(), *secret, "{text:?}: {:?}", find_secret(text));
        }
    }
}
