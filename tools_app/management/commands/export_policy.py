"""Print a policy as JSON; the output imports as it is with `import_policy`."""

from __future__ import annotations

import json
from typing import Any

from django.core.management.base import BaseCommand, CommandParser

from tools_app.management.commands._common import existing_policy
from tools_app.selectors import records


class Command(BaseCommand):
    help = "Print the policy NAME as JSON."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("name")

    def handle(self, *args: Any, **options: Any) -> None:
        policy = existing_policy(options["name"])
        self.stdout.write(json.dumps(records.policy_as_dict(policy), indent=2, ensure_ascii=False))
