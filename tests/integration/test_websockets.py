"""Websockets: refused before any message without a login or from a foreign origin;
a snapshot on connect, live events after, and what was missed on reconnect."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from asgiref.sync import async_to_sync
from channels.layers import channel_layers
from channels.testing import WebsocketCommunicator
from django.conf import settings as django_settings
from django.contrib.auth.models import User
from django.test import Client

from agentweb.asgi import application
from tools_app import services
from tools_app.models import AgentSession, Policy

pytestmark = pytest.mark.django_db(transaction=True, serialized_rollback=True)


@pytest.fixture(autouse=True)
def memory_layer(settings: Any) -> Iterator[None]:
    settings.CHANNEL_LAYERS = {"default": {"BACKEND": "channels.layers.InMemoryChannelLayer"}}
    channel_layers.backends = {}
    yield
    channel_layers.backends = {}


def cookie_for(user: User) -> bytes:
    client = Client()
    client.force_login(user)
    name = django_settings.SESSION_COOKIE_NAME
    return f"{name}={client.cookies[name].value}".encode()


def connect(path: str, cookie: bytes | None = None, origin: bytes = b"http://localhost") -> Any:
    headers = [(b"origin", origin), (b"host", b"localhost")]
    if cookie:
        headers.append((b"cookie", cookie))
    return WebsocketCommunicator(application, path, headers=headers)


@pytest.fixture
def session(workspace: Path, creator: User) -> AgentSession:
    return AgentSession.objects.create(
        task="t", repo=str(workspace), workspace=str(workspace),
        status=AgentSession.Status.RUNNING, policy=Policy.objects.get(name="default"),
        creator=creator,
    )  # fmt: skip


async def refused(communicator: Any) -> bool:
    connected, _ = await communicator.connect()
    return not connected


def test_a_connection_without_a_login_is_refused(session: AgentSession) -> None:
    assert async_to_sync(refused)(connect(f"/ws/sessions/{session.pk}/"))
    assert async_to_sync(refused)(connect("/ws/approvals/"))


def test_a_connection_from_a_foreign_origin_is_refused(
    session: AgentSession, creator: User
) -> None:
    evil = connect(
        f"/ws/sessions/{session.pk}/", cookie_for(creator), origin=b"http://evil.example"
    )
    assert async_to_sync(refused)(evil)


@pytest.mark.parametrize(
    ("origin", "accepted"),
    [
        (b"http://127.0.0.1:8000", True),  # AGENTWEB_BASE_URL's own origin
        (b"http://localhost:9123", True),  # a loopback base URL: any loopback name and port
        (b"https://agentweb.example.com", False),  # a name the base URL does not give
        (b"http://127.0.0.1.evil.example", False),
    ],
)
def test_a_websocket_opens_only_from_an_origin_the_base_url_gives(
    reviewer: User, origin: bytes, accepted: bool
) -> None:
    assert django_settings.AGENTWEB_BASE_URL == "http://127.0.0.1:8000"
    live = connect("/ws/approvals/", cookie_for(reviewer), origin=origin)
    assert async_to_sync(refused)(live) is not accepted


def test_outsiders_and_non_reviewers_are_refused(
    session: AgentSession, creator: User, outsider: User
) -> None:
    assert async_to_sync(refused)(connect(f"/ws/sessions/{session.pk}/", cookie_for(outsider)))
    assert async_to_sync(refused)(connect("/ws/approvals/", cookie_for(creator)))


def test_a_session_stream_sends_a_snapshot_then_events_then_what_was_missed(
    session: AgentSession, creator: User
) -> None:
    cookie = cookie_for(creator)

    async def scenario() -> None:
        live = connect(f"/ws/sessions/{session.pk}/", cookie)
        connected, _ = await live.connect()
        assert connected
        snapshot = await live.receive_json_from()
        assert snapshot["type"] == "snapshot"
        assert snapshot["session"]["id"] == session.pk
        await submit(session, "write_file", {"path": ".env", "content": "x\n"})
        first = await live.receive_json_from(timeout=5)
        assert first["type"].startswith("tool_call.")
        assert first["seq"] == snapshot["seq"] + 1
        await live.disconnect()

        await submit(session, "read_file", {"path": "README.md"})
        garbled = connect(f"/ws/sessions/{session.pk}/?last_seq=%C2%B2", cookie)  # '²'
        assert (await garbled.connect())[0]
        assert (await garbled.receive_json_from(timeout=5))["type"] == "snapshot"
        await garbled.disconnect()

        again = connect(f"/ws/sessions/{session.pk}/?last_seq={first['seq']}", cookie)
        assert (await again.connect())[0]
        missed = await again.receive_json_from(timeout=5)
        assert missed["seq"] == first["seq"] + 1
        await again.disconnect()

    async_to_sync(scenario)()


def test_reviewers_see_waiting_calls_and_new_ones_live(
    session: AgentSession, reviewer: User
) -> None:
    cookie = cookie_for(reviewer)

    async def scenario() -> None:
        inbox = connect("/ws/approvals/", cookie)
        assert (await inbox.connect())[0]
        snapshot = await inbox.receive_json_from()
        assert snapshot == {"type": "snapshot", "seq": snapshot["seq"], "tool_calls": []}
        await submit(session, "write_file", {"path": ".env", "content": "x\n"})
        received = await inbox.receive_json_from(timeout=5)
        assert received["type"] == "tool_call.received"
        event = await inbox.receive_json_from(timeout=5)
        assert event["type"] == "tool_call.awaiting_approval"
        assert event["seq"] > received["seq"] > snapshot["seq"]
        await inbox.disconnect()

    async_to_sync(scenario)()


async def submit(session: AgentSession, tool: str, args: dict[str, Any]) -> None:
    from channels.db import database_sync_to_async

    await database_sync_to_async(services.tool_call_run_in_process)(
        session=session, tool=tool, args=args
    )
