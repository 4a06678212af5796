"""Print every notification channel and Slack link as JSON, never a secret; the output
imports with `import_channels` (secrets added to the file, or kept by the channels)."""

from __future__ import annotations

import json
from typing import Any

from django.core.management.base import BaseCommand

from tools_app.selectors.channels import channels_export


class Command(BaseCommand):
    help = "Print the notification channels and Slack users as JSON (without secrets)."

    def handle(self, *args: Any, **options: Any) -> None:
        self.stdout.write(json.dumps(channels_export(), indent=2, ensure_ascii=False))
