"""Keeping promises across time and crashes: expiry, orphans, interrupted runs."""

from __future__ import annotations

import logging
import os
import socket
from datetime import timedelta
from typing import Any

from django.db.models import Q
from django.utils import timezone

from tools_app.core.tools.catalogue import facts_for
from tools_app.core.tools.overlay import sweep_stale_scratch
from tools_app.errors import Unavailable
from tools_app.live import events
from tools_app.models import AgentSession, ToolCall
from tools_app.services.lifecycle import CLOCK, WORKER, tool_call_move
from tools_app.services.queueing import (
    EVALUATE_TOOL_CALL,
    EXECUTE_TOOL_CALL,
    agent_turn_enqueue,
    tool_call_enqueue,
)
from tools_app.services.sessions import LIVE_STATUSES, OPEN_CALL_STATUSES

logger = logging.getLogger(__name__)

Status = ToolCall.Status
NEVER_SENT_AFTER = timedelta(seconds=30)
RESEND_AFTER = timedelta(minutes=5)
AGENT_IDLE_AFTER = timedelta(seconds=60)


def tool_call_expire_overdue() -> int:
    """Pending approvals past their deadline become `expired`; they never run later."""
    now = timezone.now()
    overdue = ToolCall.objects.filter(status=Status.AWAITING_APPROVAL, expires_at__lte=now)
    count = 0
    for call_id in overdue.values_list("pk", flat=True):
        count += _expire(call_id, now)
    return count


def _expire(call_id: int, now: object) -> int:
    note = "No reviewer decided before the approval deadline; the call did not run."
    call = ToolCall.objects.filter(pk=call_id).first()
    if call is None:
        return 0
    return int(tool_call_move(call, "expire", by=CLOCK, result=note, finished_at=now))


def tool_call_requeue_orphans() -> int:
    """Calls whose task message was lost (Redis down, a crash before sending) are sent again.

    Never sent: after 30 s. Sent but not picked up: again after 5 minutes (a duplicate is
    harmless, since evaluation and execution claim the call, but a busy queue should not
    fill with copies).
    """
    now = timezone.now()
    lost = Q(queued_at__isnull=True, created_at__lte=now - NEVER_SENT_AFTER) | Q(
        queued_at__lte=now - RESEND_AFTER
    )
    pending = ToolCall.objects.filter(lost, status=Status.PENDING).exclude(session__worker_queue="")
    # A gateway call never runs here: the agent runs it once its hook is answered.
    approved = ToolCall.objects.filter(lost, status=Status.APPROVED, native_tool="")
    sent = 0
    try:
        for call in pending.select_related("session"):
            tool_call_enqueue(tool_call_id=call.pk, task=EVALUATE_TOOL_CALL, session=call.session)
            sent += 1
        for call in approved.select_related("session"):
            tool_call_enqueue(tool_call_id=call.pk, task=EXECUTE_TOOL_CALL, session=call.session)
            sent += 1
    except Unavailable:
        logger.warning("broker unavailable; orphaned calls are retried on the next sweep")
    return sent


def tool_call_recover_interrupted(*, host: str | None = None) -> int:
    """Calls left `running` by a dead process on this host.

    Read-only calls are simply run again; a call that may have changed something
    (a command, a commit, a pull request) is marked failed for a person to check.
    """
    host = host or socket.gethostname()
    recovered = 0
    for call in ToolCall.objects.filter(status=Status.RUNNING, runner__startswith=f"{host}:"):
        if runner_alive(call.runner):
            continue
        recovered += _recover(call)
    return recovered


def _recover(call: ToolCall) -> int:
    same_runner = Q(runner=call.runner)
    if not facts_for(call.tool).rerunnable:  # may have partly changed something
        note = (
            f"The worker running this {call.tool} stopped before it finished. It may have "
            "partly run, so it was not run again: check the workspace before retrying."
        )  # final: the session's agent goes on from here
        fields: dict[str, Any] = {"result": note, "runner": "", "finished_at": timezone.now()}
        return int(tool_call_move(call, "recover_fail", by=WORKER, where=same_runner, **fields))
    if not tool_call_move(
        call, "recover_rerun", by=WORKER, where=same_runner, result="", runner="", finished_at=None
    ):
        return 0
    tool_call_enqueue(tool_call_id=call.pk, task=EXECUTE_TOOL_CALL, session=call.session)
    return 1


def runner_alive(runner: str) -> bool:
    _, _, pid = runner.partition(":")
    if not pid.isdigit():
        return False
    try:
        os.kill(int(pid), 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True  # alive, owned by another user
    return True


def agent_recover_turns(*, host: str | None = None) -> int:
    """Model turns claimed by a dead process on this host: freed and asked again (their
    answer was never recorded, so the session keeps exactly one answer per turn)."""
    host = host or socket.gethostname()
    recovered = 0
    claimed = AgentSession.objects.filter(
        status__in=LIVE_STATUSES, turn_runner__startswith=f"{host}:"
    )
    for session in claimed:
        if runner_alive(session.turn_runner):
            continue
        freed = AgentSession.objects.filter(pk=session.pk, turn_runner=session.turn_runner).update(
            turn_runner=""
        )
        if freed:
            note = {"reason": "The worker asking the model stopped before the answer came."}
            events.event_append(session_id=session.pk, type="agent.turn_retried", data=note)
            agent_turn_enqueue(session=session)
            recovered += freed
    return recovered


def agent_requeue_stalled() -> int:
    """Runtime sessions with nothing open and no event for a minute lost their turn task
    (a crash, Redis down): send it again. A spare turn task finds nothing to do."""
    quiet_since = timezone.now() - AGENT_IDLE_AFTER
    stalled = (
        AgentSession.objects.filter(status=AgentSession.Status.RUNNING, turn_runner="")
        .exclude(model="")
        .exclude(worker_queue="")
        .exclude(tool_calls__status__in=OPEN_CALL_STATUSES)
        .exclude(events__created_at__gt=quiet_since)
    )
    sent = 0
    try:
        for session in stalled.distinct():
            agent_turn_enqueue(session=session)
            sent += 1
    except Unavailable:
        logger.warning("broker unavailable; stalled agent sessions are retried on the next sweep")
    return sent


def sandbox_sweep_scratch() -> int:
    """Remove the command scratch dirs that dead worker processes left in the temp dir."""
    removed = sweep_stale_scratch()
    if removed:
        logger.info("removed %d scratch dirs of dead worker processes", removed)
    return removed
