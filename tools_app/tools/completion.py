"""task_done: the one graceful way for an agent to end its loop."""

from __future__ import annotations

from pydantic import Field

from tools_app.tools.base import ToolArgs, ToolContext, ToolError


class TaskDoneArgs(ToolArgs):
    summary: str = Field(min_length=1, description="Summary of what was accomplished.")
    files_changed: list[str] = Field(
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
