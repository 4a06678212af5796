"""The event log: every state change appends an Event (monotonic `seq` per session)
and is published to the Channels groups after the transaction commits.

A publish sends each group one message: `session.event` for a lone event,
`session.events` for several in seq order, which the receivers (`consumers.py`,
`hub.py`) take apart again: a client still gets a frame per event. An allowed hook's
three events went out as six messages, a Redis round trip each; now as two, in one
round trip on the pub/sub layer (`layer.py`).
"""

from __future__ import annotations

import functools
import logging
from collections.abc import Sequence
from typing import Any

from asgiref.sync import async_to_sync
from channels.layers import InMemoryChannelLayer, get_channel_layer
from django.db import connection, transaction
from django.utils import timezone

from tools_app.live import publisher
from tools_app.models import AgentSession, Event, ToolCall
from tools_app.selectors.decisions import quorum_status
from tools_app.sql import rows

logger = logging.getLogger(__name__)

APPROVALS_GROUP = "approvals"
# The types of the groups' messages: one event (`event`), or several (`events`).
SESSION_EVENT, SESSION_EVENTS = "session.event", "session.events"


def session_group(session_id: int) -> str:
    return f"session.{session_id}"


def event_append(*, session_id: int, type: str, data: dict[str, Any]) -> Event:
    """Append an event in the caller's transaction; publish it once that commits."""
    return events_append(session_id=session_id, items=[(type, data)])[0]


FIRST_SEQ = 1  # a session's first event


def session_store_with_first_event(
    session: AgentSession, *, type: str, data: dict[str, Any]
) -> Event | None:
    """Store the new `session`, its counter already at FIRST_SEQ (`last_event_seq` in its
    INSERT: no seq to reserve), and its first event: on PostgreSQL in one statement,
    which needs no transaction of its own; on SQLite in one transaction. None, and
    nothing written, when a session already holds one of its unique keys (the same agent
    session's first event, sent twice at once). Published once stored."""
    assert session.last_event_seq == FIRST_SEQ, "the session's INSERT reserves the first seq"
    if connection.vendor == "postgresql":
        event = _session_with_event(session, (type, data))
    else:
        with transaction.atomic(savepoint=False):
            if not rows.insert_unless_taken(session):
                return None
            event = rows.insert(_unsaved(session.pk, [(type, data)], FIRST_SEQ))[0]
    if event is None:
        return None
    project_of = None if session.project_id is None else {session.pk: session.project_id}
    transaction.on_commit(lambda: publish_all([event], project_of=project_of))
    return event


def _session_with_event(session: AgentSession, item: Item) -> Event | None:
    event = _unsaved(0, [item], FIRST_SEQ)[0]  # its session's id is the INSERT's
    session_insert, session_row = rows.unless_taken_sql(session)
    with connection.cursor() as cursor:
        cursor.execute(
            _session_with_event_text(session_insert), [*session_row, *rows.row_values([event])]
        )
        returned = cursor.fetchone()
    if returned is None:  # the session's INSERT met a unique key: nothing was stored
        return None
    rows.stored(session, returned[1])
    event.session_id = session.pk
    rows.stored(event, returned[0])
    return event


@functools.cache
def _session_with_event_text(session_insert: str) -> str:
    """The session's INSERT unless one of its unique keys is taken (`session_insert`),
    and, only if it was stored, its first event's INSERT; returns the event's id and the
    session's."""
    quote = connection.ops.quote_name
    names = rows.column_names(Event)
    session_column = quote("session_id")
    picked = ", ".join("s.id" if n == session_column else f"v.{n}" for n in names)
    # Only quoted names from the models are interpolated.
    return (
        f"WITH s AS ({session_insert}) "  # noqa: S608
        f"INSERT INTO {quote(Event._meta.db_table)} ({', '.join(names)}) "
        f"SELECT {picked} FROM s, (VALUES ({', '.join(['%s'] * len(names))})) "
        f"AS v ({', '.join(names)}) RETURNING {quote('id')}, (SELECT id FROM s)"
    )


def events_append(*, session_id: int, items: Sequence[tuple[str, dict[str, Any]]]) -> list[Event]:
    """Append events with consecutive seqs in the caller's transaction; publish them
    together, in order, once that commits. Inside the caller's transaction no savepoint
    is taken: a failure here fails the caller's transaction anyway."""
    with transaction.atomic(savepoint=False):
        if connection.vendor == "postgresql":
            created, project_id = _append_with_seqs(session_id, items)
        else:
            last, project_id = _take_seqs(session_id, len(items))
            created = rows.insert(_unsaved(session_id, items, last - len(items) + 1))
    transaction.on_commit(lambda: publish_all(created, project_of={session_id: project_id}))
    return created


