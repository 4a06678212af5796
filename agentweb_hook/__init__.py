"""`agentweb-hook claude-code|codex|gemini`: an agent's command hook, forwarded to agentweb.

Reads one hook event on stdin, POSTs it to `$AGENTWEB_URL/api/hooks/claude-code` with
`Authorization: Bearer $AGENTWEB_TOKEN`, prints the answer in the agent's own format and
exits 0 (a deny is an answer too); on any failure (no URL or token, agentweb
unreachable, a malformed answer) it says why on stderr and exits 2, which every one of
these agents takes as "blocked". Standard library only: it runs wherever the agent runs.

The formats were read in the agents' own packages: Claude Code's `permissionDecision`
with `updatedInput`; Codex takes the same PreToolUse shape but refuses `allow` and
`updatedInput` (so an allowed call gets no output, and an edited approval is a deny
that shows the edited input); Gemini CLI reads `{"decision", "reason"}` and a changed
`hookSpecificOutput.tool_input` from BeforeTool.
"""

from __future__ import annotations

import json
import os
import sys
import urllib.error
import urllib.request
from collections.abc import Callable
from typing import Any

__all__ = ["main"]

HOOK_PATH = "/api/hooks/claude-code"
MAX_EVENT_BYTES = 64 * 1024 * 1024
BLOCK = 2
# Gemini CLI's event and tool names as Claude Code spells them (agentweb speaks one).
GEMINI_EVENTS = {"BeforeTool": "PreToolUse", "AfterTool": "PostToolUse"}
GEMINI_TOOLS = {
    "run_shell_command": "Bash",
    "write_file": "Write",
    "replace": "Edit",
    "read_file": "Read",
    "glob": "Glob",
    "search_file_content": "Grep",
    "web_fetch": "WebFetch",
}


class HookFailure(Exception):
    """Anything that keeps the hook from a clear answer: the tool must not run."""


def main(argv: list[str] | None = None) -> int:
    args = sys.argv[1:] if argv is None else argv
    if len(args) != 1 or args[0] not in FORMATS:
        sys.stderr.write("usage: agentweb-hook claude-code|codex|gemini (event on stdin)\n")
        return BLOCK
    try:
        event = _read_event()
        to_agentweb, from_agentweb = FORMATS[args[0]]
        answer = _post(to_agentweb(event))
        text, code = from_agentweb(answer, event)
    except HookFailure as exc:
        sys.stderr.write(f"agentweb-hook: blocked: {exc}\n")
        return BLOCK
    if text:
        sys.stdout.write(text + "\n")
    return code


def _read_event() -> dict[str, Any]:
    raw = sys.stdin.buffer.read(MAX_EVENT_BYTES + 1)
    if len(raw) > MAX_EVENT_BYTES:
        raise HookFailure(f"the event is larger than {MAX_EVENT_BYTES} bytes")
    try:
        event = json.loads(raw)
    except ValueError as exc:
        raise HookFailure(f"the event on stdin is not JSON ({exc})") from None
    if not isinstance(event, dict):
        raise HookFailure("the event on stdin is not a JSON object")
    return event


def _post(event: dict[str, Any]) -> dict[str, Any]:
    base, token = os.environ.get("AGENTWEB_URL", ""), os.environ.get("AGENTWEB_TOKEN", "")
    if not base.startswith(("http://", "https://")):
        raise HookFailure("AGENTWEB_URL is not set to agentweb's http(s) base URL")
    if not token:
        raise HookFailure("AGENTWEB_TOKEN is not set (an agent token of agentweb)")
    request = urllib.request.Request(  # noqa: S310 - the scheme is checked above
        base.rstrip("/") + HOOK_PATH,
        data=json.dumps(event).encode(),
        headers={"Authorization": f"Bearer {token}", "Content-Type": "application/json"},
        method="POST",
    )
    timeout = float(os.environ.get("AGENTWEB_HOOK_TIMEOUT", "3600"))
    try:
        with urllib.request.urlopen(request, timeout=timeout) as response:  # noqa: S310
            body = response.read()
    except (urllib.error.URLError, OSError, ValueError) as exc:
        raise HookFailure(f"agentweb did not answer at {base} ({exc})") from None
    try:
        answer = json.loads(body)
    except ValueError:
        raise HookFailure("agentweb's answer is not JSON") from None
    if not isinstance(answer, dict):
        raise HookFailure("agentweb's answer is not a JSON object")
    return answer


