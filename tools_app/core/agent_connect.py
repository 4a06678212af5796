"""What a person pastes to connect their agent to agentweb, per agent: one source.

The Connect page shows every snippet of the chosen agent with the person's new token;
`manage.py hook_settings` prints one of them (Claude Code's settings, Codex's hooks.json or
config.toml, Gemini's hooks or sandbox), so the two never say different things. Each agent
is an entry of `INTEGRATIONS`: its name, label, the CLI's tested minimum version and the
function that composes its snippets from a `Connection`.

The minimum versions are the versions proven here, which the tests drive (the Makefile's
pins; tests/unit/test_agent_connect.py keeps the two equal): older ones were not tried.
What each must do is what they were shown to do: block a tool when its hook fails (Claude
Code's `onFailure: block` on http hooks; Codex and Gemini on `agentweb-hook`'s exit 2),
and wait for a held hook's answer for as long as the printed timeouts say.
"""

from __future__ import annotations

import json
import shlex
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from tools_app.core.gateway.agent_settings import (
    TOKEN_VARIABLE,
    AgentSandbox,
    claude_code_settings,
    codex_sandbox_toml,
    command_hook_settings,
    gemini_sandbox,
    private_address,
)

__all__ = ["INTEGRATIONS", "MINIMUM_VERSIONS", "Connection", "Integration", "Snippet"]

MINIMUM_VERSIONS = {"claude-code": "2.1.332", "codex": "0.171.0", "gemini": "0.61.0"}
MCP_PROTOCOLS = ("2024-11-05", "2025-11-25")  # the handshake versions /mcp speaks, from-to
HOOK_DOWNLOAD_PATH = "/api/hooks/agentweb-hook.py"
MCP_PATH = "/mcp"
MCP_SERVER_NAME = "agentweb"
TOKEN_PLACEHOLDER = "aw_YOUR_TOKEN"  # noqa: S105  (shown where no token was made)


@dataclass(frozen=True)
class Connection:
    """What the snippets depend on: agentweb's URL and hook wait, the policy the hooks
    name and its sandbox, the token (None: a placeholder), Claude Code's hook transport
    ("": http, or command for a private address, as `hook_settings` chooses)."""

    base_url: str
    wait_seconds: int
    policy: str = ""
    sandbox: AgentSandbox = field(default_factory=AgentSandbox)
    token: str = ""
    transport: str = ""
    managed: bool = False

    def claude_transport(self) -> str:
        return self.transport or ("command" if private_address(self.base_url) else "http")


@dataclass(frozen=True)
class Snippet:
    """One thing to paste: `key` names it for `hook_settings`, `title` says where it goes."""

    key: str
    title: str
    where: str
    text: str
    language: str = "json"


@dataclass(frozen=True)
class Integration:
    name: str
    label: str
    minimum: str  # the supported minimum, as a person reads it
    compose: Callable[[Connection], tuple[Snippet, ...]]
    checks_hooks: bool = True  # the Connect page's "Test the connection" applies


def _json(value: Any) -> str:
    return json.dumps(value, indent=2)


def _environment(connection: Connection, where: str) -> Snippet:
    token = shlex.quote(connection.token or TOKEN_PLACEHOLDER)
    return Snippet("environment", "Environment", where, f"export {TOKEN_VARIABLE}={token}", "sh")


def _install_hook(connection: Connection) -> Snippet:
    """`agentweb-hook` on the developer's PATH: one standard-library file from this server."""
    url = connection.base_url.rstrip("/") + HOOK_DOWNLOAD_PATH
    text = (
        "mkdir -p ~/.local/bin\n"
        f"curl -fsSL {shlex.quote(url)} -o ~/.local/bin/agentweb-hook\n"
        "chmod +x ~/.local/bin/agentweb-hook"
    )
    where = "Run once: the hooks run agentweb-hook (Python 3, standard library only); keep "
    return Snippet("install", "agentweb-hook", where + "~/.local/bin on your PATH.", text, "sh")