def _unsaved(session_id: int, items: Sequence[Item], first_seq: int) -> list[Event]:
    """The events of `items`, not yet stored, numbered on from `first_seq`."""
    now = timezone.now()
    return [
        Event(session_id=session_id, seq=first_seq + i, type=type, data=data, created_at=now)
        for i, (type, data) in enumerate(items)
    ]


def _append_with_seqs(session_id: int, items: Sequence[Item]) -> tuple[list[Event], int]:
    """PostgreSQL: the seqs reserved and the events stored in one statement (a
    data-modifying `WITH`, which SQLite lacks), one round trip where `_take_seqs` and the
    INSERT were two. The events, each its seq set; the session's project."""
    created = _unsaved(session_id, items, 1)
    returned = _run_append(_append_text(len(created)), [], session_id, created)
    if not returned:
        raise AgentSession.DoesNotExist(f"There is no session {session_id}.")
    return _numbered(created, returned), int(returned[0][3])


def call_store_with_events(
    call: ToolCall, items: Sequence[Item], *, durable: bool = True
) -> list[Event] | None:
    """Store the new `call`, and `items` after the session's last event, each naming the
    call (`tool_call`, its id): on PostgreSQL in one statement, which needs no transaction
    of its own (BEGIN and COMMIT were two round trips of an allowed hook's nine); on
    SQLite in one transaction. None, and nothing written, when a call already holds one
    of `call`'s unique keys (the same tool use, sent twice). Published once stored.

    Not `durable` (on PostgreSQL, out of a transaction): the statement's commit does not
    wait for the write-ahead log to reach the disk (`synchronous_commit` off for it
    alone). It is visible at once and never half written; a crash of the database server
    in the next fraction of a second (three times `wal_writer_delay` at most) may lose
    it, as SQLite's `synchronous=NORMAL` may on a power cut. Any later durable commit
    flushes it too."""
    if connection.vendor == "postgresql":
        lazy = not durable and not connection.in_atomic_block  # else the caller's commit
        stored = _call_with_seqs(call, items, lazy_commit=lazy)
    else:
        stored = _call_then_seqs(call, items)
    if stored is None:
        return None
    created, project_id = stored
    transaction.on_commit(lambda: publish_all(created, project_of={call.session_id: project_id}))
    return created


def _call_with_seqs(
    call: ToolCall, items: Sequence[Item], *, lazy_commit: bool
) -> tuple[list[Event], int] | None:
    insert = rows.unless_taken_sql(call)
    written = _call_write_with_events(call.session_id, insert, items, lazy_commit=lazy_commit)
    if written is None:  # the call's INSERT met a unique key: nothing was stored
        return None
    created, returned = written
    rows.stored(call, returned[0][4])
    for event in created:
        event.data["tool_call"] = call.pk
    return created, int(returned[0][3])


def call_moved_with_events(
    call: ToolCall, claim: tuple[str, list[Any]], items: Sequence[Item]
) -> list[Event] | None:
    """On PostgreSQL: `claim`, the call's conditional UPDATE returning its id
    (`rows.update_if_sql`), and `items` after the session's last event, in one statement
    that needs no transaction of its own (a BEGIN, a COMMIT and a round trip for the claim
    fewer). None, and nothing written, when the claim finds the call moved on. Published
    once committed."""
    written = _call_write_with_events(call.session_id, claim, items)
    if written is None:
        return None
    created, returned = written
    project_of = {call.session_id: int(returned[0][3])}
    transaction.on_commit(lambda: publish_all(created, project_of=project_of))
    return created


def _call_write_with_events(
    session_id: int, write: tuple[str, list[Any]], items: Sequence[Item], *,
    lazy_commit: bool = False,
) -> tuple[list[Event], list[tuple[Any, ...]]] | None:  # fmt: skip
    """`write`, a statement on one call returning its id, then `items` after the session's
    last event, as one statement (`_append_text`): the events numbered and the rows it
    returned; None when `write` wrote no row, and then nothing was written."""
    created = _unsaved(session_id, items, 1)
    sql = _append_text(len(created), write[0], lazy_commit=lazy_commit)
    returned = _run_append(sql, write[1], session_id, created)
    if not returned:
        return None
    return _numbered(created, returned), returned


