"""Print skills as a skill JSON file; the output imports as it is with `import_skills`."""

from __future__ import annotations

import json
from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser

from tools_app import services
from tools_app.selectors import records
from tools_app.services import skills as skill_services


class Command(BaseCommand):
    help = "Print the skills NAME… (default: all) as JSON; one name prints one skill."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("names", nargs="*")

    def handle(self, *args: Any, **options: Any) -> None:
        names = options["names"]
        try:
            skill_services.skill_names_exist(names)
        except services.ServiceError as exc:
            raise CommandError(str(exc)) from exc
        exported = records.skills_export(names)
        data = exported[0] if len(names) == 1 else exported
        self.stdout.write(json.dumps(data, indent=2, ensure_ascii=False))
