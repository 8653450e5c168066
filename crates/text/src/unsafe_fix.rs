//! Fixes that weaken safety: a lesson that teaches one would make the next agent force-push,
//! delete data, skip or silence checks, or turn off certificate checks. The miner and the
//! historian refuse such a lesson (docs/protocol.md, "Lessons from outcomes"); a person can
//! still write one by hand.
//!
//! The rules are a table a person can read ([`RULES`]): each names what it looks for in the
//! words of a shell line (or of a lesson's code), and why it is unsafe. Pure functions of a
//! string, no panic on any input.

/// One unsafe fix the table knows.
#[derive(Debug, Clone, Copy)]
pub struct Rule {
    /// A short name (`force-push`, `rm-rf`, ...), what refusals are counted by.
    pub name: &'static str,
    /// Why such a fix is unsafe, in one sentence.
    pub why: &'static str,
    /// The words of the line that break it, if any.
    matches: fn(&[String]) -> Option<String>,
}

/// The rules, in the order they are tried.
pub static RULES: &[Rule] = &[
    Rule {
        name: "force-push",
        why: "a force push rewrites the remote's history and can drop other people's commits",
        matches: force_push,
    },
    Rule { name: "no-verify", why: "--no-verify skips the repository's hooks and checks", matches: no_verify },
    Rule { name: "rm-rf", why: "a recursive forced delete loses data the lesson cannot know about", matches: rm_rf },
    Rule {
        name: "reset-hard",
        why: "git reset --hard and git clean -f throw away uncommitted work",
        matches: reset_hard,
    },
    Rule { name: "chmod-777", why: "world-writable permissions open the files to every user", matches: chmod_777 },
    Rule {
        name: "sudo-package-manager",
        why: "sudo on a language package manager writes root-owned files into the user's environment",
        matches: sudo_package_manager,
    },
    Rule { name: "tls-off", why: "turning off TLS or certificate checks hides a man in the middle", matches: tls_off },
    Rule {
        name: "silenced",
        why: "silencing warnings, errors or tests wholesale hides the failure instead of fixing it",
        matches: silenced,
    },
];

/// The first rule a shell line (or a lesson's text) breaks.
pub fn check(text: &str) -> Option<&'static Rule> {
    let words = words_of(text);
    RULES.iter().find(|r| (r.matches)(&words).is_some())
}

/// The first rule the change from `before` to `after` breaks: `after` breaks it with words
/// `before` did not have (a failed call that already force-pushed teaches nothing new by its
/// fix; one that passed `--skip-checks` and a fix that adds `|| true` does).
pub fn introduced(before: &str, after: &str) -> Option<&'static Rule> {
    let (b, a) = (words_of(before), words_of(after));
    RULES.iter().find(|r| match ((r.matches)(&a), (r.matches)(&b)) {
        (Some(x), Some(y)) => x != y,
        (Some(_), None) => true,
        _ => false,
    })
}

/// `Some(word)` when `hit`.
fn hit(found: Option<&String>) -> Option<String> {
    found.cloned()
}

/// Whether a lesson's prose warns against what its code does ("never `git push --force`",
/// "do not use `-k`"): a warning is no unsafe fix.
pub fn warns_against(lesson: &str) -> bool {
    let l = lesson.to_lowercase();
    const NEG: &[&str] =
        &["never ", "don't ", "do not ", "avoid ", "instead of ", "must not ", "mustn't ", "not with ", "rather than "];
    NEG.iter().any(|n| l.contains(n))
}

/// The words of a line: split at white space, shell operators kept as words of their own,
/// quotes and backticks dropped.
fn words_of(text: &str) -> Vec<String> {
    let mut out = vec![];
    for raw in text.split_whitespace() {
        let w: String = raw.chars().filter(|c| !matches!(c, '`' | '"' | '\'')).collect();
        // `;` and `&&` glued to a word end a command.
        let w = w.trim_end_matches([';', ',', '.', ')']).to_string();
        if !w.is_empty() {
            out.push(w);
        }
    }
    out
}

/// The commands of a line: words between `&&`, `||`, `;`, `|`.
fn commands(words: &[String]) -> Vec<&[String]> {
    words.split(|w| matches!(w.as_str(), "&&" | "||" | ";" | "|" | "&")).filter(|c| !c.is_empty()).collect()
}

fn base(w: &str) -> &str {
    w.rsplit('/').next().unwrap_or(w)
}

/// The command's words from its program on (environment assignments and `sudo`-like wrappers
/// skipped), and whether `sudo` was among them.
fn program_at(cmd: &[String]) -> (Option<usize>, bool) {
    let mut sudo = false;
    for (i, w) in cmd.iter().enumerate() {
        if w.contains('=') && !w.starts_with('-') {
            continue;
        }
        match base(w) {
            "sudo" | "doas" => sudo = true,
            "env" | "time" | "nohup" | "exec" | "command" => {}
            _ if w.starts_with('-') => {}
            _ => return (Some(i), sudo),
        }
    }
    (None, sudo)
}

