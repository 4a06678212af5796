"""The hook configuration a team pastes: Claude Code's settings file, Codex's and Gemini's.

Plain data built from agentweb's URL and the hook wait, so `hook_settings` prints it and
tests read the same. Every hook fails closed: Claude Code's `onFailure: block`; the
command hooks of Codex (its `hooks.json`) and Gemini (`settings.json`) run
`agentweb-hook`, which exits 2 on any failure, and exit 2 when it cannot start.
"""

from __future__ import annotations

import shlex
from typing import Any
from urllib.parse import urlencode

__all__ = ["AGENTS", "HOOK_PATH", "claude_code_settings", "command_hook_settings"]

HOOK_PATH = "/api/hooks/claude-code"
TOKEN_VARIABLE = "AGENTWEB_TOKEN"  # noqa: S105 - the name of a variable, not a secret
CLAUDE_EVENTS = ("PreToolUse", "PostToolUse", "PostToolUseFailure")
# Seconds a hook may wait beyond agentweb's own wait: the answer always comes first.
MARGIN_SECONDS = 300
AGENTS = ("claude-code", "codex", "gemini")


def hook_url(base_url: str, policy: str = "") -> str:
    """The hook's URL; `policy` names the policy of the sessions its events start."""
    query = "?" + urlencode({"policy": policy}) if policy else ""
    return base_url.rstrip("/") + HOOK_PATH + query


def claude_code_settings(
    base_url: str, wait_seconds: int, *, managed: bool = False, policy: str = ""
) -> dict[str, Any]:
    """One settings file: an `http` hook for every tool event, the token taken from the
    environment, a timeout above agentweb's wait, and failures that block."""
    url = hook_url(base_url, policy)
    hook = {
        "type": "http",
        "url": url,
        "headers": {"Authorization": f"Bearer ${TOKEN_VARIABLE}"},
        "allowedEnvVars": [TOKEN_VARIABLE],
        "timeout": wait_seconds + MARGIN_SECONDS,
        "onFailure": "block",
    }
    hooks = {event: [{"matcher": "*", "hooks": [dict(hook)]}] for event in CLAUDE_EVENTS}
    settings: dict[str, Any] = {"hooks": hooks}
    if managed:
        settings |= {"allowManagedHooksOnly": True, "allowedHttpHookUrls": [url]}
    return settings


def command_hook_settings(agent: str, wait_seconds: int, *, policy: str = "") -> dict[str, Any]:
    """Codex's and Gemini's command hooks: `agentweb-hook AGENT` before and after every
    tool, reading AGENTWEB_URL and AGENTWEB_TOKEN from the environment (and the policy
    named, as AGENTWEB_POLICY)."""
    timeout = wait_seconds + MARGIN_SECONDS
    # Codex lets a call run when its hook fails in any other way than exit 2: a missing
    # `agentweb-hook`, or the hook killed at its timeout. So the command exits 2 when it
    # cannot start, and gives up on agentweb (exit 2) well before the CLI kills it.
    patience = wait_seconds + MARGIN_SECONDS // 2
    chosen = f"AGENTWEB_POLICY={shlex.quote(policy)} " if policy else ""
    command = f"{chosen}AGENTWEB_HOOK_TIMEOUT={patience} agentweb-hook {agent} || exit 2"
    if agent == "gemini":
        hook = {"type": "command", "command": command, "timeout": timeout * 1000}
        events = ("BeforeTool", "AfterTool")
        return {"hooks": {event: [{"matcher": "*", "hooks": [dict(hook)]}] for event in events}}
    hook = {"type": "command", "command": command, "timeout": timeout}
    events = ("PreToolUse", "PostToolUse")
    return {"hooks": {event: [{"matcher": "*", "hooks": [dict(hook)]}] for event in events}}
