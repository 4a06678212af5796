"""Print the hook configuration that points an agent's hooks at agentweb, as JSON, with
the agent's own sandbox configured from the policy."""

from __future__ import annotations

import json
from typing import Any

from django.conf import settings
from django.core.management.base import BaseCommand, CommandError, CommandParser

from tools_app.core.gateway_settings import (
    AGENTS,
    AgentSandbox,
    claude_code_settings,
    codex_sandbox_toml,
    command_hook_settings,
    gemini_sandbox,
    private_address,
)
from tools_app.core.policy.defaults import DEFAULT_SPEC
from tools_app.management.commands._common import existing_policy
from tools_app.selectors import records


class Command(BaseCommand):
    help = (
        "Print the settings that send AGENT's tool uses to agentweb's policy and inbox: "
        "claude-code (a settings file with http hooks and Claude Code's sandbox set from "
        "the policy), codex (its hooks.json) or gemini (hooks for its settings.json), "
        "command hooks running agentweb-hook. The token comes from $AGENTWEB_TOKEN (an "
        "agent token). --sandbox prints Codex's (config.toml) or Gemini's sandbox instead."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("agent", choices=AGENTS)
        parser.add_argument(
            "--url", default=None, help="agentweb's base URL (default: AGENTWEB_BASE_URL)."
        )
        parser.add_argument(
            "--policy",
            default="",
            help="The policy of the sessions these hooks start and of the agent's sandbox "
            "(default: the policy `default`).",
        )
        parser.add_argument(
            "--managed",
            action="store_true",
            help="Claude Code: the managed-settings file an organisation installs to force "
            "it; Codex with --sandbox: its requirements.toml.",
        )
        parser.add_argument(
            "--hook",
            choices=("http", "command"),
            default=None,
            help="Claude Code: http hooks (the default) or command hooks running "
            "agentweb-hook, which a server on a private address needs (Claude Code refuses "
            "http hooks to private addresses); chosen for a private IP --url by default.",
        )
        parser.add_argument(
            "--sandbox",
            action="store_true",
            help="Codex: its sandbox for config.toml (TOML); Gemini: its sandbox settings.",
        )

    def handle(self, *args: Any, **options: Any) -> None:
        url = options["url"] or settings.AGENTWEB_BASE_URL
        if not url.startswith(("http://", "https://")):
            raise CommandError(f"--url must be an http:// or https:// URL, not {url!r}")
        wait = int(settings.AGENTWEB_HOOK_WAIT_SECONDS)
        agent, managed, sandbox_only = options["agent"], options["managed"], options["sandbox"]
        if managed and not (agent == "claude-code" or (agent == "codex" and sandbox_only)):
            raise CommandError("--managed is for claude-code, and for codex with --sandbox")
        if options["hook"] and agent != "claude-code":
            raise CommandError("--hook is for claude-code: codex and gemini use command hooks")
        if sandbox_only and agent == "claude-code":
            raise CommandError("--sandbox is for codex and gemini: claude-code prints it always")
        policy = existing_policy(options["policy"]).name if options["policy"] else ""
        sandbox = agent_sandbox(policy)
        if agent == "codex" and sandbox_only:
            self.stdout.write(codex_sandbox_toml(sandbox, managed=managed), ending="")
            return
        if agent == "claude-code":
            transport = options["hook"] or ("command" if private_address(url) else "http")
            printed = claude_code_settings(
                url, wait, managed=managed, policy=policy, sandbox=sandbox, transport=transport
            )
        elif sandbox_only:
            printed = gemini_sandbox()
        else:
            printed = command_hook_settings(agent, wait, policy=policy)
        self.stdout.write(json.dumps(printed, indent=2))


def agent_sandbox(name: str) -> AgentSandbox:
    """The sandbox of the policy the hooks name (`default` when none is named, or its
    defaults when that policy was removed)."""
    found = records.policy_by_name(name or "default")
    spec = records.policy_spec(found) if found is not None else DEFAULT_SPEC
    return AgentSandbox(secret_paths=spec.secret_paths, hosts=spec.web_allow_hosts)
