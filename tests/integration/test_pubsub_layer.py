"""The pub/sub channel layer on a real Redis keeps the guarantees of the live views:
a join is in place when `group_add` returns, a session's events arrive in `seq` order
right after the snapshot with none missing, a reconnect catches up by `seq`, and a lost
pub/sub connection makes the consumers catch up from the event log."""

from __future__ import annotations

import asyncio
import threading
import time
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import redis
from asgiref.sync import async_to_sync
from channels.db import database_sync_to_async
from channels.layers import channel_layers, get_channel_layer
from django.contrib.auth.models import User
from django.core.exceptions import ImproperlyConfigured
from django.db import close_old_connections, connection
from django.db.models import F
from redis import asyncio as aioredis
from redis.asyncio.client import PubSub
from redis.asyncio.connection import AbstractConnection

from agentweb.settings import channel_layer_host
from agentweb.settings import channel_layers as layers_setting
from tests.integration.test_websockets import connect, cookie_for
from tools_app.live import events
from tools_app.live.layer import PubSubChannelLayer
from tools_app.models import AgentSession, Event, Policy

pytestmark = pytest.mark.django_db(transaction=True, serialized_rollback=True)


@pytest.fixture
def name() -> str:
    """This test's own channel names and Redis client name: pub/sub is server-wide."""
    return f"test-{uuid.uuid4().hex[:12]}"


def layer_config(redis_url: str, name: str) -> dict[str, Any]:
    return {"hosts": [channel_layer_host(redis_url) | {"client_name": name}], "prefix": name}


@pytest.fixture
def pubsub(settings: Any, redis_url: str, name: str) -> Iterator[None]:
    """This process (consumers and the publisher alike) on the pub/sub layer."""
    backend = "tools_app.live.layer.PubSubChannelLayer"
    settings.CHANNEL_LAYERS = {
        "default": {"BACKEND": backend, "CONFIG": layer_config(redis_url, name)}
    }
    channel_layers.backends = {}
    yield
    channel_layers.backends = {}


@pytest.fixture
def session(workspace: Path, creator: User) -> AgentSession:
    return AgentSession.objects.create(
        task="t", repo=str(workspace), workspace=str(workspace),
        status=AgentSession.Status.RUNNING, policy=Policy.objects.get(name="default"),
        creator=creator,
    )  # fmt: skip


def append(session_id: int, count: int = 1) -> None:
    """`count` tool-call events in one transaction, published on commit."""
    items = [("tool_call.received", {"tool_call": 0, "n": i}) for i in range(count)]
    events.events_append(session_id=session_id, items=items)


def test_a_join_is_in_place_when_group_add_returns(redis_url: str, name: str) -> None:
    """Published from another connection right after `group_add`, every message arrives."""

    async def scenario() -> None:
        receiving = PubSubChannelLayer(**layer_config(redis_url, name))
        sending = PubSubChannelLayer(**layer_config(redis_url, name))
        for round_ in range(30):
            channel = await receiving.new_channel()
            await receiving.group_add(f"g{round_}", channel)
            await sending.group_send(f"g{round_}", {"type": "x", "round": round_})
            message = await asyncio.wait_for(receiving.receive(channel), timeout=5)
            assert message["round"] == round_
        await receiving.flush()
        await sending.flush()

    async_to_sync(scenario)()


