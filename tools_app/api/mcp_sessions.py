"""MCP sessions that every web process serves, whichever one opened them.

The SDK's session manager keeps each MCP session (`Mcp-Session-Id`) in the memory of the
process whose `initialize` made it, and answers 404 for one it does not hold. Behind a
proxy that spreads requests over several web processes (deploy/), a client's next
request would then find its session only on every other try. So a session is also
stored (`McpConnection`) as its `initialize` is answered; a process that does not hold a
stored session takes it up (born ready: its handshake was made elsewhere) for the
request's own token, and one that holds a session the store no longer has (closed by a
DELETE sent to another process, or unused for a week) lets it go. A process forgets a
session unused for the SDK's idle time (30 minutes) and takes it up again when it comes
back, so its memory holds the connections in use, not every one ever opened.

A notification on a session's own stream (`tools/list_changed`, when a `start_session`
changes the default session and its skill tools) reaches the client only from the process
holding that stream (its GET), which need not be the one that served the call. So the
change is also announced over the channel layer, and every other process that serves the
session writes the notification to its stream (`_hear_tools_changed`); a process without
the client's stream drops it, as the SDK does.

`SharedSessions` extends the SDK's manager through its own parts (its table of sessions,
their owners, its task group, its 404, a transport's write stream) and runs a session as
the manager does, with a connection made ready. So pyproject keeps the SDK to its 2.3 series, and
`tests/integration/test_mcp_web_processes.py` checks all of it against the SDK installed.
"""

from __future__ import annotations

import contextlib
import logging
import secrets
from collections.abc import AsyncIterator
from typing import Any

import anyio
from anyio.abc import TaskStatus
from channels.layers import get_channel_layer
from mcp.server.auth.middleware.bearer_auth import AuthenticatedUser, authorization_context
from mcp.server.connection import Connection
from mcp.server.runner import serve_connection
from mcp.server.streamable_http import StreamableHTTPServerTransport
from mcp.server.streamable_http_manager import StreamableHTTPSessionManager, _error_response
from mcp.shared.jsonrpc_dispatcher import JSONRPCDispatcher
from mcp.shared.message import SessionMessage
from mcp_types import DEFAULT_NEGOTIATED_VERSION, JSONRPCNotification

from tools_app.api.mcp_callers import Principal, db_thread
from tools_app.services import mcp_connections

logger = logging.getLogger(__name__)

SESSION_HEADER = b"mcp-session-id"
VERSION_HEADER = b"mcp-protocol-version"
TOKEN_ID_KEY = "agentweb.token_id"  # noqa: S105 - the scope key of the request's token id
TOOLS_CHANGED_GROUP = "mcp-tools-changed"  # every web process's MCP sessions, one group
TOOLS_CHANGED = "mcp.tools_changed"
PROCESS = secrets.token_hex(8)  # this process's mark on what it announces
RETRY_SECONDS = 2.0  # after the channel layer failed, before listening again
JOIN_SECONDS = 5.0  # the most the first request waits for the listening to start


def header(scope: dict[str, Any], name: bytes) -> str | None:
    """An ASGI scope's (or response start's) header, or None."""
    value = next((v for k, v in scope.get("headers") or [] if k == name), None)
    return value.decode("latin-1") if value is not None else None


