"""The hook configuration a team pastes: Claude Code's settings file, Codex's and Gemini's.

Plain data built from agentweb's URL and the hook wait, so `hook_settings` prints it and
tests read the same. Every hook fails closed: Claude Code's `onFailure: block`; the
command hooks of Codex (its `hooks.json`) and Gemini (`settings.json`) run
`agentweb-hook`, which exits 2 on any failure, and exit 2 when it cannot start.

Beside the hooks, each agent's own sandbox is configured from the policy (`AgentSandbox`),
so a command the hook lets through still runs fenced: see `claude_code_sandbox`,
`codex_sandbox_toml` and `gemini_sandbox` for what each agent's sandbox can hold.
"""

from __future__ import annotations

import ipaddress
import shlex
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlencode, urlsplit

from tools_app.core.policy.defaults import HOME_SECRET_PATHS

__all__ = [
    "HOME_SECRETS",
    "HOOK_PATH",
    "AgentSandbox",
    "claude_code_sandbox",
    "claude_code_settings",
    "codex_sandbox_toml",
    "command_hook_settings",
    "gemini_sandbox",
]

HOOK_PATH = "/api/hooks/claude-code"
TOKEN_VARIABLE = "AGENTWEB_TOKEN"  # noqa: S105 - the name of a variable, not a secret
CLAUDE_EVENTS = ("PreToolUse", "PostToolUse", "PostToolUseFailure")
# Seconds a hook may wait beyond agentweb's own wait: the answer always comes first.
MARGIN_SECONDS = 300

# Credentials in the developer's home directory, none of which a sandboxed command reads
# (a trailing slash marks a directory); the same list gate mode's proof refuses.
HOME_SECRETS = HOME_SECRET_PATHS


@dataclass(frozen=True)
class AgentSandbox:
    """What an agent's own sandbox takes from a policy: its secret patterns (gitignore
    style, relative to the project) and the hosts commands may reach (none: no network)."""

    secret_paths: tuple[str, ...] = ()
    hosts: tuple[str, ...] = ()


def hook_url(base_url: str, policy: str = "") -> str:
    """The hook's URL; `policy` names the policy of the sessions its events start."""
    query = "?" + urlencode({"policy": policy}) if policy else ""
    return base_url.rstrip("/") + HOOK_PATH + query


def claude_code_settings(
    base_url: str,
    wait_seconds: int,
    *,
    managed: bool = False,
    policy: str = "",
    sandbox: AgentSandbox | None = None,
    transport: str = "http",
) -> dict[str, Any]:
    """One settings file: a hook for every tool event, the token taken from the
    environment, a timeout above agentweb's wait, and failures that block; with `sandbox`,
    Claude Code's own sandbox set from the policy too.

    The hook is `http`, unless `transport` is "command": Claude Code refuses http hooks to
    a private or link-local address (its own SSRF guard; loopback and public addresses
    only), so a team server on a private network is reached through `agentweb-hook`."""
    url = hook_url(base_url, policy)
    if transport == "command":
        hook = _claude_command_hook(base_url, wait_seconds, policy)
    else:
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
        settings["allowManagedHooksOnly"] = True
        if transport != "command":
            settings["allowedHttpHookUrls"] = [url]
    if sandbox is not None:
        agentweb = urlsplit(base_url).hostname or ""
        settings |= claude_code_sandbox(sandbox, managed=managed, agentweb_host=agentweb)
    return settings


def claude_code_sandbox(
    sandbox: AgentSandbox, *, managed: bool = False, agentweb_host: str = ""
) -> dict[str, Any]:
    """Claude Code's `sandbox` (bubblewrap on Linux, Seatbelt on macOS) and the deny rules
    it enforces, each checked with Claude Code 2.1.332 (tests/agents/test_claude_sandbox.py).

    Paths in `sandbox.filesystem` resolve against the settings file's own directory, so
    only `~/` entries mean the same wherever the file lives; the project's patterns are
    `Read(...)`/`Edit(...)` deny rules instead, which resolve against the directory Claude
    Code runs in and which the sandbox enforces on every command. `Edit(.git/**)` is the
    one spelling that keeps `.git` unwritable even before it exists (the sandbox mounts
    /dev/null there; `denyWrite: ["./.git"]` and `Edit(**/.git/**)` did not). A deny rule
    also stops Claude Code's own Read and Edit tools, before any hook: a secret file is
    not read through Claude Code even when a person would approve it.

    With the sandbox on, Claude Code sends its `http` hooks through the sandbox's proxy,
    so agentweb's host is an allowed domain too; the token is kept out of every sandboxed
    command's environment, so a command reaching agentweb cannot speak for the agent."""
    reads = [_read_rule(pattern) for pattern in sandbox.secret_paths]
    homes = [f"Read({path}**)" if path.endswith("/") else f"Read({path})" for path in HOME_SECRETS]
    deny = ["Edit(.git/**)", *dict.fromkeys(rule for rule in reads if rule), *homes]
    domains = list(dict.fromkeys([*sandbox.hosts, *([agentweb_host] if agentweb_host else [])]))
    network: dict[str, Any] = {"allowedDomains": domains, "strictAllowlist": True}
    filesystem: dict[str, Any] = {"denyRead": [path.rstrip("/") for path in HOME_SECRETS]}
    permissions: dict[str, Any] = {"deny": deny}
    if managed:
        network["allowManagedDomainsOnly"] = True
        filesystem["allowManagedReadPathsOnly"] = True
        permissions["disableBypassPermissionsMode"] = "disable"
    return {
        "permissions": permissions,
        "sandbox": {
            "enabled": True,
            "failIfUnavailable": True,
            "allowUnsandboxedCommands": False,
            "autoAllowBashIfSandboxed": False,
            "filesystem": filesystem,
            "network": network,
            "credentials": {"envVars": [{"name": TOKEN_VARIABLE, "mode": "deny"}]},
        },
    }


