//! Gemini CLI's dialect: `AfterTool` of `activate_skill` (`tool_input.name`) is a skill load,
//! answered with `hookSpecificOutput.additionalContext`; `SessionEnd` (the complete
//! transcript, awaited in headless mode) ends the session. Gemini escapes `<` and `>` of hook
//! context, so the block is given as plain lines ([`plain_block`]). The flow is
//! [`super::agents`]'; the transcript's reader, [`super::transcripts`].

use serde_json::Value;

use super::{name_ok, str_field, Loaded};

/// The skill an `AfterTool` event of `activate_skill` loads (`tool_input.name`).
pub fn skill_load(event: &Value) -> Option<Loaded> {
    if str_field(event, "hook_event_name")? != "AfterTool" || str_field(event, "tool_name")? != "activate_skill" {
        return None;
    }
    let skill = str_field(event.get("tool_input")?, "name")?;
    name_ok(skill).then(|| Loaded { skill: skill.to_string(), dir: None })
}

/// The block as Gemini CLI's model reads it: Gemini escapes `<` and `>` of hook context
/// (`&lt;note ...&gt;`), which buries the lessons in entities. The same notes, the same order,
/// as plain lines: a header, one line a note (`#id kind, intent: …`) with its lesson below,
/// then the guidance line (its `<`/`>` as `‹`/`›`). XML entities of the block are decoded; a
/// lesson's own text (code, often) is kept as it is.
pub fn plain_block(block: &str) -> String {
    let mut out = vec![];
    for line in block.lines() {
        let t = line.trim();
        if let Some(rest) = t.strip_prefix("<skill-memory") {
            let a = attrs(rest.trim_end_matches('>'));
            let get = |k: &str| a.iter().find(|(n, _)| n == k).map(|(_, v)| v.as_str()).unwrap_or("");
            let n = get("count");
            let notes = if n == "1" { "note" } else { "notes" };
            out.push(format!("skill-memory for {} ({n} {notes}, ranked by {}):", get("skill"), get("mode")));
        } else if t == "</skill-memory>" || t == "</note>" {
        } else if let Some(rest) = t.strip_prefix("<note") {
            let a = attrs(rest.trim_end_matches('>'));
            let mut bits = vec![];
            let mut head = String::from("-");
            for (k, v) in &a {
                match k.as_str() {
                    "id" => head = format!("- note #{v}"),
                    "pinned" if v == "true" => bits.push("pinned".to_string()),
                    "pinned" => {}
                    "kind" => bits.insert(0, v.clone()),
                    "intent" if v.is_empty() => {}
                    k => bits.push(format!("{k}: {v}")),
                }
            }
            out.push(format!("{head} ({})", bits.join(", ")));
        } else if let Some(rest) = t.strip_prefix("<delta>") {
            out.push(format!("  {}", unescape(rest.trim_end_matches("</delta>"))));
        } else if !t.is_empty() {
            // The guidance line: its placeholders (`replaces=<its id>`) would reach the model
            // as `&lt;its id&gt;`; angle quotes read the same and pass untouched.
            out.push(unescape(t).replace('<', "‹").replace('>', "›"));
        }
    }
    out.join("\n")
}

fn attrs(s: &str) -> Vec<(String, String)> {
    let mut out = vec![];
    let mut rest = s.trim();
    while let Some(eq) = rest.find("=\"") {
        let name = rest[..eq].trim().to_string();
        let after = &rest[eq + 2..];
        let Some(end) = after.find('"') else { break };
        out.push((name, unescape(&after[..end])));
        rest = after[end + 1..].trim_start();
    }
    out
}

fn unescape(s: &str) -> String {
    s.replace("&lt;", "<").replace("&gt;", ">").replace("&quot;", "\"").replace("&apos;", "'").replace("&amp;", "&")
}

#[cfg(test)]
mod tests {
    use super::*;
    #[test]
    fn gemini_reads_the_block_without_angle_brackets() {
        let block = "<skill-memory skill=\"jq\" mode=\"vector\" count=\"1\" pinned=\"0\">\n<note id=\"7\" kind=\"gotcha\" intent=\"raw &amp; quiet\" hits=\"2\" pinned=\"false\">\n<delta>use -r &lt;not&gt; quotes</delta>\n</note>\n</skill-memory>\nIf you hit a gotcha, call mcp_skillmem_skill_note (replaces=<its id>).";
        let got = plain_block(block);
        assert_eq!(
            got,
            "skill-memory for jq (1 note, ranked by vector):\n- note #7 (gotcha, intent: raw & quiet, hits: 2)\n  use -r <not> quotes\nIf you hit a gotcha, call mcp_skillmem_skill_note (replaces=‹its id›)."
        );
        assert!(!got.contains("&lt;") && !got.contains("&amp;"));
    }
}
