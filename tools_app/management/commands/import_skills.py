"""Create or replace skills from a skill JSON file (one skill or a list; `-` reads
standard input), or from an Agent Skills folder (SKILL.md, or folders of them)."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser

from tools_app import services
from tools_app.core.tools.jsonsafe import printable
from tools_app.management.commands._common import load_json_argument
from tools_app.services import skills as skill_services


class Command(BaseCommand):
    help = (
        "Import skills from a JSON file (one skill or a list) or a folder holding SKILL.md "
        "(or folders of them); an existing skill with the same name is replaced. All or "
        "nothing: a bad file changes no skill."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("path")

    def handle(self, *args: Any, **options: Any) -> None:
        name = printable(options["path"])
        try:
            if options["path"] == "-":
                data = load_json_argument(sys.stdin.read(), name="standard input")
                skills, notes = skill_services.skill_import(data=data), list[str]()
            else:
                skills, notes = skill_services.skill_import_path(path=Path(options["path"]))
        except services.ServiceError as exc:
            raise CommandError(f"{name}: {exc}") from exc
        listed = ", ".join(skill.name for skill in skills)
        self.stdout.write(f"Imported {len(skills)} skill(s): {listed}.")
        for note in notes:
            self.stdout.write(f"note: {note}")
