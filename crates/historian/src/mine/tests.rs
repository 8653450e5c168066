//! Tables of shell lines, outputs and sessions, and what the miner makes of them.

use super::*;

fn p(line: &str) -> Parsed {
    parse(line).unwrap_or_else(|| panic!("no command in {line:?}"))
}

#[test]
fn a_shell_line_is_parsed_into_program_subcommand_flags_args_and_env() {
    // (line, env, wrappers, program, subcommand, flags, args)
    type Row<'a> = (&'a str, &'a [&'a str], &'a [&'a str], &'a str, Option<&'a str>, &'a [&'a str], &'a [&'a str]);
    let cases: &[Row] = &[
        ("npm install --legacy-peer-deps", &[], &[], "npm", Some("install"), &["--legacy-peer-deps"], &[]),
        (
            "NODE_OPTIONS=--max-old-space-size=4096 npm run build",
            &["NODE_OPTIONS=--max-old-space-size=4096"],
            &[],
            "npm",
            Some("run"),
            &[],
            &["build"],
        ),
        ("sudo apt-get install -y libssl-dev", &[], &["sudo"], "apt-get", Some("install"), &["-y"], &["libssl-dev"]),
        ("npx tsc --noEmit", &[], &["npx"], "tsc", None, &["--noEmit"], &[]),
        ("uvx ruff check .", &[], &["uvx"], "ruff", Some("check"), &[], &["."]),
        ("python3 -m pytest -k slow tests/", &[], &["python3 -m"], "pytest", None, &["-k"], &["slow", "tests/"]),
        ("cd web && pnpm install --frozen-lockfile", &[], &[], "pnpm", Some("install"), &["--frozen-lockfile"], &[]),
        ("cargo test 2>&1 | tail -20", &[], &[], "cargo", Some("test"), &[], &[]),
        ("export AWS_PROFILE=dev; aws s3 ls", &["AWS_PROFILE=dev"], &[], "aws", Some("s3"), &[], &["ls"]),
        (
            "git commit -m 'fix: a \"quoted\" thing'",
            &[],
            &[],
            "git",
            Some("commit"),
            &["-m"],
            &["fix: a \"quoted\" thing"],
        ),
        ("/usr/bin/gcc main.c -o app -lpthread", &[], &[], "gcc", None, &["-o", "-lpthread"], &["main.c", "app"]),
        ("uv run pytest -x", &[], &["uv run"], "pytest", None, &["-x"], &[]),
        (
            "timeout 60 docker build -t app . > build.log",
            &[],
            &["timeout"],
            "docker",
            Some("build"),
            &["-t"],
            &["app", "."],
        ),
        ("kubectl get pods -n kube-system", &[], &[], "kubectl", Some("get"), &["-n"], &["pods", "kube-system"]),
    ];
    for (line, env, wrappers, program, sub, flags, args) in cases {
        let got = p(line);
        let env_got: Vec<String> = got.env.iter().map(|(k, v)| format!("{k}={v}")).collect();
        assert_eq!(env_got, *env, "env of {line}");
        assert_eq!(got.wrappers, *wrappers, "wrappers of {line}");
        assert_eq!(got.program, *program, "program of {line}");
        assert_eq!(got.subcommand.as_deref(), *sub, "subcommand of {line}");
        assert_eq!(got.flags, *flags, "flags of {line}");
        assert_eq!(got.args, *args, "args of {line}");
    }
    // Lines with no command in them.
    for line in ["", "   ", "cd /tmp", "export A=1", "&& ; |", "'", "\\", "2>&1"] {
        assert_eq!(parse(line), None, "{line:?}");
    }
    // The commands before one on its line.
    let all = parse_all("cd x && npm ci && npm test");
    assert_eq!(all.len(), 2);
    assert_eq!(all[1].before, vec!["npm ci".to_string()]);
}

