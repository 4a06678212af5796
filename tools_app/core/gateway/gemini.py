"""Gemini CLI: its tools as agentweb's (other names, other argument keys).

Its BeforeTool and AfterTool events reach agentweb through `agentweb-hook gemini`, which
translates them into Claude Code's event shape and the answer back (`FORMATS` there,
standard library only); an AfterTool event carries no tool-use id, so its call is found
by its input (`services/gateway_ran.py`). No Django here.
"""

from __future__ import annotations

import shlex
from collections.abc import Mapping
from typing import Any

from tools_app.core.gateway.native import (
    Agent,
    Mapped,
    Misfit,
    NativeTool,
    edit,
    listing,
    number_of,
    same_dir,
    search,
    string_of,
    type_name,
    workspace_path,
    write,
)

__all__ = ["AGENT"]

# Tools that change nothing in the workspace and reach nothing outside the agent
# (docs/reference/tools.md of @google/gemini-cli 0.61): allowed and recorded.
_NO_EFFECT_TOOLS = frozenset(
    {"write_todos", "update_topic", "ask_user", "enter_plan_mode", "exit_plan_mode"}
    | {"get_internal_docs", "complete_task", "tracker_create_task", "tracker_update_task"}
    | {"tracker_get_task", "tracker_list_tasks", "tracker_add_dependency", "tracker_visualize"}
)


def _dir(native: Mapping[str, Any], cwd: str) -> str:
    return workspace_path(string_of(native, "dir_path", required=False) or ".", cwd)


def _shell(native: Mapping[str, Any], cwd: str) -> Mapped:
    """`run_shell_command` in `dir_path` is judged as `cd DIR && COMMAND`: what runs."""
    sent = command = str(string_of(native, "command"))
    where = string_of(native, "dir_path", required=False)
    if where and not same_dir(where, cwd):
        command = f"cd {shlex.quote(where)} && {command}"
    background = native.get("is_background") is True
    notes = ("runs in the background on the agent's machine",) if background else ()
    sent_in = (sent, where or cwd)
    return Mapped("run_command", {"command": command}, "core", notes=notes, sent=sent_in)


def _replace(native: Mapping[str, Any], cwd: str) -> Mapped:
    every = native.get("allow_multiple")
    if every is not None and not isinstance(every, bool):
        raise Misfit(f"`allow_multiple` must be true or false, got {type_name(every)}")
    return edit({**native, "replace_all": every}, cwd)


def _read(native: Mapping[str, Any], cwd: str) -> Mapped:
    args: dict[str, Any] = {"path": workspace_path(str(string_of(native, "file_path")), cwd)}
    start, end = number_of(native, "start_line"), number_of(native, "end_line")
    if start is not None:
        args["offset"] = max(1, int(start))
    if end is not None:
        args["limit"] = max(1, int(end) - args.get("offset", 1) + 1)
    return Mapped("read_file", args, "core")


def _glob(native: Mapping[str, Any], cwd: str) -> Mapped:
    return listing(_dir(native, cwd), string_of(native, "pattern"))


def _list(native: Mapping[str, Any], cwd: str) -> Mapped:
    return Mapped("list_files", {"path": _dir(native, cwd)}, "core")


def _grep(native: Mapping[str, Any], cwd: str) -> Mapped:
    include = string_of(native, "include_pattern", required=False)
    return search(string_of(native, "pattern"), _dir(native, cwd), include)


_TOOLS = {
    "run_shell_command": NativeTool("run_command", _shell),
    "write_file": NativeTool("write_file", write),
    "replace": NativeTool("edit_file", _replace),
    "read_file": NativeTool("read_file", _read),
    "glob": NativeTool("list_files", _glob),
    "list_directory": NativeTool("list_files", _list),
    "grep_search": NativeTool("search_codebase", _grep),
    "search_file_content": NativeTool("search_codebase", _grep),
}
AGENT = Agent("gemini", _TOOLS, _NO_EFFECT_TOOLS)
