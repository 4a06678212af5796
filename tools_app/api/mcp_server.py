"""agentweb's tools over MCP: one `mcp` Server for both transports (`/mcp`, `mcp_stdio`).

Here agentweb runs the tools, as for an external agent of the REST API: `start_session`
clones a repository as `POST /api/sessions` does, and every other tool is a call stored,
judged, held for a person and run through the same services as `POST
/api/sessions/{id}/tool-calls`. Who is calling (a user, a token scope) and which
connection it is come from the transport, through `Principal`.

A call answers once it is final or after `AGENTWEB_MCP_WAIT_SECONDS`, sending progress
notifications meanwhile; a call still waiting for a person answers with a normal result
naming it, and `await_tool_call` waits on. Refusals and denials are results the model
reads (`isError`), never protocol errors. Waiting holds no worker and no database
connection: it is the one wait of `?wait` and the hooks (`waiting`), on this process's
event loop.

Both eras of the protocol are served. A client of the initialize handshake (2024-11-05
to 2025-11-25) has a connection (its MCP session, or the stdio process) whose last
`start_session` is the default session of its calls. A 2026-07-28 client over HTTP sends
requests that each stand alone: nothing is there to remember a session, so its listing
makes `session` required and each call names it. MCP tasks are not offered (2026-07-28
moved them out of the core protocol, and the SDK dispatches none): a call held for a
person keeps its one request open and sends progress notifications.

A result's text is all the model is meant to read; the facts a program wants (ids,
status) ride in its `_meta`, not in `structuredContent`: a client that finds structured
content may hand the model that alone (Claude Code does), and the model would never read
a file's lines or "call await_tool_call".
"""

from __future__ import annotations

import logging
import time
from collections.abc import Awaitable, Callable, Mapping
from typing import Any

import mcp_types as types
from django.conf import settings
from django.core.exceptions import PermissionDenied
from django.http import Http404
from mcp.server.context import ServerRequestContext
from mcp.server.lowlevel.server import NotificationOptions, Server
from mcp.server.models import InitializationOptions

from tools_app import access, services
from tools_app.api import mcp_upstreams
from tools_app.api.mcp_callers import (
    DefaultSessions,
    KeptDefaults,
    Principal,
    PrincipalOf,
    db_thread,
)
from tools_app.core.tools.registry import core_tool_schemas
from tools_app.core.upstreams.definitions import judged_name, split_listed
from tools_app.live import waiting
from tools_app.models import AgentSession
from tools_app.selectors import records

logger = logging.getLogger(__name__)

START_SESSION = "start_session"
AWAIT_TOOL_CALL = "await_tool_call"
FINAL = {"succeeded", "failed", "denied", "expired", "cancelled"}
PROGRESS_EVERY_SECONDS = 5.0  # a client that times out without news hears of the wait

FACTS_KEY = "agentweb/facts"  # a result's `_meta` member with its facts (ids, status)

SESSION_PROPERTY = {
    "type": "integer",
    "minimum": 1,
    "description": "The agentweb session to act on (default: the last session that this "
    "connection started with start_session).",
}
NAMED_SESSION_PROPERTY = {
    "type": "integer",
    "minimum": 1,
    "description": "The agentweb session to act on: the id start_session answered (this "
    "client has no connection to remember it).",
}
META_TOOLS = [
    {
        "name": START_SESSION,
        "description": "Start an agentweb session: a fresh clone of `repo` (a local path or "
        "a git URL) for `task`. Answers once the clone is ready, with the session id; the "
        "other tools then act on that clone, through agentweb's policy and approvals.",
        "input_schema": {
            "type": "object",
            "properties": {
                "task": {"type": "string", "minLength": 1, "description": "What to do."},
                "repo": {"type": "string", "minLength": 1, "description": "Path or git URL."},
                "policy": {"type": "string", "description": "A policy's name (default)."},
            },
            "required": ["task", "repo"],
            "additionalProperties": False,
        },
    },
    {
        "name": AWAIT_TOOL_CALL,
        "description": "Keep waiting for a tool call that was awaiting approval (or still "
        "running) when it answered; answers with its result once it is final.",
        "input_schema": {
            "type": "object",
            "properties": {"id": {"type": "integer", "minimum": 1, "description": "Call id."}},
            "required": ["id"],
            "additionalProperties": False,
        },
    },
]


class Refused(Exception):
    """A request the model should read about and correct: an `isError` result."""


Report = Callable[[float, str], Awaitable[None]]