#[test]
fn the_key_line_is_the_message_not_the_noise() {
    // (output, its key line)
    let cases: &[(&str, &str)] = &[
        (
            "npm ERR! code ERESOLVE\nnpm ERR! ERESOLVE unable to resolve dependency tree\nnpm ERR! \nnpm ERR! A complete log of this run can be found in: /home/u/.npm/_logs/x.log",
            "ERESOLVE unable to resolve dependency tree",
        ),
        (
            "Traceback (most recent call last):\n  File \"/app/main.py\", line 1, in <module>\n    import requests\nModuleNotFoundError: No module named 'requests'",
            "ModuleNotFoundError: No module named 'requests'",
        ),
        (
            "   Compiling foo v0.1.0\nerror[E0433]: failed to resolve: use of undeclared crate `tokio`\n --> src/main.rs:1:5\nerror: could not compile `foo` (bin \"foo\") due to 1 previous error",
            "error[E0433]: failed to resolve: use of undeclared crate `tokio`",
        ),
        ("fatal: not a git repository (or any of the parent directories): .git", "fatal: not a git repository (or any of the parent directories): .git"),
        ("Reading package lists...\nE: Could not open lock file /var/lib/dpkg/lock-frontend - open (13: Permission denied)", "E: Could not open lock file /var/lib/dpkg/lock-frontend - open (13: Permission denied)"),
        ("Downloading 45%\nbash: tsc: command not found", "bash: tsc: command not found"),
        // A URL's escapes are no progress.
        (
            "permission denied while trying to connect to the Docker daemon socket at unix:///var/run/docker.sock: Get \"http://%2Fvar%2Frun%2Fdocker.sock/v1.24/containers/json\": dial unix /var/run/docker.sock: connect: permission denied",
            "permission denied while trying to connect to the Docker daemon socket at unix:///var/run/docker.sock: Get \"http://%2Fvar%2Frun%2Fdocker.soc…",
        ),
        ("Receiving objects:  12.5 % (10/80)\nfatal: early EOF", "fatal: early EOF"),
        ("Exit code 1\n\u{1b}[31merror\u{1b}[0m: unexpected argument '--frozen' found", "error: unexpected argument '--frozen' found"),
        // A tool's prefix with nothing after it is no message.
        ("npm ERR! code EUSAGE\nnpm ERR! \nnpm ERR! `npm ci` can only install packages when your package.json and package-lock.json are in sync.", "`npm ci` can only install packages when your package.json and package-lock.json are in sync."),
        ("", ""),
        ("all good\n", "all good"),
    ];
    for (output, want) in cases {
        assert_eq!(key_line(output), *want, "{output:?}");
    }
    let long = format!("Error: {}", "x".repeat(500));
    assert!(key_line(&long).chars().count() <= MAX_ERROR_CHARS);
    // What a session's log keeps of an output reads as the same error.
    for (output, _) in cases {
        assert_eq!(error_lines(&key_output(output)), error_lines(output), "{output:?}");
    }
}

#[test]
fn a_log_keeps_the_lines_the_error_is_read_from() {
    // (output, what the log keeps of it)
    let cases: &[(&str, &str)] = &[
        (
            "npm ERR! code ERESOLVE\nnpm ERR! ERESOLVE unable to resolve dependency tree\nnpm ERR! \nnpm ERR! While resolving: app@1.0.0\nnpm ERR! Found: react@18.2.0\nnpm ERR! A complete log of this run can be found in: /x.log",
            "npm ERR! ERESOLVE unable to resolve dependency tree\nnpm ERR! While resolving: app@1.0.0\nnpm ERR! Found: react@18.2.0",
        ),
        // The same message three times is one line.
        ("error: a\nerror: a\nerror: a\nwarning\nerror: b", "error: a\nerror: b"),
        ("Downloading 45%\nall good\n", "all good"),
        ("\u{1b}[31merror\u{1b}[0m: nope\r\n", "error: nope"),
        ("", ""),
    ];
    for (output, want) in cases {
        assert_eq!(key_output(output), *want, "{output:?}");
        assert_eq!(error_lines(&key_output(output)), error_lines(output), "{output:?}");
    }
    let long = format!("error: {}", "é".repeat(2000));
    assert!(key_output(&long).len() <= KEY_OUTPUT_LINE_MAX);
}

