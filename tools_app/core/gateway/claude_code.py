"""Claude Code: its tools as agentweb's, and its hook's event and answer shapes.

Claude Code posts every hook event to `/api/hooks/claude-code` and obeys the answer
(`deny`, `allow`). Its event is the one shape the hook endpoint takes: Codex sends it
too (its shell tool as `Bash`), and `agentweb-hook` translates Gemini CLI's events into
it and every answer back (its own `FORMATS`, standard library only). No Django here.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from tools_app.core.gateway.native import (
    Agent,
    Mapped,
    NativeTool,
    edit,
    listing,
    number_of,
    search,
    string_of,
    workspace_path,
    write,
)
from tools_app.core.tools.base import MAX_NAME_CHARS
from tools_app.core.tools.jsonsafe import storable_text
from tools_app.core.tools.shell import MAX_TIMEOUT

__all__ = [
    "AGENT",
    "IGNORED_EVENTS",
    "POST",
    "POST_FAILURE",
    "PRE",
    "BadEvent",
    "allow",
    "check_event",
    "deny",
    "reported_diff",
    "result_text",
    "sandbox_off",
]

# --- its tools -----------------------------------------------------------------------

# Tools that change nothing in the workspace and reach nothing outside the agent:
# allowed and recorded (an explicit rule may still deny them).
_NO_EFFECT_TOOLS = frozenset(
    {"TodoWrite", "ToolSearch", "TaskCreate", "TaskGet", "TaskUpdate", "TaskList"}
    | {"TaskStop", "TaskOutput", "EnterPlanMode", "ExitPlanMode", "AskUserQuestion"}
)

# Its Grep runs ripgrep with `--hidden` (its 2.1 bundle), over every file below its
# path: its `glob` (split on blanks into `--glob` options) is where exclusions go.
_SEARCH_EXCLUSIONS = {"Grep": "glob"}


def _bash(native: Mapping[str, Any], cwd: str) -> Mapped:
    args: dict[str, Any] = {"command": string_of(native, "command")}
    timeout_ms = number_of(native, "timeout")
    if timeout_ms is not None and timeout_ms > 0:
        args["timeout"] = min(timeout_ms / 1000, MAX_TIMEOUT)
    background = native.get("run_in_background") is True
    notes = ("runs in the background on the agent's machine",) if background else ()
    return Mapped("run_command", args, "core", notes=notes, sent=(args["command"], cwd))


def _read(native: Mapping[str, Any], cwd: str) -> Mapped:
    args: dict[str, Any] = {"path": workspace_path(str(string_of(native, "file_path")), cwd)}
    for name in ("offset", "limit"):
        value = native.get(name)
        if value is not None:
            args[name] = value
    return Mapped("read_file", args, "core")


def _glob(native: Mapping[str, Any], cwd: str) -> Mapped:
    where = string_of(native, "path", required=False) or "."
    return listing(workspace_path(where, cwd), string_of(native, "pattern"))


def _grep(native: Mapping[str, Any], cwd: str) -> Mapped:
    where = workspace_path(string_of(native, "path", required=False) or ".", cwd)
    return search(string_of(native, "pattern"), where, string_of(native, "glob", required=False))


def _web_fetch(native: Mapping[str, Any], cwd: str) -> Mapped:
    return Mapped("web_fetch", {"url": string_of(native, "url")}, "core")


def _agent(native: Mapping[str, Any], cwd: str) -> Mapped:
    title = (string_of(native, "description", required=False) or "sub-agent")[:MAX_NAME_CHARS]
    prompt = string_of(native, "prompt")
    return Mapped("spawn_subagent", {"title": title or "sub-agent", "description": prompt}, "core")


_TOOLS = {
    "Bash": NativeTool("run_command", _bash),
    "Write": NativeTool("write_file", write),
    "Edit": NativeTool("edit_file", edit),
    "Read": NativeTool("read_file", _read),
    "Glob": NativeTool("list_files", _glob),
    "Grep": NativeTool("search_codebase", _grep),
    "WebFetch": NativeTool("web_fetch", _web_fetch),
    "Agent": NativeTool("spawn_subagent", _agent),
    "Task": NativeTool("spawn_subagent", _agent),
}
AGENT = Agent("claude-code", _TOOLS, _NO_EFFECT_TOOLS, _SEARCH_EXCLUSIONS)


def sandbox_off(native_input: Mapping[str, Any]) -> str:
    """Why the agent's own sandbox is off for this call, "" when the event says nothing:
    Claude Code's Bash carries `dangerouslyDisableSandbox` when the model asks to run a
    command outside it."""
    if native_input.get("dangerouslyDisableSandbox") is True:
        return "off for this call: the agent asked to run it outside its sandbox"
    return ""


# --- its hook's events and answers ----------------------------------------------------

PRE, POST, POST_FAILURE = "PreToolUse", "PostToolUse", "PostToolUseFailure"
# Events agentweb has no use for: answered with `{}` (no opinion).
IGNORED_EVENTS = frozenset(
    {"SessionStart", "SessionEnd", "UserPromptSubmit", "Stop", "SubagentStart", "SubagentStop"}
    | {"Notification", "PreCompact", "PostCompact", "PermissionRequest", "PermissionDenied"}
    | {"Setup", "TeammateIdle", "TaskCompleted", "TaskCreated", "ConfigChange", "CwdChanged"}
    | {"FileChanged", "WorktreeCreate", "WorktreeRemove", "InstructionsLoaded", "Elicitation"}
    | {"ElicitationResult", "PostToolBatch", "StopFailure", "UserPromptExpansion"}
)
MAX_ID_CHARS = 200
MAX_RESULT_CHARS = 20_000


class BadEvent(ValueError):
    """The event cannot be taken; the message says what is wrong with it."""


def check_event(event: object) -> dict[str, Any]:
    """A hook event read from its JSON, or BadEvent saying what is wrong with it."""
    if not isinstance(event, dict):
        raise BadEvent(f"it must be a JSON object, not {type(event).__name__}")
    name = event.get("hook_event_name")
    if not isinstance(name, str) or not name:
        raise BadEvent("`hook_event_name` is missing or not a string")
    if name not in IGNORED_EVENTS and name not in {PRE, POST, POST_FAILURE}:
        raise BadEvent(f"unknown hook_event_name {name[:100]!r}")
    if name not in IGNORED_EVENTS:
        _check_tool_event(event)
    return event


def _check_tool_event(event: dict[str, Any]) -> None:
    for field in ("session_id", "tool_use_id", "tool_name"):
        _id(event, field)
    cwd = event.get("cwd")
    if not isinstance(cwd, str) or not cwd.startswith("/") or len(cwd) > 4096:
        raise BadEvent("`cwd` must be an absolute path (a string of at most 4096 characters)")
    if not isinstance(event.get("tool_input"), dict):
        raise BadEvent("`tool_input` must be a JSON object")
    if event.get("agent_id") is not None:
        _id(event, "agent_id")


def _id(event: dict[str, Any], field: str) -> str:
    value = event.get(field)
    if not isinstance(value, str) or not value.strip() or len(value) > MAX_ID_CHARS:
        raise BadEvent(f"`{field}` must be a non-empty string of at most {MAX_ID_CHARS} characters")
    return value


def deny(reason: str, event: str = PRE) -> dict[str, Any]:
    """A refusal in the shape Claude Code reads for this event."""
    if event in {POST, POST_FAILURE}:
        return {"decision": "block", "reason": reason}
    return {
        "hookSpecificOutput": {
            "hookEventName": PRE,
            "permissionDecision": "deny",
            "permissionDecisionReason": reason,
        }
    }


def allow(reason: str, updated_input: dict[str, Any]) -> dict[str, Any]:
    return {
        "hookSpecificOutput": {
            "hookEventName": PRE,
            "permissionDecision": "allow",
            "permissionDecisionReason": reason,
            "updatedInput": updated_input,
        }
    }


# --- what its PostToolUse reports ----------------------------------------------------


def result_text(response: Any, succeeded: bool) -> str:
    """A tool's `tool_response` (or a failure's `error`) as the call's result: a command's
    output, the file a write or edit touched, else the JSON; capped."""
    if isinstance(response, str):
        text = response
    elif isinstance(response, dict) and ("stdout" in response or "stderr" in response):
        text = "\n".join(str(response.get(k) or "") for k in ("stdout", "stderr")).strip()
    elif isinstance(response, dict) and "filePath" in response:
        kind = response.get("type") or "edit"
        text = f"{kind}: {response.get('filePath')}"
    else:
        text = json.dumps(response, ensure_ascii=False, default=str)
    if not succeeded and not text:
        text = "the tool failed on the agent's machine"
    if len(text) > MAX_RESULT_CHARS:
        text = text[:MAX_RESULT_CHARS] + f"\n… (truncated at {MAX_RESULT_CHARS} characters)"
    return storable_text(text)


def reported_diff(response: Any, path: str) -> str | None:
    """The change a Write or Edit made, as a unified diff, from its `tool_response`'s
    `structuredPatch`; None when it reports none."""
    hunks = response.get("structuredPatch") if isinstance(response, dict) else None
    if not isinstance(hunks, list):
        return None
    out = [f"--- a/{path}\n", f"+++ b/{path}\n"]
    for hunk in hunks:
        if not isinstance(hunk, dict):
            continue
        head = (
            f"@@ -{hunk.get('oldStart', 0)},{hunk.get('oldLines', 0)} "
            f"+{hunk.get('newStart', 0)},{hunk.get('newLines', 0)} @@\n"
        )
        out.append(head)
        out.extend(f"{line}\n" for line in hunk.get("lines", []) if isinstance(line, str))
    return storable_text("".join(out))
