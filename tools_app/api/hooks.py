"""`POST /api/hooks/claude-code`: every hook event of Claude Code, one URL.

Claude Code only obeys a 2xx answer with a JSON body; anything else (a 4xx, a timeout) is
a non-blocking error and the tool runs. So this view always answers 200 with a decision:
a missing or bad token, a malformed or hostile event, an internal error are a `deny`
that says why (the model reads it). A call that needs a person holds the request,
without a thread, until it is decided or `AGENTWEB_HOOK_WAIT_SECONDS` pass (`waiting`).
"""

from __future__ import annotations

import asyncio
import logging
import time
import weakref
from dataclasses import dataclass
from typing import Any

from asgiref.sync import sync_to_async
from django.conf import settings
from django.core.exceptions import RequestDataTooBig
from django.http import HttpRequest, JsonResponse
from django.views.decorators.csrf import csrf_exempt
from django.views.decorators.http import require_POST

from tools_app import access
from tools_app.api.entry_checks import entry_refusal
from tools_app.core.gateway.claude_code import (
    IGNORED_EVENTS,
    POST_FAILURE,
    PRE,
    BadEvent,
    allow,
    check_event,
    deny,
)
from tools_app.core.tools.jsonsafe import UnsafeJSON, loads
from tools_app.errors import ServiceError
from tools_app.live import waiting
from tools_app.models import ApiToken, Project, ToolCall
from tools_app.ops import judging_threads, metrics
from tools_app.selectors import records
from tools_app.selectors.decisions import approved_by_person
from tools_app.services import connection_check, gateway, gateway_ran, tokens

logger = logging.getLogger(__name__)

Status = ToolCall.Status
# The statuses that end a hook's wait: decided one way or the other.
ANSWERABLE = frozenset({Status.APPROVED, Status.RUNNING, *ToolCall.FINAL_STATUSES})
POLICY_NAME_CHARS = 100  # Policy.name's length


@csrf_exempt  # a bearer token, never a browser's cookie, authenticates a hook
@require_POST
async def claude_code_hook(request: HttpRequest) -> JsonResponse:
    started = time.monotonic()
    try:
        answer = await _answer(request)
    except Exception:
        logger.exception("the hook endpoint failed")
        answer = deny(
            "agentweb could not judge this tool use (an internal error; its log has the "
            "details): it is denied to be safe"
        )
    metrics.hook_answered(answer, time.monotonic() - started)
    return JsonResponse(answer, status=200, headers=connection_check.hook_version_headers())


async def _answer(request: HttpRequest) -> dict[str, Any]:
    async with _at_once():
        answer, waits = await _judged(request)
    if waits is None:
        return answer
    call_id, session_id = waits
    wait = float(settings.AGENTWEB_HOOK_WAIT_SECONDS)
    try:
        async with waiting.listening(session_id) as listener:
            await listener.answer(call_id, wait, sync_to_async(_status), until=ANSWERABLE)
    except asyncio.CancelledError:  # the agent hung up (Django cancels the view)
        await _abandon(call_id)
        raise
    return await sync_to_async(_final_answer)(call_id)


async def _judged(request: HttpRequest) -> tuple[dict[str, Any], tuple[int, int] | None]:
    """`_answer_now` on a judging thread, seen through when the agent hangs up meanwhile:
    the thread stores the call whatever happens here, and a call it stored as waiting for
    a person would otherwise stay in the inbox with no hook left to run an approval."""
    judging = asyncio.ensure_future(judging_threads.run(_answer_now, request))
    try:
        return await asyncio.shield(judging)
    except asyncio.CancelledError:  # the agent hung up (Django cancels the view)
        await asyncio.wait([judging])  # the gate stays held until the thread is done
        failed = judging.exception()
        if failed is not None:
            logger.error("the hook endpoint failed", exc_info=failed)
        elif (waits := judging.result()[1]) is not None:
            await _abandon(waits[0])
        raise


async def _abandon(call_id: int) -> None:
    """The call of a hook whose agent hung up while it waited for a person leaves the
    inbox: no hook is left to run an approval. Shielded: the view is being cancelled."""
    await asyncio.shield(sync_to_async(gateway.gateway_call_abandon)(call_id=call_id))


