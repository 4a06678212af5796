"""The gateway: agents that run their own tools, governed through their hooks.

Claude Code, Codex and Gemini CLI run their tools on their own machine and ask a hook
first. One module per agent holds that agent's tools as agentweb's tools and arguments:
`claude_code` (with the event, answer and report shapes every hook speaks), `codex`
(with its `apply_patch` reader), `gemini`; on the shapes they share (`native`).
`mapping` is their registry, `mcp` names MCP tools for the policy; `judging` judges a
tool use on the engine's one road, and `gate_mode` holds what may pass unseen on a
machine agentweb does not control; `agent_settings` is the hook configuration and agent
sandboxes printed for each agent. No Django here; each module is imported where it
lives.
"""