class AgentwebServer(Server[Any]):
    """Says that its tool list changes: a started session's skill tools join it."""

    def create_initialization_options(
        self,
        notification_options: NotificationOptions | None = None,
        experimental_capabilities: dict[str, dict[str, Any]] | None = None,
        extensions: dict[str, dict[str, Any]] | None = None,
    ) -> InitializationOptions:
        changes = notification_options or NotificationOptions(tools_changed=True)
        return super().create_initialization_options(changes, experimental_capabilities, extensions)


def build_server(principal_of: PrincipalOf, defaults: DefaultSessions | None = None) -> Server[Any]:
    """The MCP server; `principal_of` says who sent a request (the transport knows), and
    `defaults` keeps each connection's default session (in memory unless given)."""
    defaults = KeptDefaults() if defaults is None else defaults

    async def list_tools(
        ctx: ServerRequestContext[Any, Any], params: types.PaginatedRequestParams | None
    ) -> types.ListToolsResult:
        who = principal_of(ctx)
        schemas = await db_thread(_tool_schemas)(who, default := await defaults.get(who))
        servers = await db_thread(_upstreams_of)(who, default)
        listed = await mcp_upstreams.listed_tool_schemas(servers, db_thread)
        schemas += [_with_session(schema, who) for schema in listed]
        return types.ListToolsResult(tools=[_tool(schema) for schema in schemas])

    async def call_tool(
        ctx: ServerRequestContext[Any, Any], params: types.CallToolRequestParams
    ) -> types.CallToolResult:
        who, args = principal_of(ctx), dict(params.arguments or {})
        wait = waited_for(ctx.meta)

        async def report(progress: float, message: str) -> None:
            await ctx.session.report_progress(progress, wait, message)

        try:
            if params.name == START_SESSION:
                started = await _start_session(who, args, defaults, report)
                await _tools_changed(ctx)
                return started
            if params.name == AWAIT_TOOL_CALL:
                return await _await_call(who, _positive_int(args, "id"), report, wait)
            session_id = _session_of(who, args, await defaults.get(who))
            return await _tool_call(who, session_id, _judged(params.name), args, report, wait)
        except Refused as exc:
            return _result(str(exc), error=True)
        except (services.ServiceError, Http404, PermissionDenied) as exc:
            return _result(str(exc) or exc.__class__.__name__, error=True)

    server = AgentwebServer(
        "agentweb",
        version="1",
        instructions="Start a session with start_session {task, repo}; the other tools act "
        "on its clone through agentweb's policy. A call that needs a person answers "
        "'awaiting approval (call N)': call await_tool_call {id: N} to keep waiting. "
        "Where the tools require `session`, pass the id start_session answered.",
        on_list_tools=list_tools,
        on_call_tool=call_tool,
        **_upstream_handlers(principal_of, defaults),
    )
    return server


def _judged(name: str) -> str:
    """The name a call is stored and judged under: an upstream's `SERVER__TOOL` is
    `mcp.SERVER.TOOL`; agentweb's own tools keep theirs."""
    upstream = split_listed(name)
    return judged_name(*upstream) if upstream else name


def _upstream_handlers(principal_of: PrincipalOf, defaults: DefaultSessions) -> dict[str, Any]:
    """The MCP upstreams' resources and prompts, for the servers the caller may use (in
    the connection's default session's project, if it has one)."""

    async def servers(ctx: ServerRequestContext[Any, Any]) -> list[mcp_upstreams.Reachable]:
        who = principal_of(ctx)
        return list(await db_thread(_upstreams_of)(who, await defaults.get(who)))

    return mcp_upstreams.passthrough_handlers(servers)


async def _tools_changed(ctx: ServerRequestContext[Any, Any]) -> None:
    """The default session changed, and with it the skill tools listed: tell the client
    (on its own stream, which it may not have opened: then it lists them when it asks)."""
    try:
        await ctx.session.send_tool_list_changed()
    except Exception as exc:
        logger.debug("MCP: tools/list_changed not sent (%r)", exc)


def wait_seconds() -> float:
    return float(max(0, settings.AGENTWEB_MCP_WAIT_SECONDS))


def waited_for(meta: Mapping[str, Any] | None) -> float:
    """How long a call's answer waits: a client that sent a progress token hears of the
    wait every few seconds, and may then wait for a person for up to
    `AGENTWEB_MCP_PROGRESS_WAIT_SECONDS` in one call; any other client for
    `AGENTWEB_MCP_WAIT_SECONDS`, then calls await_tool_call."""
    token = (meta or {}).get("progress_token", (meta or {}).get("progressToken"))
    if token is None:
        return wait_seconds()
    return max(wait_seconds(), float(settings.AGENTWEB_MCP_PROGRESS_WAIT_SECONDS))


