"""Reads for operators: the state that metrics and readiness report, each one query."""

from __future__ import annotations

from django.db import connection

from tools_app.models import Delivery, ToolCall


def tool_calls_waiting() -> int:
    """Calls awaiting a person now (the status index answers it)."""
    return ToolCall.objects.filter(status=ToolCall.Status.AWAITING_APPROVAL).count()


def deliveries_failed() -> int:
    """Notification deliveries that failed for good."""
    return Delivery.objects.filter(state=Delivery.State.FAILED).count()


def database_answers() -> bool:
    with connection.cursor() as cursor:
        cursor.execute("SELECT 1")
        return bool(cursor.fetchone() == (1,))
