#!/usr/bin/env python3
"""Writes the scripted sessions of a set (SET.sessions.json) as sessions in the hosts' own formats
(SET/<name>.jsonl) and their labels (SET.labels.jsonl), for `skillmem eval use`.

A session is {"name", "host": "claude-code"|"codex"|"opencode", "base"?: PATH, "notes": [...],
"steps": [...]}.
- "base": a recorded transcript of the host (a path from the repository's root) whose records
  come first, verbatim; the steps are written after them.
- "notes": the notes the session's loads show, each {"id", "skill", "kind", "delta", "used",
  "ignored", "why"}, labelled by hand: "used" when a call after the load applied it, "ignored"
  when an error it names came back before it was applied.
- "steps", each one of:
    ["skill", NAME] or ["skill", NAME, INTENT]   the host's skill load
    ["sh", COMMAND, EXIT_CODE, OUTPUT]            a shell call and what it printed
    ["edit", PATH, OLD, NEW]                      a file edit by the host's edit tool
    ["write", PATH, CONTENT]                      a file written by the host's write tool
    ["read", PATH]                                a file read by the host's read tool
    ["say", TEXT]                                 the model talking

Claude Code's records are those of tests/fixtures/claude-code/recorded-2.1.197/session.jsonl,
Codex's those of tests/fixtures/codex/recorded-0.171.0/rollout-*.jsonl (as bench/mine/gen.py
writes them), OpenCode's the `tool.execute.after` events its plugin receives
(editors/opencode/src/hooks.ts: {"input": {tool, sessionID, callID, args}, "output": {title,
output, metadata}}; bash's metadata carries `exit`).

Run: python3 bench/use/gen.py bench/use/dev.sessions.json
"""
import json
import os
import sys

TS = "2026-12-04T10:00:00.000Z"
ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..")


def claude(steps, sid, first):
    out, n = [], 0
    if not first:
        out.append({"type": "user", "message": {"role": "user", "content": "Help me with this project."}, "sessionId": sid, "timestamp": TS})

    def use(tid, name, inp):
        out.append({"type": "assistant", "message": {"role": "assistant", "content": [{"type": "tool_use", "id": tid, "name": name, "input": inp}]}, "sessionId": sid, "timestamp": TS})

    def result(tid, content, error=False, extra=None):
        res = {"type": "tool_result", "tool_use_id": tid, "content": content}
        if error:
            res["is_error"] = True
        rec = {"type": "user", "message": {"role": "user", "content": [res]}, "sessionId": sid, "timestamp": TS}
        if extra is not None:
            rec["toolUseResult"] = extra
        out.append(rec)

    for st in steps:
        n += 1
        tid = f"toolu_{n:02d}"
        kind = st[0]
        if kind == "say":
            out.append({"type": "assistant", "message": {"role": "assistant", "content": [{"type": "text", "text": st[1]}]}, "sessionId": sid, "timestamp": TS})
        elif kind == "skill":
            inp = {"skill": st[1]}
            if len(st) > 2:
                inp["args"] = st[2]
            use(tid, "Skill", inp)
            result(tid, f"Launching skill: {st[1]}", extra={"success": True, "commandName": st[1]})
            out.append({"type": "user", "message": {"role": "user", "content": [{"type": "text", "text": f"Base directory for this skill: /home/dev/.claude/skills/{st[1]}\n\n# {st[1]}\n"}]}, "isMeta": True, "sourceToolUseID": tid, "sessionId": sid, "timestamp": TS})
        elif kind == "sh":
            _, cmd, code, output = st
            use(tid, "Bash", {"command": cmd, "description": "Run " + cmd.split()[0]})
            content = output if code == 0 else f"Exit code {code}\n{output}"
            result(tid, content, code != 0, {"stdout": output if code == 0 else "", "stderr": output if code else "", "interrupted": False, "isImage": False})
        elif kind == "edit":
            _, path, old, new = st
            use(tid, "Edit", {"file_path": path, "old_string": old, "new_string": new, "replace_all": False})
            result(tid, f"The file {path} has been updated. Here's the result of running `cat -n` on a snippet of the edited file:\n     1\t{new}", extra={"filePath": path, "oldString": old, "newString": new})
        elif kind == "write":
            _, path, content = st
            use(tid, "Write", {"file_path": path, "content": content})
            result(tid, f"File created successfully at: {path}", extra={"type": "create", "filePath": path, "content": content})
        elif kind == "read":
            use(tid, "Read", {"file_path": st[1]})
            result(tid, "     1\t# (file contents)\n", extra={"type": "text", "file": {"filePath": st[1], "content": "# (file contents)\n", "numLines": 1}})
        else:
            raise SystemExit(f"unknown step {st!r}")
    return out


