"""Create or replace a project from a JSON file (`-` reads standard input)."""

from __future__ import annotations

from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser

from tools_app import services
from tools_app.core.tools.jsonsafe import printable
from tools_app.management.commands._common import load_json_argument, read_file_argument
from tools_app.services.projects import project_import


class Command(BaseCommand):
    help = (
        "Import a project file (JSON: name, description, members, reviewers (group names), "
        "policy, repositories (glob patterns)); an existing project with that name is "
        "replaced."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("file")

    def handle(self, *args: Any, **options: Any) -> None:
        name = printable(options["file"])
        data = load_json_argument(read_file_argument(options["file"]), name=name)
        try:
            project = project_import(data=data)
        except services.ServiceError as exc:
            raise CommandError(f"{name}: {exc}") from exc
        self.stdout.write(f"Imported project {project.name!r}.")