def _call_then_seqs(call: ToolCall, items: Sequence[Item]) -> tuple[list[Event], int] | None:
    with transaction.atomic(savepoint=False):
        if not rows.insert_unless_taken(call):
            return None
        named = [(type, {**data, "tool_call": call.pk}) for type, data in items]
        last, project_id = _take_seqs(call.session_id, len(named))
        created = rows.insert(_unsaved(call.session_id, named, last - len(named) + 1))
    return created, project_id


def _run_append(
    sql: str, call_row: list[Any], session_id: int, created: list[Event]
) -> list[tuple[Any, ...]]:
    """Run an `_append_text` statement: the new call's row if any, the session's counter,
    then `created`'s rows, each counting its seq from 1 (its place among them) until the
    database gives it."""
    params = [*call_row, len(created), session_id, *rows.row_values(created)]
    with connection.cursor() as cursor:
        cursor.execute(sql, params)
        return list(cursor.fetchall())


def _numbered(created: list[Event], returned: list[tuple[Any, ...]]) -> list[Event]:
    by_offset = {event.seq: event for event in created}
    for pk, seq, offset, *_ in returned:
        event = by_offset[offset]
        rows.stored(event, pk)
        event.seq = seq
    return created


@functools.cache
def _append_text(count: int, call_write: str = "", *, lazy_commit: bool = False) -> str:
    """`count` events' INSERT, their seqs the last `count` of the session's counter, which
    the same statement moves on; each row returns its id, seq, offset (its seq's place
    among them, from 1) and the session's project. `call_write`: a statement on one call
    first, returning its id (a new call's INSERT, `rows.unless_taken_sql`, or a move's
    conditional UPDATE), which the events name in their data's `tool_call`, and without
    whose row nothing else is written; each row also returns the call's id.
    `lazy_commit`: `synchronous_commit` off until the statement's own transaction ends
    (`set_config`'s `is_local`; a SELECT in a WITH runs only when read, hence `a` joined)."""
    quote = connection.ops.quote_name
    session, last, seq = quote(AgentSession._meta.db_table), quote("last_event_seq"), quote("seq")
    project, names = quote("project_id"), rows.column_names(Event)
    values = ", ".join(["(" + ", ".join(["%s"] * len(names)) + ")"] * count)
    first_before = f"s.{last} - {count}"  # the seq before the first reserved
    picked = {n: f"v.{n}" for n in names} | {seq: f"{first_before} + v.{seq}"}
    call, only_if, sources, call_id = "", "", "s", ""
    if call_write:
        call = f"c AS ({call_write}), "
        only_if, sources, call_id = " AND EXISTS (SELECT FROM c)", "c, s", ", (SELECT id FROM c)"
        data = quote("data")
        picked[data] = f"jsonb_set(v.{data}, '{{tool_call}}', to_jsonb(c.id))"
    if lazy_commit:
        call = f"a AS (SELECT set_config('synchronous_commit', 'off', true)), {call}"
        sources = f"a, {sources}"
    # Only quoted names from the models and the row count are interpolated.
    return (
        f"WITH {call}s AS (UPDATE {session} SET {last} = {last} + %s "  # noqa: S608
        f"WHERE id = %s{only_if} RETURNING {last}, {project}) "
        f"INSERT INTO {quote(Event._meta.db_table)} ({', '.join(names)}) "
        f"SELECT {', '.join(picked.values())} "
        f"FROM {sources}, (VALUES {values}) AS v ({', '.join(names)}) "
        f"RETURNING {quote('id')}, {seq}, {seq} - (SELECT {last} - {count} FROM s), "
        f"(SELECT {project} FROM s){call_id}"
    )


def _take_seqs(session_id: int, count: int) -> tuple[int, int]:
    """Reserve `count` seqs with one row-locking update; the last one reserved, and the
    session's project (whose inbox stream hears of its calls).

    `UPDATE … RETURNING` (SQLite ≥ 3.35, PostgreSQL) is one statement where an update
    and two selects were three.
    """
    table = connection.ops.quote_name(AgentSession._meta.db_table)
    column = connection.ops.quote_name("last_event_seq")
    project = connection.ops.quote_name("project_id")
    # Only quoted names from the model are interpolated; the values are parameters.
    sql = (
        f"UPDATE {table} SET {column} = {column} + %s WHERE id = %s "  # noqa: S608
        f"RETURNING {column}, {project}"
    )
    with connection.cursor() as cursor:
        cursor.execute(sql, [count, session_id])
        row = cursor.fetchone()
    if row is None:
        raise AgentSession.DoesNotExist(f"There is no session {session_id}.")
    return int(row[0]), int(row[1])


Item = tuple[str, dict[str, Any]]  # an event not yet stored: its type and data


