"""Held waits on the real pub/sub layer share one channel per process (`live/hub.py`):
Redis holds a subscription per session that has a wait, not one per wait; an event
reaches the waits of its own call and no other; a lost pub/sub connection wakes every
wait; a wait inside a request keeps no thread between its reads; and a call that moved
without an event is found by the hub's one re-read of all the calls it watches."""

from __future__ import annotations

import asyncio
import threading
import time
from pathlib import Path
from typing import Any

import pytest
import redis
from asgiref.sync import ThreadSensitiveContext, sync_to_async
from channels.layers import get_channel_layer
from django.contrib.auth.models import User
from django.db import close_old_connections

from tests.integration.test_pubsub_layer import (  # noqa: F401 - name, pubsub: fixtures
    kill_pubsub_connections,
    name,
    pubsub,
)
from tools_app.live import events, waiting
from tools_app.live.events import session_group
from tools_app.live.hub import hub_for
from tools_app.models import AgentSession, Event, Policy, ToolCall

SESSIONS = 4
WAITS = 200  # spread over the sessions
FOREVER = 600.0  # no wait here ends by its clock: each one ends by an event


def prefix(settings: Any) -> str:
    """This test's channel prefix, also its Redis client's name (`pubsub`)."""
    return str(settings.CHANNEL_LAYERS["default"]["CONFIG"]["prefix"])


def subscriptions(redis_url: str, prefix: str) -> int:
    """Redis pub/sub channels of this test's prefix."""
    client = redis.Redis.from_url(redis_url)
    try:
        return len(client.pubsub_channels(f"{prefix}*"))
    finally:
        client.close()


async def publish(session_id: int, call_id: int, status: str) -> None:
    """An event as `events.publish_all` sends it."""
    event = {"type": f"tool_call.{status}", "session": session_id, "tool_call": call_id}
    message = {"type": "session.event", "event": event | {"status": status}}
    await get_channel_layer().group_send(session_group(session_id), message)


async def joined(sessions: int) -> None:
    """Until the hub is in the groups of `sessions` sessions (every wait of them has its
    mailbox from the start of its join)."""
    deadline = time.monotonic() + 30
    while len(hub_for(get_channel_layer()).joined) < sessions:
        assert time.monotonic() < deadline, "the waits did not join"
        await asyncio.sleep(0.01)


async def hold(call_id: int, woken: dict[int, int]) -> None:
    """Wait for the call's final event; count the wake-ups."""
    session_id = call_id % SESSIONS
    matches = waiting.call_event(call_id, frozenset({"denied"}))
    async with waiting.listening(session_id) as listener:
        while not await listener.until(matches, FOREVER):
            pass
        woken[call_id] = woken.get(call_id, 0) + 1


@pytest.mark.usefixtures("pubsub")
def test_many_waits_use_a_subscription_per_session_and_an_event_wakes_only_its_call(
    redis_url: str, settings: Any
) -> None:
    async def scenario() -> tuple[int, dict[int, int], dict[int, int]]:
        woken: dict[int, int] = {}
        tasks = {n: asyncio.ensure_future(hold(n, woken)) for n in range(WAITS)}
        await joined(SESSIONS)
        used = await asyncio.to_thread(subscriptions, redis_url, prefix(settings))
        await publish(7 % SESSIONS, 7, "running")  # not final: nobody wakes
        await publish(7 % SESSIONS, 7, "denied")
        await tasks.pop(7)
        first = dict(woken)
        for call_id in tasks:  # every other one, each by its own event
            await publish(call_id % SESSIONS, call_id, "denied")
        await asyncio.gather(*tasks.values())
        return used, first, woken

    used, first, woken = asyncio.run(scenario())
    assert used <= SESSIONS + 1  # the hub's own channel, and one group per session
    assert first == {7: 1}
    assert woken == dict.fromkeys(range(WAITS), 1)


@pytest.mark.usefixtures("pubsub")
def test_the_hub_hands_each_event_of_a_batch_to_the_mailboxes_of_its_session() -> None:
    """One publish of several events (a group gets them as one `session.events`): each
    mailbox of a session gets that session's events, one message each, in seq order."""
    stored = [  # (session, seq, call, status)
        (1, 1, 10, "received"),
        (2, 1, 20, "received"),
        (1, 2, 10, "approved"),
        (1, 3, 10, "running"),
    ]
    batch = [
        Event(pk=n, session_id=session_id, seq=seq, type=f"tool_call.{status}",
              data={"tool_call": call, "status": status})
        for n, (session_id, seq, call, status) in enumerate(stored, start=1)
    ]  # fmt: skip

    async def scenario() -> dict[str, list[tuple[int, int]]]:
        hub = hub_for(get_channel_layer())
        boxes = {"one": await hub.join(1), "one again": await hub.join(1), "two": await hub.join(2)}
        await asyncio.to_thread(events.publish_all, batch, project_of={1: 0, 2: 0})
        got: dict[str, list[tuple[int, int]]] = {}
        for key, box in boxes.items():
            count = 1 if key == "two" else 3
            messages = [await asyncio.wait_for(box.get(), 5) for _ in range(count)]
            assert {message["type"] for message in messages} == {"session.event"}
            got[key] = [(m["event"]["session"], m["event"]["seq"]) for m in messages]
            assert box.empty(), key  # a batch's events were put in at once: none is left
        return got

    assert asyncio.run(scenario()) == {
        "one": [(1, 1), (1, 2), (1, 3)],
        "one again": [(1, 1), (1, 2), (1, 3)],
        "two": [(2, 1)],
    }