# --- tools/list -------------------------------------------------------------------------


def _tool_schemas(who: Principal, session_id: int | None) -> list[dict[str, Any]]:
    """start_session and await_tool_call, then the 15 tools and the default session's
    skill tools, each with an optional `session`."""
    schemas = core_tool_schemas()
    if session_id is not None:
        session = access.session_for(who.user, session_id, scope=who.scope)
        schemas = records.session_tool_schemas(session)
    return [*META_TOOLS, *(_with_session(schema, who) for schema in schemas)]


def _upstreams_of(who: Principal, session_id: int | None) -> list[mcp_upstreams.Reachable]:
    session = access.session_for(who.user, session_id, scope=who.scope) if session_id else None
    return mcp_upstreams.reachable(who.user, session)


def _with_session(schema: dict[str, Any], who: Principal) -> dict[str, Any]:
    """The tool's schema with a `session` property: optional on a connection (its last
    start_session is the default), required without one (a 2026-07-28 client over HTTP,
    whose every request stands alone)."""
    input_schema = dict(schema["input_schema"])
    if input_schema.get("type") == "object":
        properties = dict(input_schema.get("properties") or {})
        if who.connection is None:
            properties["session"] = NAMED_SESSION_PROPERTY
            input_schema["required"] = [*input_schema.get("required", ()), "session"]
        else:
            properties["session"] = SESSION_PROPERTY
        input_schema["properties"] = properties
    return {**schema, "input_schema": input_schema}


def _tool(schema: dict[str, Any]) -> types.Tool:
    hints = schema.get("annotations") or {}
    return types.Tool(
        name=schema["name"],
        description=schema["description"],
        input_schema=schema["input_schema"],
        annotations=types.ToolAnnotations.model_validate(hints) if hints else None,
    )


# --- tools/call -------------------------------------------------------------------------


def _string(args: dict[str, Any], name: str, default: str | None = None) -> str:
    value = args.get(name, default)
    if not isinstance(value, str):
        raise Refused(f"`{name}` must be a string.")
    return value


def _positive_int(args: dict[str, Any], name: str) -> int:
    value = args.get(name)
    if isinstance(value, str) and value.isascii() and value.isdigit():
        value = int(value)
    if not isinstance(value, int) or isinstance(value, bool) or value < 1:
        raise Refused(f"`{name}` must be a positive integer (got {value!r}).")
    return value


def _session_of(who: Principal, args: dict[str, Any], default: int | None) -> int:
    """The `session` argument (taken out of `args`), else the connection's default."""
    if "session" in args:
        return _positive_int({"session": args.pop("session")}, "session")
    if default is None:
        raise Refused(
            "No session: call start_session {task, repo} first, or pass `session` "
            "with the id of a session you started."
        )
    return default


async def _start_session(
    who: Principal, args: dict[str, Any], defaults: DefaultSessions, report: Report
) -> types.CallToolResult:
    unknown = sorted(set(args) - {"task", "repo", "policy"})
    if unknown:
        raise Refused(f"start_session takes task, repo and policy; not {', '.join(unknown)}.")
    task, repo = _string(args, "task"), _string(args, "repo")
    policy = _string(args, "policy", "default")
    session_id = await db_thread(_session_start)(who, task, repo, policy)
    await defaults.set(who, session_id)
    started = time.monotonic()

    async def cloning(session: dict[str, Any]) -> None:
        await report(time.monotonic() - started, f"session {session_id}: cloning {repo}")

    async with waiting.listening(session_id) as listener:
        session = await listener.settle(
            lambda: db_thread(_session_read)(who, session_id),
            wait=wait_seconds(),
            done=lambda read: read["status"] != "queued",
            wakes=_session_moved,
            progress=waiting.Progress(cloning, PROGRESS_EVERY_SECONDS),
        )
    return _session_result(session, remembered=who.connection is not None)


def _session_moved(event: dict[str, Any]) -> bool:
    return str(event.get("type", "")).startswith("session.")


def _session_start(who: Principal, task: str, repo: str, policy: str) -> int:
    session = services.session_start(user=who.user, task=task, repo=repo, policy_name=policy)
    return int(session.pk)


def _session_read(who: Principal, session_id: int) -> dict[str, Any]:
    session = access.session_for(who.user, session_id, scope=who.scope)
    return records.session_as_dict(session)


