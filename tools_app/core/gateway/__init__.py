"""The gateway's pure part: an agent's own tool use mapped to agentweb's, and judged.

Claude Code (Codex, Gemini) runs its tools on its own machine and asks a hook first.
`mapping` turns the native tool and input into an agentweb tool and arguments,
`judging` validates, previews and asks the policy engine, and `gate_mode` holds what is
allowed to pass unseen on a machine agentweb does not control. No Django here.
"""

from __future__ import annotations

from tools_app.core.gateway.gate_mode import gate
from tools_app.core.gateway.judging import agent_sandbox, input_preview, prepare_native
from tools_app.core.gateway.mapping import NOT_SANDBOXED, Mapped, map_native, native_tool_name

__all__ = [
    "NOT_SANDBOXED",
    "Mapped",
    "agent_sandbox",
    "gate",
    "input_preview",
    "map_native",
    "native_tool_name",
    "prepare_native",
]