def _read_rule(pattern: str) -> str:
    """A gitignore-style secret pattern as a Claude Code Read deny rule, relative to the
    directory Claude Code runs in; "" for what a rule cannot say (a `!` exception)."""
    text = pattern.strip()
    if not text or text.startswith(("!", "#")):
        return ""
    directory = text.endswith("/")
    anchored = "/" in text.rstrip("/")  # as in gitignore: a slash before the end anchors
    text = text.strip("/")
    if not anchored:
        text = f"**/{text}"
    return f"Read({text}/**)" if directory else f"Read({text})"


def codex_sandbox_toml(sandbox: AgentSandbox, *, managed: bool = False) -> str:
    """Codex's sandbox for its `config.toml` (managed: `requirements.toml`, which keeps a
    developer from choosing a weaker mode). Its `workspace-write` mode lets commands write
    only in the workspace, keeps `.git` read-only and gives them no network; it cannot hide
    a secret file from a read nor open the network to some hosts only, so what the policy
    says of those stays with agentweb's hook, as the comments say."""
    secrets = ", ".join([*sandbox.secret_paths, *HOME_SECRETS]) or "none"
    hosts = ", ".join(sandbox.hosts) or "none"
    notes = [
        "# agentweb: Codex's own sandbox for this policy.",
        "# Enforced: writes only in the workspace (its .git read-only), no network.",
        f"# Not enforced by Codex's sandbox, only by agentweb's hook: reads of {secrets};",
        f"# the policy's hosts ({hosts}): commands reach none of them.",
    ]
    if managed:
        body = ['allowed_sandbox_modes = ["read-only", "workspace-write"]']
        return "\n".join([*notes, "# Save as /etc/codex/requirements.toml.", *body, ""])
    body = [
        'sandbox_mode = "workspace-write"',
        "",
        "[sandbox_workspace_write]",
        "network_access = false",
    ]
    return "\n".join([*notes, "# Merge into ~/.codex/config.toml.", *body, ""])


def gemini_sandbox() -> dict[str, Any]:
    """Gemini CLI's tool sandbox for its `settings.json` (`security.toolSandboxing`: each
    shell command in bubblewrap on Linux, Seatbelt on macOS), as its 0.61.0 bundle builds
    it: writes only in the workspace with `.git` read-only, `.env` and `.env.*` masked, no
    network. Its secret list is fixed and its network all or nothing, so nothing of the
    policy can be said to it: the policy's other secret patterns and its hosts stay with
    agentweb's hook. Not yet run against the real binary here."""
    return {"security": {"toolSandboxing": True}, "tools": {"sandboxNetworkAccess": False}}


def private_address(base_url: str) -> bool:
    """The URL names a private or link-local IP address (not loopback): Claude Code's http
    hooks cannot reach it."""
    host = urlsplit(base_url).hostname or ""
    try:
        address = ipaddress.ip_address(host)
    except ValueError:
        return False
    return (address.is_private or address.is_link_local) and not address.is_loopback


def _claude_command_hook(base_url: str, wait_seconds: int, policy: str) -> dict[str, Any]:
    """`agentweb-hook claude-code`, told agentweb's URL on its command line."""
    patience = wait_seconds + MARGIN_SECONDS // 2
    chosen = f"AGENTWEB_POLICY={shlex.quote(policy)} " if policy else ""
    command = (
        f"{chosen}AGENTWEB_URL={shlex.quote(base_url)} AGENTWEB_HOOK_TIMEOUT={patience} "
        "agentweb-hook claude-code || exit 2"
    )
    return {"type": "command", "command": command, "timeout": wait_seconds + MARGIN_SECONDS}


def command_hook_settings(
    agent: str, wait_seconds: int, *, policy: str = "", base_url: str = ""
) -> dict[str, Any]:
    """Codex's and Gemini's command hooks: `agentweb-hook AGENT` before and after every
    tool, reading AGENTWEB_TOKEN from the environment, told agentweb's URL (`base_url`;
    none: AGENTWEB_URL from the environment) and the policy (AGENTWEB_POLICY) on its
    command line. Both CLIs run a hook's command in a shell with their own environment
    (tests/agents: test_codex.py, test_gemini.py), so the token set where the CLI starts
    reaches the hook, and the URL printed here wins over any AGENTWEB_URL there."""
    timeout = wait_seconds + MARGIN_SECONDS
    # Codex lets a call run when its hook fails in any other way than exit 2: a missing
    # `agentweb-hook`, or the hook killed at its timeout. So the command exits 2 when it
    # cannot start, and gives up on agentweb (exit 2) well before the CLI kills it.
    patience = wait_seconds + MARGIN_SECONDS // 2
    chosen = f"AGENTWEB_POLICY={shlex.quote(policy)} " if policy else ""
    chosen += f"AGENTWEB_URL={shlex.quote(base_url)} " if base_url else ""
    command = f"{chosen}AGENTWEB_HOOK_TIMEOUT={patience} agentweb-hook {agent} || exit 2"
    if agent == "gemini":
        hook = {"type": "command", "command": command, "timeout": timeout * 1000}
        events = ("BeforeTool", "AfterTool")
        return {"hooks": {event: [{"matcher": "*", "hooks": [dict(hook)]}] for event in events}}
    hook = {"type": "command", "command": command, "timeout": timeout}
    events = ("PreToolUse", "PostToolUse")
    return {"hooks": {event: [{"matcher": "*", "hooks": [dict(hook)]}] for event in events}}
