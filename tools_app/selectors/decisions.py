"""Whether a person approved a tool call: read once, then kept on the call.

Its own module because the lifecycle (which marks a call judged by nobody) and the
notifications it calls (a finished call's message) both ask it.
"""

from __future__ import annotations

from typing import Any

from django.db.models import Exists, OuterRef, QuerySet

from tools_app.core.engine import preview_hash
from tools_app.models import Decision, ToolCall

APPROVED_BY_PERSON = "_approved_by_person"  # where the answer is kept on the instance
APPROVED_COLUMN = "approved_by_a_person"  # the column `with_approval` reads it into


def approved_by_person(call: ToolCall) -> bool:
    """A person approved this call: their `Decision` row says so, not the policy's verdict
    (a call the policy sent to a person is not approved until one decides).

    Once the call runs (or ended) no decision can come any more: the answer is kept on
    the instance, so that running and finishing it (the sandbox, the redaction, the
    session's refresh) ask the database once, not three times."""
    known: bool | None = call.__dict__.get(APPROVED_BY_PERSON)
    if known is not None:
        return known
    found = _approvals().filter(tool_call_id=call.pk).exists()
    _keep(call, found)
    return found


def with_approval(calls: QuerySet[ToolCall]) -> QuerySet[ToolCall]:
    """`calls`, each read with whether a person approved it, in the same statement (an
    EXISTS); `approval_kept` keeps that on the call as `approved_by_person` would."""
    approved = Exists(_approvals().filter(tool_call=OuterRef("pk")))
    return calls.annotate(**{APPROVED_COLUMN: approved})


def approval_kept(call: ToolCall) -> ToolCall:
    """A call read `with_approval`, its answer kept for `approved_by_person`."""
    _keep(call, bool(getattr(call, APPROVED_COLUMN)))
    return call


def _approvals() -> QuerySet[Decision]:
    return Decision.objects.filter(decision=Decision.Choice.APPROVE)


def _keep(call: ToolCall, found: bool) -> None:
    """Kept on the instance once no decision can come any more."""
    if call.status == ToolCall.Status.RUNNING or call.status in ToolCall.FINAL_STATUSES:
        call.__dict__[APPROVED_BY_PERSON] = found


def mark_judged_by_nobody(call: ToolCall) -> None:
    """A call judged and run, or ended, by the policy alone: no person approved it."""
    call.__dict__[APPROVED_BY_PERSON] = False


def quorum_status(call: ToolCall) -> dict[str, Any] | None:
    """Who has approved a call that needs several approvals (on its arguments as they are
    now), how many it needs and from which group; None for a call one person decides."""
    if call.approvals_needed <= 1 and not call.approvers:
        return None
    shown = preview_hash(call.preview)
    names = [
        approval.user.get_username()
        for approval in call.approvals.select_related("user").filter(preview_hash=shown)
    ]
    return {
        "needed": call.approvals_needed,
        "group": call.approvers,
        "approved_by": names,
        "still_needed": max(0, call.approvals_needed - len(names)),
    }
