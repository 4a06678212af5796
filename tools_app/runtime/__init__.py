"""The agent runtime: model providers and the loop that drives a session's agent.

`conversation.py` and `providers/` are pure (no Django); the loop that persists turns
and sends tool calls through the engine lives in `services/agents.py`.
"""
