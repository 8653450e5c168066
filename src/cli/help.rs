//! What the command line says to a person: the getting-started screen of a bare `skillmem`,
//! and the examples the main commands show under `--help`.

/// Printed by `skillmem` without arguments (exit code 0: asking what to do is no mistake, and
/// it is what `skillmem --help` answers too).
pub const GETTING_STARTED: &str = "\
skillmem: a memory for your agents' skills, and the skills each session should have.

Get started:
  skillmem setup claude-code   wire a host; also opencode, pi, gemini-cli, codex, copilot
  skillmem demo                watch a host session write, merge and recall lessons
                               (in a temporary folder; nothing of yours is touched)
  skillmem ui                  see what your agents learned, in the browser

Give a skill memory: add this line to its SKILL.md frontmatter:
  skill-memory: { enabled: true }

Every command:      skillmem help
One command:        skillmem help <command>   (or skillmem <command> --help)";

/// `skillmem setup`.
pub const SETUP: &str = "\
Examples:
  skillmem setup claude-code --dry-run   # print the changes, write nothing
  skillmem setup claude-code
  skillmem setup gemini-cli --project .  # one project's configuration
  skillmem setup codex --undo            # take out exactly what setup added";

/// `skillmem serve`.
pub const SERVE: &str = "\
Example (what a host runs; it speaks JSON-RPC on stdin/stdout, see docs/protocol.md):
  skillmem serve --stdio";

/// `skillmem note`.
pub const NOTE: &str = "\
Examples:
  skillmem note jq --kind gotcha --delta 'jq -r prints raw strings, without quotes'
  skillmem note git --kind fix --intent 'rebase a branch' --scope global \\
      --delta 'rebase --onto needs the old base as its second argument'
  skillmem note jq --kind gotcha --replaces 17 --delta 'jq -r prints raw strings; -j drops newlines too'";

/// `skillmem recall`.
pub const RECALL: &str = "\
Example (counts as a recall, as a skill load does; `skillmem ui` previews without counting):
  skillmem recall jq --intent 'flatten nested arrays'";

/// `skillmem pin`.
pub const PIN: &str = "\
Examples (ids: `skillmem notes SKILL`):
  skillmem pin 17
  skillmem pin 17 --off";

/// `skillmem forget`.
pub const FORGET: &str = "\
Examples (ids: `skillmem notes SKILL`; `skillmem restore 17` brings it back):
  skillmem forget 17
  skillmem forget 17 --reason 'the flag was removed in 2.0'";

/// `skillmem feedback`.
pub const FEEDBACK: &str = "\
Examples (from your terminal a note you confirm is trusted at once; from an agent's shell,
`useful` counts as a use in the session named by --session):
  skillmem feedback 17 useful
  skillmem feedback 17 wrong --reason 'the flag was removed in 2.0'
  skillmem feedback 17 useful --session ses_42";

/// `skillmem restore`.
pub const RESTORE: &str = "\
Example (`skillmem notes --all-versions` lists retired and replaced notes):
  skillmem restore 17";

/// `skillmem purge`.
pub const PURGE: &str = "\
Example (for good, with the versions it replaced; `forget` is the undoable way):
  skillmem purge 17";

/// `skillmem versions`.
pub const VERSIONS: &str = "\
Example:
  skillmem versions 17";

/// `skillmem edit`.
pub const EDIT: &str = "\
Example (ids: `skillmem notes SKILL`):
  skillmem edit 17 --delta 'jq -r prints raw strings; -j drops the newlines too'";

/// `skillmem stats`.
pub const STATS: &str = "\
Examples:
  skillmem stats
  skillmem stats --days 30 --json";

/// `skillmem notes`.
pub const NOTES: &str = "\
Examples:
  skillmem notes jq
  skillmem notes --kind gotcha --sort hits --limit 20
  skillmem notes --search 'rebase onto' --all-projects";

/// `skillmem review`.
pub const REVIEW: &str = "\
Examples (with historian.review = true in skillmem.toml):
  skillmem review
  skillmem review accept 17
  skillmem review accept 17 --delta 'jq -r prints strings without quotes.'
  skillmem review reject 18 --reason 'a fact of this task'
  skillmem restore 18            # undoes the rejection: back in the queue";

