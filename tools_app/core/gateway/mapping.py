"""The gateway's registry of agents: any agent's own tool use as agentweb's tool and
arguments.

Claude Code (Codex, Gemini) runs its tools on its own machine and asks a hook first.
Each agent's module maps its own tools (`claude_code`, `codex`, `gemini`: `Bash` →
`run_command`, `write_file` → `write_file` …); `map_native` asks them all. A tool no
agent module knows is `mcp.SERVER.TOOL` (`mcp`) or `native.NAME`; an input that does
not fit its tool's shape is named (`Mapped.problem`). A new agent is a new module and a
new entry in `AGENTS`, never a branch here. No Django here.
"""

from __future__ import annotations

import shlex
from collections.abc import Mapping
from typing import Any

from tools_app.core.gateway import claude_code, codex, gemini, mcp
from tools_app.core.gateway.native import (
    NATIVE_PREFIX,
    Agent,
    Kind,
    Mapped,
    Misfit,
    NativeTool,
    same_dir,
)
from tools_app.core.tools.catalogue import is_upstream_tool
from tools_app.core.tools.jsonsafe import storable_args

__all__ = ["AGENTS", "NO_EFFECT_TOOLS", "SEARCH_EXCLUSIONS", "map_native", "native_tool_name"]

AGENTS: tuple[Agent, ...] = (claude_code.AGENT, codex.AGENT, gemini.AGENT)
_TOOLS: dict[str, NativeTool] = {name: tool for a in AGENTS for name, tool in a.tools.items()}
NO_EFFECT_TOOLS = frozenset(name for agent in AGENTS for name in agent.no_effect_tools)
# The content searches whose input takes exclusions, and the key they go in.
SEARCH_EXCLUSIONS = {name: key for a in AGENTS for name, key in a.search_exclusions.items()}


def native_tool_name(native_tool: str) -> str:
    """The agentweb name a rule matches: `mcp.SERVER.TOOL` for an MCP tool (Claude Code's
    and Codex's `mcp__SERVER__TOOL`, Gemini CLI's `mcp_SERVER_TOOL`), `native.NAME` for a
    tool agentweb has no equivalent of."""
    return mcp.hook_tool_name(native_tool) or f"{NATIVE_PREFIX}{native_tool}"


def map_native(
    native_tool: str, native_input: Mapping[str, Any], cwd: str, ran_in: str = ""
) -> Mapped:
    """The agentweb call for one native tool use (never raises). `ran_in` is the
    directory the agent runs it in when that is not the session's `cwd` (Claude Code's
    shell keeps a `cd`, Codex takes a `workdir`): a command is judged as run there."""
    known = _TOOLS.get(native_tool)
    if known is not None:
        try:
            return _run_in(known.mapper(native_input, cwd), cwd, ran_in)
        except Misfit as exc:
            return Mapped(known.becomes, {}, "core", str(exc))
    name = native_tool_name(native_tool)
    args = storable_args(dict(native_input))
    if is_upstream_tool(name):
        return Mapped(name, args, "mcp")
    kind: Kind = "no_effect" if native_tool in NO_EFFECT_TOOLS else "unknown"
    return Mapped(name, args, kind)


def _run_in(mapped: Mapped, cwd: str, ran_in: str) -> Mapped:
    if mapped.tool != "run_command" or not ran_in or same_dir(ran_in, cwd):
        return mapped
    command = f"cd {shlex.quote(ran_in)} && {mapped.args['command']}"
    notes = (*mapped.notes, f"runs in {ran_in}")
    sent_in = (mapped.sent[0], ran_in) if mapped.sent else None
    args = {**mapped.args, "command": command}
    return Mapped(mapped.tool, args, "core", notes=notes, sent=sent_in)
