"""Events are stored by one multi-row INSERT (`live/events.py`), on SQLite and on
PostgreSQL alike: what is read back is what was appended, with consecutive seqs."""

from __future__ import annotations

from typing import Any

import pytest
from django.contrib.auth.models import User
from django.db import transaction

from tools_app.live import events
from tools_app.models import AgentSession, Event, Policy

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