#[test]
fn paths_and_ids_are_told_from_words() {
    // (word, is it a path or an id)
    let cases = [
        ("src/main.rs", true),
        ("./a", true),
        ("main.c", true),
        ("https://x.io/a", true),
        ("12345", true),
        ("3f9a2c1d", true),
        ("web-7f9c5d8b4-x2kqz", true),
        ("run_20241203", true),
        ("install", false),
        ("--force", false),
        ("requests", false),
        ("libssl-dev", false),
        ("1.2.3", false),
        ("", false),
    ];
    for (w, want) in cases {
        assert_eq!(is_path_or_id(w), want, "{w}");
    }
}

fn call(at: usize, tool: &str, command: &str, failed: bool, output: &str, skill: Option<&str>) -> Call {
    Call {
        position: Position::RecordIndex(at),
        tool: tool.into(),
        command: command.into(),
        failed,
        output: output.into(),
        skill_in_use: skill.map(str::to_string),
    }
}

/// A session: (tool, command, failed, output) with one skill in use throughout.
fn session(skill: Option<&str>, steps: &[(&str, &str, bool, &str)]) -> Vec<Call> {
    steps.iter().enumerate().map(|(i, (t, c, f, o))| call(i, t, c, *f, o, skill)).collect()
}

#[test]
fn failures_followed_by_a_changed_call_that_worked_are_mined() {
    // (session, the lessons mined, the refusals)
    let s = Some("node");
    let cases: Vec<(Vec<Call>, Vec<&str>, Vec<Reason>)> = vec![
        // Another flag.
        (
            session(s, &[
                ("Bash", "npm install", true, "npm ERR! code ERESOLVE\nnpm ERR! ERESOLVE unable to resolve dependency tree"),
                ("Bash", "npm install --legacy-peer-deps", false, "added 12 packages"),
            ]),
            vec!["`npm install` fails with `ERESOLVE unable to resolve dependency tree`; `npm install --legacy-peer-deps` works."],
            vec![],
        ),
        // An environment variable.
        (
            session(s, &[
                ("Bash", "npm run build", true, "FATAL ERROR: Reached heap limit Allocation failed - JavaScript heap out of memory"),
                ("Bash", "NODE_OPTIONS=--max-old-space-size=4096 npm run build", false, "built"),
            ]),
            vec!["`npm run build` fails with `FATAL ERROR: Reached heap limit Allocation failed - JavaScript heap out of memory`; `NODE_OPTIONS=--max-old-space-size=4096 npm run build` works."],
            vec![],
        ),
        // A step between, after which the failing call works unchanged (a read between is no step).
        (
            session(s, &[
                ("Bash", "git push", true, "fatal: The current branch main has no upstream branch."),
                ("Bash", "git status", false, "On branch main"),
                ("Bash", "git branch --set-upstream-to=origin/main", false, ""),
                ("Bash", "git push", false, "ok"),
            ]),
            vec!["`git push` fails with `fatal: The current branch main has no upstream branch.` until `git branch --set-upstream-to=origin/main` is run."],
            vec![],
        ),
        // A step on the line itself.
        (
            session(s, &[
                ("Bash", "npm test", true, "Error: Cannot find module 'jest'"),
                ("Bash", "npm ci && npm test", false, "ok"),
            ]),
            vec!["`npm test` fails with `Error: Cannot find module 'jest'` until `npm ci` is run."],
            vec![],
        ),
        // A chain of failures: the last one is what the fix answers.
        (
            session(s, &[
                ("Bash", "pip install psycopg2", true, "Error: pg_config executable not found."),
                ("Bash", "pip install psycopg2 --no-cache-dir", true, "Error: pg_config executable not found."),
                ("Bash", "pip install psycopg2-binary", false, "Successfully installed"),
            ]),
            vec!["`pip install psycopg2 --no-cache-dir` fails with `Error: pg_config executable not found.`; `pip install psycopg2-binary` works."],
            vec![],
        ),
        // The same call after an edit: the code changed.
        (
            session(s, &[
                ("Bash", "npm test", true, "Expected: 3\nReceived: 4"),
                ("Edit", "src/sum.js", false, ""),
                ("Bash", "npm test", false, "Tests: 3 passed"),
            ]),
            vec![],
            vec![Reason::OwnTestOrBuild],
        ),
        (
            session(s, &[("Bash", "make deploy", true, "error: connection reset"), ("Bash", "make deploy", false, "")]),
            vec![],
            vec![Reason::Unchanged],
        ),
        // Only a path changed.
        (
            session(s, &[
                ("Bash", "cat src/mian.rs", true, "cat: src/mian.rs: No such file or directory"),
                ("Bash", "cat src/main.rs", false, "fn main() {}"),
                ("Bash", "kubectl logs web-7f9c5d8b4-x2kqz", true, "Error from server (NotFound): pods \"web-7f9c5d8b4-x2kqz\" not found"),
                ("Bash", "kubectl logs web-5d8b47f9c-q1wer", false, "listening"),
            ]),
            vec![],
            vec![Reason::PathOrId, Reason::PathOrId],
        ),
        // A test runner's own usage is a lesson; selecting another test after an edit is not.
        (
            session(s, &[
                ("Bash", "pytest --cov", true, "pytest: error: unrecognized arguments: --cov"),
                ("Bash", "pip install pytest-cov", false, ""),
                ("Bash", "pytest --cov", false, "ok"),
                ("Bash", "pytest", true, "E   AssertionError: assert 3 == 4"),
                ("Edit", "tests/test_sum.py", false, ""),
                ("Bash", "pytest -k test_sum", false, "1 passed"),
            ]),
            vec!["`pytest --cov` fails with `pytest: error: unrecognized arguments: --cov` until `pip install pytest-cov` is run."],
            vec![Reason::OwnTestOrBuild],
        ),
        // No skill in use.
        (
            session(None, &[("Bash", "npm install", true, "npm ERR! ERESOLVE"), ("Bash", "npm install --force", false, "")]),
            vec![],
            vec![Reason::NoSkill],
        ),
        // A failure never followed by the same program, and calls of other tools, give nothing.
        (
            session(s, &[("Bash", "docker compose up", true, "Error: port is already allocated"), ("Read", "README.md", true, "no such file"), ("Bash", "ls", false, "")]),
            vec![],
            vec![],
        ),
    ];
    for (calls, lessons, reasons) in cases {
        let got = mine(&calls);
        let deltas: Vec<&str> = got.mined.iter().map(|m| m.delta.as_str()).collect();
        assert_eq!(deltas, lessons, "{calls:#?}");
        let why: Vec<Reason> = got.refused.iter().map(|r| r.reason).collect();
        assert_eq!(why, reasons, "{calls:#?}");
        for m in &got.mined {
            assert_eq!(m.skill, "node");
            assert!(m.delta.chars().count() <= crate::filter::MAX_LESSON_CHARS, "{}", m.delta);
        }
    }
}

