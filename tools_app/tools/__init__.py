"""The tools: one module per family, `catalogue` (what each tool is, as plain data) and
`registry` (names to runnable specs).

The registry is not re-exported: it loads every tool (httpx, GitPython) and the shell
analysis; import it from `tools_app.tools.registry`. The shared shapes below load on
first use, so that importing the catalogue (as the policy does) does not load pydantic
either.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from tools_app.tools.base import ToolArgs, ToolContext, ToolError, ToolSpec

__all__ = ["ToolArgs", "ToolContext", "ToolError", "ToolSpec"]

_FROM_BASE = frozenset(__all__)


def __getattr__(name: str) -> Any:
    if name in _FROM_BASE:
        from tools_app.tools import base

        return getattr(base, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
