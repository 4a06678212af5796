"""Reads for the session pages: the list (keyset pages) and one session's timeline.

Kept apart from `selectors.py` because they shape rows for templates, not for the API.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from django.db.models import Count, IntegerField, OuterRef, Q, QuerySet, Subquery, Value
from django.db.models.functions import Coalesce

from tools_app.models import AgentMessage, AgentSession, Decision, ToolCall
from tools_app.selectors.pagination import cursor_decode, cursor_encode

PAGE_SIZE = 50
FOLD_CHARS = 800  # a result longer than this, or with more lines, starts folded
FOLD_LINES = 15


@dataclass
class SessionPage:
    sessions: Sequence[AgentSession]
    next_cursor: str | None


def _waiting_count() -> Subquery:
    """Per row of the page, not a GROUP BY over the whole table: a page stays one query."""
    awaiting = ToolCall.objects.filter(
        session=OuterRef("pk"), status=ToolCall.Status.AWAITING_APPROVAL
    )
    counted = awaiting.order_by().values("session").annotate(n=Count("id"))
    return Subquery(counted.values("n")[:1], output_field=IntegerField())


def _unapplied_count() -> Subquery:
    """Calls whose run applied nothing of what it changed (refused whole), or lacked the
    network it tried to reach, or had a connection refused; a held effect shows as a
    waiting call already."""
    missed = ToolCall.objects.filter(session=OuterRef("pk")).filter(
        Q(outcome=ToolCall.Outcome.REFUSED)
        | Q(network__in=[ToolCall.Network.MISSING, ToolCall.Network.REFUSED])
    )
    counted = missed.order_by().values("session").annotate(n=Count("id"))
    return Subquery(counted.values("n")[:1], output_field=IntegerField())


def session_list_page(
    sessions: QuerySet[AgentSession], *, status: str = "", cursor: str = "", size: int = PAGE_SIZE
) -> SessionPage:
    """Newest first, `size` at a time after the cursor's id; a bad cursor starts over."""
    if status:
        sessions = sessions.filter(status=status)
    try:
        after = cursor_decode(cursor) if cursor else None
    except ValueError:
        after = None
    if after is not None:
        sessions = sessions.filter(id__lt=after)
    rows = sessions.order_by("-id").only(
        "id", "status", "repo", "model", "task", "kind", "created_at", "parent_id"
    )
    rows = rows.annotate(
        waiting=Coalesce(_waiting_count(), Value(0)),
        unapplied=Coalesce(_unapplied_count(), Value(0)),
    )
    found = list(rows[: size + 1])
    shown = found[:size]
    more = len(found) > size
    return SessionPage(shown, cursor_encode(shown[-1].pk) if more else None)


@dataclass
class TimelineItem:
    """A model message or a tool call, in the order they happened."""

    kind: str  # "message" or "call"
    at: datetime
    order: int
    message: AgentMessage | None = None
    call: ToolCall | None = None
    decision: Decision | None = None
    extra: dict[str, Any] = field(default_factory=dict)


def session_timeline(session: AgentSession) -> list[TimelineItem]:
    """Every message and call of one session: two queries, whatever its length."""
    calls = session.tool_calls.select_related("human__user").order_by("id")
    messages = session.messages.order_by("index")
    items = [
        TimelineItem(
            "message", message.created_at, message.index, message=message,
            extra=_message_parts(message),
        )
        for message in messages
    ]  # fmt: skip
    items += [
        TimelineItem("call", call.created_at, call.pk, call=call, decision=_human(call))
        for call in calls
    ]
    return sorted(items, key=lambda item: (item.at, item.kind == "call", item.order))


def _message_parts(message: AgentMessage) -> dict[str, Any]:
    """What a template shows of a stored conversation message (runtime/conversation.py)."""
    content = message.content if isinstance(message.content, dict) else {}
    text = content.get("content")
    uses = [
        {"name": use.get("name", ""), "args": json.dumps(use.get("args", {}), indent=2)}
        for use in content.get("tool_uses") or []
        if isinstance(use, dict)
    ]
    results = [result for result in content.get("results") or [] if isinstance(result, dict)]
    return {"text": text if isinstance(text, str) else "", "uses": uses, "results": results}


def long_text(text: str) -> bool:
    """A result this long starts folded wherever a call is shown."""
    return len(text) > FOLD_CHARS or text.count("\n") > FOLD_LINES


def _human(call: ToolCall) -> Decision | None:
    try:
        return call.human
    except Decision.DoesNotExist:
        return None


def session_children(session: AgentSession) -> list[AgentSession]:
    """Sub-agents three levels down in three queries (sessions nest at most two deep by
    default); a deeper one is fetched when shown."""
    return list(session.children.order_by("id").prefetch_related("children__children"))