#[test]
fn evidence_names_both_calls_their_positions_and_no_secret() {
    let token = "ghp_aBcDeFgHiJkLmNoPqRsTuVwXyZ0123456789";
    let calls = vec![
        call(
            3,
            "Bash",
            &format!("GITHUB_TOKEN={token} gh release list"),
            true,
            "HTTP 401: Bad credentials",
            Some("gh"),
        ),
        call(7, "Bash", &format!("GITHUB_TOKEN={token} gh release list --repo acme/tool"), false, "v1.0", Some("gh")),
    ];
    let got = mine(&calls);
    assert_eq!(got.mined.len(), 1, "{got:?}");
    let m = &got.mined[0];
    assert_eq!(m.evidence.positions, vec![Position::RecordIndex(3), Position::RecordIndex(7)]);
    assert_eq!(m.evidence.error_lines, vec!["HTTP 401: Bad credentials".to_string()]);
    let all = format!("{} {:?}", m.delta, m.evidence);
    assert!(!all.contains(token), "{all}");
    assert!(skillmem_text::redact::find_secret(&all).is_none(), "{all}");
    assert!(m.redacted.contains(&"a GitHub token"), "{:?}", m.redacted);
    // Positions may be the protocol's call ids.
    let mut calls = calls;
    calls[0].position = Position::CallId("c1".into());
    assert_eq!(mine(&calls).mined[0].evidence.positions[0], Position::CallId("c1".into()));
}

