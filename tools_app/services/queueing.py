"""Sending a tool call's next task, with a note of when (what the sweep reads)."""

from __future__ import annotations

from django.utils import timezone

from tools_app import dispatch
from tools_app.models import ToolCall


def tool_call_dispatch(*, tool_call_id: int, task: str, queue: str | None) -> None:
    """Send a call's next task ("evaluate" or "execute") and note when it was sent."""
    dispatch.enqueue(f"tools_app.tasks.{task}_tool_call", tool_call_id, queue=queue)
    ToolCall.objects.filter(pk=tool_call_id).update(queued_at=timezone.now())