# Per event loop (daphne has one; a test's async_to_sync makes its own).
_GATES: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, asyncio.Semaphore] = (
    weakref.WeakKeyDictionary()
)


def _at_once() -> asyncio.Semaphore:
    """At most AGENTWEB_HOOKS_AT_ONCE hooks of this process judge and store at once; the
    others wait their turn on the event loop, holding no thread and no connection. So the
    process holds a bounded number of database connections however many agents send at
    once (one per hook at work, on SQLite too, where there is no pool), and a burst queues
    here in order instead of in SQLite's busy loop or the pool's queue."""
    loop = asyncio.get_running_loop()
    gate = _GATES.get(loop)
    if gate is None:
        gate = _GATES[loop] = asyncio.Semaphore(settings.AGENTWEB_HOOKS_AT_ONCE)
    return gate


def _answer_now(request: HttpRequest) -> tuple[dict[str, Any], tuple[int, int] | None]:
    """The answer when there is one at once, else the (call, session) that waits for a
    person. One hop to a thread for all of it: the common allowed call needs no other."""
    refused = entry_refusal(request)  # Host and Origin: no middleware runs before a hook
    if refused is not None:
        return deny(f"agentweb refused the hook: {refused.detail}"), None
    # META, not `request.headers`: that parses every header into a mapping (3% of a hook).
    outdated = connection_check.hook_client_refusal(request.META.get("HTTP_USER_AGENT", ""))
    if outdated is not None:  # it may misread this server's answers: judged by nothing
        return deny(f"agentweb refused the hook: {outdated}"), None
    token = _token(request.META.get("HTTP_AUTHORIZATION", ""))
    if isinstance(token, str):
        return deny(token), None
    try:
        event = _event(request)
    except BadEvent as exc:
        return deny(f"agentweb refused the hook event: {exc}"), None
    name = event["hook_event_name"]
    if name in IGNORED_EVENTS:
        return {}, None
    starts = _starts(request, token)
    if isinstance(starts, str):
        return deny(f"agentweb refused the hook: {starts}"), None
    try:
        if name == PRE:
            return _receive_and_answer(token, event, starts)
        return _post_tool_use(token, event, starts), None
    except ServiceError as exc:
        return deny(f"agentweb refused the hook: {exc}", name), None


@dataclass(frozen=True)
class Starts:
    """What the hook URL says of a session its events start: `?policy=`, `?project=`
    (else the token's project, else the one claiming the agent's folder)."""

    policy: str
    project: Project | None


def _starts(request: HttpRequest, token: ApiToken) -> Starts | str:
    """The hook URL's policy and project, or why they cannot be used."""
    policy, project = request.GET.get("policy", ""), request.GET.get("project", "")
    for key, value in (("policy", policy), ("project", project)):
        if "\x00" in value or len(value) > POLICY_NAME_CHARS:
            return (
                f"the hook URL's `{key}` must be a {key}'s name (at most "
                f"{POLICY_NAME_CHARS} characters, no NUL)"
            )
    if not project:
        return Starts(policy, token.project)
    found = Project.objects.filter(name=project).first()
    if found is None or not access.may_use_project(token.user, found):
        return f"the hook URL's `project` names no project you may use ({project!r})"
    return Starts(policy, found)


def _token(header: str) -> ApiToken | str:
    """The agent token of the request, or why there is none."""
    scheme, _, value = header.partition(" ")
    if scheme.lower() != "bearer" or not value.strip():
        return (
            "agentweb refused the hook: no bearer token (send `Authorization: Bearer "
            "$AGENTWEB_TOKEN`, with AGENTWEB_TOKEN in the hook's allowedEnvVars)"
        )
    found = tokens.api_token_verify(token=value.strip())
    if isinstance(found, str):
        return f"agentweb refused the hook: the bearer token is not valid ({found})"
    if found.scope != ApiToken.Scope.AGENT:
        return "agentweb refused the hook: use an `agent` token, not a review token"
    return found


def _event(request: HttpRequest) -> dict[str, Any]:
    try:
        body = request.body
    except RequestDataTooBig:
        limit = settings.DATA_UPLOAD_MAX_MEMORY_SIZE
        raise BadEvent(f"it is larger than {limit} bytes (AGENTWEB_MAX_BODY_BYTES)") from None
    try:
        event = loads(body, name="the event")
    except UnsafeJSON as exc:
        raise BadEvent(str(exc)) from None
    return check_event(event)


