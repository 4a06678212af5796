"""Open password sign-in again for an account or an address that too many failures shut
(the break-glass superuser's own, say), at once rather than when the window ends."""

from __future__ import annotations

from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser

from tools_app.services.sign_in import sign_in_clear


class Command(BaseCommand):
    help = (
        "Forget the failed passwords of an account (from every address), of an address, or "
        "of both together: password sign-in opens for them at once."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("username", nargs="?", default="", help="The account's username.")
        parser.add_argument("--address", default="", help="The address the failures came from.")

    def handle(self, *args: Any, **options: Any) -> None:
        username, address = options["username"].strip(), options["address"].strip()
        if not username and not address:
            raise CommandError("Name an account (USERNAME), an address (--address), or both.")
        cleared = sign_in_clear(username=username, address=address)
        self.stdout.write(f"Forgot {cleared} failed sign-in{'s' if cleared != 1 else ''}.")
