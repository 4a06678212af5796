"""MCP sessions over two web processes, as the proxy of deploy/ spreads a client's requests
over them: each request may reach either process, and the session opened on one is the
same session on the other (its default session too), closed on both by one DELETE, and
never taken up with another token. Checked with the `mcp` package's own client and with
plain requests sent to one process or the other; the stored connection is read in the
database."""

from __future__ import annotations

import contextlib
import itertools
import json
import threading
import time
from collections.abc import Iterator
from datetime import timedelta
from pathlib import Path
from typing import Any

import anyio
import httpx
import httpx2
import pytest
from django.contrib.auth.models import User
from django.utils import timezone
from mcp import Client
from mcp.client.streamable_http import streamable_http_client

from tests.browser.server import Daphne
from tests.helpers import Worker
from tests.integration.test_mcp import facts, start, text
from tools_app import services
from tools_app.models import McpConnection

pytestmark = [
    pytest.mark.django_db(transaction=True, serialized_rollback=True),
    pytest.mark.worker,
]

VERSION = "2025-11-25"


@pytest.fixture(scope="module")
def webs(stack: Worker, tmp_path_factory: pytest.TempPathFactory) -> Iterator[list[str]]:
    """Two daphne processes on the worker's database and Redis: their /mcp URLs."""
    logs = tmp_path_factory.mktemp("daphne-two")
    servers = [Daphne(dict(stack.env), logs / f"web{index}.log") for index in (0, 1)]
    for server in servers:
        server.start()
    yield [f"{server.url}/mcp" for server in servers]
    for server in servers:
        server.stop()


class TakingTurns(httpx2.AsyncBaseTransport):
    """Each request to the next web process in turn, as a proxy spreading requests does."""

    def __init__(self, urls: list[str]) -> None:
        self.ports = itertools.cycle([httpx2.URL(url).port for url in urls])
        self.inner = httpx2.AsyncHTTPTransport()
        self.sent: list[tuple[str, int | None]] = []

    async def handle_async_request(self, request: httpx2.Request) -> httpx2.Response:
        request.url = request.url.copy_with(port=next(self.ports))
        self.sent.append((request.method, request.url.port))
        return await self.inner.handle_async_request(request)

    async def aclose(self) -> None:
        await self.inner.aclose()


def test_an_sdk_client_whose_requests_alternate_between_web_processes_keeps_its_session(
    webs: list[str], creator: User, workspace: Path
) -> None:
    token = services.api_token_create(user=creator, scope="agent")
    turns = TakingTurns(webs)

    async def scenario() -> tuple[int, Any, Any, list[str]]:
        headers = {"Authorization": f"Bearer {token}"}
        timeout = httpx2.Timeout(30, read=120)
        async with (
            httpx2.AsyncClient(headers=headers, timeout=timeout, transport=turns) as http,
            Client(streamable_http_client(webs[0], http_client=http), mode="legacy") as client,
        ):
            session_id = await start(client, workspace)
            listed = await client.call_tool("list_files", {"path": "."})
            read = await client.call_tool("read_file", {"path": "README.md"})
            names = [tool.name for tool in (await client.list_tools()).tools]
            return session_id, listed, read, names

    session_id, listed, read, names = anyio.run(scenario)
    assert {port for method, port in turns.sent if method == "POST"} == {
        httpx2.URL(url).port for url in webs
    }
    assert not listed.is_error and not read.is_error, (text(listed), text(read))
    assert facts(listed)["session"] == facts(read)["session"] == session_id  # the default
    assert text(read).startswith("1 | # Title")
    assert names[:2] == ["start_session", "await_tool_call"]
    assert turns.sent[-1][0] == "DELETE"  # the client closed it …
    assert not McpConnection.objects.exists()  # … on whichever process: closed for both


def mcp_rpc(url: str, token: str, body: dict[str, Any], key: str = "") -> httpx.Response:
    headers = {
        "Authorization": f"Bearer {token}",
        "Accept": "application/json, text/event-stream",
        **({"Mcp-Session-Id": key, "MCP-Protocol-Version": VERSION} if key else {}),
    }
    return httpx.post(url, headers=headers, json=body, timeout=30)


