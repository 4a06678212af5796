"""A command's connections on its record: the `ToolContext.on_connections` sink.

The egress proxy tells the sandbox each connection a command tried; the sandbox hands
them to this sink when the command ends, which stores them on the call (the API, the
card, the timeline and the audit export read them there) and keeps them for the
call's outcome (`effects.command_outcome`).
"""

from __future__ import annotations

from tools_app.core.egress.grant import Connection
from tools_app.core.tools.base import ToolContext
from tools_app.models import ToolCall

MAX_STORED = 500  # a command that opens thousands of connections keeps its first 500


class ConnectionLog:
    def __init__(self, *, call_id: int) -> None:
        self.call_id = call_id
        self.connections: tuple[Connection, ...] = ()

    def __call__(self, connections: tuple[Connection, ...]) -> None:
        self.connections = tuple(connections)
        stored = [c.as_json() for c in self.connections[:MAX_STORED]]
        ToolCall.objects.filter(pk=self.call_id).update(connections=stored)


def connection_log(*, call: ToolCall) -> ConnectionLog:
    return ConnectionLog(call_id=call.pk)


def logged(context: ToolContext) -> tuple[Connection, ...]:
    """The connections the command of this context reported (none: it reported none)."""
    sink = context.on_connections
    return sink.connections if isinstance(sink, ConnectionLog) else ()
