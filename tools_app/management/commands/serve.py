"""Start one role of agentweb in this process, as a systemd unit or a Procfile line does:
`serve web|worker|notify|clock`. The process becomes daphne or Celery (exec), so the
supervisor's signals reach it directly. Migrations are `manage.py migrate`, run once per
release; Redis and the database come from REDIS_URL and DATABASE_URL (docs/deployment.md).
"""

from __future__ import annotations

import os
from collections.abc import Callable
from typing import Any

from django.conf import settings
from django.core.management.base import BaseCommand, CommandError, CommandParser

from tools_app.live import redis_server
from tools_app.management.commands import _roles

Options = dict[str, Any]

COMMANDS: dict[str, Callable[[Options], list[str]]] = {
    "web": lambda o: _roles.web_command(host=o["host"], port=o["port"]),
    "worker": lambda o: _roles.worker_command(concurrency=o["concurrency"]),
    "notify": lambda o: _roles.notify_command(),
    "clock": lambda o: _roles.clock_command(),
}


class Command(BaseCommand):
    help = "Run one agentweb role (web, worker, notify or clock) in this process."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("role", choices=list(COMMANDS))
        parser.add_argument(
            "--host",
            default=settings.AGENTWEB_BIND,
            help="web: the address to bind (AGENTWEB_BIND)",
        )
        parser.add_argument("--port", type=int, default=8000, help="web: the port")
        parser.add_argument(
            "--concurrency",
            type=int,
            default=int(os.environ.get("AGENTWEB_CONCURRENCY", "4")),
            help="worker: tool calls run at once",
        )

    def handle(self, *args: Any, **options: Any) -> None:
        if not redis_server.is_reachable(settings.REDIS_URL):
            raise CommandError(f"Redis at {settings.REDIS_URL} does not answer: set REDIS_URL.")
        command = COMMANDS[options["role"]](options)
        self.stdout.flush()
        os.execv(command[0], command)  # noqa: S606 (a fixed argv, no shell)
