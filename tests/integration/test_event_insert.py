"""Events are stored by one multi-row INSERT (`live/events.py`), on SQLite and on
PostgreSQL alike: what is read back is what was appended, with consecutive seqs."""

from __future__ import annotations

from typing import Any

import pytest
from django.contrib.auth.models import User
from django.db import connection, transaction
from django.test.utils import CaptureQueriesContext

from tools_app.live import events
from tools_app.models import AgentSession, Event, Policy, ToolCall

pytestmark = [pytest.mark.django_db, pytest.mark.postgres]

DATA: list[dict[str, Any]] = [
    {"tool_call": 1, "args": {"path": "ü/ñ.txt", "lines": [1, 2, None]}, "ok": True},
    {"nested": {"deep": {"deeper": ["a", {"b": 1.5}]}}, "quote": 'it\'s "quoted" \\ \x7f'},
    {},
]


def test_appended_events_read_back_as_they_were_given(creator: User) -> None:
    session = AgentSession.objects.create(
        task="t", policy=Policy.objects.get(name="default"), creator=creator
    )
    with transaction.atomic():
        events.event_append(session_id=session.pk, type="session.created", data={"n": 0})
        created = events.events_append(
            session_id=session.pk, items=[(f"type.{n}", data) for n, data in enumerate(DATA)]
        )
    stored = list(Event.objects.filter(session=session).order_by("seq"))
    assert [(e.seq, e.type) for e in stored] == [
        (1, "session.created"), (2, "type.0"), (3, "type.1"), (4, "type.2"),
    ]  # fmt: skip
    assert [e.data for e in stored[1:]] == DATA
    assert [e.pk for e in created] == [e.pk for e in stored[1:]]
    assert all(e.created_at is not None and not e._state.adding for e in created)


def test_the_sessions_counter_ends_at_the_last_seq_given(creator: User) -> None:
    session = AgentSession.objects.create(
        task="t", policy=Policy.objects.get(name="default"), creator=creator
    )
    for count in (1, 3, 2):
        created = events.events_append(
            session_id=session.pk, items=[("t", {"n": n}) for n in range(count)]
        )
        session.refresh_from_db()
        assert session.last_event_seq == created[-1].seq
    assert list(Event.objects.order_by("seq").values_list("seq", "data__n")) == [
        (1, 0), (2, 0), (3, 1), (4, 2), (5, 0), (6, 1),
    ]  # fmt: skip


def test_events_of_a_session_that_is_not_there_are_refused_and_nothing_is_stored() -> None:
    with pytest.raises(AgentSession.DoesNotExist, match="no session 999999"), transaction.atomic():
        events.events_append(session_id=999999, items=[("t", {}), ("u", {})])
    assert not Event.objects.exists()


def test_a_new_call_and_its_events_are_stored_together_each_naming_it(creator: User) -> None:
    session = AgentSession.objects.create(
        task="t", policy=Policy.objects.get(name="default"), creator=creator
    )
    events.event_append(session_id=session.pk, type="session.created", data={})
    call = ToolCall(session=session, tool="read_file", status="running", tool_use_id="toolu_1")
    items = [("tool_call.received", {"tool_call": None, "n": 0}), ("tool_call.running", DATA[1])]
    created = events.call_store_with_events(call, items)
    assert created is not None and call.pk is not None and not call._state.adding
    assert ToolCall.objects.get(pk=call.pk).tool_use_id == "toolu_1"
    stored = list(Event.objects.filter(session=session, seq__gt=1).order_by("seq"))
    assert [(e.pk, e.seq, e.type) for e in stored] == [(e.pk, e.seq, e.type) for e in created]
    assert [e.seq for e in stored] == [2, 3]
    assert [e.data for e in stored] == [e.data for e in created]
    assert [e.data for e in stored] == [
        {"tool_call": call.pk, "n": 0}, {**DATA[1], "tool_call": call.pk},
    ]  # fmt: skip
    session.refresh_from_db()
    assert session.last_event_seq == 3


