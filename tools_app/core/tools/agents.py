"""spawn_subagent: its arguments and schema. The agent runtime runs it as a child session
(`services/subagents.py`, handed in as `ToolContext.start_subagent`); the call goes on
there, and the child's end records its result."""

from __future__ import annotations

from typing import Literal

from pydantic import Field
from pydantic.json_schema import SkipJsonSchema

from tools_app.core.tools.base import MAX_COMMAND_CHARS, MAX_NAME_CHARS, ToolArgs, ToolContext
from tools_app.core.tools.errors import RunsElsewhere, ToolError
from tools_app.core.tools.files import drop_default


class SpawnSubagentArgs(ToolArgs):
    title: str = Field(min_length=1, max_length=MAX_NAME_CHARS, description="Subtask title.")
    description: str = Field(
        min_length=1,
        max_length=MAX_COMMAND_CHARS,
        description="Detailed description of the subtask.",
    )
    modelRole: Literal["fast", "coder", "architect"] | SkipJsonSchema[None] = Field(
        default=None,
        description='Model role for the sub-agent ("fast", "coder", "architect").',
        json_schema_extra=drop_default,
    )


def spawn_subagent(ctx: ToolContext, args: SpawnSubagentArgs) -> str:
    """Start the child session; the bare engine has no runtime to delegate to, and says
    so instead of pretending."""
    if ctx.start_subagent is None:
        raise ToolError(
            "spawn_subagent needs an agent runtime with a model; this session has none."
        )
    ctx.start_subagent()
    raise RunsElsewhere(args.title)
