"""The gateway's mapping: an agent's own tool use as agentweb's tool and arguments.

Claude Code (Codex, Gemini) runs its tools on its own machine and asks a hook first.
`map_native` turns the native tool and input into an agentweb tool and arguments (`Bash`
→ `run_command`, `Write` → `write_file` …), reading each agent's own names and keys;
an input that does not fit its tool's shape is named (`Mapped.problem`). No Django here.
"""

from __future__ import annotations

import posixpath
import shlex
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field, replace
from typing import Any, Literal

from tools_app.core.codex_patch import PatchError, read_patch
from tools_app.core.tools.base import MAX_NAME_CHARS
from tools_app.core.tools.jsonsafe import storable_args
from tools_app.core.tools.shell import MAX_TIMEOUT

__all__ = [
    "NATIVE_PREFIX",
    "NOT_SANDBOXED",
    "Mapped",
    "map_native",
    "native_tool_name",
    "workspace_path",
]

Kind = Literal["core", "mcp", "no_effect", "unknown"]
NOT_SANDBOXED = "runs on the agent's machine, outside agentweb's sandbox"
NATIVE_PREFIX = "native."  # an unknown or effect-free native tool: `native.TodoWrite`

# Native tools that change nothing in the workspace and reach nothing outside the agent:
# allowed and recorded (an explicit rule may still deny them).
NO_EFFECT_TOOLS = frozenset(
    {"TodoWrite", "ToolSearch", "TaskCreate", "TaskGet", "TaskUpdate", "TaskList"}
    | {"TaskStop", "TaskOutput", "EnterPlanMode", "ExitPlanMode", "AskUserQuestion"}
    # Gemini CLI's (docs/reference/tools.md of @google/gemini-cli 0.61)
    | {"write_todos", "update_topic", "ask_user", "enter_plan_mode", "exit_plan_mode"}
    | {"get_internal_docs", "complete_task", "tracker_create_task", "tracker_update_task"}
    | {"tracker_get_task", "tracker_list_tasks", "tracker_add_dependency", "tracker_visualize"}
)


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


def native_tool_name(native_tool: str) -> str:
    """The agentweb name a rule matches: `mcp.SERVER.TOOL` for an MCP tool (Claude Code's
    and Codex's `mcp__SERVER__TOOL`, Gemini CLI's `mcp_SERVER_TOOL`), `native.NAME` for a
    tool agentweb has no equivalent of."""
    server, tool = _mcp_parts(native_tool)
    if server and tool:
        return f"mcp.{server}.{tool}"
    return f"{NATIVE_PREFIX}{native_tool}"


def _mcp_parts(native_tool: str) -> tuple[str, str]:
    if native_tool.startswith("mcp__"):
        server, _, tool = native_tool[len("mcp__") :].partition("__")
        return server, tool
    if native_tool.startswith("mcp_"):
        # Gemini CLI's own parse: the server is what comes before the next `_`.
        server, _, tool = native_tool[len("mcp_") :].partition("_")
        return server, tool
    return "", ""


def map_native(
    native_tool: str, native_input: Mapping[str, Any], cwd: str, ran_in: str = ""
) -> Mapped:
    """The agentweb call for one native tool use (never raises). `ran_in` is the
    directory the agent runs it in when that is not the session's `cwd` (Claude Code's
    shell keeps a `cd`, Codex takes a `workdir`): a command is judged as run there."""
    mapper = _MAPPERS.get(native_tool)
    if mapper is not None:
        try:
            return _run_in(mapper(native_input, cwd), cwd, ran_in)
        except _Misfit as exc:
            return Mapped(_CORE_NAMES[native_tool], {}, "core", str(exc))
    name = native_tool_name(native_tool)
    args = storable_args(dict(native_input))
    if name.startswith("mcp."):
        return Mapped(name, args, "mcp")
    kind: Kind = "no_effect" if native_tool in NO_EFFECT_TOOLS else "unknown"
    return Mapped(name, args, kind)


def _run_in(mapped: Mapped, cwd: str, ran_in: str) -> Mapped:
    if mapped.tool != "run_command" or not ran_in or _same_dir(ran_in, cwd):
        return mapped
    command = f"cd {shlex.quote(ran_in)} && {mapped.args['command']}"
    notes = (*mapped.notes, f"runs in {ran_in}")
    sent_in = (mapped.sent[0], ran_in) if mapped.sent else None
    args = {**mapped.args, "command": command}
    return Mapped(mapped.tool, args, "core", notes=notes, sent=sent_in)


