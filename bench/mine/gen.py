#!/usr/bin/env python3
"""Writes the scripted sessions of a set (SET.sessions.json) as transcripts in the four hosts'
formats (SET/<name>.jsonl), shaped after the recordings in tests/fixtures/*/recorded-*.

A session is {"name", "host": "claude-code"|"codex"|"gemini-cli"|"copilot", "steps": [...]},
each step one of:
  ["skill", NAME]                       the host's skill load
  ["sh", COMMAND, EXIT_CODE, OUTPUT]    a shell call and what it printed
  ["edit", PATH]                        a file edit by the host's edit tool
  ["say", TEXT]                         the model talking
Run: python3 bench/mine/gen.py bench/mine/dev.sessions.json
"""
import json
import os
import sys

TS = "2026-12-04T10:00:00.000Z"


def claude(steps, sid):
    out, n = [], 0
    out.append({"type": "user", "message": {"role": "user", "content": "Help me with this project."}, "sessionId": sid, "timestamp": TS})
    for st in steps:
        n += 1
        tid = f"toolu_{n:02d}"
        if st[0] == "say":
            out.append({"type": "assistant", "message": {"role": "assistant", "content": [{"type": "text", "text": st[1]}]}, "sessionId": sid})
        elif st[0] == "skill":
            out.append({"type": "assistant", "message": {"role": "assistant", "content": [{"type": "tool_use", "id": tid, "name": "Skill", "input": {"skill": st[1]}}]}, "sessionId": sid})
            out.append({"type": "user", "message": {"role": "user", "content": [{"type": "tool_result", "tool_use_id": tid, "content": f"Launching skill: {st[1]}"}]}, "toolUseResult": {"success": True, "commandName": st[1]}, "sessionId": sid})
            out.append({"type": "user", "message": {"role": "user", "content": [{"type": "text", "text": f"Base directory for this skill: /home/dev/.claude/skills/{st[1]}\n\n# {st[1]}\n"}]}, "isMeta": True, "sourceToolUseID": tid, "sessionId": sid})
        elif st[0] == "sh":
            _, cmd, code, output = st
            out.append({"type": "assistant", "message": {"role": "assistant", "content": [{"type": "tool_use", "id": tid, "name": "Bash", "input": {"command": cmd, "description": "Run " + cmd.split()[0]}}]}, "sessionId": sid})
            content = output if code == 0 else f"Exit code {code}\n{output}"
            res = {"type": "tool_result", "tool_use_id": tid, "content": content}
            if code != 0:
                res["is_error"] = True
            out.append({"type": "user", "message": {"role": "user", "content": [res]}, "toolUseResult": {"stdout": output if code == 0 else "", "stderr": output if code else "", "interrupted": False}, "sessionId": sid})
        elif st[0] == "edit":
            out.append({"type": "assistant", "message": {"role": "assistant", "content": [{"type": "tool_use", "id": tid, "name": "Edit", "input": {"file_path": st[1], "old_string": "a", "new_string": "b"}}]}, "sessionId": sid})
            out.append({"type": "user", "message": {"role": "user", "content": [{"type": "tool_result", "tool_use_id": tid, "content": f"The file {st[1]} has been updated."}]}, "sessionId": sid})
    return out


def codex(steps, sid):
    out, n = [], 0
    out.append({"timestamp": TS, "type": "session_meta", "payload": {"session_id": sid, "id": sid, "cwd": "/home/dev/ws", "cli_version": "0.171.0"}})
    out.append({"timestamp": TS, "type": "response_item", "payload": {"type": "message", "role": "user", "content": [{"type": "input_text", "text": "Help me with this project."}]}})
    for st in steps:
        n += 1
        cid = f"call_{n}"
        if st[0] == "say":
            out.append({"timestamp": TS, "type": "response_item", "payload": {"type": "message", "role": "assistant", "content": [{"type": "output_text", "text": st[1]}]}})
        elif st[0] in ("skill", "sh"):
            if st[0] == "skill":
                cmd, code, output = f"cat .agents/skills/{st[1]}/SKILL.md", 0, f"---\nname: {st[1]}\n---\n# {st[1]}\n"
            else:
                _, cmd, code, output = st
            out.append({"timestamp": TS, "type": "response_item", "payload": {"type": "function_call", "name": "exec_command", "arguments": json.dumps({"cmd": cmd}), "call_id": cid}})
            out.append({"timestamp": TS, "type": "event_msg", "payload": {"type": "item_completed", "item": {"type": "CommandExecution", "id": cid, "command": ["/bin/bash", "-lc", cmd], "status": "completed" if code == 0 else "failed", "aggregated_output": output, "exit_code": code}}})
            out.append({"timestamp": TS, "type": "response_item", "payload": {"type": "function_call_output", "call_id": cid, "output": f"Chunk ID: {n:06x}\nWall time: 0.4000 seconds\nProcess exited with code {code}\nOriginal token count: 40\nOutput:\n{output}"}})
        elif st[0] == "edit":
            patch = f"*** Begin Patch\n*** Update File: {st[1]}\n@@\n-a\n+b\n*** End Patch"
            out.append({"timestamp": TS, "type": "response_item", "payload": {"type": "custom_tool_call", "status": "completed", "call_id": cid, "name": "apply_patch", "input": patch}})
            out.append({"timestamp": TS, "type": "response_item", "payload": {"type": "custom_tool_call_output", "call_id": cid, "output": json.dumps({"output": f"Success. Updated the following files:\nM {st[1]}\n", "metadata": {"exit_code": 0}})}})
    return out