def claude_code(connection: Connection) -> tuple[Snippet, ...]:
    transport = connection.claude_transport()
    settings = claude_code_settings(
        connection.base_url, connection.wait_seconds, managed=connection.managed,
        policy=connection.policy, sandbox=connection.sandbox, transport=transport,
    )  # fmt: skip
    where = (
        "Merge into ~/.claude/settings.json (every project) or the project's "
        ".claude/settings.json: a hook before and after every tool, failing closed, and "
        "Claude Code's own sandbox set from the policy."
    )
    if transport == "command":
        where += (
            " Command hooks: Claude Code refuses http hooks to a private address such as "
            "this server's."
        )
    secrets = connection.sandbox.secret_paths
    if secrets:
        # Checked with Claude Code 2.1.332 (tests/browser/test_connect_agent.py): a Read
        # deny rule stops its Write of that file as well, before any hook.
        named = ", ".join(secrets[:3]) + (" …" if len(secrets) > 3 else "")
        where += (
            " Claude Code then refuses its own reads and writes of the policy's secret "
            f"files ({named}) outright: they never reach a reviewer."
        )
    snippets = [Snippet("settings", "Claude Code settings", where, _json(settings))]
    if transport == "command":
        snippets.insert(0, _install_hook(connection))
    shell = "In the shell that starts claude (your ~/.bashrc or ~/.zshrc, say)."
    return (*snippets, _environment(connection, shell))


def codex(connection: Connection) -> tuple[Snippet, ...]:
    hooks = command_hook_settings(
        "codex", connection.wait_seconds, policy=connection.policy, base_url=connection.base_url
    )
    toml = codex_sandbox_toml(connection.sandbox, managed=connection.managed)
    trust = "Save as ~/.codex/hooks.json; Codex asks you once to trust these hooks."
    fence = "Merge into ~/.codex/config.toml: Codex's own sandbox for this policy."
    return (
        _install_hook(connection),
        Snippet("hooks", "~/.codex/hooks.json", trust, _json(hooks)),
        Snippet("sandbox", "~/.codex/config.toml", fence, toml, "toml"),
        _environment(connection, "In the shell that starts codex."),
    )


def gemini(connection: Connection) -> tuple[Snippet, ...]:
    hooks = command_hook_settings(
        "gemini", connection.wait_seconds, policy=connection.policy, base_url=connection.base_url
    )
    merge = "Merge into ~/.gemini/settings.json (or the project's .gemini/settings.json)."
    fence = "Merge into the same settings.json: Gemini CLI's own tool sandbox."
    return (
        _install_hook(connection),
        Snippet("hooks", "~/.gemini/settings.json: hooks", merge, _json(hooks)),
        Snippet("sandbox", "~/.gemini/settings.json: sandbox", fence, _json(gemini_sandbox())),
        _environment(connection, "In the shell that starts gemini."),
    )


def mcp_client(connection: Connection) -> tuple[Snippet, ...]:
    url = connection.base_url.rstrip("/") + MCP_PATH
    header = f"Authorization: Bearer ${TOKEN_VARIABLE}"
    command = (
        f'claude mcp add --transport http {MCP_SERVER_NAME} {shlex.quote(url)} --header "{header}"'
    )
    bearer = {"Authorization": f"Bearer ${{{TOKEN_VARIABLE}}}"}
    config = {"mcpServers": {MCP_SERVER_NAME: {"type": "http", "url": url, "headers": bearer}}}
    first = "First, in the shell you run the next line in (and that starts your MCP client)."
    adds = "Adds agentweb's tools to Claude Code (the shell puts the token in)."
    reads = "The JSON most MCP clients read (.mcp.json, --mcp-config): the token comes from "
    return (
        _environment(connection, first),
        Snippet("command", "Claude Code", adds, command, "sh"),
        Snippet("config", "Any MCP client", reads + "the environment.", _json(config)),
    )


def _minimum(name: str, label: str) -> str:
    return f"{label} {MINIMUM_VERSIONS[name]} or later"


INTEGRATIONS: dict[str, Integration] = {
    integration.name: integration
    for integration in (
        Integration("claude-code", "Claude Code", _minimum("claude-code", "Claude Code"),
                    claude_code),
        Integration("codex", "Codex", _minimum("codex", "Codex CLI"), codex),
        Integration("gemini", "Gemini CLI", _minimum("gemini", "Gemini CLI"), gemini),
        Integration(
            "mcp", "An MCP client",
            f"{_minimum('claude-code', 'Claude Code')} for the claude mcp add line; any "
            f"client of MCP {MCP_PROTOCOLS[0]} to {MCP_PROTOCOLS[1]} over streamable HTTP",
            mcp_client, checks_hooks=False,
        ),
    )
}  # fmt: skip
