"""The audit trail's one writer, and its retention.

Every service that records a person's action (a decision, a remembered rule, a policy
or skill change, a token, a cancelled session) calls `audit_record` inside its own
transaction: the entry exists exactly when the change does.
"""

from __future__ import annotations

from datetime import timedelta
from typing import Any

from django.conf import settings
from django.db import connection
from django.utils import timezone

from tools_app.models import AuditEntry, ToolCall

Via = AuditEntry.Via
Action = AuditEntry.Action


def audit_record(
    *,
    action: str,
    via: str,
    actor: Any = None,
    object_type: str,
    object_id: object = "",
    object_repr: str = "",
    session_id: int | None = None,
    tool_call_id: int | None = None,
    tool: str = "",
    policy: str = "",
    project: str = "",
    decision: str = "",
    preview_hash: str = "",
    reason: str = "",
    details: dict[str, Any] | None = None,
) -> AuditEntry:
    """Append one entry; `actor` is a user (or None: the system, a command); `project`:
    the project of the session it is about (empty: none, e.g. a policy change)."""
    if via not in Via.values:
        raise ValueError(f"unknown audit channel {via!r}")
    person = actor if getattr(actor, "is_authenticated", False) else None
    return AuditEntry.objects.create(
        action=action,
        via=via,
        actor_ref=person.pk if person is not None else None,
        actor_name=person.get_username() if person is not None else "",
        object_type=object_type,
        object_id=str(object_id),
        object_repr=object_repr[:300],
        session_ref=session_id,
        tool_call_ref=tool_call_id,
        tool=tool,
        policy_name=policy,
        project_name=project,
        decision=decision,
        preview_hash=preview_hash,
        reason=reason,
        details=details or {},
    )


def audit_tool_call(
    *, call: ToolCall, action: str, via: str, actor: Any, seen: str, **fields: Any
) -> AuditEntry:
    """An entry about a tool call: its session, tool and policy filled in."""
    return audit_record(
        action=action,
        via=via,
        actor=actor,
        object_type="tool_call",
        object_id=call.pk,
        object_repr=f"tool call {call.pk}: {call.tool}",
        session_id=call.session_id,
        tool_call_id=call.pk,
        tool=call.tool,
        policy=call.session.policy.name,
        project=call.session.project.name,
        preview_hash=seen,
        **fields,
    )


def via_for_scope(scope: str) -> str:
    """How a request came in, from its scope: the browser session, else an API token."""
    return Via.BROWSER if scope == "session" else Via.API


def audit_prune(*, now: Any = None) -> int:
    """Remove entries older than AGENTWEB_AUDIT_DAYS (0: keep them all), with one SQL
    DELETE: the queryset refuses deletes, so nothing else removes an entry."""
    days = settings.AGENTWEB_AUDIT_DAYS
    if days <= 0:
        return 0
    cutoff = (now or timezone.now()) - timedelta(days=days)
    table = connection.ops.quote_name(AuditEntry._meta.db_table)
    column = connection.ops.quote_name("created_at")
    with connection.cursor() as cursor:
        value = connection.ops.adapt_datetimefield_value(cutoff)
        cursor.execute(f"DELETE FROM {table} WHERE {column} < %s", [value])  # noqa: S608
        return int(cursor.rowcount)