@pytest.mark.usefixtures("pubsub")
def test_events_follow_the_snapshot_in_seq_order_with_none_missing(
    session: AgentSession, creator: User
) -> None:
    """While another thread appends events all along, each new websocket's snapshot is
    followed by exactly the next seqs, in order (an event committed before the snapshot
    may come once more, for the client to drop by its seq)."""
    cookie = cookie_for(creator)
    stop = threading.Event()

    def writer() -> None:
        try:
            while not stop.is_set():
                append(session.pk, 2)
                time.sleep(0.005)
        finally:
            connection.close()

    async def follow() -> list[int]:
        live = connect(f"/ws/sessions/{session.pk}/", cookie)
        assert (await live.connect())[0]
        snapshot = await live.receive_json_from(timeout=5)
        seqs = [snapshot["seq"]]
        while len(seqs) < 21:
            seq = (await live.receive_json_from(timeout=5))["seq"]
            if seq > snapshot["seq"]:  # one the snapshot already held is dropped, as
                seqs.append(seq)  # session.js does
        await live.disconnect()
        return seqs

    thread = threading.Thread(target=writer)
    thread.start()
    try:
        for _ in range(8):
            seqs = async_to_sync(follow)()
            assert seqs == list(range(seqs[0], seqs[0] + 21))
    finally:
        stop.set()
        thread.join()


@pytest.mark.usefixtures("pubsub")
def test_a_reconnect_with_last_seq_gets_what_was_missed_then_live_events(
    session: AgentSession, reviewer: User
) -> None:
    cookie = cookie_for(reviewer)

    async def scenario() -> None:
        inbox = connect("/ws/approvals/", cookie)
        assert (await inbox.connect())[0]
        snapshot = await inbox.receive_json_from(timeout=5)
        await database_sync_to_async(append)(session.pk)
        first = await inbox.receive_json_from(timeout=5)
        assert first["seq"] > snapshot["seq"]
        await inbox.disconnect()

        await database_sync_to_async(append)(session.pk, 3)
        again = connect(f"/ws/approvals/?last_seq={first['seq']}", cookie)
        assert (await again.connect())[0]
        missed = [await again.receive_json_from(timeout=5) for _ in range(3)]
        assert [event["n"] for event in missed] == [0, 1, 2]
        await database_sync_to_async(append)(session.pk)
        live = await again.receive_json_from(timeout=5)
        assert live["seq"] > missed[-1]["seq"]
        await again.disconnect()

    async_to_sync(scenario)()