fn force_push(words: &[String]) -> Option<String> {
    commands(words).iter().find_map(|c| {
        let at = program_at(c).0?;
        if base(&c[at]) != "git" || !c[at..].iter().any(|w| w == "push") {
            return None;
        }
        hit(c[at..].iter().find(|w| {
            *w == "--force"
                || w.starts_with("--force=")
                || (w.starts_with('-') && !w.starts_with("--") && w.contains('f'))
                || (w.starts_with('+') && w.len() > 1)
        }))
    })
}

fn no_verify(words: &[String]) -> Option<String> {
    hit(words.iter().find(|w| *w == "--no-verify"))
}

fn rm_rf(words: &[String]) -> Option<String> {
    commands(words).iter().find_map(|c| {
        let at = program_at(c).0?;
        if base(&c[at]) != "rm" {
            return None;
        }
        let flags: Vec<&String> = c[at + 1..].iter().filter(|w| w.starts_with('-')).collect();
        let short = |ch: char| flags.iter().any(|f| !f.starts_with("--") && f.contains(ch));
        let recursive = short('r') || short('R') || flags.iter().any(|f| *f == "--recursive");
        let force = short('f') || flags.iter().any(|f| *f == "--force");
        (recursive && force).then(|| c[at..].join(" "))
    })
}

fn reset_hard(words: &[String]) -> Option<String> {
    commands(words).iter().find_map(|c| {
        let at = program_at(c).0?;
        if base(&c[at]) != "git" {
            return None;
        }
        let rest = &c[at + 1..];
        let sub = rest.iter().find(|w| !w.starts_with('-')).map(String::as_str);
        let bad = match sub {
            Some("reset") => rest.iter().any(|w| w == "--hard"),
            Some("clean") => {
                rest.iter().any(|w| w.starts_with('-') && !w.starts_with("--") && w.contains('f'))
                    || rest.iter().any(|w| w == "--force")
            }
            _ => false,
        };
        bad.then(|| c[at..].join(" "))
    })
}

fn chmod_777(words: &[String]) -> Option<String> {
    commands(words).iter().find_map(|c| {
        let at = program_at(c).0?;
        if base(&c[at]) != "chmod" {
            return None;
        }
        hit(c[at + 1..].iter().find(|w| matches!(w.as_str(), "777" | "0777" | "a+rwx" | "o+w" | "a+w")))
    })
}

fn sudo_package_manager(words: &[String]) -> Option<String> {
    const MANAGERS: &[&str] =
        &["pip", "pip3", "npm", "pnpm", "yarn", "gem", "cargo", "composer", "poetry", "conda", "pipx", "bun", "uv"];
    commands(words).iter().find_map(|c| {
        let (at, sudo) = program_at(c);
        let at = at?;
        let prog = base(&c[at]);
        // `sudo python3 -m pip install`
        let module = c.get(at + 1).is_some_and(|w| w == "-m") && c.get(at + 2).is_some_and(|m| m == "pip");
        (sudo && (MANAGERS.contains(&prog) || (prog.starts_with("python") && module))).then(|| format!("sudo {prog}"))
    })
}

fn tls_off(words: &[String]) -> Option<String> {
    let lower: Vec<String> = words.iter().map(|w| w.to_ascii_lowercase()).collect();
    let curl = commands(words).iter().find_map(|c| {
        let at = program_at(c).0?;
        if base(&c[at]) != "curl" {
            return None;
        }
        hit(c[at + 1..].iter().find(|w| *w == "-k" || *w == "--insecure"))
    });
    curl.or_else(|| {
        hit(lower
            .iter()
            .enumerate()
            .find(|&(i, w)| {
                let next = lower.get(i + 1).map(String::as_str).unwrap_or("");
                w == "--no-check-certificate"
                    || w == "--insecure"
                    || w.starts_with("git_ssl_no_verify=")
                    || w == "node_tls_reject_unauthorized=0"
                    || w == "pythonhttpsverify=0"
                    || w == "--trusted-host"
                    || w.contains("verify=false")
                    || w == "sslverify=false"
                    || w == "http.sslverify=false"
                    || ((w == "http.sslverify" || w == "strict-ssl" || w == "sslverify") && next == "false")
                    || w == "strict-ssl=false"
                    || w == "--disable-ssl-verification"
            })
            .map(|(_, w)| w))
    })
}

