"""Who sends an MCP request, what their connection remembers, and the ORM work MCP's
handlers do off the event loop: shared by the server (`mcp_server`) and its transports
(`mcp_http`, `mcp_sessions`, `mcp_stdio`)."""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any, Protocol

from asgiref.sync import sync_to_async
from django.db import close_old_connections
from mcp.server.context import ServerRequestContext

CONNECTIONS_KEPT = 10_000  # the default session of at most this many connections


@dataclass(frozen=True)
class Principal:
    """Who sends a request: a Django user, the token's scope, and the connection
    (None where the transport has none: no default session there)."""

    user: Any
    scope: str
    connection: str | None


PrincipalOf = Callable[[ServerRequestContext[Any, Any]], Principal]


class DefaultSessions(Protocol):
    """Where a connection's last `start_session` is kept, for its calls that name none."""

    async def get(self, who: Principal) -> int | None: ...

    async def set(self, who: Principal, session_id: int) -> None: ...


class KeptDefaults:
    """In this process's memory: the connections of `mcp_stdio`, which live no longer."""

    def __init__(self) -> None:
        self.sessions: OrderedDict[tuple[int, str], int] = OrderedDict()

    async def get(self, who: Principal) -> int | None:
        if who.connection is None:
            return None
        return self.sessions.get((who.user.pk, who.connection))

    async def set(self, who: Principal, session_id: int) -> None:
        if who.connection is None:
            return
        self.sessions[(who.user.pk, who.connection)] = session_id
        self.sessions.move_to_end((who.user.pk, who.connection))
        while len(self.sessions) > CONNECTIONS_KEPT:
            self.sessions.popitem(last=False)


def db_thread(function: Callable[..., Any]) -> Callable[..., Awaitable[Any]]:
    """Run ORM work off the event loop, on a connection that is still usable, and give
    it back after, as the end of a request does: MCP's work shares one thread, which
    would otherwise keep a pooled connection from its last call on."""

    def fresh(*args: Any, **kwargs: Any) -> Any:
        close_old_connections()
        try:
            return function(*args, **kwargs)
        finally:
            close_old_connections()

    return sync_to_async(fresh)
