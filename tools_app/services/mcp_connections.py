"""MCP connections over HTTP (`McpConnection`): stored when the client's `initialize`
succeeds, read by each of its requests on whichever web process it reaches, closed by the
client's DELETE or after `IDLE` unused (`mcp_connection_prune`, on the clock's sweep)."""

from __future__ import annotations

from datetime import timedelta

from django.utils import timezone

from tools_app.models import McpConnection

IDLE = timedelta(days=7)  # a connection unused this long is closed: the client opens another
TOUCH_EVERY = timedelta(minutes=10)  # `last_used_at` is that coarse: no write per request


def mcp_connection_open(*, session_key: str, token_id: int) -> None:
    McpConnection.objects.create(
        session_key=session_key, token_id=token_id, last_used_at=timezone.now()
    )


def mcp_connection_owner(*, session_key: str) -> int | None:
    """The id of the token that opened the connection of `session_key` (marked used), or
    None: never opened, closed, or unused for `IDLE`."""
    row = (
        McpConnection.objects.filter(session_key=session_key)
        .values_list("pk", "token_id", "last_used_at")
        .first()
    )
    if row is None:
        return None
    pk, token_id, last_used_at = row
    now = timezone.now()
    if last_used_at <= now - IDLE:
        McpConnection.objects.filter(pk=pk, last_used_at=last_used_at).delete()
        return None
    if last_used_at <= now - TOUCH_EVERY:
        McpConnection.objects.filter(pk=pk).update(last_used_at=now)
    return int(token_id)


def mcp_connection_default(*, session_key: str, user_id: int) -> int | None:
    """The default session of the connection's calls (its last `start_session`)."""
    found = McpConnection.objects.filter(session_key=session_key, token__user_id=user_id)
    return found.values_list("default_session_id", flat=True).first()


def mcp_connection_remember(*, session_key: str, user_id: int, session_id: int) -> None:
    """`session_id` is now the default session of the connection's calls."""
    found = McpConnection.objects.filter(session_key=session_key, token__user_id=user_id)
    found.update(default_session_id=session_id)


def mcp_connection_close(*, session_key: str, token_id: int) -> None:
    McpConnection.objects.filter(session_key=session_key, token_id=token_id).delete()


def mcp_connection_prune() -> int:
    """Connections unused for `IDLE` are closed (their clients get a 404 and open anew)."""
    deleted, _ = McpConnection.objects.filter(last_used_at__lte=timezone.now() - IDLE).delete()
    return int(deleted)