@pytest.fixture
def publish_writes(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """How many PUBLISHes each write to Redis carried, from any thread (redis-py's
    writes, watched and passed on): a pipeline is one write, so one round trip."""
    writes: list[int] = []
    send = AbstractConnection.send_packed_command

    async def counted(self: AbstractConnection, command: Any, check_health: bool = True) -> None:
        packed = command if isinstance(command, bytes | str) else b"".join(command)
        if isinstance(packed, bytes) and b"PUBLISH" in packed:
            writes.append(packed.count(b"PUBLISH"))
        await send(self, command, check_health)

    monkeypatch.setattr(AbstractConnection, "send_packed_command", counted)
    return writes


async def wire_tap(redis_url: str, channels: list[str]) -> PubSub:
    """A plain Redis subscription to `channels`, beside the layer's: what was PUBLISHed."""
    tap = aioredis.Redis.from_url(redis_url).pubsub()
    await tap.subscribe(*channels)
    confirmed = 0
    while confirmed < len(channels):
        message = await tap.get_message(timeout=5)
        assert message is not None, "Redis did not confirm the subscriptions"
        confirmed += message["type"] == "subscribe"
    return tap


async def tapped(tap: PubSub, quiet: float = 0.3) -> list[tuple[str, Any]]:
    """(channel, message) PUBLISHed to the tap, until `quiet` seconds pass without one."""
    layer = get_channel_layer()
    found = []
    while (message := await tap.get_message(timeout=quiet)) is not None:
        if message["type"] == "message":
            found.append((message["channel"].decode(), layer.deserialize(message["data"])))
    return found


@pytest.mark.usefixtures("pubsub")
def test_a_commits_events_go_out_once_per_group_and_arrive_as_a_frame_each(
    session: AgentSession,
    creator: User,
    reviewer: User,
    redis_url: str,
    name: str,
    publish_writes: list[int],
) -> None:
    """Three call events of one commit: one write to Redis carries one message to the
    session's group and one to its project's inbox, each with the three events; the
    session's socket and the reviewer's inbox each get three frames, in seq order, as
    before batches."""
    cookies = cookie_for(creator), cookie_for(reviewer)
    groups = [events.session_group(session.pk), events.approvals_group(session.project_id)]
    channels = [f"{name}__group__{group}" for group in groups]  # the layer's names for them

    async def scenario() -> None:
        tap = await wire_tap(redis_url, channels)
        live = connect(f"/ws/sessions/{session.pk}/", cookies[0])
        inbox = connect("/ws/approvals/", cookies[1])
        snapshots = []
        for socket in (live, inbox):
            assert (await socket.connect())[0]
            snapshots.append(await socket.receive_json_from(timeout=5))
        await database_sync_to_async(append)(session.pk, 3)
        assert publish_writes == [2]  # both groups' messages, one pipeline
        seen = [await live.receive_json_from(timeout=5) for _ in range(3)]
        reviewed = [await inbox.receive_json_from(timeout=5) for _ in range(3)]
        assert await live.receive_nothing() and await inbox.receive_nothing()
        published = await tapped(tap)
        for socket in (live, inbox):
            await socket.disconnect()
        await tap.aclose()

        first = snapshots[0]["seq"] + 1
        assert [(frame["seq"], frame["n"]) for frame in seen] == [
            (first, 0), (first + 1, 1), (first + 2, 2)
        ]  # fmt: skip
        assert [(frame["session_seq"], frame["n"]) for frame in reviewed] == [
            (frame["seq"], frame["n"]) for frame in seen
        ]
        assert [frame["seq"] for frame in reviewed] == [frame["id"] for frame in seen]
        assert published == [
            (channel, {"type": "session.events", "events": seen}) for channel in channels
        ]

    async_to_sync(scenario)()


def unpublished_event(session_id: int) -> int:
    """An event stored while its publish was lost (Redis away): in the log only."""
    AgentSession.objects.filter(pk=session_id).update(last_event_seq=F("last_event_seq") + 1)
    seq = AgentSession.objects.values_list("last_event_seq", flat=True).get(pk=session_id)
    Event.objects.create(session_id=session_id, seq=seq, type="tool_call.received", data={})
    close_old_connections()
    return seq


def kill_pubsub_connections(redis_url: str, name: str) -> int:
    """Close this test's pub/sub connections from the Redis side (others' are left)."""
    client = redis.Redis.from_url(redis_url)
    killed = 0
    for entry in client.client_list(_type="pubsub"):
        if entry.get("name") == name:
            client.client_kill_filter(_id=entry["id"])
            killed += 1
    client.close()
    return killed


@pytest.mark.usefixtures("pubsub")
def test_after_a_lost_pubsub_connection_a_consumer_catches_up_from_the_log(
    session: AgentSession, creator: User, redis_url: str, name: str
) -> None:
    cookie = cookie_for(creator)

    async def scenario() -> None:
        live = connect(f"/ws/sessions/{session.pk}/", cookie)
        assert (await live.connect())[0]
        snapshot = await live.receive_json_from(timeout=5)
        missed = await database_sync_to_async(unpublished_event)(session.pk)
        assert missed == snapshot["seq"] + 1
        assert await asyncio.to_thread(kill_pubsub_connections, redis_url, name) >= 1
        caught_up = await live.receive_json_from(timeout=10)
        assert caught_up["seq"] == missed
        await database_sync_to_async(append)(session.pk)  # subscribed again: live again
        assert (await live.receive_json_from(timeout=5))["seq"] == missed + 1
        await live.disconnect()

    async_to_sync(scenario)()


def test_an_unknown_channel_layer_kind_is_refused_by_name() -> None:
    with pytest.raises(ImproperlyConfigured, match=r"'redis-cluster'.*pubsub, redis, memory"):
        layers_setting("redis://127.0.0.1:6379/0", "redis-cluster")
