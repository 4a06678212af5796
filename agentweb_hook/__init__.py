#!/usr/bin/env python3
"""`agentweb-hook claude-code|codex|gemini`: an agent's command hook, forwarded to agentweb.

Reads one hook event on stdin, POSTs it to `$AGENTWEB_URL/api/hooks/claude-code` with
`Authorization: Bearer $AGENTWEB_TOKEN` (and `?policy=$AGENTWEB_POLICY` when set: the
policy of the sessions it starts), prints the answer in the agent's own format and
exits 0 (a deny is an answer too); on any failure (no URL or token, agentweb
unreachable, a malformed answer) it says why on stderr and exits 2, which every one of
these agents takes as "blocked". Standard library only: it runs wherever the agent runs,
and every agentweb serves this one file at /api/hooks/agentweb-hook.py (saved as
`agentweb-hook` and made executable, it is the command).

It sends its version (`User-Agent: agentweb-hook/X.Y`); the server states the version it
serves and the oldest it takes (`X-Agentweb-Hook-Version`, `-Minimum`). An older hook
than the served one says so on stderr and goes on; one below the minimum is refused by
the server and blocks, since the server's answers may no longer mean what it reads.

`agentweb-hook check [--policy NAME] [AGENT]` asks the server whether this wiring works
(the token, the policy, an `ls` allowed and a write of .env held: a dry run that stores
nothing) and exits 1 with one line saying what to fix when it does not.

The formats were read in the agents' own packages and checked by driving them
(tests/agents): Claude Code's `permissionDecision` with `updatedInput`. Codex CLI 0.171
sends the same PreToolUse shape (its shell tool as `Bash` with `{"command"}`), runs a
call on an empty answer, takes `deny` with a reason, and `allow` only with an
`updatedInput` (a bare `allow` is an invalid answer it ignores). Gemini CLI 0.61 sends
BeforeTool/AfterTool with its own tool names and no tool-use id, and reads
`{"decision", "reason"}` and a changed `hookSpecificOutput.tool_input`.
"""

from __future__ import annotations

import json
import os
import sys
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Callable
from typing import Any

__all__ = ["__version__", "main", "older"]
__version__ = "1.0"

HOOK_PATH = "/api/hooks/claude-code"
CHECK_PATH = "/api/hooks/check"
DOWNLOAD_PATH = "/api/hooks/agentweb-hook.py"
MAX_EVENT_BYTES = 64 * 1024 * 1024
BLOCK = 2
FAILED = 1  # `check`: something to fix
CHECK_TIMEOUT = 30.0
AGENTS = "claude-code|codex|gemini"
# Gemini CLI's events as Claude Code names them (agentweb speaks one); its tool names stay
# as they are, agentweb maps them (tools_app/core/gateway/).
GEMINI_EVENTS = {"BeforeTool": "PreToolUse", "AfterTool": "PostToolUse"}


def older(version: str, than: str) -> bool:
    """Whether dotted `version` comes before `than` (numbers compared as numbers; a part
    that is not a number counts as 0)."""

    def parts(text: str) -> tuple[int, ...]:
        return tuple(int(p) if p.isdigit() else 0 for p in text.split("."))

    return parts(version) < parts(than)


class HookFailure(Exception):
    """Anything that keeps the hook from a clear answer: the tool must not run."""


class Unreachable(HookFailure):
    """No answer from agentweb at all."""


def main(argv: list[str] | None = None) -> int:
    args = sys.argv[1:] if argv is None else argv
    if args[:1] == ["check"]:
        return check_main(args[1:])
    if len(args) != 1 or args[0] not in FORMATS:
        sys.stderr.write(
            "usage: agentweb-hook claude-code|codex|gemini (event on stdin)\n"
            "       agentweb-hook check [--policy NAME] [claude-code|codex|gemini]\n"
        )
        return BLOCK
    try:
        event = _read_event()
        to_agentweb, from_agentweb = FORMATS[args[0]]
        answer = _post(to_agentweb(event))
        text, code = from_agentweb(answer, event)
    except HookFailure as exc:
        sys.stderr.write(f"agentweb-hook: blocked: {exc}\n")
        return BLOCK
    except Exception as exc:  # any surprise blocks: it never lets a tool run
        sys.stderr.write(f"agentweb-hook: blocked: an unexpected error ({exc!r})\n")
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
    policy = os.environ.get("AGENTWEB_POLICY", "")
    query = {"policy": policy} if policy else {}
    timeout = float(os.environ.get("AGENTWEB_HOOK_TIMEOUT", "3450"))
    status, headers, body = _request(HOOK_PATH, query, timeout, json.dumps(event).encode())
    _versions(headers)
    if status != 200:
        raise HookFailure(f"agentweb answered HTTP {status} at {_base()}{HOOK_PATH}")
    return _json_object(body)