/// `skillmem export`.
pub const EXPORT: &str = "\
Examples:
  skillmem export -o notes.jsonl
  skillmem export --skill jq --format md";

/// `skillmem import`.
pub const IMPORT: &str = "\
Example (what `skillmem export` wrote, on another machine):
  skillmem import notes.jsonl";

/// `skillmem doctor`.
pub const DOCTOR: &str = "\
Examples:
  skillmem doctor
  skillmem doctor --fix";

/// `skillmem ui`.
pub const UI: &str = "\
Examples:
  skillmem ui
  skillmem ui --port 7433 --no-open   # then open the URL it prints";

/// `skillmem demo`.
pub const DEMO: &str = "\
Example (from a clone; builds, then plays the session):
  cargo run --release -- demo";

/// `skillmem eval recall`.
pub const EVAL: &str = "\
Examples:
  skillmem eval recall tests/fixtures/recall-own.json
  skillmem eval recall tests/fixtures/recall-own.json bench/recall-set-b.json --embedding hash";

/// `skillmem eval merge`.
pub const EVAL_MERGE: &str = "\
Example:
  skillmem eval merge bench/merge/pairs-dev.jsonl bench/merge/pairs-heldout.jsonl --verbose";

/// `skillmem eval mine`.
pub const EVAL_MINE: &str = "\
Example:
  skillmem eval mine bench/mine/dev.labels.jsonl bench/mine/held-out.labels.jsonl --verbose";

/// `skillmem eval use`.
pub const EVAL_USE: &str = "\
Example:
  skillmem eval use bench/use/dev.labels.jsonl bench/use/held-out.labels.jsonl --verbose";

/// `skillmem eval replay`.
pub const EVAL_REPLAY: &str = "\
Examples:
  skillmem eval replay
  skillmem eval replay --sessions 12 --seed 7 --json";

/// `skillmem eval historian`.
pub const EVAL_HISTORIAN: &str = "\
Examples:
  skillmem eval historian bench/historian/dev.jsonl bench/historian/held-out-2.jsonl";

/// `skillmem chunk`.
pub const CHUNK: &str = "\
Example:
  skillmem chunk --format claude-code ~/.claude/projects/PROJECT/SESSION.jsonl";

/// `skillmem observe`.
pub const OBSERVE: &str = "\
Example (the historian's whole output, with its <skill_observations> block):
  skillmem observe summary.txt --session s42";

/// `skillmem mcp`.
pub const MCP: &str = "\
Example (a host's MCP configuration runs it):
  claude mcp add skillmem -- skillmem mcp";

/// `skillmem skills`.
pub const SKILLS: &str = "\
Examples:
  skillmem skills install https://github.com/anthropics/skills --ref main
  skillmem skills list
  skillmem skills resolve --global jq --task release-notes";

/// `skillmem skills install`.
pub const SKILLS_INSTALL: &str = "\
Examples:
  skillmem skills install https://github.com/anthropics/skills --ref main
  skillmem skills install ../my-skills
  skillmem skills install --list https://github.com/wshobson/agents
  skillmem skills install https://github.com/wshobson/agents --path plugins/python-development
  skillmem skills install https://github.com/wshobson/agents --skill async-python-patterns,uv-package-manager
  skillmem skills install URL --skill plugins/a/skills/access --as a-access

Found: the plugins of .claude-plugin/marketplace.json, skills/<name>/SKILL.md, else every
folder holding a SKILL.md at any depth (see docs/skills.md).";

