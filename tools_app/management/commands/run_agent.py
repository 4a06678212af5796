"""Start a session whose agent agentweb runs itself, and follow it.

Prints the session's events on stderr while it works, and ends with
`{"session": ID, "status": ...}` as one JSON line on stdout. Ctrl-C stops following;
the session goes on in the workers (cancel it with the API or the dashboard)."""

from __future__ import annotations

from typing import Any

from django.core.management.base import BaseCommand, CommandParser

from tools_app.management.commands._agents import follow, start
from tools_app.management.commands._common import checked_text, print_json_line


class Command(BaseCommand):
    help = "Run an agent on a repository: --repo PATH_OR_URL --task TEXT [--model SPEC]."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--repo", required=True, help="A local path or a git URL.")
        parser.add_argument("--task", required=True)
        parser.add_argument(
            "--model",
            default="coder",
            help="script:PATH, openai:MODEL, anthropic:MODEL or a role (fast, coder, architect).",
        )
        parser.add_argument("--policy", default="default")
        parser.add_argument(
            "--detach", action="store_true", help="Print the session and return at once."
        )
        parser.add_argument(
            "--timeout", type=float, default=24 * 3600, help="Stop following after SECONDS."
        )

    def handle(self, *args: Any, **options: Any) -> None:
        session = start(
            repo=checked_text(options["repo"], name="--repo"),
            task=checked_text(options["task"], name="--task"),
            model=checked_text(options["model"], name="--model"),
            policy=checked_text(options["policy"], name="--policy"),
        )
        self.stderr.write(f"session {session.pk} started on {session.repo}")
        if not options["detach"]:
            try:
                session = follow(self, session, timeout=options["timeout"])
            except KeyboardInterrupt:
                session.refresh_from_db()
        print_json_line(self, {"session": session.pk, "status": session.status})