def codex(steps, sid, first):
    out, n = [], 0
    if not first:
        out.append({"timestamp": TS, "type": "session_meta", "payload": {"session_id": sid, "id": sid, "cwd": "/home/dev/ws", "cli_version": "0.171.0"}})
        out.append({"timestamp": TS, "type": "response_item", "payload": {"type": "message", "role": "user", "content": [{"type": "input_text", "text": "Help me with this project."}]}})

    def exec_(cid, cmd, code, output):
        out.append({"timestamp": TS, "type": "response_item", "payload": {"type": "function_call", "name": "exec_command", "arguments": json.dumps({"cmd": cmd}), "call_id": cid}})
        out.append({"timestamp": TS, "type": "event_msg", "payload": {"type": "item_completed", "item": {"type": "CommandExecution", "id": cid, "command": ["/bin/bash", "-lc", cmd], "status": "completed" if code == 0 else "failed", "aggregated_output": output, "exit_code": code}}})
        out.append({"timestamp": TS, "type": "response_item", "payload": {"type": "function_call_output", "call_id": cid, "output": f"Chunk ID: {n:06x}\nWall time: 0.4000 seconds\nProcess exited with code {code}\nOriginal token count: 40\nOutput:\n{output}"}})

    def patch(cid, body, path):
        out.append({"timestamp": TS, "type": "response_item", "payload": {"type": "custom_tool_call", "status": "completed", "call_id": cid, "name": "apply_patch", "input": body}})
        out.append({"timestamp": TS, "type": "response_item", "payload": {"type": "custom_tool_call_output", "call_id": cid, "output": json.dumps({"output": f"Success. Updated the following files:\nM {path}\n", "metadata": {"exit_code": 0}})}})

    for st in steps:
        n += 1
        cid = f"call_{n}"
        kind = st[0]
        if kind == "say":
            out.append({"timestamp": TS, "type": "response_item", "payload": {"type": "message", "role": "assistant", "content": [{"type": "output_text", "text": st[1]}]}})
        elif kind == "skill":
            exec_(cid, f"cat .agents/skills/{st[1]}/SKILL.md", 0, f"---\nname: {st[1]}\n---\n# {st[1]}\n")
        elif kind == "sh":
            exec_(cid, st[1], st[2], st[3])
        elif kind == "read":
            exec_(cid, f"sed -n '1,200p' {st[1]}", 0, "# (file contents)\n")
        elif kind == "edit":
            _, path, old, new = st
            minus = "\n".join("-" + l for l in old.split("\n"))
            plus = "\n".join("+" + l for l in new.split("\n"))
            patch(cid, f"*** Begin Patch\n*** Update File: {path}\n@@\n{minus}\n{plus}\n*** End Patch", path)
        elif kind == "write":
            _, path, content = st
            plus = "\n".join("+" + l for l in content.rstrip("\n").split("\n"))
            patch(cid, f"*** Begin Patch\n*** Add File: {path}\n{plus}\n*** End Patch", path)
        else:
            raise SystemExit(f"unknown step {st!r}")
    return out


def opencode(steps, sid, first):
    out, n = [], 0

    def event(tool, args, title, output, metadata):
        out.append({"input": {"tool": tool, "sessionID": sid, "callID": f"call_{n}", "args": args}, "output": {"title": title, "output": output, "metadata": metadata}})

    for st in steps:
        n += 1
        kind = st[0]
        if kind == "say":
            continue
        if kind == "skill":
            args = {"name": st[1]}
            if len(st) > 2:
                args["intent"] = st[2]
            d = f"/home/dev/.config/opencode/skill/{st[1]}"
            event("skill", args, f"Loaded skill: {st[1]}", f"## Skill: {st[1]}\n\n**Base directory**: {d}\n\n# {st[1]}\n", {"name": st[1], "dir": d})
        elif kind == "sh":
            _, cmd, code, output = st
            event("bash", {"command": cmd, "description": "Run " + cmd.split()[0]}, cmd, output, {"output": output, "exit": code, "description": "Run " + cmd.split()[0]})
        elif kind == "edit":
            _, path, old, new = st
            event("edit", {"filePath": path, "oldString": old, "newString": new}, os.path.basename(path), "Edit applied successfully.", {"diagnostics": {}, "diff": f"-{old}\n+{new}\n"})
        elif kind == "write":
            _, path, content = st
            event("write", {"filePath": path, "content": content}, os.path.basename(path), "Wrote file successfully.", {"diagnostics": {}, "filepath": path, "exists": False})
        elif kind == "read":
            event("read", {"filePath": st[1]}, os.path.basename(st[1]), "<file>\n00001| # (file contents)\n</file>", {"preview": "# (file contents)"})
        else:
            raise SystemExit(f"unknown step {st!r}")
    return out


WRITERS = {"claude-code": claude, "codex": codex, "opencode": opencode}


def main():
    spec = sys.argv[1]
    folder = spec[: -len(".sessions.json")]
    name = os.path.basename(folder)
    os.makedirs(folder, exist_ok=True)
    sessions = json.load(open(spec))
    labels = []
    for i, s in enumerate(sessions):
        sid = f"00000000-0000-4000-8000-{i:012d}"
        base = []
        if s.get("base"):
            base = [json.loads(l) for l in open(os.path.join(ROOT, s["base"])) if l.strip()]
        records = base + WRITERS[s["host"]](s["steps"], sid, bool(base))
        with open(os.path.join(folder, s["name"] + ".jsonl"), "w") as f:
            for r in records:
                f.write(json.dumps(r, ensure_ascii=False) + "\n")
        labels.append({"transcript": f"{name}/{s['name']}.jsonl", "host": s["host"], "notes": s["notes"]})
    with open(folder + ".labels.jsonl", "w") as f:
        f.write(f"// Written by bench/use/gen.py from {name}.sessions.json, whose labels are by hand: per session, its host and the notes its loads show, each used or not and ignored or not.\n")
        for l in labels:
            f.write(json.dumps(l, ensure_ascii=False) + "\n")
    print(f"{len(sessions)} sessions written to {folder}/ and {folder}.labels.jsonl")


if __name__ == "__main__":
    main()
