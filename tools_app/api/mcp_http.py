"""`/mcp`: the MCP server over streamable HTTP, on daphne beside Django.

Django's middleware does not run here, so `/mcp` checks what it would (`entry_checks`): a
`Host` outside DJANGO_ALLOWED_HOSTS is a 400 and a browser's `Origin` that is not the
site's a 403, as the MCP specification asks of a server (DNS rebinding). Then every
request needs `Authorization: Bearer TOKEN` (an API token, as for the REST API); without
one, or with a bad one, the answer is 401 before any MCP is spoken. The SDK's session
manager keeps each MCP session (its `Mcp-Session-Id`) bound to the token that opened it,
stored so that every web process serves it (`mcp_sessions`), and this module's
`Principal` names that session as the connection whose last `start_session` is the
default session. A 2026-07-28 request (its `MCP-Protocol-Version` header says so) is
served by the SDK as one exchange, with no `Mcp-Session-Id`: it has no connection, and
its calls name their session.

daphne does not run ASGI lifespan events, so the session manager (a task group that
lives as long as the process) is started by the first request, on daphne's loop.
"""

from __future__ import annotations

import asyncio
import io
import json
from typing import Any

from asgiref.sync import sync_to_async
from django.conf import settings
from django.core.handlers.asgi import ASGIRequest
from django.db import close_old_connections
from mcp.server.auth.middleware.bearer_auth import AuthenticatedUser
from mcp.server.auth.provider import AccessToken
from mcp.server.context import ServerRequestContext

from tools_app.api.entry_checks import entry_refusal
from tools_app.api.mcp_callers import Principal
from tools_app.api.mcp_server import build_server
from tools_app.api.mcp_sessions import (
    SESSION_HEADER,
    TOKEN_ID_KEY,
    SharedSessions,
    StoredDefaults,
    header,
)
from tools_app.services import tokens

PATHS = {"/mcp", "/mcp/"}
USER_KEY = "agentweb.user"
SCOPE_KEY = "agentweb.scope"
NO_TOKEN = "Authentication required: send `Authorization: Bearer TOKEN` with an API token."  # noqa: S105
BAD_TOKEN = "The bearer token is not valid: {reason}."  # noqa: S105  (a message)


def principal_of(ctx: ServerRequestContext[Any, Any]) -> Principal:
    """The token user of this request, and its MCP session as the connection."""
    scope = ctx.request.scope if ctx.request is not None else {}
    if USER_KEY not in scope:  # only requests that passed `McpHttp` reach the server
        raise PermissionError("an MCP request without an authenticated user")
    connection = header(scope, SESSION_HEADER)
    return Principal(user=scope[USER_KEY], scope=scope[SCOPE_KEY], connection=connection or None)


class McpHttp:
    """The ASGI app for `/mcp`: bearer auth, then the SDK's streamable HTTP transport."""

    def __init__(self) -> None:
        self.server = build_server(principal_of, StoredDefaults())
        self.manager: SharedSessions | None = None
        self.running: asyncio.Task[None] | None = None
        self.starting = asyncio.Lock()

    async def __call__(self, scope: dict[str, Any], receive: Any, send: Any) -> None:
        refused = entry_refusal(ASGIRequest(scope, io.BytesIO()))
        if refused is not None:
            await _answer(send, refused.status, refused.detail)
            return
        found = await _authenticate(scope)
        if isinstance(found, str):
            await _answer(send, 401, found, [(b"www-authenticate", b'Bearer realm="agentweb"')])
            return
        user, token_scope, token_id = found
        identity = AccessToken(token=f"api-token:{token_id}", client_id=str(user.pk), scopes=[])
        authenticated = {
            **scope,
            "user": AuthenticatedUser(identity),  # the SDK binds each MCP session to it
            USER_KEY: user,
            SCOPE_KEY: token_scope,
            TOKEN_ID_KEY: token_id,
        }
        manager = await self._manager()
        await manager.handle_request(authenticated, receive, send)

    async def _manager(self) -> SharedSessions:
        async with self.starting:
            if self.manager is None or self.running is None or self.running.done():
                self.manager = SharedSessions(
                    app=self.server,
                    max_request_body_size=settings.DATA_UPLOAD_MAX_MEMORY_SIZE,
                )
                ready = asyncio.Event()
                self.running = asyncio.ensure_future(_run(self.manager, ready))
                await ready.wait()
            return self.manager


async def _run(manager: SharedSessions, ready: asyncio.Event) -> None:
    async with manager.run():
        ready.set()
        await asyncio.Event().wait()  # until the process ends


async def _authenticate(scope: dict[str, Any]) -> tuple[Any, str, int] | str:
    """(user, token scope, token id), or why not."""
    kind, _, token = (header(scope, b"authorization") or "").partition(" ")
    if kind.lower() != "bearer" or not token.strip():
        return NO_TOKEN
    found = await sync_to_async(_token)(token.strip())
    if isinstance(found, str):
        return BAD_TOKEN.format(reason=found)  # unknown, revoked or expired: which
    return found.user, found.scope, found.pk


def _token(token: str) -> Any:
    close_old_connections()
    return tokens.api_token_verify(token=token)


async def _answer(
    send: Any, status: int, detail: str, extra: list[tuple[bytes, bytes]] | None = None
) -> None:
    """A refusal as the REST API answers one: JSON with a `detail`."""
    body = json.dumps({"detail": detail}).encode()
    headers = [
        (b"content-type", b"application/json"),
        (b"content-length", str(len(body)).encode()),
        *(extra or []),
    ]
    await send({"type": "http.response.start", "status": status, "headers": headers})
    await send({"type": "http.response.body", "body": body})


class WithMcp:
    """Route `/mcp` to the MCP app, every other HTTP request to Django."""

    def __init__(self, django: Any) -> None:
        self.django = django
        self.mcp: McpHttp | None = None

    async def __call__(self, scope: dict[str, Any], receive: Any, send: Any) -> None:
        if scope["type"] == "http" and scope.get("path") in PATHS:
            if self.mcp is None:
                self.mcp = McpHttp()
            await self.mcp(scope, receive, send)
            return
        await self.django(scope, receive, send)