#[test]
fn no_input_makes_it_panic() {
    let odd =
        ["", "\\", "'", "\"", "|", "&&", "a=b", "sudo", "python -m", "uv run", "timeout 5", "é ü 💥", "x\u{1b}[", ">"];
    let mut calls = vec![];
    for (i, a) in odd.iter().enumerate() {
        for b in odd {
            calls.push(call(i, "Bash", &format!("{a} {b}"), i % 2 == 0, b, Some("s")));
            calls.push(call(i, "bash", b, i % 3 == 0, a, None));
        }
    }
    let _ = mine(&calls);
    for a in odd {
        let _ = parse_all(a);
        let _ = error_lines(a);
    }
}

#[test]
fn a_failure_with_nothing_to_quote_says_only_that_it_fails() {
    let calls = session(
        Some("docker"),
        &[("Bash", "docker ps", true, ""), ("Bash", "sudo docker ps", false, "CONTAINER ID   IMAGE")],
    );
    let got = mine(&calls);
    assert_eq!(got.mined.len(), 1, "{got:?}");
    assert_eq!(got.mined[0].delta, "`docker ps` fails; `sudo docker ps` works.");
}

#[test]
fn a_redacted_line_parses_as_it_ran() {
    // (line, the line redacted)
    let cases: &[(&str, &str)] = &[
        (
            "GH_TOKEN=ghp_R4nd0mT0k3nV4lu3F0rT3st1ngOnly0123ab gh pr list",
            "GH_TOKEN='[redacted: a GitHub token]' gh pr list",
        ),
        (
            "curl -H \"Authorization: Bearer sk_live_51HqLyjWDarjtT1zdp7dcXYZ0123456789abcdefGHIJ\" https://x.dev",
            "curl -H \"Authorization: Bearer [redacted: a Stripe secret key]\" https://x.dev",
        ),
        ("npm ci", "npm ci"),
    ];
    for (line, want) in cases {
        let got = redact_line(line);
        assert_eq!(got, *want, "{line}");
        let (a, b) = (parse(line).unwrap(), parse(&got).unwrap());
        assert_eq!(
            (&a.program, &a.subcommand, a.env.len(), a.rest.len()),
            (&b.program, &b.subcommand, b.env.len(), b.rest.len()),
            "{line}"
        );
        assert_eq!(redact::redact(&a.render()).0, b.render(), "{line}");
    }
}

