"""A session's conversation as a turn reads it: kept in the process, read incrementally.

Messages are append-only (one row per `index`, 0, 1, 2 …, never changed or removed), so
a turn task reads only the rows stored since this process last read the session — the
previous turn's reply and tool results — and takes the rest from memory. Re-reading the
whole conversation made every turn cost more the longer the session ran (BENCHMARKS.md,
"Per call and per turn"). Another process's turns are no problem: their rows have higher
indexes and are read like any new ones. A few sessions are kept per process (the most
recently used).
"""

from __future__ import annotations

from collections import OrderedDict

from tools_app.models import AgentMessage, AgentSession

KEEP_SESSIONS = 16

# By (id, created_at): a test database flushed between tests gives ids out again.
_kept: OrderedDict[tuple[int, object], list[AgentMessage]] = OrderedDict()


def conversation_messages(session: AgentSession) -> list[AgentMessage]:
    """Every message of the session, in order (a new list the caller may change)."""
    key = (session.pk, session.created_at)
    known = _kept.pop(key, [])
    newer = list(session.messages.filter(index__gte=len(known)).order_by("index"))
    messages = known + newer
    if any(message.index != position for position, message in enumerate(newer, len(known))):
        messages = list(session.messages.order_by("index"))  # not contiguous: read afresh
    _kept[key] = messages
    while len(_kept) > KEEP_SESSIONS:
        _kept.popitem(last=False)
    return list(messages)
