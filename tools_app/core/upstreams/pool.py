"""Connections to third-party MCP servers, kept warm in the process that uses them.

Each process that talks to upstreams (daphne for `tools/list`, resources and prompts;
the tool worker for the calls it forwards) has one `Pool`: an event loop on a thread
of its own, so that a server that is slow to start never blocks daphne's loop (the
held waits of `/mcp` live there) nor holds a worker's database connection.

A server is started on first use, kept while it is used, and stopped when it has been
idle for `idle_seconds`. One that crashed is started again by the next request; a
request that may be repeated (`retry`: a listing) is sent again once on a fresh start,
a tool call never (it is forwarded once: the worker lists the tools first, which both
proves the server alive and checks the pinned definition).
An `Endpoint` names everything a connection depends on; a changed entry (another
command, URL or credential) is another endpoint, and its old connection goes idle. An
http server's connection goes only to the addresses checked when it started
(`pinned.py`), whatever its name resolves to later.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import hashlib
import logging
import os
import threading
import time
from collections.abc import Awaitable, Callable
from contextlib import AsyncExitStack, suppress
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, TextIO, TypeVar

from tools_app.core.egress import proxy
from tools_app.core.egress import sandbox as egress_sandbox
from tools_app.core.egress.grant import EgressGrant
from tools_app.core.tools import sandbox_user
from tools_app.core.upstreams.pinned import pinned_client

if TYPE_CHECKING:
    from mcp.client import Client

# The MCP SDK is imported where it is used: importing it costs about 0.9 s of CPU,
# and every process that loads the services (a worker, each `manage.py` command) would
# pay it at start (tests/unit/test_startup_imports.py).

logger = logging.getLogger(__name__)

T = TypeVar("T")
Operation = Callable[["Client"], Awaitable[T]]
STDERR_TAIL = 2000  # bytes of a server's stderr an error names (the end of its start's)
STDERR_KEPT = 1 << 20  # bytes of a server's stderr file before it is moved to NAME.stderr.1


class UpstreamUnavailable(Exception):
    """The server did not start or did not answer: the message says what happened."""


def upstream_failures() -> tuple[type[Exception], ...]:
    """What a request to an upstream may raise: `UpstreamUnavailable`, or the SDK's
    `MCPError` (the server answered with an error). For an `except` clause, which
    evaluates it only when something was raised."""
    from mcp.shared.exceptions import MCPError

    return (UpstreamUnavailable, MCPError)


@dataclass(frozen=True)
class Endpoint:
    """How to reach one server: a sandboxed argv (stdio) or a URL with headers (http)."""

    name: str
    argv: tuple[str, ...] = ()
    env: tuple[tuple[str, str], ...] = ()
    cwd: str = ""
    stderr: str = ""  # where a stdio server's stderr goes (its scratch folder)
    url: str = ""
    addresses: tuple[str, ...] = ()  # the ones the SSRF guard checked: the only ones used
    headers: tuple[tuple[str, str], ...] = field(default=(), repr=False)
    egress: EgressGrant | None = None  # the hosts a stdio server reaches through the proxy
    egress_dir: str = ""  # where the proxy's socket is (bound into the sandbox)

    def key(self) -> str:
        parts = repr(
            (self.name, self.argv, self.env, self.cwd, self.url, self.headers, self.egress)
        )
        return hashlib.sha256(parts.encode("utf-8", "surrogatepass")).hexdigest()


class _Connection:
    """One running server: its client, entered and left by one owning task."""

    def __init__(self, endpoint: Endpoint, idle_seconds: float) -> None:
        self.endpoint = endpoint
        self.idle_seconds = idle_seconds
        self.client: Client | None = None
        self.ready = asyncio.Event()
        self.stop = asyncio.Event()
        self.error: BaseException | None = None
        self.in_flight = 0
        self.last_used = time.monotonic()
        self.started_at: float | None = None  # wall-clock time it answered first
        self.refusals: list[int] = []  # an http server's error statuses (the SDK drops them)
        self.output_from = 0  # where this start's stderr begins in its file
        self.task: asyncio.Task[None] | None = None

    async def own(self) -> None:
        """Start the server, keep it while it is used, stop it when idle or told."""
        try:
            async with AsyncExitStack() as stack:
                client = _client(self, stack)
                self.client = await stack.enter_async_context(client)
                self.started_at = time.time()
                self.ready.set()
                while not self.stop.is_set():
                    idle_for = time.monotonic() - self.last_used
                    if not self.in_flight and idle_for >= self.idle_seconds:
                        break
                    with suppress(TimeoutError):
                        await asyncio.wait_for(self.stop.wait(), max(0.5, self.idle_seconds / 4))
        except BaseException as exc:
            self.error = exc
        finally:
            self.client = None
            self.ready.set()

    def output(self) -> str:
        """What this start of a stdio server wrote to its stderr (the end of it), as the
        end of an error message."""
        if not self.endpoint.stderr:
            return ""
        try:
            with open(self.endpoint.stderr, "rb") as log:
                log.seek(max(self.output_from, log.seek(0, os.SEEK_END) - STDERR_TAIL))
                data = log.read()
        except OSError:
            return ""
        text = data.decode("utf-8", "replace").strip()
        return f"; its last output: {text}" if text else ""


def _client(connection: _Connection, stack: AsyncExitStack) -> Client:
    from mcp.client import Client
    from mcp.client.stdio import StdioServerParameters, stdio_client
    from mcp.client.streamable_http import streamable_http_client

    endpoint, refusals = connection.endpoint, connection.refusals
    if endpoint.url:
        http = pinned_client(endpoint.url, endpoint.addresses, dict(endpoint.headers))
        stack.push_async_callback(http.aclose)

        async def noted(response: Any) -> None:
            if response.status_code >= 400:
                refusals.append(int(response.status_code))

        http.event_hooks["response"].append(noted)
        return Client(streamable_http_client(endpoint.url, http_client=http), cache=None)
    errlog = _output_log(endpoint.stderr)
    stack.callback(errlog.close)
    connection.output_from = errlog.tell()
    if endpoint.egress is not None:  # started first: the sandbox binds its socket
        owner = sandbox_user.sandbox_ids() if sandbox_user.worker_is_root() else None
        socket_path = _own_socket(Path(endpoint.egress_dir), stack)
        stack.enter_context(proxy.serving(endpoint.egress, socket_path, owner))
    params = StdioServerParameters(
        command=endpoint.argv[0],
        args=list(endpoint.argv[1:]),
        env=dict(endpoint.env),
        cwd=endpoint.cwd or None,
    )
    return Client(stdio_client(params, errlog=errlog), cache=None)


def _output_log(path: str) -> TextIO:
    """The server's stderr file, appended to: each process on the host that runs the
    server writes there, and none may empty it under another. Past STDERR_KEPT bytes it
    is moved aside first (to PATH.1; a copy still writing keeps writing there)."""
    if not path:
        return open(os.devnull, "w", encoding="utf-8")
    with suppress(OSError):
        if os.path.getsize(path) > STDERR_KEPT:
            os.replace(path, f"{path}.1")
    return open(path, "a", encoding="utf-8")


def _own_socket(folder: Path, stack: AsyncExitStack) -> Path:
    """Where this process's proxy for a server listens: its folder is this process's own
    (each process on the host runs its own copy of the server), so what may be there is
    only a socket left by a dead process that had its pid. Removed after the proxy stops."""
    folder.mkdir(mode=0o755, exist_ok=True)
    socket_path = folder / egress_sandbox.SOCKET_NAME
    socket_path.unlink(missing_ok=True)
    stack.callback(_remove, folder)
    return socket_path


def _remove(folder: Path) -> None:
    with suppress(OSError):
        (folder / egress_sandbox.SOCKET_NAME).unlink(missing_ok=True)
        folder.rmdir()


class Pool:
    """The warm servers of this process, on an event loop of their own."""

    def __init__(self, *, idle_seconds: float, start_seconds: float) -> None:
        self.idle_seconds = idle_seconds
        self.start_seconds = start_seconds
        self.connections: dict[str, _Connection] = {}
        self.loop: asyncio.AbstractEventLoop | None = None
        self.guard = threading.Lock()

    def submit(
        self, endpoint: Endpoint, operation: Operation[T], *, timeout: float, retry: bool = False
    ) -> concurrent.futures.Future[T]:
        """Run `operation` with the server's client on the pool's loop. `retry`: the
        operation may be sent twice, so a server found dead is started again for it."""
        coroutine = self._run(endpoint, operation, timeout, retry)
        return asyncio.run_coroutine_threadsafe(coroutine, self._loop())

    def run(
        self, endpoint: Endpoint, operation: Operation[T], *, timeout: float, retry: bool = False
    ) -> T:
        """`submit`, waited for in this thread (a worker's)."""
        future = self.submit(endpoint, operation, timeout=timeout, retry=retry)
        return future.result(2 * (timeout + self.start_seconds) + 5)

    def close(self) -> None:
        """Stop every server (tests, and a process's end)."""
        loop = self.loop
        if loop is None:
            return
        asyncio.run_coroutine_threadsafe(self._close_all(), loop).result(30)

    def started_at(self, endpoint: Endpoint) -> float | None:
        """When the server this endpoint names last started (None: not running here)."""
        connection = self.connections.get(endpoint.key())
        return connection.started_at if connection is not None else None

    def _loop(self) -> asyncio.AbstractEventLoop:
        with self.guard:
            if self.loop is None:
                loop = asyncio.new_event_loop()
                thread = threading.Thread(
                    target=loop.run_forever, name="agentweb-mcp-upstreams", daemon=True
                )
                thread.start()
                self.loop = loop
            return self.loop

    async def _run(
        self, endpoint: Endpoint, operation: Operation[T], timeout: float, retry: bool
    ) -> T:
        if not retry:
            return await self._once(endpoint, operation, timeout)
        try:
            return await self._once(endpoint, operation, timeout)
        except UpstreamUnavailable:
            raise
        except Exception as exc:
            from mcp.shared.exceptions import MCPError
            from mcp_types import CONNECTION_CLOSED

            if isinstance(exc, MCPError) and exc.code != CONNECTION_CLOSED:
                raise  # the server answered: an error of its own, not a crash
            logger.info("MCP upstream %s: %r; starting it again", endpoint.name, exc)
            await self._stopped(endpoint)
            return await self._once(endpoint, operation, timeout)

    async def _stopped(self, endpoint: Endpoint) -> None:
        connection = self.connections.pop(endpoint.key(), None)
        if connection is not None and connection.task is not None:
            connection.stop.set()
            await asyncio.gather(connection.task, return_exceptions=True)

    async def _once(self, endpoint: Endpoint, operation: Operation[T], timeout: float) -> T:
        connection = await self._connected(endpoint)
        connection.in_flight += 1
        try:
            assert connection.client is not None
            return await asyncio.wait_for(operation(connection.client), timeout)
        except TimeoutError:
            raise UpstreamUnavailable(
                f"the MCP server {endpoint.name!r} did not answer within {timeout:g} s"
            ) from None
        finally:
            connection.in_flight -= 1
            connection.last_used = time.monotonic()

    async def _connected(self, endpoint: Endpoint) -> _Connection:
        key = endpoint.key()
        connection = self.connections.get(key)
        if (
            connection is None
            or connection.task is None
            or connection.task.done()
            or connection.stop.is_set()
        ):
            connection = _Connection(endpoint, self.idle_seconds)
            self.connections[key] = connection
            connection.task = asyncio.get_running_loop().create_task(connection.own())
        try:
            await asyncio.wait_for(connection.ready.wait(), self.start_seconds)
        except TimeoutError:
            connection.stop.set()
            raise UpstreamUnavailable(
                f"the MCP server {endpoint.name!r} did not start within {self.start_seconds:g} s"
                + connection.output()
            ) from None
        if connection.client is None:
            self.connections.pop(key, None)
            raise UpstreamUnavailable(
                f"the MCP server {endpoint.name!r} did not start: {_said(connection.error)}"
                + (f" (HTTP {connection.refusals[-1]})" if connection.refusals else "")
                + connection.output()
            )
        return connection

    async def _close_all(self) -> None:
        tasks = []
        for connection in self.connections.values():
            connection.stop.set()
            if connection.task is not None:
                tasks.append(connection.task)
        await asyncio.gather(*tasks, return_exceptions=True)
        self.connections.clear()


def _said(error: BaseException | None) -> str:
    """An exception group's first cause, as one line."""
    while isinstance(error, BaseExceptionGroup) and error.exceptions:
        error = error.exceptions[0]
    if error is None:
        return "it ended"
    text = str(error) or type(error).__name__
    return " ".join(text.split())[:500]
