"""Print a new API token for a user, alone on the last line (it is not shown again)."""

from __future__ import annotations

from typing import Any

from django.contrib.auth import get_user_model
from django.core.management.base import BaseCommand, CommandError, CommandParser

from tools_app.errors import ServiceError
from tools_app.models import ApiToken
from tools_app.services.tokens import api_token_create


class Command(BaseCommand):
    help = (
        "Create an API token: `agent` (sessions and tool calls) or `review` (all the user may "
        "do). An operator may give any user either scope; people make their own at "
        "/settings/tokens/."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("username")
        parser.add_argument("--scope", choices=ApiToken.Scope.values, default=ApiToken.Scope.AGENT)
        parser.add_argument("--name", default="", help="What the token is for (shown in lists).")
        parser.add_argument(
            "--expires-days",
            type=int,
            default=None,
            help="Days until the token stops working (default: it never expires).",
        )
        parser.add_argument(
            "--project",
            default="",
            help="The project of the gateway sessions its hooks start (default: the one "
            "whose repositories claim the agent's folder, else default).",
        )

    def handle(self, *args: Any, **options: Any) -> None:
        user = get_user_model().objects.filter(username=options["username"]).first()
        if user is None:
            raise CommandError(f"There is no user named {options['username']!r}.")
        if not user.is_active:
            raise CommandError(f"User {options['username']!r} is not active.")
        try:
            token = api_token_create(
                user=user, scope=options["scope"], name=options["name"],
                expires_days=options["expires_days"], project=options["project"],
            )  # fmt: skip
        except ServiceError as exc:
            raise CommandError(str(exc).replace("expires:", "--expires-days:")) from None
        days = options["expires_days"]
        lasts = f", expiring in {days} days" if days else ""
        owner = user.get_username()
        self.stderr.write(f"A {options['scope']} token for {owner}{lasts} (shown once):")
        self.stdout.write(token)
