"""Reads of the MCP upstreams: the tools an agent is offered (only pinned definitions an
admin accepted, never what a server lists now) and what the admin page shows."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from tools_app.core.upstreams.definitions import Definition, definition_diff, listed_name
from tools_app.models import UpstreamTool


def available_tool_schemas(server_ids: Iterable[int]) -> list[dict[str, Any]]:
    """The accepted tools of these servers, as agentweb's MCP server lists them."""
    rows = UpstreamTool.objects.filter(
        server_id__in=list(server_ids), server__enabled=True, pin=UpstreamTool.Pin.ACCEPTED
    ).select_related("server")
    schemas = []
    for row in rows:
        definition = Definition.from_dict(row.accepted or {"name": row.name})
        schemas.append(
            {
                "name": listed_name(row.server.name, row.name),
                "description": definition.description,
                "input_schema": dict(definition.input_schema),
                "annotations": dict(definition.annotations),
            }
        )
    return schemas


def tool_definition_diff(tool: UpstreamTool) -> str:
    """What changed since an admin accepted the tool (all of it for a new one)."""
    listed = tool.listed if tool.pin != UpstreamTool.Pin.VANISHED else None
    return definition_diff(tool.accepted, listed)