class SharedSessions(StreamableHTTPSessionManager):
    """The SDK's stateful session manager, with its sessions stored for every process."""

    @contextlib.asynccontextmanager
    async def run(self) -> AsyncIterator[None]:
        async with super().run():
            assert self._task_group is not None
            await self._task_group.start(self._hear_tools_changed)
            yield

    async def _hear_tools_changed(
        self, *, task_status: TaskStatus[None] = anyio.TASK_STATUS_IGNORED
    ) -> None:
        """Tell the clients of this process's streams that another process changed their
        tools; listens as long as the manager runs, again after the layer fails. The
        manager serves once this listens (or once the layer has failed a first time)."""
        while True:
            try:
                layer = get_channel_layer()
                if layer is None:
                    task_status.started()
                    return
                with anyio.fail_after(JOIN_SECONDS):  # Redis away: serve, and try again
                    channel = await layer.new_channel()
                    await layer.group_add(TOOLS_CHANGED_GROUP, channel)
                task_status.started()
                while True:
                    message = await layer.receive(channel)
                    if message.get("type") == TOOLS_CHANGED and message.get("origin") != PROCESS:
                        await self._tell_tools_changed(str(message.get("session_key")))
            except Exception as exc:
                logger.debug("MCP: listening for tools changed failed (%r)", exc)
                with contextlib.suppress(RuntimeError):  # started already
                    task_status.started()
                await anyio.sleep(RETRY_SECONDS)

    async def _tell_tools_changed(self, key: str) -> None:
        transport = self._server_instances.get(key)
        stream = getattr(transport, "_write_stream", None)
        if stream is None:
            return
        notification = JSONRPCNotification(jsonrpc="2.0", method="notifications/tools/list_changed")
        with contextlib.suppress(anyio.ClosedResourceError, anyio.BrokenResourceError):
            await stream.send(SessionMessage(notification))

    async def _handle_stateful_request(self, scope: Any, receive: Any, send: Any) -> None:
        key = header(scope, SESSION_HEADER)
        token_id: int = scope[TOKEN_ID_KEY]
        if key is None:  # an `initialize` opens one: stored before its answer leaves
            await super()._handle_stateful_request(scope, receive, _storing(send, token_id))
            return
        owner = await db_thread(mcp_connections.mcp_connection_owner)(session_key=key)
        if owner is None:
            await self._let_go(key)
        if owner != token_id:  # as if it did not exist
            await _error_response("Session not found", 404)(scope, receive, send)
            return
        if key not in self._server_instances:
            await self._take_up(key, scope)
        closing = scope["method"] == "DELETE"
        await super()._handle_stateful_request(
            scope, receive, _closing(send, key, token_id) if closing else send
        )

    async def _take_up(self, key: str, scope: Any) -> None:
        """Serve here a session another process opened, for the request's credential."""
        async with self._session_creation_lock:
            if key in self._server_instances:  # a concurrent request took it up
                return
            transport = StreamableHTTPServerTransport(
                mcp_session_id=key,
                is_json_response_enabled=self.json_response,
                event_store=self.event_store,
                security_settings=self.security_settings,
                retry_interval=self.retry_interval,
                idle_timeout=self.session_idle_timeout,
            )
            user = scope.get("user")
            if isinstance(user, AuthenticatedUser):
                self._session_owners[key] = authorization_context(user)
            self._server_instances[key] = transport
            version = header(scope, VERSION_HEADER) or DEFAULT_NEGOTIATED_VERSION
            assert self._task_group is not None
            try:  # under the lock: no request reaches the transport before it is served
                await self._task_group.start(self._serve_taken_up, key, transport, version)
            except BaseException:
                await self._discard_session(key, transport)
                raise

    async def _serve_taken_up(
        self,
        key: str,
        transport: StreamableHTTPServerTransport,
        version: str,
        *,
        task_status: TaskStatus[None] = anyio.TASK_STATUS_IGNORED,
    ) -> None:
        """What the SDK runs for a session it opened, with a connection born ready."""
        async with transport.connect() as (read_stream, write_stream):
            task_status.started()
            try:
                with transport.idle_scope or anyio.CancelScope():
                    dispatcher: JSONRPCDispatcher[Any] = JSONRPCDispatcher(
                        read_stream, write_stream, inline_methods=frozenset({"initialize"})
                    )
                    connection = Connection.for_loop(
                        dispatcher, session_id=key, protocol_version_hint=version
                    )
                    connection.initialized.set()  # its handshake was made on another process
                    await serve_connection(
                        self.app,
                        dispatcher,
                        connection=connection,
                        lifespan_state=self._lifespan_state,
                    )
            except Exception:
                logger.exception("MCP session %s crashed", key[:8])
            finally:
                await self._discard_session(key, transport)

    async def _let_go(self, key: str) -> None:
        transport = self._server_instances.get(key)
        if transport is not None:
            await self._discard_session(key, transport)


def _storing(send: Any, token_id: int) -> Any:
    """`send`, storing the session an answer opens before the client can learn its id."""

    async def storing(message: dict[str, Any]) -> None:
        if message["type"] == "http.response.start" and message["status"] < 400:
            key = header(message, SESSION_HEADER)
            if key is not None:
                await db_thread(mcp_connections.mcp_connection_open)(
                    session_key=key, token_id=token_id
                )
        await send(message)

    return storing


def _closing(send: Any, key: str, token_id: int) -> Any:
    """`send`, closing the stored session once the SDK has accepted its DELETE."""

    async def closing(message: dict[str, Any]) -> None:
        if message["type"] == "http.response.start" and message["status"] < 300:
            await db_thread(mcp_connections.mcp_connection_close)(
                session_key=key, token_id=token_id
            )
        await send(message)

    return closing


class StoredDefaults:
    """Each connection's default session, in its stored `McpConnection`."""

    async def get(self, who: Principal) -> int | None:
        if who.connection is None:
            return None
        found = db_thread(mcp_connections.mcp_connection_default)
        default: int | None = await found(session_key=who.connection, user_id=who.user.pk)
        return default

    async def set(self, who: Principal, session_id: int) -> None:
        if who.connection is not None:
            remember = db_thread(mcp_connections.mcp_connection_remember)
            await remember(session_key=who.connection, user_id=who.user.pk, session_id=session_id)
            await announce_tools_changed(who.connection)


async def announce_tools_changed(key: str) -> None:
    """Tell the other web processes that the session of `key` lists other tools now (the
    one serving the call tells its own stream itself)."""
    layer = get_channel_layer()
    if layer is None:
        return
    message = {"type": TOOLS_CHANGED, "session_key": key, "origin": PROCESS}
    try:
        await layer.group_send(TOOLS_CHANGED_GROUP, message)
    except Exception as exc:  # the client lists the tools again when it next asks
        logger.debug("MCP: tools changed not announced (%r)", exc)
