"""The hot path's INSERTs and claiming UPDATEs in SQL written once (`sql/rows.py`) store
what the ORM would store, on SQLite and on PostgreSQL; a tool use stored twice writes
nothing and leaves the transaction usable, with no savepoint."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

import pytest
from django.contrib.auth.models import User
from django.db import connection, transaction
from django.db.models import F, signals
from django.forms.models import model_to_dict
from django.test.utils import CaptureQueriesContext
from django.utils import timezone

from tools_app.models import AgentSession, Event, Policy, ToolCall
from tools_app.services import gateway
from tools_app.sql import rows

pytestmark = [pytest.mark.django_db, pytest.mark.postgres]

FIELDS: dict[str, Any] = {
    "tool": "run_command",
    "status": "pending",
    "args": {"command": "ls -la ü", "nested": [1, None, {"a": 1.5}]},
    "native_tool": "Bash",
    "native_input": {"command": "ls -la ü", "quote": 'it\'s "q" \\'},
    "preview": None,
    "connections": [],
    "approvals_needed": 2,
}


@pytest.fixture
def session(creator: User) -> AgentSession:
    return AgentSession.objects.create(
        task="t", policy=Policy.objects.get(name="default"), creator=creator,
        kind=AgentSession.Kind.GATEWAY,
    )  # fmt: skip


def stored(call: ToolCall) -> dict[str, Any]:
    found = model_to_dict(ToolCall.objects.get(pk=call.pk))
    return {key: value for key, value in found.items() if key not in {"id", "tool_use_id"}}


def test_an_inserted_call_reads_back_as_the_orms(session: AgentSession) -> None:
    by_orm = ToolCall.objects.create(session=session, tool_use_id="toolu_orm", **FIELDS)
    by_sql = ToolCall(session=session, tool_use_id="toolu_sql", **FIELDS)
    assert rows.insert_unless_taken(by_sql)
    assert by_sql.pk is not None and not by_sql._state.adding
    assert by_sql.created_at is not None  # auto_now_add, as `save` sets it
    assert stored(by_sql) == stored(by_orm)


def test_a_tool_use_stored_twice_writes_nothing_and_the_transaction_goes_on(
    session: AgentSession,
) -> None:
    with transaction.atomic(), CaptureQueriesContext(connection) as queries:
        assert rows.insert_unless_taken(ToolCall(session=session, tool_use_id="toolu_1", **FIELDS))
        again = ToolCall(session=session, tool_use_id="toolu_1", **FIELDS)
        assert not rows.insert_unless_taken(again)
        assert again.pk is None and again._state.adding
        # After a refused INSERT without a savepoint, PostgreSQL would refuse every
        # statement of the transaction: this one must work.
        assert ToolCall.objects.filter(session=session).count() == 1
    assert not [q for q in queries.captured_queries if "SAVEPOINT" in q["sql"]]


def test_a_resent_tool_use_beyond_the_join_window_is_the_same_call(
    session: AgentSession,
) -> None:
    """Twenty newer joinable calls of the same tool hide the first from the lookup: its
    INSERT is what finds it taken."""
    first = gateway.gateway_call_receive(
        session=session, native_tool="Bash", native_input={"command": "ls"},
        tool_use_id="toolu_old", ran_in="/home/alice/project",
    )  # fmt: skip
    for n in range(gateway.JOIN_WINDOW + 1):
        ToolCall.objects.create(
            session=session, tool="run_command", status="awaiting_approval",
            native_tool="Bash", native_input={"n": n}, tool_use_id=f"toolu_{n}",
        )  # fmt: skip
    calls = ToolCall.objects.count()
    with transaction.atomic():
        again = gateway.gateway_call_receive(
            session=session, native_tool="Bash", native_input={"command": "ls"},
            tool_use_id="toolu_old", ran_in="/home/alice/project",
        )  # fmt: skip
    assert again.pk == first.pk
    assert ToolCall.objects.count() == calls


def test_a_claim_updates_only_from_the_statuses_given(session: AgentSession) -> None:
    call = ToolCall.objects.create(session=session, tool_use_id="toolu_1", **FIELDS)
    later = timezone.now() + timedelta(minutes=5)
    values = {"status": "approved", "preview": {"gateway": {"runs": "ü"}}, "expires_at": later}
    assert rows.update_if(ToolCall, call.pk, values, column="status", among={"running"}) == 0
    assert ToolCall.objects.get(pk=call.pk).status == "pending"
    assert rows.update_if(ToolCall, call.pk, values, column="status", among=set()) == 0
    claimed = rows.update_if(ToolCall, call.pk, values, column="status", among={"pending", "x"})
    assert claimed == 1
    found = ToolCall.objects.get(pk=call.pk)
    assert (found.status, found.preview, found.expires_at) == (
        "approved", {"gateway": {"runs": "ü"}}, later,
    )  # fmt: skip


def test_a_claim_with_an_expression_is_left_to_the_orm(session: AgentSession) -> None:
    call = ToolCall.objects.create(session=session, **FIELDS)
    values = {"approvals_needed": F("approvals_needed") + 1}
    assert rows.update_if(ToolCall, call.pk, values, column="status", among={"pending"}) is None
    held = {"held_call": call}
    assert rows.update_if(ToolCall, call.pk, held, column="status", among={"pending"}) is None
    assert ToolCall.objects.get(pk=call.pk).approvals_needed == 2


def test_a_model_with_save_signals_is_refused_not_stored_without_them(
    session: AgentSession,
) -> None:
    def heard(**kwargs: Any) -> None:
        raise AssertionError("not sent")

    signals.post_save.connect(heard, sender=ToolCall, weak=False)
    try:
        with pytest.raises(RuntimeError, match="ToolCall has save signals"):
            rows.insert_unless_taken(ToolCall(session=session, **FIELDS))
    finally:
        signals.post_save.disconnect(heard, sender=ToolCall)
    assert not ToolCall.objects.exists()


def test_each_value_is_prepared_as_django_prepares_it(session: AgentSession) -> None:
    """The values stored as given are those Django's preparation hands back unchanged;
    any other value of the same field still goes through it."""
    call = ToolCall(session=session, tool_use_id="toolu_p", **FIELDS)
    event = Event(session=session, seq=1, type="t", data={"a": [1]}, created_at=timezone.now())
    as_given = 0
    for instance in (call, event):
        for column in rows._columns(type(instance)):
            value = column.field.pre_save(instance, True)
            expected = column.field.get_db_prep_save(value, connection)
            found = rows._prepared(column, value)
            assert type(found) is type(expected), column.field.name
            assert _comparable(found) == _comparable(expected), column.field.name
            as_given += column.kept is not None
    assert as_given >= 10  # the session, the statuses, the texts, the counts…
    tool = rows._column_of(ToolCall._meta.get_field("tool"), connection.vendor)
    needed = rows._column_of(ToolCall._meta.get_field("approvals_needed"), connection.vendor)
    assert rows._prepared(tool, 5) == "5"  # an int for a text: Django's str()
    assert rows._prepared(needed, True) == 1  # a bool for a count: Django's int()
    assert not isinstance(rows._prepared(needed, True), bool)


def _comparable(prepared: Any) -> Any:
    """psycopg's JSON wrappers compare by identity: their object instead."""
    return getattr(prepared, "obj", prepared)