def _base() -> str:
    base = os.environ.get("AGENTWEB_URL", "")
    if not base.startswith(("http://", "https://")):
        raise HookFailure("AGENTWEB_URL is not set to agentweb's http(s) base URL")
    return base.rstrip("/")


def _request(
    path: str, query: dict[str, str], timeout: float, data: bytes | None = None
) -> tuple[int, Any, bytes]:
    """(status, headers, body) of one request to agentweb with the token; an HTTP error
    status is an answer too, no answer at all a HookFailure."""
    base, token = _base(), os.environ.get("AGENTWEB_TOKEN", "")
    if not token:
        raise HookFailure("AGENTWEB_TOKEN is not set (an agent token of agentweb)")
    request = urllib.request.Request(  # noqa: S310 - the scheme is checked in _base
        base + path + ("?" + urllib.parse.urlencode(query) if query else ""),
        data=data,
        headers={
            "Authorization": f"Bearer {token}",
            "Content-Type": "application/json",
            "User-Agent": f"agentweb-hook/{__version__}",  # the server refuses one too old
        },
        method="POST" if data is not None else "GET",
    )
    try:
        with urllib.request.urlopen(request, timeout=timeout) as response:  # noqa: S310
            return response.status, response.headers, response.read()
    except urllib.error.HTTPError as exc:
        return exc.code, exc.headers, exc.read()
    except (urllib.error.URLError, OSError, ValueError) as exc:
        raise Unreachable(f"agentweb did not answer at {base} ({exc})") from None


def _json_object(body: bytes) -> dict[str, Any]:
    try:
        answer = json.loads(body)
    except ValueError:
        raise HookFailure("agentweb's answer is not JSON") from None
    if not isinstance(answer, dict):
        raise HookFailure("agentweb's answer is not a JSON object")
    return answer


def _versions(headers: Any, mine: str = __version__) -> str:
    """What this hook's version is to the server that answered (its `X-Agentweb-Hook-*`
    headers), said on stderr: older than the minimum it takes blocks (the server's answers
    may no longer mean what this hook reads them as); older than the one it serves is a
    note, returned. "" when current, or the server says nothing (one from before versions)."""
    served = headers.get("X-Agentweb-Hook-Version") or ""
    minimum = headers.get("X-Agentweb-Hook-Minimum") or ""
    where = f"{_base()}{DOWNLOAD_PATH}"
    if minimum and older(mine, minimum):
        raise HookFailure(
            f"agentweb-hook {mine} is older than {minimum}, the oldest this server "
            f"accepts: download the current one from {where}"
        )
    if served and older(mine, served):
        note = f"agentweb-hook {mine} is outdated: {served} is at {where}"
        sys.stderr.write(f"agentweb-hook: {note}\n")
        return note
    return ""


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


def _codex_answer(answer: dict[str, Any], event: dict[str, Any]) -> tuple[str, int]:
    """Codex runs the call on an empty answer; `allow` it takes only with a new input."""
    verdict, reason, updated = _decision(answer)
    if event.get("hook_event_name") != "PreToolUse":
        return "", 0
    output: dict[str, Any] = {"hookEventName": "PreToolUse"}
    if verdict == "deny":
        output["permissionDecision"] = "deny"
        output["permissionDecisionReason"] = reason or "denied by agentweb"
    elif verdict == "allow" and updated is not None and updated != event.get("tool_input"):
        output |= {"permissionDecision": "allow", "updatedInput": updated}
    else:
        return "", 0
    return json.dumps({"hookSpecificOutput": output}), 0


# --- Gemini CLI ------------------------------------------------------------------------


def _gemini_event(event: dict[str, Any]) -> dict[str, Any]:
    name = GEMINI_EVENTS.get(str(event.get("hook_event_name", "")))
    if name is None:
        return {**event}  # agentweb answers `{}` or names what it does not know
    out = {**event, "hook_event_name": name, "tool_use_id": _gemini_use_id(event)}
    response = event.get("tool_response")
    if name == "PostToolUse" and isinstance(response, dict):
        if response.get("error"):
            out |= {"hook_event_name": "PostToolUseFailure", "error": response["error"]}
        out["tool_response"] = _gemini_output(response)
    return out