def test_a_call_whose_tool_use_is_taken_stores_nothing_not_even_its_events(
    creator: User,
) -> None:
    session = AgentSession.objects.create(
        task="t", policy=Policy.objects.get(name="default"), creator=creator
    )
    first = ToolCall(session=session, tool="read_file", status="running", tool_use_id="toolu_1")
    assert events.call_store_with_events(first, [("tool_call.running", {})]) is not None
    again = ToolCall(session=session, tool="write_file", status="denied", tool_use_id="toolu_1")
    assert events.call_store_with_events(again, [("tool_call.denied", {})]) is None
    assert again.pk is None
    assert list(ToolCall.objects.values_list("tool", flat=True)) == ["read_file"]
    assert list(Event.objects.values_list("seq", "type")) == [(1, "tool_call.running")]
    session.refresh_from_db()
    assert session.last_event_seq == 1


def test_a_new_session_and_its_first_event_are_stored_together(creator: User) -> None:
    session = AgentSession(
        task="t", policy=Policy.objects.get(name="default"), creator=creator,
        external_id="cc-1", last_event_seq=events.FIRST_SEQ,
    )  # fmt: skip
    event = events.session_store_with_first_event(session, type="session.created", data=DATA[0])
    assert event is not None and session.pk is not None and not session._state.adding
    stored = Event.objects.get(session=session)
    assert (stored.pk, stored.seq, stored.type, stored.data) == (
        event.pk, 1, "session.created", DATA[0],
    )  # fmt: skip
    assert (event.session_id, event.seq) == (session.pk, 1)
    assert AgentSession.objects.get(pk=session.pk).last_event_seq == 1


def test_a_session_whose_unique_key_is_taken_stores_nothing_not_even_its_event(
    creator: User,
) -> None:
    def session() -> AgentSession:
        return AgentSession(
            task="t", policy=Policy.objects.get(name="default"), creator=creator,
            external_id="cc-1", last_event_seq=events.FIRST_SEQ,
        )  # fmt: skip

    assert events.session_store_with_first_event(session(), type="a", data={}) is not None
    again = session()
    assert events.session_store_with_first_event(again, type="b", data={}) is None
    assert again.pk is None
    assert AgentSession.objects.count() == 1
    assert list(Event.objects.values_list("type", flat=True)) == ["a"]


def _lazy_store(creator: User, tool_use_id: str, durable: bool) -> tuple[ToolCall, list[str]]:
    session = AgentSession.objects.create(
        task="t", policy=Policy.objects.get(name="default"), creator=creator
    )
    call = ToolCall(session=session, tool="Bash", status="running", tool_use_id=tool_use_id)
    with CaptureQueriesContext(connection) as queries:
        stored = events.call_store_with_events(call, [("tool_call.running", {})], durable=durable)
    assert stored is not None and ToolCall.objects.filter(pk=call.pk).exists()
    return call, [query["sql"] for query in queries.captured_queries]


LAZY = "set_config('synchronous_commit', 'off', true)"


@pytest.mark.django_db(transaction=True, serialized_rollback=True)
def test_a_lazy_calls_commit_skips_the_disks_flush_for_that_statement_alone(
    creator: User,
) -> None:
    """Out of a transaction, the call's one statement turns `synchronous_commit` off for
    its own transaction: the connection (back to the pool next) keeps the server's. On
    SQLite nothing changes (its commits are `synchronous=NORMAL`)."""
    _, lazy = _lazy_store(creator, "toolu_lazy", durable=False)
    if connection.vendor == "postgresql":
        assert [sql for sql in lazy if LAZY in sql] == lazy[-1:]
        with connection.cursor() as cursor:
            cursor.execute("SHOW synchronous_commit")
            assert cursor.fetchone() == ("on",)
    else:
        assert not [sql for sql in lazy if "synchronous_commit" in sql]
    _, durable = _lazy_store(creator, "toolu_durable", durable=True)
    assert not [sql for sql in durable if LAZY in sql]
    assert Event.objects.filter(type="tool_call.running").count() == 2


def test_in_a_callers_transaction_the_commit_is_the_callers_and_stays_durable(
    creator: User,
) -> None:
    with transaction.atomic():
        _, queries = _lazy_store(creator, "toolu_in_transaction", durable=False)
        if connection.vendor == "postgresql":
            with connection.cursor() as cursor:
                cursor.execute("SHOW synchronous_commit")
                assert cursor.fetchone() == ("on",)
    assert not [sql for sql in queries if LAZY in sql]