/// The failures of real sessions (SWE-bench trajectories, bench/real/) that are no lesson,
/// each refused with its reason; and the real lessons kept.
#[test]
fn what_real_sessions_fail_at_is_told_from_a_fix() {
    let s = Some("swe-bench");
    let heredoc = "cat <<'EOF' > reproduce_issue.py\nimport x\nprint(x)\nEOF";
    type Case<'a> = (&'a str, Vec<Call>, Vec<&'a str>, Vec<Reason>);
    let cases: Vec<Case<'_>> = vec![
        (
            "a read between is no step, and a here-document's delimiter is no command",
            session(s, &[
                ("Bash", heredoc, false, ""),
                ("Bash", "python reproduce_issue.py", true, "IndentationError: unexpected indent"),
                ("Bash", "nl -ba django/db/models/base.py | sed -n '930,945p'", false, "930 x"),
                ("Bash", "python reproduce_issue.py", false, "ok"),
            ]),
            vec![],
            vec![Reason::Unrelated],
        ),
        (
            "git checkout of the session's own edit is no step",
            session(s, &[
                ("Bash", "python reproduce_issue.py", true, "IndentationError: expected an indented block"),
                ("Bash", "git checkout django/db/models/query.py", false, ""),
                ("Bash", "python reproduce_issue.py", false, "ok"),
            ]),
            vec![],
            vec![Reason::Unrelated],
        ),
        (
            "a grep that found nothing is no failure",
            session(s, &[
                ("Bash", "grep -n \"def evalf\" sympy/core/expr.py", true, ""),
                ("Bash", "grep -r \"def evalf\" sympy/core/", false, "sympy/core/evalf.py: def evalf"),
                ("Bash", "ls -R | grep polylog", true, ""),
                ("Bash", "ls -F", false, "a/ b/"),
            ]),
            vec![],
            vec![Reason::Read, Reason::Read],
        ),
        (
            "another inline program and another script are other calls",
            session(s, &[
                ("Bash", "python3 -c \"print('abc'.isascii())\"", true, "AttributeError: 'str' object has no attribute 'isascii'"),
                ("Bash", "python3 -c \"import sys; print(sys.version)\"", false, "3.6.13"),
                ("Bash", "python3 check_a.py", true, "ValueError: bad"),
                ("Bash", "python3 -bb check_b.py", false, "ok"),
            ]),
            vec![],
            vec![Reason::Unrelated, Reason::Unrelated],
        ),
        (
            "a line of several commands: which one failed is not known",
            session(s, &[
                ("Bash", "git stash && bin/test sympy/core/tests/test_expr.py", true, "tests finished: 90 passed, 2 exceptions"),
                ("Bash", "git stash pop", false, ""),
            ]),
            vec![],
            vec![Reason::Compound],
        ),
        (
            "rm of the session's own files",
            session(s, &[
                ("Bash", heredoc, false, ""),
                ("Bash", "rm reproduce_issue.py reproduce_app", true, "rm: cannot remove 'reproduce_app': Is a directory"),
                ("Bash", "rm -f reproduce_issue.py", false, ""),
            ]),
            vec![],
            vec![Reason::SessionFile],
        ),
        (
            "a timed-out suite narrowed to some tests",
            session(s, &[
                ("Bash", "pytest lib/matplotlib/tests/test_axes.py", true, "timed out"),
                ("Bash", "pytest lib/matplotlib/tests/test_axes.py -v -k \"clear or share\"", false, "3 passed"),
                ("Bash", "pytest lib/x/test_a.py -k test_hist_density", true, "ImageComparisonFailure: images not close"),
                ("Bash", "pytest lib/x/test_a.py -k test_hist_range_density", false, "1 passed"),
            ]),
            vec![],
            vec![Reason::Selection, Reason::Selection],
        ),
        (
            "a fix that silences, deletes or skips checks",
            session(s, &[
                ("Bash", "pytest tests/test_io.py", true, "DeprecationWarning: the imp module is deprecated"),
                ("Bash", "pytest -W ignore tests/test_io.py", false, "5 passed"),
                ("Bash", "git push --force-with-lease", true, "! [rejected] main -> main (stale info)"),
                ("Bash", "git push --force", false, "+ 1a2b3c...4d5e6f main -> main (forced update)"),
            ]),
            vec![],
            vec![Reason::Unsafe, Reason::Unsafe],
        ),
        (
            "a probe is passed over for the call that worked; the real lessons are kept",
            session(s, &[
                ("Bash", "/usr/bin/python3 -m pytest tests/test_utils.py", true, "/usr/bin/python3: No module named pytest"),
                ("Bash", "pytest --version", false, "pytest 7.4.0"),
                ("Bash", "pytest tests/test_utils.py", false, "5 passed"),
                ("Bash", "python3 reproduce_issue.py", true, "UnicodeEncodeError: 'ascii' codec can't encode character '\\xf1' in position 4: ordinal not in range(128)"),
                ("Bash", "PYTHONIOENCODING=utf-8 python3 reproduce_issue.py", false, "ok"),
                ("Bash", "python reproduce_issue.py", true, "FileNotFoundError: [Errno 2] No such file or directory: 'dvipng'"),
                ("Bash", "apt-get update && apt-get install -y dvipng", false, "done"),
                ("Bash", "python reproduce_issue.py", false, "ok"),
            ]),
            vec![
                "`/usr/bin/python3 -m pytest tests/test_utils.py` fails with `/usr/bin/python3: No module named pytest`; `pytest tests/test_utils.py` works.",
                "`python3 reproduce_issue.py` fails with `UnicodeEncodeError: 'ascii' codec can't encode character '\\xf1' in position 4: ordinal not in range(128)`; `PYTHONIOENCODING=utf-8 python3 reproduce_issue.py` works.",
                "`python reproduce_issue.py` fails with `FileNotFoundError: [Errno 2] No such file or directory: 'dvipng'` until `apt-get update && apt-get install -y dvipng` is run.",
            ],
            vec![],
        ),
    ];
    for (what, calls, lessons, reasons) in cases {
        let got = mine(&calls);
        let deltas: Vec<&str> = got.mined.iter().map(|m| m.delta.as_str()).collect();
        assert_eq!(deltas, lessons, "{what}");
        let why: Vec<Reason> = got.refused.iter().map(|r| r.reason).collect();
        assert_eq!(why, reasons, "{what}");
    }
}

