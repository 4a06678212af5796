"""Which spec a tool call takes: the one question the services ask before the engine's
one road (`engine.prepare`, `engine.execute`), for core, skill, MCP upstream and
internal tools alike.

A skill tool's spec is built from a definition: the one in the skill library when an
agent's call is judged, the one captured then (kept in the call's preview) when it is
run or its arguments are edited, so that what a reviewer approved is what runs. An MCP
upstream's tool likewise, from the definition pinned for its server (`upstreams.py`):
its spec forwards the call to the server instead of running anything here.
"""

from __future__ import annotations

from tools_app.core.skills.tool_spec import skill_tool_spec
from tools_app.core.tools.base import ToolSpec
from tools_app.core.tools.catalogue import is_skill_tool, is_upstream_tool
from tools_app.core.tools.errors import ToolError
from tools_app.core.tools.registry import get_tool, internal_tool
from tools_app.core.upstreams.tool_spec import upstream_tool_spec
from tools_app.models import AgentSession, ToolCall
from tools_app.services.skill_calls import (
    skill_call_bind,
    skill_call_captured,
    skill_call_withdrawn,
)
from tools_app.services.upstreams import (
    upstream_call_bind,
    upstream_call_captured,
    upstream_call_withdrawn,
    upstream_forwarder,
)


def tool_spec_judged(*, session: AgentSession, tool: str) -> ToolSpec | str:
    """What an agent's call of `tool` is judged with, or why it cannot be: agents call
    core tools, their active skills' tools and the MCP upstreams' pinned tools, never an
    internal one."""
    if is_upstream_tool(tool):
        bound_upstream = upstream_call_bind(session=session, tool=tool)
        return (
            bound_upstream
            if isinstance(bound_upstream, str)
            else upstream_tool_spec(bound_upstream)
        )
    if is_skill_tool(tool):
        bound = skill_call_bind(session=session, tool=tool)
        return bound if isinstance(bound, str) else skill_tool_spec(bound)
    try:
        return get_tool(tool)
    except ToolError as exc:
        return str(exc)


def tool_spec_approved(*, call: ToolCall) -> ToolSpec | str:
    """What a call that passed the policy or a person runs with, or why it may not run."""
    if is_upstream_tool(call.tool):
        upstream = upstream_call_captured(call)
        if upstream is None:
            return "Refused to run: no approved MCP tool definition."
        withdrawn = upstream_call_withdrawn(call=call, captured=upstream)
        if withdrawn:
            return withdrawn
        return upstream_tool_spec(upstream, upstream_forwarder(captured=upstream))
    if is_skill_tool(call.tool):
        captured = skill_call_captured(call)
        if captured is None:
            return "Refused to run: no approved skill definition."
        return skill_call_withdrawn(call=call, captured=captured) or skill_tool_spec(captured)
    return internal_tool(call.tool) or tool_spec_judged(session=call.session, tool=call.tool)


def tool_spec_edited(*, call: ToolCall) -> ToolSpec | str:
    """What a reviewer's edited arguments are judged with: the spec the call was judged
    with (a skill or MCP tool's captured definition, the one the reviewer saw)."""
    if is_upstream_tool(call.tool):
        upstream = upstream_call_captured(call)
        if upstream is None:
            return "This MCP tool call has no captured definition to check against."
        return upstream_tool_spec(upstream)
    if is_skill_tool(call.tool):
        captured = skill_call_captured(call)
        if captured is None:
            return "This skill tool call has no captured definition to check against."
        return skill_tool_spec(captured)
    if internal_tool(call.tool) is not None:
        return f"{call.tool} applies exactly what was shown; its arguments cannot be edited."
    return tool_spec_judged(session=call.session, tool=call.tool)