def _gemini_use_id(event: dict[str, Any]) -> str:
    """Gemini gives no tool-use id: the BeforeTool's session, time and input name the
    use. Its AfterTool comes later (another time): agentweb finds that call by the
    session and the input that ran (`gateway_call_finish`)."""
    import hashlib

    seed = json.dumps(
        [event.get(k) for k in ("session_id", "timestamp", "tool_name", "tool_input")],
        sort_keys=True,
    )
    prefix = "gemini-after-" if event.get("hook_event_name") == "AfterTool" else "gemini-"
    return prefix + hashlib.sha256(seed.encode()).hexdigest()[:32]


def _gemini_output(response: dict[str, Any]) -> Any:
    """The text the model was given (`llmContent`), else what the user was shown."""
    for key in ("llmContent", "returnDisplay"):
        if isinstance(response.get(key), str):
            return response[key]
    return response


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
    "codex": (_same, _codex_answer),
    "gemini": (_gemini_event, _gemini_answer),
}


# --- agentweb-hook check ---------------------------------------------------------------


def check_main(args: list[str]) -> int:
    """`agentweb-hook check [--policy NAME] [AGENT]`: asks agentweb whether this hook is
    wired right (`GET /api/hooks/check`, a dry run that stores nothing) and prints each
    check; exits 0 when all pass, else 1 with one line on stderr saying what to fix."""
    try:
        policy, agent = _check_args(args)
        report = _check(policy, agent)
    except Unreachable as exc:
        sys.stderr.write(f"agentweb-hook check: {exc}: is AGENTWEB_URL right, and agentweb up?\n")
        return FAILED
    except HookFailure as exc:
        sys.stderr.write(f"agentweb-hook check: {exc}\n")
        return FAILED
    checks = [item for item in report.get("checks", []) if isinstance(item, dict)]
    for item in checks:
        mark = "ok  " if item.get("ok") is True else "FAIL"
        sys.stdout.write(f"{mark} {item.get('name')}: {item.get('detail')}\n")
    if report.get("ok") is True:
        sys.stdout.write(
            f"agentweb-hook check: {agent} is governed by agentweb {report.get('server_version')} "
            f"at {_base()} as {report.get('user')}, policy {report.get('policy')!r}\n"
        )
        return 0
    failed = ", ".join(str(item.get("name")) for item in checks if item.get("ok") is not True)
    sys.stderr.write(f"agentweb-hook check: failed: {failed or 'no checks'} (see above)\n")
    return FAILED


def _check_args(args: list[str]) -> tuple[str, str]:
    """(policy, agent) from `[--policy NAME] [AGENT]`; the policy defaults to
    AGENTWEB_POLICY as the hook's, the agent to claude-code."""
    policy, rest = os.environ.get("AGENTWEB_POLICY", ""), list(args)
    agents: list[str] = []
    while rest:
        word = rest.pop(0)
        if word == "--policy" and rest:
            policy = rest.pop(0)
        elif word.startswith("--policy="):
            policy = word.partition("=")[2]
        elif word in FORMATS and not agents:
            agents.append(word)
        else:
            usage = f"agentweb-hook check [--policy NAME] [{AGENTS}]"
            raise HookFailure(f"unexpected {word!r}; usage: {usage}")
    return policy, agents[0] if agents else "claude-code"


def _check(policy: str, agent: str) -> dict[str, Any]:
    query = {"agent": agent, **({"policy": policy} if policy else {})}
    status, _, body = _request(CHECK_PATH, query, CHECK_TIMEOUT)
    try:
        detail = str(_json_object(body).get("detail", "")) if status != 200 else ""
    except HookFailure:
        detail = ""
    if status == 401:
        fix = "set AGENTWEB_TOKEN to an agent token of this agentweb"
        raise HookFailure(f"agentweb at {_base()} refused the token ({detail}): {fix}")
    if status == 404 and "policy" in detail:
        raise HookFailure(f"{detail} (--policy or AGENTWEB_POLICY)")
    if status != 200:
        said = detail or "not agentweb's answer: is AGENTWEB_URL agentweb's base URL?"
        raise HookFailure(f"HTTP {status} from {_base()}{CHECK_PATH}: {said}")
    return _json_object(body)


if __name__ == "__main__":
    sys.exit(main())
