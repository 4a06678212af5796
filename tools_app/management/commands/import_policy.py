"""Create or replace a policy from a JSON file (`-` reads standard input)."""

from __future__ import annotations

from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser

from tools_app import services
from tools_app.core.policy.loader import PolicyInvalid
from tools_app.core.tools.jsonsafe import printable
from tools_app.management.commands._common import load_json_argument, read_file_argument


class Command(BaseCommand):
    help = "Import a policy file (JSON); an existing policy with that name is replaced."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("file")

    def handle(self, *args: Any, **options: Any) -> None:
        name = printable(options["file"])
        data = load_json_argument(read_file_argument(options["file"]), name=name)
        try:
            policy = services.policy_import(data=data)
        except (PolicyInvalid, services.ServiceError) as exc:
            raise CommandError(f"{name}: {exc}") from exc
        self.stdout.write(f"Imported policy {policy.name!r} (version {policy.version}).")