/// `skillmem skills audit`.
pub const SKILLS_AUDIT: &str = "\
Examples:
  skillmem skills audit                      # every installed skill
  skillmem skills audit ./my-skill pdf --json
  skillmem skills audit skills/* --sarif audit.sarif
Accept a finding with a reason in skillmem.toml:
  [skills.audit]
  allow = [{ skill = \"deploy\", rule = \"fetch-pipe-shell\", reason = \"our own installer\" }]";

/// `skillmem seed`.
pub const SEED: &str = "\
Examples:
  skillmem seed --cwd /work/session-42 jq pdf-tools
  skillmem seed --cwd . --target .opencode/skills jq --dry-run";

/// `skillmem model`.
pub const MODEL: &str = "\
Examples (fetch needs a build with --features local-model):
  skillmem model fetch
  skillmem model status";

/// `skillmem sync`.
pub const SYNC: &str = "\
Examples (with a [team] section in skillmem.toml, see docs/team.md):
  skillmem sync
  skillmem sync status --offline";

#[cfg(test)]
mod tests {
    use clap::CommandFactory;

    use crate::cli::Cli;

    /// Every command below `cmd` (itself included), with its path.
    fn walk(cmd: &clap::Command, path: String, all: &mut Vec<(String, clap::Command)>) {
        all.push((path.clone(), cmd.clone()));
        for sub in cmd.get_subcommands() {
            walk(sub, format!("{path} {}", sub.get_name()), all);
        }
    }

    fn every_command() -> Vec<(String, clap::Command)> {
        let mut cmd = Cli::command();
        cmd.build();
        let mut all = vec![];
        walk(&cmd, "skillmem".into(), &mut all);
        all
    }

    #[test]
    fn the_command_tree_is_valid() {
        Cli::command().debug_assert();
    }

    /// The help of every command, argument and option says something.
    #[test]
    fn every_command_and_argument_has_help() {
        let mut missing = vec![];
        for (path, cmd) in every_command() {
            if cmd.get_name() == "help" {
                continue;
            }
            if cmd.get_about().is_none_or(|a| a.to_string().trim().is_empty()) {
                missing.push(format!("{path}: the command has no about line"));
            }
            for arg in cmd.get_arguments() {
                let id = arg.get_id().as_str();
                if id == "help" || id == "version" {
                    continue;
                }
                if arg.get_help().is_none_or(|h| h.to_string().trim().is_empty()) {
                    missing.push(format!("{path}: {id} has no help"));
                }
            }
        }
        assert!(missing.is_empty(), "give these a `///` line:\n{}", missing.join("\n"));
    }

    /// The commands a newcomer uses first show an example under `--help`.
    #[test]
    fn the_main_commands_show_an_example() {
        let all = every_command();
        for path in [
            "skillmem note",
            "skillmem recall",
            "skillmem notes",
            "skillmem review",
            "skillmem pin",
            "skillmem forget",
            "skillmem restore",
            "skillmem purge",
            "skillmem edit",
            "skillmem ui",
            "skillmem demo",
            "skillmem eval recall",
            "skillmem eval merge",
            "skillmem eval historian",
            "skillmem setup",
            "skillmem skills install",
            "skillmem seed",
            "skillmem export",
            "skillmem import",
            "skillmem doctor",
        ] {
            let (_, cmd) = all.iter().find(|(p, _)| p == path).unwrap_or_else(|| panic!("no command {path}"));
            let after = cmd.get_after_help().map(|h| h.to_string()).unwrap_or_default();
            assert!(after.contains("\n  skillmem ") || after.contains("\n  cargo run"), "{path} shows no example");
        }
    }

    /// Enumerations list their values in `--help`.
    #[test]
    fn enumerations_list_their_values() {
        let all = every_command();
        for (path, arg, values) in [
            ("skillmem note", "kind", &["gotcha", "discovery", "fix", "workflow"][..]),
            ("skillmem note", "scope", &["project", "global"]),
            ("skillmem notes", "kind", &["gotcha", "discovery", "fix", "workflow"]),
            ("skillmem notes", "scope", &["project", "global"]),
            ("skillmem notes", "source", &["agent", "historian", "import", "team", "transcript"]),
            ("skillmem notes", "sort", &["recent", "hits", "recalls", "used"]),
            ("skillmem notes", "trust", &["trusted", "unverified"]),
            ("skillmem export", "scope", &["project", "global"]),
            ("skillmem export", "format", &["jsonl", "md"]),
            ("skillmem chunk", "format", &["claude-code", "opencode", "text"]),
        ] {
            let (_, cmd) = all.iter().find(|(p, _)| p == path).unwrap_or_else(|| panic!("no command {path}"));
            let a = cmd.get_arguments().find(|a| a.get_id() == arg).unwrap_or_else(|| panic!("{path}: no {arg}"));
            let listed: Vec<String> = a.get_possible_values().iter().map(|v| v.get_name().to_string()).collect();
            assert_eq!(listed, values, "{path} --{arg}");
        }
    }
}
