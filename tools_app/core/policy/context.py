"""One call as the checks read it, with the expensive parts computed once."""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass
from functools import cached_property
from typing import Any

from tools_app.core.policy.paths import workspace_relative
from tools_app.core.policy.types import CallFacts, PolicySpec, SessionCounters
from tools_app.core.shell.commands import CommandAnalysis, analyse_command
from tools_app.core.tools.catalogue import CATALOGUE, PATH_ARGS

__all__ = [
    "CallContext",
    "argument_strings",
    "is_read_only",
]


def is_read_only(tool: str, args: Mapping[str, Any]) -> bool:
    """Read-only tools, and `git_branch` when it only lists (see `tools/catalogue.py`)."""
    facts = CATALOGUE.get(tool)
    return facts is not None and facts.reads_only(args)


@dataclass
class CallContext:
    policy: PolicySpec
    call: CallFacts
    counters: SessionCounters

    @property
    def tool(self) -> str:
        return self.call.tool

    @property
    def args(self) -> Mapping[str, Any]:
        return self.call.args

    @cached_property
    def command(self) -> str | None:
        value = self.args.get("command") if self.tool == "run_command" else None
        return value if isinstance(value, str) else None

    @cached_property
    def analysis(self) -> CommandAnalysis | None:
        return analyse_command(self.command) if self.command is not None else None

    @cached_property
    def paths(self) -> dict[str, tuple[str, ...]]:
        """Path arguments as workspace-relative POSIX paths (raises ToolError if outside)."""
        resolved: dict[str, tuple[str, ...]] = {}
        for name in PATH_ARGS.get(self.tool, ()):
            value = self.args.get(name)
            if value is None:
                continue
            items = [value] if isinstance(value, str) else list(value)
            resolved[name] = tuple(
                workspace_relative(self.call.workspace, str(item), argument=name) for item in items
            )
        return resolved

    def values(self, name: str) -> tuple[str, ...] | None:
        """An argument as the strings a rule pattern is matched against; None if absent."""
        if name in self.paths:
            return self.paths[name]
        if name not in self.args or self.args[name] is None:
            return None
        return argument_strings(self.args[name])


def argument_strings(value: Any) -> tuple[str, ...]:
    """An argument's value as the strings rule patterns are matched against."""
    if isinstance(value, bool):
        return ("true" if value else "false",)
    if isinstance(value, str):
        return (value,)
    if isinstance(value, list | tuple):
        return tuple(
            argument_strings(item)[0] if _is_scalar(item) else _json(item) for item in value
        )
    if isinstance(value, int | float):
        return (str(value),)
    return (_json(value),)


def _is_scalar(value: Any) -> bool:
    return isinstance(value, str | int | float | bool)


def _json(value: Any) -> str:
    return json.dumps(value, sort_keys=True, default=str)
