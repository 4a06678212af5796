"""Print what a policy would decide for one tool call, as one JSON line."""

from __future__ import annotations

from typing import Any

from django.core.management.base import BaseCommand, CommandParser

from tools_app import services
from tools_app.core.policy.types import SessionCounters
from tools_app.management.commands._common import (
    checked_text,
    existing_directory,
    existing_policy,
    load_json_argument,
    print_json_line,
)
from tools_app.selectors import records


class Command(BaseCommand):
    help = 'Dry-run the policy on TOOL ARGS_JSON; prints {"decision", "reason", "rule"}.'

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("tool")
        parser.add_argument("args_json", metavar="ARGS_JSON")
        parser.add_argument("--policy", default="default")
        parser.add_argument("--workspace", default=".")

    def handle(self, *args: Any, **options: Any) -> None:
        tool = checked_text(options["tool"], name="TOOL")
        tool_args = load_json_argument(options["args_json"], name="ARGS_JSON")
        workspace = existing_directory(options["workspace"])
        policy = existing_policy(options["policy"])
        decision = services.policy_evaluate(
            policy=policy,
            tool=tool,
            args=tool_args,
            workspace=workspace,
            counters=SessionCounters(),
        )
        note = records.tracked_secrets_note(policy, workspace)
        print_json_line(self, {**decision.as_dict(), **({"note": note} if note else {})})
