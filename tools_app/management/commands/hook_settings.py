"""Print the hook configuration that points an agent's hooks at agentweb, as JSON, with
the agent's own sandbox configured from the policy."""

from __future__ import annotations

from typing import Any

from django.conf import settings
from django.core.management.base import BaseCommand, CommandError, CommandParser

from tools_app.core.agent_connect import INTEGRATIONS
from tools_app.management.commands._common import existing_policy
from tools_app.selectors.agent_connect import connection_for


class Command(BaseCommand):
    help = (
        "Print the settings that send AGENT's tool uses to agentweb's policy and inbox: "
        "claude-code (a settings file with http hooks and Claude Code's sandbox set from "
        "the policy), codex (its hooks.json) or gemini (hooks for its settings.json), "
        "command hooks running agentweb-hook told --url. The token comes from "
        "$AGENTWEB_TOKEN (an agent token). --sandbox prints Codex's (config.toml) or "
        "Gemini's sandbox instead. The Connect page (/connect/) shows the same, with a token."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("agent", choices=sorted({agent for agent, _ in PRINTED}))
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
        agent, managed, sandbox_only = options["agent"], options["managed"], options["sandbox"]
        if managed and not (agent == "claude-code" or (agent == "codex" and sandbox_only)):
            raise CommandError("--managed is for claude-code, and for codex with --sandbox")
        if options["hook"] and agent != "claude-code":
            raise CommandError("--hook is for claude-code: codex and gemini use command hooks")
        if sandbox_only and agent == "claude-code":
            raise CommandError("--sandbox is for codex and gemini: claude-code prints it always")
        policy = existing_policy(options["policy"]).name if options["policy"] else ""
        connection = connection_for(
            policy=policy, base_url=url, transport=options["hook"] or "", managed=managed
        )
        wanted = PRINTED[agent, sandbox_only]
        [snippet] = [s for s in INTEGRATIONS[agent].compose(connection) if s.key == wanted]
        self.stdout.write(snippet.text, ending="\n" if snippet.language == "json" else "")


# The snippet of the Connect page that each agent (with --sandbox or not) prints.
PRINTED = {
    ("claude-code", False): "settings",
    ("codex", False): "hooks",
    ("codex", True): "sandbox",
    ("gemini", False): "hooks",
    ("gemini", True): "sandbox",
}
