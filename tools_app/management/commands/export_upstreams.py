"""Print the MCP upstream servers as JSON; the output imports as it is with
`import_upstreams` (credentials' values are never printed: they stay write-only)."""

from __future__ import annotations

import json
from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser

from tools_app.models import UpstreamServer
from tools_app.services.upstreams import upstream_as_dict


class Command(BaseCommand):
    help = "Print the MCP upstream servers (all, or those NAMEd) as an upstreams file."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("names", nargs="*")

    def handle(self, *args: Any, **options: Any) -> None:
        servers = UpstreamServer.objects.select_related("project")
        if options["names"]:
            servers = servers.filter(name__in=options["names"])
            missing = set(options["names"]) - {server.name for server in servers}
            if missing:
                raise CommandError(f"There is no MCP upstream named {', '.join(sorted(missing))}.")
        data = {"upstreams": [upstream_as_dict(server) for server in servers]}
        self.stdout.write(json.dumps(data, indent=2, ensure_ascii=False))
