"""Create or replace a policy from a JSON file (`-` reads standard input)."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser

from tools_app import services
from tools_app.core.policy.loader import PolicyInvalid
from tools_app.core.tools.jsonsafe import printable
from tools_app.management.commands._common import load_json_argument


class Command(BaseCommand):
    help = "Import a policy file (JSON); an existing policy with that name is replaced."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("file")

    def handle(self, *args: Any, **options: Any) -> None:
        name = printable(options["file"])
        data = load_json_argument(_read(options["file"]), name=name)
        try:
            policy = services.policy_import(data=data)
        except (PolicyInvalid, services.ServiceError) as exc:
            raise CommandError(f"{name}: {exc}") from exc
        self.stdout.write(f"Imported policy {policy.name!r} (version {policy.version}).")


def _read(name: str) -> str:
    try:
        return sys.stdin.read() if name == "-" else Path(name).read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError, ValueError) as exc:
        raise CommandError(f"Cannot read {printable(name)}: {exc}") from exc
