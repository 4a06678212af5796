"""An agent's own MCP tools, named as the policy names every MCP tool: `mcp.SERVER.TOOL`.

An agent that calls an MCP server of its own names the tool in its hook event (Claude
Code's and Codex's `mcp__SERVER__TOOL`, Gemini CLI's `mcp_SERVER_TOOL`); the gateway
cannot see that server, so such a call waits for a person unless a rule names it. The
upstream servers agentweb runs behind its own `/mcp` (`core/upstreams/`) are judged under
the same names (`definitions.judged_name`), so one rule reads the same on either way
in. No Django here.
"""

from __future__ import annotations

from tools_app.core.upstreams.definitions import judged_name

__all__ = ["hook_tool_name"]


def hook_tool_name(native_tool: str) -> str:
    """The policy's name of an MCP tool named in an agent's hook event, "" when the
    native tool is not an MCP tool."""
    server, tool = _hook_parts(native_tool)
    return judged_name(server, tool) if server and tool else ""


def _hook_parts(native_tool: str) -> tuple[str, str]:
    if native_tool.startswith("mcp__"):
        server, _, tool = native_tool[len("mcp__") :].partition("__")
        return server, tool
    if native_tool.startswith("mcp_"):
        # Gemini CLI's own parse: the server is what comes before the next `_`.
        server, _, tool = native_tool[len("mcp_") :].partition("_")
        return server, tool
    return "", ""
