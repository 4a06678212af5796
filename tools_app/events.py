"""The event log: every state change appends an Event (monotonic `seq` per session)
and is published to the Channels groups after the transaction commits."""

from __future__ import annotations

import logging
from typing import Any

from asgiref.sync import async_to_sync
from channels.layers import get_channel_layer
from django.db import transaction
from django.db.models import F

from tools_app.models import AgentSession, Event, ToolCall

logger = logging.getLogger(__name__)

APPROVALS_GROUP = "approvals"


def session_group(session_id: int) -> str:
    return f"session.{session_id}"


def event_append(*, session_id: int, type: str, data: dict[str, Any]) -> Event:
    """Append an event in the caller's transaction; publish it once that commits."""
    with transaction.atomic():
        AgentSession.objects.filter(pk=session_id).update(last_event_seq=F("last_event_seq") + 1)
        seq = AgentSession.objects.values_list("last_event_seq", flat=True).get(pk=session_id)
        event = Event.objects.create(session_id=session_id, seq=seq, type=type, data=data)
    transaction.on_commit(lambda: publish(event))
    return event


def tool_call_event(call: ToolCall, type: str) -> Event:
    """An event about a tool call, carrying what a reviewer's card shows."""
    return event_append(session_id=call.session_id, type=type, data=tool_call_payload(call))


def tool_call_payload(call: ToolCall) -> dict[str, Any]:
    return {
        "tool_call": call.pk,
        "tool": call.tool,
        "status": call.status,
        "decision": call.decision,
        "reason": call.reason,
        "rule": call.rule,
    }


def event_message(event: Event) -> dict[str, Any]:
    return {
        "type": event.type,
        "seq": event.seq,
        "session": event.session_id,
        "id": event.pk,
        **event.data,
    }


def publish(event: Event) -> None:
    """Tell live clients. A failure here loses nothing: clients catch up from the log."""
    layer = get_channel_layer()
    if layer is None:
        return
    message = {"type": "session.event", "event": event_message(event)}
    groups = [session_group(event.session_id)]
    if event.type.startswith("tool_call."):
        groups.append(APPROVALS_GROUP)

    async def send() -> None:
        for group in groups:
            await layer.group_send(group, message)

    try:
        async_to_sync(send)()  # one event loop hop for every group
    except Exception as exc:
        _report_unpublished(event, exc)


_unpublished = {"count": 0}


def _report_unpublished(event: Event, exc: Exception) -> None:
    """Say once per process that live updates are off (Redis down, or not started)."""
    _unpublished["count"] += 1
    level = logging.WARNING if _unpublished["count"] == 1 else logging.DEBUG
    logger.log(
        level,
        "live updates are off: event %s of session %s was not published (%s); "
        "it is kept in the event log for clients to catch up",
        event.seq,
        event.session_id,
        exc.__class__.__name__,
    )