def _decision(answer: dict[str, Any]) -> tuple[str, str, dict[str, Any] | None]:
    """(allow|deny|none, reason, updated input) of agentweb's answer."""
    if "decision" in answer:  # a PostToolUse refusal
        return "deny", str(answer.get("reason", "")), None
    output = answer.get("hookSpecificOutput")
    if not isinstance(output, dict):
        return "none", "", None
    verdict = output.get("permissionDecision")
    if verdict not in {"allow", "deny"}:
        raise HookFailure(f"agentweb answered an unknown decision {verdict!r}")
    updated = output.get("updatedInput")
    return verdict, str(output.get("permissionDecisionReason", "")), updated


# --- Claude Code and Codex: the same event shape ---------------------------------------


def _same(event: dict[str, Any]) -> dict[str, Any]:
    return event


def _claude_answer(answer: dict[str, Any], event: dict[str, Any]) -> tuple[str, int]:
    _decision(answer)  # refuses an answer it cannot read
    return json.dumps(answer), 0


CODEX_TOOLS = {"shell": "Bash", "exec_command": "Bash", "local_shell": "Bash"}


def _codex_event(event: dict[str, Any]) -> dict[str, Any]:
    tool = str(event.get("tool_name", ""))
    return {**event, "tool_name": CODEX_TOOLS.get(tool, tool)}


def _codex_answer(answer: dict[str, Any], event: dict[str, Any]) -> tuple[str, int]:
    verdict, reason, updated = _decision(answer)
    if verdict == "allow" and updated is not None and updated != event.get("tool_input"):
        verdict = "deny"
        reason = (
            "a reviewer approved an edited version of this call, which Codex cannot run "
            f"in its place; send this input instead: {json.dumps(updated)}"
        )
    if verdict != "deny" or event.get("hook_event_name") != "PreToolUse":
        return "", 0
    output = {"hookEventName": "PreToolUse", "permissionDecision": "deny"}
    output["permissionDecisionReason"] = reason or "denied by agentweb"
    return json.dumps({"hookSpecificOutput": output}), 0


# --- Gemini CLI ------------------------------------------------------------------------


def _gemini_event(event: dict[str, Any]) -> dict[str, Any]:
    name = GEMINI_EVENTS.get(str(event.get("hook_event_name", "")))
    if name is None:
        return {**event}  # agentweb answers `{}` or names what it does not know
    tool = str(event.get("tool_name", ""))
    return {
        **event,
        "hook_event_name": name,
        "tool_name": GEMINI_TOOLS.get(tool, tool),
        "tool_use_id": str(event.get("tool_use_id") or _gemini_use_id(event)),
    }


def _gemini_use_id(event: dict[str, Any]) -> str:
    """Gemini gives no tool-use id: its session, the event's timestamp and the input
    identify the use."""
    import hashlib

    seed = json.dumps(
        [event.get(k) for k in ("session_id", "timestamp", "tool_name", "tool_input")],
        sort_keys=True,
    )
    return "gemini-" + hashlib.sha256(seed.encode()).hexdigest()[:32]


def _gemini_answer(answer: dict[str, Any], event: dict[str, Any]) -> tuple[str, int]:
    verdict, reason, updated = _decision(answer)
    if verdict == "deny":
        return json.dumps({"decision": "deny", "reason": reason or "denied by agentweb"}), 0
    out: dict[str, Any] = {"decision": "allow"} if verdict == "allow" else {}
    if reason:
        out["reason"] = reason
    if updated is not None and updated != event.get("tool_input"):
        out["hookSpecificOutput"] = {"hookEventName": "BeforeTool", "tool_input": updated}
    return json.dumps(out), 0


Formats = dict[
    str,
    tuple[
        Callable[[dict[str, Any]], dict[str, Any]],
        Callable[[dict[str, Any], dict[str, Any]], tuple[str, int]],
    ],
]
FORMATS: Formats = {
    "claude-code": (_same, _claude_answer),
    "codex": (_codex_event, _codex_answer),
    "gemini": (_gemini_event, _gemini_answer),
}


if __name__ == "__main__":
    sys.exit(main())
