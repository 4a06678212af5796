"""What an agent's tool did, recorded on its gateway call: a PostToolUse (or Gemini CLI's
AfterTool, which names no tool use) reports the output, the real patch and the input that
ran, and the call, allowed or approved before, ends succeeded or failed."""

from __future__ import annotations

from typing import Any

from django.utils import timezone

from tools_app.core.gateway import claude_code
from tools_app.core.tools.jsonsafe import storable_args
from tools_app.models import AgentSession, Project, ToolCall
from tools_app.selectors.decisions import approval_kept, with_approval
from tools_app.services.gateway import (
    GATEWAY_RUNNER,
    canonical,
    gateway_session_for,
    session_external_id,
)
from tools_app.services.lifecycle import AGENT, tool_call_move
from tools_app.sql.prepared import Prepared

Status = ToolCall.Status
Kind = AgentSession.Kind


def gateway_call_report(
    *, user: Any, external_id: str, agent_id: str, cwd: str, policy: str,
    project: Project | None, tool_use_id: str, native_tool: str, succeeded: bool,
    ran_input: Any, response: Any,
) -> ToolCall | None:  # fmt: skip
    """Record what an agent's tool did on its call: the call of the tool use, read with its
    session in one statement (a PostToolUse follows the PreToolUse that stored it); else,
    through the session (made if it is new), the running call of that input (an
    after-event without the before-event's id: Gemini CLI's). None: no call."""
    found = _REPORTED.models(
        creator=user.pk,
        external_id=session_external_id(external_id, agent_id),
        tool_use_id=tool_use_id,
    )
    call = next((approval_kept(each) for each in found), None)
    if call is None:
        session = gateway_session_for(
            user=user, external_id=external_id, cwd=cwd, agent_id=agent_id, policy=policy,
            project=project,
        )  # fmt: skip
        call = _running_with_input(session, native_tool, ran_input)
    if call is None:
        return None
    return _record_ran(call, succeeded=succeeded, ran_input=ran_input, response=response)


def _record_ran(call: ToolCall, *, succeeded: bool, ran_input: Any, response: Any) -> ToolCall:
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


def _reported_wanted(creator: int, external_id: str, tool_use_id: str) -> Any:
    """The call of one tool use, its session named as `_sessions_wanted` names it: through
    the session's unique key, then the unique index of tool uses (an empty id names none,
    and the index leaves those out; `first()`'s ORDER BY made SQLite walk the session's
    calls instead), and whether a person approved it, in the same statement."""
    calls = ToolCall.objects.filter(
        session__creator_id=creator, session__external_id=external_id,
        session__kind=Kind.GATEWAY, tool_use_id=tool_use_id,
    )  # fmt: skip
    return with_approval(calls.exclude(tool_use_id="").order_by())


_REPORTED = Prepared(ToolCall, _reported_wanted, creator=int, external_id=str, tool_use_id=str)


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
