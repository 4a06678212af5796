"""The one error type of the tools (its own module, so that every tool module can use it)."""

from __future__ import annotations


class ToolError(Exception):
    """An error an agent should read: the message says what went wrong and what to do."""