def _same_dir(one: str, other: str) -> bool:
    return posixpath.normpath(one or "/") == posixpath.normpath(other or "/")


class _Misfit(ValueError):
    """The native input does not have the native tool's shape."""


def _text(native: Mapping[str, Any], name: str, *, required: bool = True) -> str | None:
    value = native.get(name)
    if value is None and not required:
        return None
    if not isinstance(value, str):
        raise _Misfit(f"`{name}` must be a string, got {_type_name(value)}")
    return value


def _number(native: Mapping[str, Any], name: str) -> float | None:
    value = native.get(name)
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise _Misfit(f"`{name}` must be a number, got {_type_name(value)}")
    return float(value)


def _type_name(value: object) -> str:
    return "nothing" if value is None else type(value).__name__


def workspace_path(path: str, cwd: str) -> str:
    """A native path as the policy sees it: relative to the session's `cwd` when it is
    inside (spelled lexically), else as given so that the invariant refuses it."""
    if not posixpath.isabs(path) or not cwd:
        return path
    relative = posixpath.relpath(posixpath.normpath(path), posixpath.normpath(cwd))
    return path if relative == ".." or relative.startswith("../") else relative


def _bash(native: Mapping[str, Any], cwd: str) -> Mapped:
    args: dict[str, Any] = {"command": _text(native, "command")}
    timeout_ms = _number(native, "timeout")
    if timeout_ms is not None and timeout_ms > 0:
        args["timeout"] = min(timeout_ms / 1000, MAX_TIMEOUT)
    background = native.get("run_in_background") is True
    notes = ("runs in the background on the agent's machine",) if background else ()
    return Mapped("run_command", args, "core", notes=notes, sent=(args["command"], cwd))


def _write(native: Mapping[str, Any], cwd: str) -> Mapped:
    path = workspace_path(str(_text(native, "file_path")), cwd)
    return Mapped("write_file", {"path": path, "content": _text(native, "content")}, "core")


def _edit(native: Mapping[str, Any], cwd: str) -> Mapped:
    path = workspace_path(str(_text(native, "file_path")), cwd)
    args = {"path": path, "old_string": _text(native, "old_string")}
    args["new_string"] = _text(native, "new_string")
    every = native.get("replace_all")
    if every is not None and not isinstance(every, bool):
        raise _Misfit(f"`replace_all` must be true or false, got {_type_name(every)}")
    notes = ("replaces every occurrence (replace_all)",) if every else ()
    return Mapped("edit_file", args, "core", notes=notes)


def _read(native: Mapping[str, Any], cwd: str) -> Mapped:
    args: dict[str, Any] = {"path": workspace_path(str(_text(native, "file_path")), cwd)}
    for name in ("offset", "limit"):
        value = native.get(name)
        if value is not None:
            args[name] = value
    return Mapped("read_file", args, "core")


def _glob(native: Mapping[str, Any], cwd: str) -> Mapped:
    where = _text(native, "path", required=False) or "."
    return _listing(workspace_path(where, cwd), _text(native, "pattern"))


def _grep(native: Mapping[str, Any], cwd: str) -> Mapped:
    where = workspace_path(_text(native, "path", required=False) or ".", cwd)
    return _search(_text(native, "pattern"), where, _text(native, "glob", required=False))


def _listing(path: str, pattern: str | None) -> Mapped:
    """A glob of any agent: a recursive `list_files`."""
    return Mapped("list_files", {"path": path, "pattern": pattern, "recursive": True}, "core")


def _search(pattern: str | None, path: str, include: str | None) -> Mapped:
    """A grep of any agent: `search_codebase`, with its file filter when it has one."""
    args: dict[str, Any] = {"pattern": pattern, "path": path}
    if include:
        args["include"] = include
    return Mapped("search_codebase", args, "core")


def _web_fetch(native: Mapping[str, Any], cwd: str) -> Mapped:
    return Mapped("web_fetch", {"url": _text(native, "url")}, "core")


def _agent(native: Mapping[str, Any], cwd: str) -> Mapped:
    title = (_text(native, "description", required=False) or "sub-agent")[:MAX_NAME_CHARS]
    prompt = _text(native, "prompt")
    return Mapped("spawn_subagent", {"title": title or "sub-agent", "description": prompt}, "core")


# --- Gemini CLI's tools: other names, other argument keys ----------------------------


def _gemini_dir(native: Mapping[str, Any], cwd: str) -> str:
    return workspace_path(_text(native, "dir_path", required=False) or ".", cwd)