def gemini(steps, sid):
    # Gemini CLI 0.61 (tests/fixtures/gemini-cli/recorded-0.61.0/session-fix.jsonl): a shell
    # call's output in an <untrusted_context> wrapper, its exit code only when it is not 0,
    # the raw output as resultDisplay; the message with its finished call, then a user record
    # carrying the function response.
    out, n = [], 0
    out.append({"sessionId": sid, "projectHash": "0" * 64, "startTime": TS, "lastUpdated": TS, "kind": "main"})
    out.append({"id": "u0", "timestamp": TS, "type": "user", "content": [{"text": "Help me with this project."}]})
    for st in steps:
        n += 1
        mid, cid = f"m{n}", f"c{n}"
        if st[0] == "say":
            out.append({"id": mid, "timestamp": TS, "type": "gemini", "content": st[1], "model": "gemini-2.5-flash"})
            continue
        if st[0] == "skill":
            call = {"id": cid, "name": "activate_skill", "args": {"name": st[1]}}
            result = f"<activated_skill name=\"{st[1]}\">\n  <instructions>\n    # {st[1]}\n  </instructions>\n</activated_skill>"
            display = result
        elif st[0] == "sh":
            _, cmd, code, output = st
            call = {"id": cid, "name": "run_shell_command", "args": {"command": cmd, "description": "Run " + cmd.split()[0]}}
            exit_line = f"Exit Code: {code}\n" if code else ""
            result = f"<untrusted_context>\nOutput: {output}\n{exit_line}Process Group PGID: 4242\n</untrusted_context>"
            display = output
        else:
            call = {"id": cid, "name": "replace", "args": {"file_path": st[1], "old_string": "a", "new_string": "b"}}
            result = f"Successfully modified file: {st[1]} (1 replacements)."
            display = result
        response = {"functionResponse": {"id": cid, "name": call["name"], "response": {"output": result}}}
        done = dict(call, result=[response], status="success", timestamp=TS, resultDisplay=display)
        out.append({"id": mid, "timestamp": TS, "type": "gemini", "content": "", "model": "gemini-2.5-flash", "toolCalls": [done]})
        out.append({"id": f"u{n}", "timestamp": TS, "type": "user", "content": [response]})
        out.append({"$set": {"lastUpdated": TS}})
    return out


def copilot(steps, sid):
    out, n = [], 0
    out.append({"type": "session.start", "data": {"sessionId": sid, "copilotVersion": "1.0.102", "context": {"cwd": "/home/dev/ws"}}, "timestamp": TS})
    out.append({"type": "user.message", "data": {"content": "Help me with this project."}, "timestamp": TS})
    for st in steps:
        n += 1
        cid = f"call_{n}"
        if st[0] == "say":
            out.append({"type": "assistant.message", "data": {"content": st[1], "toolRequests": []}, "timestamp": TS})
            continue
        if st[0] == "skill":
            tool, args, content, ok = "skill", {"skill": st[1]}, f"Skill \"{st[1]}\" loaded successfully. Follow the instructions in the skill context.", True
        elif st[0] == "sh":
            _, cmd, code, output = st
            tool, args = "bash", {"command": cmd, "description": "Run " + cmd.split()[0]}
            # Copilot CLI 1.0.102 (recorded-1.0.102/events-fix.jsonl): the exit code after the
            # output, and in shellExecution; success is the tool's, true for a failed command.
            content = f"{output}\n<shellId: 0 completed with exit code {code}>"
            ok = True
        else:
            tool, args, content, ok = "edit", {"path": st[1], "old_str": "a", "new_str": "b"}, f"File {st[1]} updated with changes.", True
        out.append({"type": "assistant.message", "data": {"content": "", "toolRequests": [{"toolCallId": cid, "name": tool, "arguments": args, "type": "function"}]}, "timestamp": TS})
        out.append({"type": "tool.execution_start", "data": {"toolCallId": cid, "toolName": tool, "arguments": args}, "timestamp": TS})
        done = {"toolCallId": cid, "success": ok, "result": {"content": content}}
        if st[0] == "sh":
            done["shellExecution"] = {"exitCode": st[2]}
        out.append({"type": "tool.execution_complete", "data": done, "timestamp": TS})
    return out


WRITERS = {"claude-code": claude, "codex": codex, "gemini-cli": gemini, "copilot": copilot}


def main():
    spec = sys.argv[1]
    folder = spec[: -len(".sessions.json")]
    os.makedirs(folder, exist_ok=True)
    sessions = json.load(open(spec))
    for i, s in enumerate(sessions):
        records = WRITERS[s["host"]](s["steps"], f"00000000-0000-4000-8000-{i:012d}")
        with open(os.path.join(folder, s["name"] + ".jsonl"), "w") as f:
            for r in records:
                f.write(json.dumps(r, ensure_ascii=False) + "\n")
    print(f"{len(sessions)} sessions written to {folder}/")


if __name__ == "__main__":
    main()
