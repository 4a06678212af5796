"""task_done: the one graceful way for an agent to end its loop."""

from __future__ import annotations

from typing import Annotated

from pydantic import Field

from tools_app.core.tools.base import MAX_COMMAND_CHARS, MAX_PATH_CHARS, ToolArgs, ToolContext
from tools_app.core.tools.errors import ToolError


class TaskDoneArgs(ToolArgs):
    summary: str = Field(
        min_length=1,
        max_length=MAX_COMMAND_CHARS,
        description="Summary of what was accomplished.",
    )
    files_changed: list[Annotated[str, Field(max_length=MAX_PATH_CHARS)]] = Field(
        default_factory=list, description="List of files that were modified."
    )


def task_done(ctx: ToolContext, args: TaskDoneArgs) -> str:
    """Confirm completion; the runtime ends the loop when this tool succeeds."""
    if not args.summary.strip():
        raise ToolError("`summary` is blank; say what was accomplished.")
    text = f"Task complete: {args.summary.strip()}"
    if args.files_changed:
        text += "\nFiles changed: " + ", ".join(args.files_changed)
    return text