def _session_result(session: dict[str, Any], *, remembered: bool) -> types.CallToolResult:
    facts = {key: session[key] for key in ("id", "status", "repo", "workspace", "policy")}
    facts["session"] = facts.pop("id")
    number, status = facts["session"], session["status"]
    if status == "queued":
        text = (
            f"Session {number} is still cloning {session['repo']}; calls sent to it now "
            "wait for the clone and then run."
        )
    elif status in AgentSession.FINISHED_STATUSES:
        text = f"Session {number} is {status}: {session['summary']}"
        return _result(text, error=True, facts=facts)
    else:
        text = (
            f"Session {number} is ready: a clone of {session['repo']} (policy "
            f"{session['policy']}). "
        )
        text += (
            "The tools act on it when called without `session`."
            if remembered
            else f"Pass `session`: {number} with each call (no connection remembers it)."
        )
    return _result(text, facts=facts)


async def _tool_call(
    who: Principal,
    session_id: int,
    tool: str,
    args: dict[str, Any],
    report: Report,
    wait: float,
) -> types.CallToolResult:
    """Store the call and answer once it is final, or when the wait runs out."""
    async with waiting.listening(session_id) as listener:  # before the call exists
        call_id = await db_thread(_receive)(who, session_id, tool, args)
        return await _answer(who, call_id, listener, report, wait, joined_before_the_call=True)


async def _await_call(
    who: Principal, call_id: int, report: Report, wait: float
) -> types.CallToolResult:
    call = await db_thread(_call_read)(who, call_id)
    async with waiting.listening(call["session"]) as listener:
        return await _answer(who, call_id, listener, report, wait)


async def _answer(
    who: Principal,
    call_id: int,
    listener: waiting.Listener,
    report: Report,
    wait: float,
    *,
    joined_before_the_call: bool = False,
) -> types.CallToolResult:
    """The call once final, or when the wait runs out: read again after each of its
    events (the client hears each new status) and told every few seconds that it waits."""
    started = time.monotonic()

    async def still(call: dict[str, Any]) -> None:
        await report(time.monotonic() - started, f"call {call_id}: {_said(call['status'])}")

    call = await listener.settle(
        lambda: db_thread(_call_read)(who, call_id),
        wait=wait,
        done=lambda read: read["status"] in FINAL,
        wakes=waiting.call_event(call_id),
        first_read_waits=joined_before_the_call,
        progress=waiting.Progress(still, PROGRESS_EVERY_SECONDS),
        watched=lambda read: (call_id, read["status"]),
    )
    return _call_result(call)


def _receive(who: Principal, session_id: int, tool: str, args: dict[str, Any]) -> int:
    session = access.session_to_act_on(who.user, session_id, scope=who.scope)
    return int(services.tool_call_receive_external(session=session, tool=tool, args=args).pk)


def _call_read(who: Principal, call_id: int) -> dict[str, Any]:
    return records.tool_call_as_dict(access.tool_call_for(who.user, call_id, scope=who.scope))


def _said(status: str) -> str:
    return "awaiting approval" if status == "awaiting_approval" else status


def _call_result(call: dict[str, Any]) -> types.CallToolResult:
    """What the model reads: the result, or why there is none (yet)."""
    facts = {key: call[key] for key in ("id", "session", "tool", "status", "decision")}
    facts |= {"reason": call["reason"], "rule": call["rule"], "decided_by": call["decided_by"]}
    number, status, result = call["id"], call["status"], call["result"] or ""
    if status == "succeeded":
        return _result(result, facts=facts)
    if status not in FINAL:
        text = (
            f"{_said(status)} (call {number}): call await_tool_call with id {number} "
            "to keep waiting"
        )
        why = f"\nWhy: {call['reason']}" if status == "awaiting_approval" else ""
        return _result(text + why, facts=facts)
    if status == "denied":
        by = f" by {call['decided_by']}" if call["decided_by"] else ""
        return _result(f"denied{by} (call {number}): {result or call['reason']}", True, facts)
    if status == "expired":
        text = f"expired (call {number}): no reviewer decided in time; nothing ran."
        return _result(text, error=True, facts=facts)
    return _result(f"{status} (call {number}): {result}", error=True, facts=facts)


def _result(
    text: str, error: bool = False, facts: dict[str, Any] | None = None
) -> types.CallToolResult:
    meta = {FACTS_KEY: facts} if facts is not None else None
    return types.CallToolResult(content=[types.TextContent(text=text)], _meta=meta, is_error=error)
