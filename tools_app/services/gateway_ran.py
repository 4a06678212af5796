"""What an agent's tool did, recorded on its gateway call: a PostToolUse (or Gemini CLI's
AfterTool, which names no tool use) reports the output, the real patch and the input that
ran, and the call, allowed or approved before, ends succeeded or failed."""

from __future__ import annotations

from typing import Any

from django.db.models import Exists, OuterRef
from django.utils import timezone

from tools_app.core.gateway import claude_code
from tools_app.core.tools.jsonsafe import storable_args
from tools_app.models import AgentSession, Decision, ToolCall
from tools_app.selectors.decisions import approval_read
from tools_app.services.gateway import GATEWAY_RUNNER, canonical, session_external_id
from tools_app.services.lifecycle import AGENT, tool_call_move
from tools_app.sql.prepared import Prepared

Status = ToolCall.Status
Kind = AgentSession.Kind


def gateway_call_finish(
    *,
    session: AgentSession,
    tool_use_id: str,
    succeeded: bool,
    ran_input: Any,
    response: Any,
    native_tool: str = "",
) -> ToolCall | None:
    """Record what the agent's tool did (`gateway_call_ran`) on the call of `tool_use_id`,
    else the running call of that input (an after-event without an id); None: no call."""
    call = _call_of_use(session, tool_use_id)
    if call is None:
        call = _running_with_input(session, native_tool, ran_input)
    if call is None:
        return None
    return gateway_call_ran(call, succeeded=succeeded, ran_input=ran_input, response=response)


def gateway_call_reported(
    *, user: Any, external_id: str, agent_id: str, tool_use_id: str
) -> ToolCall | None:
    """The call an after-event reports on, with whether a person approved it, in one
    statement without reading its session on its own: a PostToolUse follows the
    PreToolUse that stored its call. None when it is not there (`gateway_call_finish`)."""
    found = _REPORTED.models(
        creator=user.pk,
        external_id=session_external_id(external_id, agent_id),
        tool_use_id=tool_use_id,
    )
    call = next(iter(found), None)
    if call is not None:
        approval_read(call, call.approved_by_a_person)  # type: ignore[attr-defined]
    return call


def gateway_call_ran(call: ToolCall, *, succeeded: bool, ran_input: Any, response: Any) -> ToolCall:
    """Record what the agent's tool did: the output as the result, the real patch as the
    diff, and a flag when the input that ran is not the one agentweb allowed."""
    if call.status == Status.APPROVED:  # the answer and this event crossed
        tool_call_move(
            call, "claim_run", by=AGENT, started_at=timezone.now(), runner=GATEWAY_RUNNER
        )
    ran = _ran(call, ran_input, response)
    result = claude_code.result_text(response, succeeded)
    if ran.get("differs"):
        result = f"{ran['differs']}\n\n{result}"
    status = Status.SUCCEEDED if succeeded else Status.FAILED
    preview = {**(call.preview or {}), "ran": ran}
    fields: dict[str, Any] = {"result": result, "preview": preview, "finished_at": timezone.now()}
    if not tool_call_move(call, "finish", by=AGENT, to=status, **fields):
        call.refresh_from_db()
    return call


def _approved_by_a_person() -> Exists:
    """Whether a person approved the call of the row (`approved_by_person`), as a column."""
    return Exists(
        Decision.objects.filter(tool_call=OuterRef("pk"), decision=Decision.Choice.APPROVE)
    )


def _use_wanted(session: int, tool_use_id: str) -> Any:
    """The call of one tool use, through the unique index of tool uses (an empty id names
    none, and the index leaves those out; `first()`'s ORDER BY could make SQLite walk the
    session's calls instead), and whether a person approved it, in the same statement."""
    return (
        ToolCall.objects.filter(session_id=session, tool_use_id=tool_use_id)
        .exclude(tool_use_id="")
        .annotate(approved_by_a_person=_approved_by_a_person())
        .order_by()
    )


_USE = Prepared(ToolCall, _use_wanted, session=int, tool_use_id=str)


def _reported_wanted(creator: int, external_id: str, tool_use_id: str) -> Any:
    """`_use_wanted`, its session named as `_sessions_wanted` names it: through the
    session's unique key, then the unique index of tool uses."""
    return (
        ToolCall.objects.filter(
            session__creator_id=creator, session__external_id=external_id,
            session__kind=Kind.GATEWAY, tool_use_id=tool_use_id,
        )
        .exclude(tool_use_id="")
        .annotate(approved_by_a_person=_approved_by_a_person())
        .order_by()
    )  # fmt: skip


_REPORTED = Prepared(ToolCall, _reported_wanted, creator=int, external_id=str, tool_use_id=str)


def _call_of_use(session: AgentSession, tool_use_id: str) -> ToolCall | None:
    found = next(iter(_USE.models(session=session.pk, tool_use_id=tool_use_id)), None)
    if found is not None:
        approval_read(found, found.approved_by_a_person)  # type: ignore[attr-defined]
    return found


def _running_with_input(session: AgentSession, native_tool: str, ran_input: Any) -> ToolCall | None:
    """The call an after-event without the before-event's id belongs to (Gemini CLI gives
    no tool-use id): the oldest call of the session running that tool on that input."""
    if not native_tool or not isinstance(ran_input, dict):
        return None
    wanted = canonical(storable_args(ran_input))
    running = ToolCall.objects.filter(
        session=session, native_tool=native_tool, status=Status.RUNNING
    ).order_by("id")
    for call in running[:50]:
        if canonical(call.native_input) == wanted:
            return call
    return None


def _ran(call: ToolCall, ran_input: Any, response: Any) -> dict[str, Any]:
    ran: dict[str, Any] = {}
    diff = claude_code.reported_diff(response, str(call.args.get("path", "")))
    if diff is not None:
        ran["diff"] = diff
    if isinstance(ran_input, dict) and canonical(storable_args(ran_input)) != canonical(
        call.native_input
    ):
        ran["input"] = storable_args(ran_input)
        ran["differs"] = (
            f"Warning: the input that ran differs from the one agentweb allowed (call {call.pk})."
        )
    return ran
