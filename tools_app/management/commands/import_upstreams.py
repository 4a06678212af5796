"""Create or replace MCP upstream servers from a JSON file (`-` reads standard input)."""

from __future__ import annotations

from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser

from tools_app import services
from tools_app.core.tools.jsonsafe import printable
from tools_app.management.commands._common import load_json_argument, read_file_argument
from tools_app.services.upstreams import upstreams_import


class Command(BaseCommand):
    help = (
        'Import an upstreams file (JSON: {"upstreams": [{name, kind, command or url, '
        "environment, readonly_paths, writable_paths, credential_name, credential_value, "
        "project, enabled}]}); a server with an entry's name is replaced (its credential "
        "kept when the entry has no credential_value)."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("file")

    def handle(self, *args: Any, **options: Any) -> None:
        name = printable(options["file"])
        data = load_json_argument(read_file_argument(options["file"]), name=name)
        try:
            servers = upstreams_import(data=data)
        except services.ServiceError as exc:
            raise CommandError(f"{name}: {exc}") from None
        names = ", ".join(server.name for server in servers) or "none"
        self.stdout.write(f"Imported {len(servers)} MCP upstream(s): {names}.")
