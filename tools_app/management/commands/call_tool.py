"""Run one tool call through the engine on a directory; print the outcome as one JSON line.

No approval happens here: a call that needs one is reported as `awaiting_approval`.
"""

from __future__ import annotations

from typing import Any

from django.core.management.base import BaseCommand, CommandParser

from tools_app import services
from tools_app.management.commands._common import (
    checked_text,
    existing_directory,
    existing_policy,
    load_json_argument,
    print_json_line,
)


class Command(BaseCommand):
    help = 'Run TOOL ARGS_JSON in --workspace; prints {"status", "decision", "reason", "result"}.'

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("tool")
        parser.add_argument("args_json", metavar="ARGS_JSON")
        parser.add_argument("--workspace", required=True)
        parser.add_argument("--policy", default="default")

    def handle(self, *args: Any, **options: Any) -> None:
        tool = checked_text(options["tool"], name="TOOL")
        tool_args = load_json_argument(options["args_json"], name="ARGS_JSON")
        workspace = existing_directory(options["workspace"])
        policy = existing_policy(options["policy"])
        session = services.session_open_for_workspace(workspace=workspace, policy=policy)
        call = services.tool_call_run_in_process(session=session, tool=tool, args=tool_args)
        services.session_close_cli(session=session)
        print_json_line(
            self,
            {
                "status": call.status,
                "decision": call.verdict or None,
                "reason": call.reason,
                "result": call.result,
            },
        )
