"""The event log: every state change appends an event with a monotonic seq, published to
the session's and the reviewers' Channels groups after the transaction commits."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from asgiref.sync import async_to_sync
from channels.layers import channel_layers, get_channel_layer
from django.contrib.auth.models import User

from tools_app import events, services
from tools_app.models import AgentSession, Event, Policy

pytestmark = pytest.mark.django_db


@pytest.fixture(autouse=True)
def memory_layer(settings: Any) -> Iterator[None]:
    settings.CHANNEL_LAYERS = {"default": {"BACKEND": "channels.layers.InMemoryChannelLayer"}}
    channel_layers.backends = {}
    yield
    channel_layers.backends = {}


@pytest.fixture
def session(workspace: Path) -> AgentSession:
    return AgentSession.objects.create(
        task="t", repo=str(workspace), workspace=str(workspace),
        status=AgentSession.Status.RUNNING, policy=Policy.objects.get(name="default"),
        creator=User.objects.create_user("alice"),
    )  # fmt: skip


def listen(group: str) -> str:
    layer = get_channel_layer()
    channel = async_to_sync(layer.new_channel)()
    async_to_sync(layer.group_add)(group, channel)
    return channel


def nothing_waiting(channel: str) -> bool:
    async def probe() -> bool:
        try:
            await asyncio.wait_for(get_channel_layer().receive(channel), timeout=0.2)
        except TimeoutError:
            return True
        return False

    return async_to_sync(probe)()


def test_each_state_change_appends_an_event_with_the_next_seq(session: AgentSession) -> None:
    services.tool_call_run_in_process(session=session, tool="read_file", args={"path": "README.md"})
    services.tool_call_run_in_process(
        session=session, tool="write_file", args={"path": ".env", "content": "x"}
    )
    seqs = list(Event.objects.filter(session=session).values_list("seq", flat=True))
    assert seqs == list(range(1, len(seqs) + 1))
    types = list(Event.objects.filter(session=session).values_list("type", flat=True))
    assert "tool_call.succeeded" in types
    assert "tool_call.awaiting_approval" in types
    assert "session.waiting" in types


def test_events_are_published_only_after_commit(
    session: AgentSession, django_capture_on_commit_callbacks: Any
) -> None:
    session_channel = listen(events.session_group(session.pk))
    reviewers_channel = listen(events.APPROVALS_GROUP)
    with django_capture_on_commit_callbacks(execute=False) as callbacks:
        services.tool_call_run_in_process(
            session=session, tool="write_file", args={"path": ".env", "content": "x"}
        )
    assert callbacks
    assert nothing_waiting(session_channel)
    for callback in callbacks:
        callback()
    layer = get_channel_layer()
    message = async_to_sync(layer.receive)(session_channel)
    assert message["type"] == "session.event"
    assert message["event"]["seq"] == 1
    assert message["event"]["session"] == session.pk
    first_for_reviewers = async_to_sync(layer.receive)(reviewers_channel)
    assert first_for_reviewers["event"]["type"].startswith("tool_call.")