def tool_call_event(call: ToolCall, type: str) -> Event:
    """An event about a tool call, carrying what a reviewer's card shows."""
    return event_append(session_id=call.session_id, type=type, data=tool_call_payload(call))


def tool_call_item(call: ToolCall, type: str) -> Item:
    """The same event, as the call is now, to be stored later in a batch."""
    return (type, tool_call_payload(call))


def tool_call_events(
    call: ToolCall, statuses: Sequence[str], *, first: Sequence[Item] = ()
) -> list[Event]:
    """One event per status the call went through in one transaction, in that order,
    after the events in `first` (stored in the same batch)."""
    items = tool_call_items(call, statuses)
    return events_append(session_id=call.session_id, items=[*first, *items])


def tool_call_items(call: ToolCall, statuses: Sequence[str]) -> list[Item]:
    """The events of `tool_call_events`, not yet stored."""
    payload = tool_call_payload(call)
    return [(f"tool_call.{status}", {**payload, "status": status}) for status in statuses]


def tool_call_payload(call: ToolCall) -> dict[str, Any]:
    return {
        "tool_call": call.pk,
        "tool": call.tool,
        "status": call.status,
        "decision": call.verdict,
        "reason": call.reason,
        "rule": call.rule,
        "outcome": call.outcome,
        "outcome_detail": call.outcome_detail,
        "held_call": call.held_call_id,
        "network": call.network,
        "connections": call.connections,
    } | _quorum(call)


def _quorum(call: ToolCall) -> dict[str, Any]:
    """Who has approved a call that needs several people (cards and agents show it)."""
    status = quorum_status(call)
    return {"approvals": status} if status is not None else {}


def event_message(event: Event) -> dict[str, Any]:
    return {
        "type": event.type,
        "seq": event.seq,
        "session": event.session_id,
        "id": event.pk,
        **event.data,
    }


def approvals_group(project_id: int) -> str:
    """The inbox stream of one project's reviewers: a reviewer's inbox socket joins the
    streams of the projects they review, and hears nothing of the others."""
    return f"{APPROVALS_GROUP}.project.{project_id}"


def event_groups(event: Event, project_of: dict[int, int]) -> list[str]:
    """The session's stream and, for a call's event, its project's inbox stream
    (`project_of`: session id -> project id)."""
    groups = [session_group(event.session_id)]
    if event.type.startswith("tool_call."):
        groups.append(approvals_group(project_of[event.session_id]))
    return groups


def _projects_of(events: Sequence[Event]) -> dict[int, int]:
    calls = {event.session_id for event in events if event.type.startswith("tool_call.")}
    if not calls:
        return {}
    return dict(AgentSession.objects.filter(pk__in=calls).values_list("pk", "project_id"))


def publish(event: Event) -> None:
    publish_all([event])


def publish_all(events: Sequence[Event], *, project_of: dict[int, int] | None = None) -> None:
    """Tell live clients, in seq order. A failure here loses nothing: clients catch up
    from the log. `project_of` (session id -> project id), when the caller knows it,
    spares a query."""
    layer = get_channel_layer()
    if layer is None or not events:
        return
    try:
        if project_of is None:
            project_of = _projects_of(events)
        sends = group_messages(events, project_of)

        async def send() -> None:
            send_all = getattr(layer, "group_send_all", None)  # our pub/sub layer's
            if send_all is not None:
                await send_all(sends)
                return
            for group, message in sends:
                await layer.group_send(group, message)

        if isinstance(layer, InMemoryChannelLayer):
            async_to_sync(send)()  # its queues live in the caller's event loop
        else:  # one long-lived loop per process, no loop per event
            publisher.run(send(), failed=lambda exc: _report_unpublished(events[0], exc))
    except Exception as exc:
        _report_unpublished(events[0], exc)


def group_messages(
    events: Sequence[Event], project_of: dict[int, int]
) -> list[tuple[str, dict[str, Any]]]:
    """One message per group (in the order the groups first appear) with its events in
    seq order: a lone event as `session.event`, several as `session.events`."""
    by_group: dict[str, list[dict[str, Any]]] = {}
    for event in events:
        message = event_message(event)
        for group in event_groups(event, project_of):
            by_group.setdefault(group, []).append(message)
    return [
        (group, {"type": SESSION_EVENT, "event": found[0]})
        if len(found) == 1
        else (group, {"type": SESSION_EVENTS, "events": found})
        for group, found in by_group.items()
    ]


_unpublished = {"count": 0}


def _report_unpublished(event: Event, exc: BaseException) -> None:
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
