"""Sending work to the workers, always after the data it needs is committed.

A task sent inside a transaction could run before the commit (and find nothing) or
after a rollback (and do what was undone), so every send goes through
`transaction.on_commit`, even when a caller wraps a service in its own transaction.
Outside a transaction the hook runs at once, so a broker that is down still surfaces
as Unavailable (HTTP 503) to the caller.
"""

from __future__ import annotations

from django.db import transaction
from django.utils import timezone

from tools_app import dispatch
from tools_app.models import ToolCall


def tool_call_dispatch(*, tool_call_id: int, task: str, queue: str | None) -> None:
    """Send a call's next task ("evaluate" or "execute") and note when it was sent."""

    def send() -> None:
        dispatch.enqueue(f"tools_app.tasks.{task}_tool_call", tool_call_id, queue=queue)
        ToolCall.objects.filter(pk=tool_call_id).update(queued_at=timezone.now())

    transaction.on_commit(send)


def session_prepare_dispatch(*, session_id: int) -> None:
    """Send a session's clone task to whichever worker host picks it up."""
    transaction.on_commit(lambda: dispatch.enqueue("tools_app.tasks.prepare_session", session_id))
