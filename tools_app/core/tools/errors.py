"""The one error type of the tools (its own module, so that every tool module can use it)."""

from __future__ import annotations


class ToolError(Exception):
    """An error an agent should read: the message says what went wrong and what to do."""


class RunsElsewhere(Exception):
    """Raised by a tool whose run goes on outside this process (spawn_subagent's child
    session): the call stays `running`, and whatever ends it there records its result."""
