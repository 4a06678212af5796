"""Print a project as JSON; the output imports as it is with `import_project`."""

from __future__ import annotations

import json
from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser

from tools_app.models import Project
from tools_app.services.projects import project_as_dict


class Command(BaseCommand):
    help = "Print the project NAME as JSON (its groups, default policy and repositories)."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("name")

    def handle(self, *args: Any, **options: Any) -> None:
        project = Project.objects.filter(name=options["name"]).first()
        if project is None:
            names = ", ".join(Project.objects.values_list("name", flat=True)) or "none"
            raise CommandError(
                f"There is no project named {options['name']!r} (there are: {names})."
            )
        self.stdout.write(json.dumps(project_as_dict(project), indent=2, ensure_ascii=False))
