"""Create or replace notification channels, and link Slack users, from a JSON file (`-`
reads standard input); a file with any problem changes nothing."""

from __future__ import annotations

from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser

from tools_app import services
from tools_app.core.tools.jsonsafe import printable
from tools_app.management.commands._common import load_json_argument, read_file_argument
from tools_app.services.channels import channels_import


class Command(BaseCommand):
    help = (
        "Import a channels file (what export_channels prints); channels are created or "
        "replaced by name, a missing secret keeps the saved one."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("file")

    def handle(self, *args: Any, **options: Any) -> None:
        name = printable(options["file"])
        data = load_json_argument(read_file_argument(options["file"]), name=name)
        try:
            channels, links = channels_import(data=data)
        except services.ServiceError as exc:
            raise CommandError(f"{name}: {exc}") from exc
        names = ", ".join(channel.name for channel in channels) or "none"
        self.stdout.write(f"Imported {len(channels)} channels ({names}), {len(links)} Slack users.")
