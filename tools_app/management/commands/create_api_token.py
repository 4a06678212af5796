"""Print a new API token for a user, alone on the last line (it is not shown again)."""

from __future__ import annotations

from typing import Any

from django.contrib.auth import get_user_model
from django.core.management.base import BaseCommand, CommandError, CommandParser

from tools_app import services
from tools_app.models import ApiToken


class Command(BaseCommand):
    help = (
        "Create an API token: `agent` (sessions and tool calls) or `review` (all the user may do)."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("username")
        parser.add_argument("--scope", choices=ApiToken.Scope.values, default=ApiToken.Scope.AGENT)

    def handle(self, *args: Any, **options: Any) -> None:
        user = get_user_model().objects.filter(username=options["username"]).first()
        if user is None:
            raise CommandError(f"There is no user named {options['username']!r}.")
        if not user.is_active:
            raise CommandError(f"User {options['username']!r} is not active.")
        token = services.api_token_create(user=user, scope=options["scope"])
        self.stderr.write(f"A {options['scope']} token for {user.get_username()} (shown once):")
        self.stdout.write(token)