def mcp_open(url: str, token: str) -> str:
    """An MCP session opened on `url` by the handshake; its `Mcp-Session-Id`."""
    client = {"name": "t", "version": "1"}
    params = {"protocolVersion": VERSION, "capabilities": {}, "clientInfo": client}
    initialize = {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": params}
    opened = mcp_rpc(url, token, initialize)
    assert opened.status_code == 200, opened.text
    key = opened.headers["mcp-session-id"]
    initialized = {"jsonrpc": "2.0", "method": "notifications/initialized"}
    assert mcp_rpc(url, token, initialized, key).status_code == 202
    return key


def mcp_tools_status(url: str, token: str, key: str) -> int:
    return mcp_rpc(url, token, {"jsonrpc": "2.0", "id": 2, "method": "tools/list"}, key).status_code


def mcp_close(url: str, token: str, key: str) -> int:
    headers = {
        "Authorization": f"Bearer {token}",
        "Mcp-Session-Id": key,
        "MCP-Protocol-Version": VERSION,
    }
    return httpx.delete(url, headers=headers, timeout=30).status_code


def test_a_session_closed_on_one_web_process_is_gone_from_the_other(
    webs: list[str], creator: User
) -> None:
    token = services.api_token_create(user=creator, scope="agent")
    key = mcp_open(webs[0], token)
    stored = McpConnection.objects.get(session_key=key)
    assert stored.token.user == creator and stored.default_session is None
    assert (mcp_tools_status(webs[0], token, key), mcp_tools_status(webs[1], token, key)) == (
        200,
        200,
    )

    assert mcp_close(webs[1], token, key) == 200
    assert not McpConnection.objects.filter(session_key=key).exists()
    assert (mcp_tools_status(webs[0], token, key), mcp_tools_status(webs[1], token, key)) == (
        404,
        404,
    )


class Stream:
    """A client's own stream (its GET) of an MCP session, read on a thread: the methods
    of the messages it brings."""

    def __init__(self, url: str, token: str, key: str) -> None:
        self.heard: list[str] = []
        self.open, self.changed = threading.Event(), threading.Event()
        self.http = httpx.Client(timeout=httpx.Timeout(30, read=None))
        headers = {
            "Authorization": f"Bearer {token}",
            "Accept": "text/event-stream",
            "Mcp-Session-Id": key,
            "MCP-Protocol-Version": VERSION,
        }
        self.reading = threading.Thread(target=self._read, args=(url, headers), daemon=True)
        self.reading.start()
        assert self.open.wait(30), "the stream did not open"

    def _read(self, url: str, headers: dict[str, str]) -> None:
        with (
            contextlib.suppress(httpx.HTTPError),
            self.http.stream("GET", url, headers=headers) as got,
        ):
            assert got.status_code == 200
            self.open.set()
            for line in got.iter_lines():
                if line.startswith("data:"):
                    self.heard.append(json.loads(line[5:]).get("method", ""))
                    if self.heard[-1] == "notifications/tools/list_changed":
                        self.changed.set()

    def close(self) -> None:
        self.http.close()


@pytest.mark.parametrize("stream_on", [1, 0])
def test_a_started_session_is_told_once_on_the_stream_whichever_process_holds_it(
    webs: list[str], creator: User, workspace: Path, stream_on: int
) -> None:
    """The client's `start_session` is served by the first process. With the client's
    stream on the second, the first tells it and it writes `tools/list_changed` to the
    stream; with the stream on the first, the first writes it, and only once."""
    token = services.api_token_create(user=creator, scope="agent")
    key = mcp_open(webs[0], token)
    stream = Stream(webs[stream_on], token, key)
    try:
        call = {
            "jsonrpc": "2.0", "id": 3, "method": "tools/call",
            "params": {"name": "start_session", "arguments": {"task": "t", "repo": str(workspace)}},
        }  # fmt: skip
        started = mcp_rpc(webs[0], token, call, key)
        assert started.status_code == 200 and '"isError":false' in started.text, started.text
        assert stream.changed.wait(20), stream.heard
        time.sleep(1)  # a second one would have come by now
        assert stream.heard == ["notifications/tools/list_changed"]
    finally:
        stream.close()
    assert mcp_close(webs[0], token, key) == 200


def test_another_token_never_takes_up_a_session_and_its_owner_keeps_it(
    webs: list[str], creator: User, outsider: User
) -> None:
    owner = services.api_token_create(user=creator, scope="agent")
    key = mcp_open(webs[0], owner)
    for stranger in (
        services.api_token_create(user=outsider, scope="agent"),
        services.api_token_create(user=creator, scope="agent"),  # the same user, another token
    ):
        assert (
            mcp_tools_status(webs[1], stranger, key),
            mcp_tools_status(webs[0], stranger, key),
        ) == (404, 404)
        assert mcp_close(webs[1], stranger, key) == 404
    assert McpConnection.objects.filter(session_key=key, token__user=creator).count() == 1
    assert (mcp_tools_status(webs[1], owner, key), mcp_tools_status(webs[0], owner, key)) == (
        200,
        200,
    )


def test_a_session_unused_for_a_week_is_closed(webs: list[str], creator: User) -> None:
    token = services.api_token_create(user=creator, scope="agent")
    key, old = mcp_open(webs[0], token), mcp_open(webs[1], token)
    week_ago = timezone.now() - timedelta(days=7, minutes=1)
    McpConnection.objects.filter(session_key=key).update(last_used_at=week_ago)
    assert (mcp_tools_status(webs[0], token, key), mcp_tools_status(webs[1], token, key)) == (
        404,
        404,
    )
    assert not McpConnection.objects.filter(session_key=key).exists()

    McpConnection.objects.filter(session_key=old).update(last_used_at=week_ago)
    assert services.mcp_connection_prune() == 1
    assert mcp_tools_status(webs[1], token, old) == 404


def test_a_used_session_is_marked_used_at_most_every_ten_minutes(
    webs: list[str], creator: User
) -> None:
    token = services.api_token_create(user=creator, scope="agent")
    key = mcp_open(webs[0], token)
    hour_ago = timezone.now() - timedelta(hours=1)
    McpConnection.objects.filter(session_key=key).update(last_used_at=hour_ago)
    assert mcp_tools_status(webs[1], token, key) == 200
    touched = McpConnection.objects.get(session_key=key).last_used_at
    assert touched > timezone.now() - timedelta(minutes=1)
    assert mcp_tools_status(webs[0], token, key) == 200
    assert McpConnection.objects.get(session_key=key).last_used_at == touched