fn silenced(words: &[String]) -> Option<String> {
    const ALONE: &[&str] = &[
        "--disable-warnings",
        "--no-tests",
        "-DskipTests",
        "--skip-checks",
        "--skip-tests",
        "-interaction=nonstopmode",
        "-interaction=batchmode",
    ];
    const PREFIX: &[&str] = &["-Wignore", "-Dmaven.test.skip", "PYTHONWARNINGS=ignore", "pythonwarnings=ignore"];
    // (a word, what must follow it)
    const PAIRS: &[(&str, &str)] = &[("-W", "ignore"), ("-p", "no:warnings"), ("||", "true"), ("||", ":")];
    let one = words.iter().find(|w| ALONE.contains(&w.as_str()) || PREFIX.iter().any(|p| w.starts_with(p)));
    hit(one).or_else(|| {
        words.windows(2).find_map(|p| {
            PAIRS.iter().any(|(a, b)| p[0] == *a && p[1].starts_with(b)).then(|| format!("{} {}", p[0], p[1]))
        })
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_rule_has_a_true_and_a_false_case() {
        // (rule, unsafe lines, safe lines)
        let cases: &[(&str, &[&str], &[&str])] = &[
            (
                "force-push",
                &["git push --force", "git push -f origin main", "git push origin +main", "sudo git push --force=main"],
                &["git push", "git push --force-with-lease", "git push -u origin main", "git pull --ff-only"],
            ),
            ("no-verify", &["git commit --no-verify -m x", "git push --no-verify"], &["git commit -m verify"]),
            (
                "rm-rf",
                &[
                    "rm -rf build",
                    "rm -fr /tmp/x",
                    "cd x && rm -Rf y",
                    "rm -r -f node_modules",
                    "rm --recursive --force d",
                ],
                &["rm file.txt", "rm -f old.log", "rm -r empty_dir", "npm run rf"],
            ),
            (
                "reset-hard",
                &["git reset --hard HEAD~1", "git clean -fdx", "git clean --force"],
                &["git reset HEAD file", "git reset --soft HEAD~1", "git clean -n"],
            ),
            ("chmod-777", &["chmod 777 /var/run/docker.sock", "chmod -R a+rwx ."], &["chmod +x run.sh", "chmod 644 f"]),
            (
                "sudo-package-manager",
                &["sudo npm install -g typescript", "sudo pip install requests", "sudo -H python3 -m pip install x"],
                &["npm install -g typescript", "sudo apt-get install -y dvipng", "pip install --user x"],
            ),
            (
                "tls-off",
                &[
                    "curl -k https://x",
                    "wget --no-check-certificate https://x",
                    "GIT_SSL_NO_VERIFY=1 git clone https://x",
                    "NODE_TLS_REJECT_UNAUTHORIZED=0 npm install",
                    "pip install --trusted-host pypi.org x",
                    "git config --global http.sslVerify false",
                    "npm config set strict-ssl false",
                ],
                &["curl -L https://x", "git clone https://x", "pip install -k x", "npm config set registry x"],
            ),
            (
                "silenced",
                &[
                    "pytest -W ignore",
                    "pytest -Wignore::DeprecationWarning",
                    "pytest -p no:warnings",
                    "make test || true",
                    "PYTHONWARNINGS=ignore python x.py",
                    "mvn package -DskipTests",
                    "python manage.py runserver --skip-checks",
                    "pdflatex -interaction=nonstopmode doc.tex",
                ],
                &["pytest -W error", "pytest -x", "make test && echo ok", "mvn package", "pdflatex doc.tex"],
            ),
        ];
        for (rule, bad, good) in cases {
            for line in *bad {
                assert_eq!(check(line).map(|r| r.name), Some(*rule), "{line}");
            }
            for line in *good {
                assert_eq!(check(line).map(|r| r.name), None, "{line}");
            }
        }
        let named: Vec<&str> = cases.iter().map(|c| c.0).collect();
        let all: Vec<&str> = RULES.iter().map(|r| r.name).collect();
        assert_eq!(named, all, "every rule has its case");
    }

    #[test]
    fn only_what_the_fix_adds_counts() {
        // (before, after, the rule the change introduces)
        let cases: &[(&str, &str, Option<&str>)] = &[
            ("git push --force-with-lease", "git push --force", Some("force-push")),
            ("git push --force", "git push --force origin main", None),
            ("pytest", "pytest -W ignore", Some("silenced")),
            ("npm install", "npm install --legacy-peer-deps", None),
            ("pip install x", "sudo pip install x", Some("sudo-package-manager")),
            ("manage.py runserver --skip-checks", "manage.py runserver > out.txt 2>&1 || true", Some("silenced")),
        ];
        for (before, after, want) in cases {
            assert_eq!(introduced(before, after).map(|r| r.name), *want, "{before} → {after}");
        }
    }

    #[test]
    fn a_warning_is_told_from_a_recommendation() {
        let cases: &[(&str, bool)] = &[
            ("Never `git push --force` to main; use `--force-with-lease`.", true),
            ("Do not pass `-k` to curl here: fix the CA bundle.", true),
            ("`git push --force` works.", false),
        ];
        for (lesson, want) in cases {
            assert_eq!(warns_against(lesson), *want, "{lesson}");
        }
    }

    #[test]
    fn no_input_makes_it_panic() {
        for s in ["", "|", "&& ||", "rm", "git", "sudo", "-W", "chmod", "\u{0}", "é -W"] {
            let _ = check(s);
            let _ = introduced(s, s);
        }
    }
}
