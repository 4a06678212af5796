"""The event log: every state change appends an event with a monotonic seq, published to
the session's and the reviewers' Channels groups after the transaction commits."""

from __future__ import annotations

import asyncio
import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from asgiref.sync import async_to_sync
from channels.layers import channel_layers, get_channel_layer
from django.contrib.auth.models import User
from django.db import transaction

from tools_app import services
from tools_app.live import events
from tools_app.models import AgentSession, Event, Policy

pytestmark = [pytest.mark.django_db, pytest.mark.postgres]


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
    reviewers_channel = listen(events.approvals_group(session.project_id))
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


def received_messages(channel: str, events: int) -> list[dict[str, Any]]:
    """The messages that bring the next `events` events."""
    layer = get_channel_layer()

    async def take() -> list[dict[str, Any]]:
        messages: list[dict[str, Any]] = []
        while sum(len(events_of(message)) for message in messages) < events:
            messages.append(await asyncio.wait_for(layer.receive(channel), timeout=5))
        return messages

    return async_to_sync(take)()


def events_of(message: dict[str, Any]) -> list[dict[str, Any]]:
    """A lone event's message, or a batch's (`session.events`), as the consumers read it."""
    if message["type"] == "session.events":
        return list(message["events"])
    assert message["type"] == "session.event"
    return [message["event"]]


def received(channel: str, count: int) -> list[dict[str, Any]]:
    return [event for message in received_messages(channel, count) for event in events_of(message)]


def assert_one_allowed_call_in_order(session: AgentSession, on_commit: Any) -> None:
    channel = listen(events.session_group(session.pk))
    with on_commit(execute=True):
        services.tool_call_run_in_process(
            session=session, tool="read_file", args={"path": "README.md"}
        )
    got = received(channel, 4)
    assert [event["seq"] for event in got] == [1, 2, 3, 4]
    assert [event["type"] for event in got] == [
        "tool_call.received",
        "tool_call.approved",
        "tool_call.running",
        "tool_call.succeeded",
    ]
    assert [event["status"] for event in got] == ["pending", "approved", "running", "succeeded"]
    assert nothing_waiting(channel)
    stored = Event.objects.filter(session=session).order_by("seq")
    assert [event.seq for event in stored] == [1, 2, 3, 4]


def test_an_allowed_call_publishes_its_events_in_seq_order(
    session: AgentSession, django_capture_on_commit_callbacks: Any
) -> None:
    assert_one_allowed_call_in_order(session, django_capture_on_commit_callbacks)


@pytest.fixture
def redis_layer(memory_layer: None, redis_url: str, settings: Any) -> Iterator[None]:
    """The real Redis layer, with a prefix of its own: the worker's path (the long-lived
    publishing loop of `tools_app/publisher.py`)."""
    settings.CHANNEL_LAYERS = {
        "default": {
            "BACKEND": "channels_redis.core.RedisChannelLayer",
            "CONFIG": {"hosts": [redis_url], "prefix": f"events-test-{os.getpid()}"},
        }
    }
    channel_layers.backends = {}
    yield
    channel_layers.backends = {}


@pytest.mark.usefixtures("redis_layer")
def test_events_through_redis_arrive_in_seq_order(
    session: AgentSession, django_capture_on_commit_callbacks: Any
) -> None:
    assert_one_allowed_call_in_order(session, django_capture_on_commit_callbacks)


@pytest.mark.usefixtures("redis_layer")
def test_a_batch_of_events_is_published_together_in_order(
    session: AgentSession, django_capture_on_commit_callbacks: Any
) -> None:
    channel = listen(events.session_group(session.pk))
    with django_capture_on_commit_callbacks(execute=False) as callbacks, transaction.atomic():
        events.events_append(
            session_id=session.pk, items=[("session.note", {"n": n}) for n in range(5)]
        )
    assert len(callbacks) == 1  # one publish for the five, once the transaction commits
    callbacks[0]()
    [message] = received_messages(channel, 5)  # one message: a group_send of the batch
    assert message["type"] == "session.events"
    assert [(event["seq"], event["n"]) for event in message["events"]] == [
        (n + 1, n) for n in range(5)
    ]
    assert nothing_waiting(channel)


def test_a_batch_reaches_the_memory_layer_as_one_message_per_group(
    session: AgentSession, django_capture_on_commit_callbacks: Any
) -> None:
    """Three call events: the session's group and the project's inbox each get one
    message of the three, in seq order."""
    session_channel = listen(events.session_group(session.pk))
    reviewers_channel = listen(events.approvals_group(session.project_id))
    items = [("tool_call.received", {"n": n}) for n in range(3)]
    with django_capture_on_commit_callbacks(execute=True):
        events.events_append(session_id=session.pk, items=items)
    for channel in (session_channel, reviewers_channel):
        [message] = received_messages(channel, 3)
        assert message["type"] == "session.events"
        assert [event["seq"] for event in message["events"]] == [1, 2, 3]
        assert nothing_waiting(channel)


def test_a_lone_event_goes_out_as_a_session_event_as_before(session: AgentSession) -> None:
    event = Event(session=session, seq=1, type="session.note", data={"n": 0})
    message = {"type": "session.event", "event": events.event_message(event)}
    assert events.group_messages([event], {}) == [(events.session_group(session.pk), message)]