@pytest.mark.usefixtures("pubsub")
def test_a_lost_pubsub_connection_wakes_every_wait(redis_url: str, settings: Any) -> None:
    async def scenario() -> int:
        woken: dict[int, int] = {}
        matches = waiting.call_event(-1)  # an event that never comes

        async def wait(session_id: int) -> None:
            async with waiting.listening(session_id) as listener:
                if await listener.until(matches, FOREVER):
                    woken[session_id] = woken.get(session_id, 0) + 1

        tasks = [asyncio.ensure_future(wait(n % SESSIONS)) for n in range(40)]
        await joined(SESSIONS)
        killed = await asyncio.to_thread(kill_pubsub_connections, redis_url, prefix(settings))
        assert killed >= 1
        await asyncio.gather(*tasks)
        return sum(woken.values())

    assert asyncio.run(scenario()) == 40


@pytest.mark.usefixtures("pubsub")
def test_a_held_wait_inside_a_request_keeps_no_thread_between_its_reads() -> None:
    """Each wait runs as Django runs a request (its own ThreadSensitiveContext, whose
    thread does the request's work); while the waits wait, their threads are gone."""
    waits = 30

    async def scenario() -> tuple[int, int, int]:
        before = threading.active_count()
        reads: list[int] = []
        release = asyncio.Event()

        def read(call_id: int) -> dict[str, str]:
            reads.append(call_id)
            return {"status": "approved" if release.is_set() else "awaiting_approval"}

        async def request(call_id: int) -> None:
            async with ThreadSensitiveContext(), waiting.listening(call_id) as listener:
                await listener.answer(
                    call_id, FOREVER, sync_to_async(read), until=frozenset({"approved"})
                )

        tasks = [asyncio.ensure_future(request(n)) for n in range(waits)]
        deadline = time.monotonic() + 30
        while len(reads) < waits or threading.active_count() > before + 2:
            assert time.monotonic() < deadline, f"{threading.active_count() - before} threads"
            await asyncio.sleep(0.01)  # each thread ends once its wait gave it back
        during = threading.active_count()
        release.set()
        for call_id in range(waits):
            await publish(call_id, call_id, "approved")
        await asyncio.gather(*tasks)
        return before, during, len(reads)

    before, during, reads = asyncio.run(scenario())
    assert during <= before + 2
    assert reads == 2 * 30  # each wait: its first read, and the one its event asked for


@pytest.mark.django_db(transaction=True, serialized_rollback=True)
@pytest.mark.usefixtures("pubsub")
def test_a_call_that_moved_without_an_event_is_read_again_by_the_hubs_one_query(
    creator: User, workspace: Path
) -> None:
    """No event comes (a lost publish): the hub's re-read of every watched call, one
    query for all, wakes the wait whose call moved and no other."""
    session = AgentSession.objects.create(
        task="t", repo=str(workspace), workspace=str(workspace), creator=creator,
        status=AgentSession.Status.RUNNING, policy=Policy.objects.get(name="default"),
    )  # fmt: skip
    calls = [
        ToolCall.objects.create(session=session, tool="write_file", status="awaiting_approval")
        for _ in range(3)
    ]

    def read(call_id: int) -> dict[str, Any]:
        try:
            return {"status": ToolCall.objects.get(pk=call_id).status}
        finally:
            close_old_connections()

    async def scenario() -> tuple[str, list[bool]]:
        async def wait(call_id: int) -> dict[str, Any]:
            async with waiting.listening(session.pk) as listener:
                return await listener.answer(call_id, FOREVER, sync_to_async(read))

        tasks = [asyncio.ensure_future(wait(call.pk)) for call in calls]
        hub = hub_for(get_channel_layer())
        deadline = time.monotonic() + 30
        while len(hub.watched) < len(calls):  # each has read its call once
            assert time.monotonic() < deadline, "the waits did not read their calls"
            await asyncio.sleep(0.01)
        moved = calls[1].pk
        await sync_to_async(ToolCall.objects.filter(pk=moved).update)(status="denied")
        await hub.recheck()
        answer = await tasks[1]
        others = [task.done() for task in (tasks[0], tasks[2])]
        for task in (tasks[0], tasks[2]):
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
        return answer["status"], others

    status, others = asyncio.run(scenario())
    assert status == "denied"
    assert others == [False, False]
