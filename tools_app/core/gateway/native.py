"""What every agent's mapping shares: an agent's own tool use as agentweb's tool and
arguments (`Mapped`), and the readers of a native input's fields.

Each agent's module (`claude_code`, `codex`, `gemini`) maps its own tools with these;
`mapping` puts them in one registry. An input that does not fit its tool's shape raises
`Misfit`, which the registry turns into `Mapped.problem`: never guessed. No Django here.
"""

from __future__ import annotations

import posixpath
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, Literal, NamedTuple

__all__ = [
    "NATIVE_PREFIX",
    "NOT_SANDBOXED",
    "Agent",
    "Kind",
    "Mapped",
    "Mapper",
    "Misfit",
    "NativeTool",
    "edit",
    "listing",
    "number_of",
    "same_dir",
    "search",
    "string_of",
    "type_name",
    "workspace_path",
    "write",
]

Kind = Literal["core", "mcp", "no_effect", "unknown"]
NOT_SANDBOXED = "runs on the agent's machine, outside agentweb's sandbox"
NATIVE_PREFIX = "native."  # an unknown or effect-free native tool: `native.TodoWrite`


@dataclass(frozen=True)
class Mapped:
    """An agentweb tool and arguments for one native tool use; `problem` names what in
    the native input does not fit the native tool's shape (the call is then refused)."""

    tool: str
    args: dict[str, Any]
    kind: Kind
    problem: str = ""
    notes: tuple[str, ...] = field(default=())
    # A command: the text the agent sent (its input's `command`) and the directory it
    # runs in, which gate mode's proof reads (`args["command"]` may carry a `cd`).
    sent: tuple[str, str] | None = None


# A native tool's mapper: its input and the session's directory in, agentweb's call out.
Mapper = Callable[[Mapping[str, Any], str], Mapped]


class NativeTool(NamedTuple):
    """One native tool an agent module maps: the agentweb tool it becomes (named in the
    refusal when its input does not fit) and its mapper."""

    becomes: str
    mapper: Mapper


@dataclass(frozen=True)
class Agent:
    """One agent integration, as its module declares it: the name `hook_settings` and
    `agentweb-hook` know it by, its tools, the ones that change nothing (allowed and
    recorded; an explicit rule may still deny them), and its content searches whose
    input takes exclusions, with the key they go in (gate mode narrows them)."""

    name: str
    tools: Mapping[str, NativeTool]
    no_effect_tools: frozenset[str] = frozenset()
    search_exclusions: Mapping[str, str] = field(default_factory=dict)


class Misfit(ValueError):
    """The native input does not have the native tool's shape."""


def string_of(native: Mapping[str, Any], name: str, *, required: bool = True) -> str | None:
    value = native.get(name)
    if value is None and not required:
        return None
    if not isinstance(value, str):
        raise Misfit(f"`{name}` must be a string, got {type_name(value)}")
    return value


def number_of(native: Mapping[str, Any], name: str) -> float | None:
    value = native.get(name)
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise Misfit(f"`{name}` must be a number, got {type_name(value)}")
    return float(value)


def type_name(value: object) -> str:
    return "nothing" if value is None else type(value).__name__


def same_dir(one: str, other: str) -> bool:
    return posixpath.normpath(one or "/") == posixpath.normpath(other or "/")


def workspace_path(path: str, cwd: str) -> str:
    """A native path as the policy sees it: relative to the session's `cwd` when it is
    inside (spelled lexically), else as given so that the invariant refuses it."""
    if not posixpath.isabs(path) or not cwd:
        return path
    relative = posixpath.relpath(posixpath.normpath(path), posixpath.normpath(cwd))
    return path if relative == ".." or relative.startswith("../") else relative


# --- the shapes several agents share -------------------------------------------------


def write(native: Mapping[str, Any], cwd: str) -> Mapped:
    """`{file_path, content}`: Claude Code's Write, Gemini CLI's write_file."""
    path = workspace_path(str(string_of(native, "file_path")), cwd)
    return Mapped("write_file", {"path": path, "content": string_of(native, "content")}, "core")


def edit(native: Mapping[str, Any], cwd: str) -> Mapped:
    """`{file_path, old_string, new_string, replace_all?}`: Claude Code's Edit, Gemini
    CLI's replace (its `allow_multiple` read as `replace_all`)."""
    path = workspace_path(str(string_of(native, "file_path")), cwd)
    args = {"path": path, "old_string": string_of(native, "old_string")}
    args["new_string"] = string_of(native, "new_string")
    every = native.get("replace_all")
    if every is not None and not isinstance(every, bool):
        raise Misfit(f"`replace_all` must be true or false, got {type_name(every)}")
    notes = ("replaces every occurrence (replace_all)",) if every else ()
    return Mapped("edit_file", args, "core", notes=notes)


def listing(path: str, pattern: str | None) -> Mapped:
    """A glob of any agent: a recursive `list_files`."""
    return Mapped("list_files", {"path": path, "pattern": pattern, "recursive": True}, "core")


def search(pattern: str | None, path: str, include: str | None) -> Mapped:
    """A grep of any agent: `search_codebase`, with its file filter when it has one."""
    args: dict[str, Any] = {"pattern": pattern, "path": path}
    if include:
        args["include"] = include
    return Mapped("search_codebase", args, "core")