def _gemini_shell(native: Mapping[str, Any], cwd: str) -> Mapped:
    """`run_shell_command` in `dir_path` is judged as `cd DIR && COMMAND`: what runs."""
    sent = command = str(_text(native, "command"))
    where = _text(native, "dir_path", required=False)
    if where and not _same_dir(where, cwd):
        command = f"cd {shlex.quote(where)} && {command}"
    background = native.get("is_background") is True
    notes = ("runs in the background on the agent's machine",) if background else ()
    sent_in = (sent, where or cwd)
    return Mapped("run_command", {"command": command}, "core", notes=notes, sent=sent_in)


def _gemini_replace(native: Mapping[str, Any], cwd: str) -> Mapped:
    every = native.get("allow_multiple")
    if every is not None and not isinstance(every, bool):
        raise _Misfit(f"`allow_multiple` must be true or false, got {_type_name(every)}")
    return _edit({**native, "replace_all": every}, cwd)


def _gemini_read(native: Mapping[str, Any], cwd: str) -> Mapped:
    args: dict[str, Any] = {"path": workspace_path(str(_text(native, "file_path")), cwd)}
    start, end = _number(native, "start_line"), _number(native, "end_line")
    if start is not None:
        args["offset"] = max(1, int(start))
    if end is not None:
        args["limit"] = max(1, int(end) - args.get("offset", 1) + 1)
    return Mapped("read_file", args, "core")


def _gemini_glob(native: Mapping[str, Any], cwd: str) -> Mapped:
    return _listing(_gemini_dir(native, cwd), _text(native, "pattern"))


def _gemini_list(native: Mapping[str, Any], cwd: str) -> Mapped:
    return Mapped("list_files", {"path": _gemini_dir(native, cwd)}, "core")


def _gemini_grep(native: Mapping[str, Any], cwd: str) -> Mapped:
    include = _text(native, "include_pattern", required=False)
    return _search(_text(native, "pattern"), _gemini_dir(native, cwd), include)


# --- Codex CLI's apply_patch ---------------------------------------------------------


def _apply_patch(native: Mapping[str, Any], cwd: str) -> Mapped:
    """One added file is a `write_file`, one file's single hunk an `edit_file`; any other
    patch (several files, a deletion, a move) goes to a person, naming what it does."""
    text = str(_text(native, "command"))
    as_is = Mapped(native_tool_name("apply_patch"), storable_args(dict(native)), "unknown")
    try:
        changes = read_patch(text)
    except PatchError as exc:
        return replace(as_is, notes=(f"not read as a patch: {exc}",))
    if len(changes) == 1:
        change = changes[0]
        path = workspace_path(change.path, cwd)
        if change.action == "add":
            return Mapped("write_file", {"path": path, "content": change.content}, "core")
        if change.action == "update" and not change.moved_to and len(change.hunks) == 1:
            old, new = change.hunks[0]
            args = {"path": path, "old_string": "\n".join(old), "new_string": "\n".join(new)}
            return Mapped("edit_file", args, "core")
    moves = {c.path: f" (to {c.moved_to})" if c.moved_to else "" for c in changes}
    return replace(as_is, notes=tuple(f"{c.action}s {c.path}{moves[c.path]}" for c in changes))


_Mapper = Callable[[Mapping[str, Any], str], Mapped]
_MAPPERS: dict[str, _Mapper] = {
    "Bash": _bash,
    "Write": _write,
    "Edit": _edit,
    "Read": _read,
    "Glob": _glob,
    "Grep": _grep,
    "WebFetch": _web_fetch,
    "Agent": _agent,
    "Task": _agent,
    "run_shell_command": _gemini_shell,
    "write_file": _write,
    "replace": _gemini_replace,
    "read_file": _gemini_read,
    "glob": _gemini_glob,
    "list_directory": _gemini_list,
    "grep_search": _gemini_grep,
    "search_file_content": _gemini_grep,
    "apply_patch": _apply_patch,
}
_CORE_NAMES = {
    "Bash": "run_command",
    "Write": "write_file",
    "Edit": "edit_file",
    "Read": "read_file",
    "Glob": "list_files",
    "Grep": "search_codebase",
    "WebFetch": "web_fetch",
    "Agent": "spawn_subagent",
    "Task": "spawn_subagent",
    "run_shell_command": "run_command",
    "write_file": "write_file",
    "replace": "edit_file",
    "read_file": "read_file",
    "glob": "list_files",
    "list_directory": "list_files",
    "grep_search": "search_codebase",
    "search_file_content": "search_codebase",
    "apply_patch": "native.apply_patch",
}