#[test]
fn a_here_document_is_no_command_and_its_file_is_written() {
    let all = parse_all("cat <<'EOF' > repro.py\nimport os\nrm -rf /\nEOF\npython repro.py >> log.txt");
    let programs: Vec<&str> = all.iter().map(|p| p.program.as_str()).collect();
    assert_eq!(programs, ["cat", "python"]);
    assert_eq!(all[0].writes, ["repro.py"]);
    assert_eq!(all[1].appends, ["log.txt"]);
    let piped = parse("ls -R | grep polylog | head -n 3").unwrap();
    assert_eq!(piped.piped, ["grep", "head"]);
    // Quoted and dashed delimiters; an unterminated body runs to the end of the line.
    let all = parse_all("python - <<-\"PY\"\n\tprint(1)\n\tPY\necho done");
    let programs: Vec<&str> = all.iter().map(|p| p.program.as_str()).collect();
    assert_eq!(programs, ["python", "echo"]);
    assert_eq!(parse_all("cat <<EOF\nnever closed\nls").len(), 1);
}

#[test]
fn the_same_fix_in_two_sessions_has_one_key() {
    let key = |calls: Vec<Call>| mine(&calls).mined.first().map(|m| m.key.clone()).unwrap_or_default();
    let s = Some("swe-bench");
    let a = key(session(
        s,
        &[
            (
                "Bash",
                "/usr/bin/python3 -m pytest tests/test_k_means.py",
                true,
                "/usr/bin/python3: No module named pytest",
            ),
            ("Bash", "pytest tests/test_k_means.py", false, "ok"),
        ],
    ));
    let b = key(session(
        s,
        &[
            (
                "Bash",
                "python3 -m pytest tests/lint/test_pylinter.py -x",
                true,
                "/usr/bin/python3: No module named pytest",
            ),
            ("Bash", "pytest tests/lint/test_pylinter.py -x", false, "ok"),
        ],
    ));
    let other = key(session(
        s,
        &[
            ("Bash", "python3 -m pytest tests/a.py", true, "ModuleNotFoundError: No module named 'hypothesis'"),
            ("Bash", "pip install hypothesis && python3 -m pytest tests/a.py", false, "ok"),
        ],
    ));
    assert!(!a.is_empty() && !other.is_empty());
    assert_eq!(a, b);
    assert_ne!(a, other);
    // (error line, signature)
    let cases: &[(&str, &str)] = &[
        ("/usr/bin/python3: No module named pytest", "no module named pytest"),
        ("UnicodeEncodeError: 'ascii' codec can't encode character '\\xe5' in position 4739: ordinal not in range(128)", "unicodeencodeerror codec can't encode"),
        ("UnicodeEncodeError: 'ascii' codec can't encode characters in position 49-50: ordinal not in range(128)", "unicodeencodeerror codec can't encode"),
    ];
    for (line, want) in cases {
        assert_eq!(error_signature(line), *want, "{line}");
    }
}