# --- PreToolUse ------------------------------------------------------------------------


def _receive_and_answer(
    token: ApiToken, event: dict[str, Any], starts: Starts
) -> tuple[dict[str, Any], tuple[int, int] | None]:
    """The call, and its answer when the policy decided at once. No transaction spans
    them: each write is whole on its own (an allowed call is one statement on
    PostgreSQL, where a BEGIN and a COMMIT would be two round trips more)."""
    call = _receive(token, event, starts)
    if call.status not in ANSWERABLE:
        return {}, (call.pk, call.session_id)
    return _answer_for(call), None


def _receive(token: ApiToken, event: dict[str, Any], starts: Starts) -> ToolCall:
    session = gateway.gateway_session_for(
        user=token.user,
        external_id=event["session_id"],
        cwd=event["cwd"],
        agent_id=event.get("agent_id") or "",
        agent_type=str(event.get("agent_type") or "")[:100],
        policy=starts.policy,
        project=starts.project,
        native_tool=event["tool_name"],
    )
    return gateway.gateway_call_receive(
        session=session,
        native_tool=event["tool_name"],
        native_input=event["tool_input"],
        tool_use_id=event["tool_use_id"],
        ran_in=event["cwd"],
    )


def _status(call_id: int) -> dict[str, Any]:
    call = ToolCall.objects.get(pk=call_id)
    return {"status": records.tool_call_as_dict(call)["status"]}


def _final_answer(call_id: int) -> dict[str, Any]:
    return _answer_for(ToolCall.objects.get(pk=call_id))


def _answer_for(call: ToolCall) -> dict[str, Any]:
    """The hook's answer for the call as it is now; a final answer is recorded as given."""
    if records.tool_call_overdue(call):
        return deny(_refusal(call, expired=True))
    if call.status in {Status.PENDING, Status.AWAITING_APPROVAL}:
        url = f"{settings.AGENTWEB_BASE_URL.rstrip('/')}/sessions/{call.session_id}/"
        return deny(
            f"still awaiting approval (call {call.pk}, {url}): send the same call again to "
            "keep waiting"
        )
    call = gateway.gateway_call_answered(call=call)
    if call.started_at and call.status in {Status.RUNNING, Status.SUCCEEDED, Status.FAILED}:
        return allow(_allowed(call), dict(call.native_input or {}))
    return deny(_refusal(call))


def _allowed(call: ToolCall) -> str:
    # Asked of the call first: one judged and run at once knows nobody decided it.
    person = call.human.user if approved_by_person(call) else None
    if person is not None:
        return f"approved in agentweb by {person.get_username()} (call {call.pk})"
    return f"allowed by agentweb's policy (call {call.pk}): {call.reason}"


def _refusal(call: ToolCall, *, expired: bool = False) -> str:
    if expired or call.status == Status.EXPIRED:
        return f"agentweb: nobody decided call {call.pk} in time; the approval request expired"
    if call.status == Status.CANCELLED:
        return f"agentweb: call {call.pk} was cancelled ({call.result or 'with its session'})"
    if call.status == Status.FAILED:
        return f"agentweb cannot take this tool use (call {call.pk}): {call.result}"
    why = call.result or call.reason
    return f"agentweb denied this {call.native_tool} (call {call.pk}): {why}"


# --- PostToolUse, PostToolUseFailure ---------------------------------------------------


def _post_tool_use(token: ApiToken, event: dict[str, Any], starts: Starts) -> dict[str, Any]:
    failed = event["hook_event_name"] == POST_FAILURE
    gateway_ran.gateway_call_report(
        user=token.user, external_id=event["session_id"], agent_id=event.get("agent_id") or "",
        cwd=event["cwd"], policy=starts.policy, project=starts.project,
        tool_use_id=event["tool_use_id"], native_tool=event["tool_name"], succeeded=not failed,
        ran_input=event["tool_input"],
        response=event.get("error") if failed else event.get("tool_response"),
    )  # fmt: skip
    return {}
