"""Print the hook configuration that points an agent's hooks at agentweb, as JSON."""

from __future__ import annotations

import json
from typing import Any

from django.conf import settings
from django.core.management.base import BaseCommand, CommandError, CommandParser

from tools_app.core.gateway_settings import AGENTS, claude_code_settings, command_hook_settings
from tools_app.management.commands._common import existing_policy


class Command(BaseCommand):
    help = (
        "Print the settings that send AGENT's tool uses to agentweb's policy and inbox: "
        "claude-code (a settings file with http hooks), codex (its hooks.json) or gemini "
        "(hooks for its settings.json), command hooks running agentweb-hook. The token "
        "comes from $AGENTWEB_TOKEN (an agent token)."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("agent", choices=AGENTS)
        parser.add_argument(
            "--url", default=None, help="agentweb's base URL (default: AGENTWEB_BASE_URL)."
        )
        parser.add_argument(
            "--policy",
            default="",
            help="The policy of the sessions these hooks start (default: the policy `default`).",
        )
        parser.add_argument(
            "--managed",
            action="store_true",
            help="Claude Code: the managed-settings file an organisation installs to force it.",
        )

    def handle(self, *args: Any, **options: Any) -> None:
        url = options["url"] or settings.AGENTWEB_BASE_URL
        if not url.startswith(("http://", "https://")):
            raise CommandError(f"--url must be an http:// or https:// URL, not {url!r}")
        wait = int(settings.AGENTWEB_HOOK_WAIT_SECONDS)
        agent = options["agent"]
        if options["managed"] and agent != "claude-code":
            raise CommandError("--managed is for claude-code only")
        policy = existing_policy(options["policy"]).name if options["policy"] else ""
        if agent == "claude-code":
            printed = claude_code_settings(url, wait, managed=options["managed"], policy=policy)
        else:
            printed = command_hook_settings(agent, wait, policy=policy)
        self.stdout.write(json.dumps(printed, indent=2))
