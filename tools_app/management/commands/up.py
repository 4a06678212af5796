"""Start agentweb on this machine: migrate, then serve on 127.0.0.1 until Ctrl-C."""

from __future__ import annotations

import os
import secrets
import signal
import subprocess
import sys
import time
from typing import Any

from django.contrib.auth import get_user_model
from django.core.management import call_command
from django.core.management.base import BaseCommand, CommandParser


class Command(BaseCommand):
    help = "Migrate and start agentweb on 127.0.0.1; Ctrl-C stops everything it started."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--port", type=int, default=8000)

    def handle(self, *args: Any, **options: Any) -> None:
        call_command("migrate", interactive=False, verbosity=0)
        self._first_admin()
        port = options["port"]
        children = [self._start_daphne(port)]
        self.stdout.write(f"agentweb is running at http://127.0.0.1:{port}/ (Ctrl-C stops it)")
        self.stdout.write(f"Admin: http://127.0.0.1:{port}/admin/")
        try:
            self._wait(children)
        finally:
            self._stop(children)

    def _first_admin(self) -> None:
        """On the first run, make an admin with a random password and say how to log in."""
        user_model = get_user_model()
        if user_model.objects.filter(is_superuser=True).exists():
            self.stdout.write("Log in with your admin account (manage.py changepassword to reset).")
            return
        password = secrets.token_urlsafe(12)
        user_model.objects.create_superuser("admin", "", password)
        self.stdout.write(f"Created the admin user: username 'admin', password '{password}'.")
        self.stdout.write("Change it after you log in; it is not shown again.")

    def _start_daphne(self, port: int) -> subprocess.Popen[bytes]:
        command = [sys.executable, "-m", "daphne", "-b", "127.0.0.1", "-p", str(port)]
        return subprocess.Popen([*command, "agentweb.asgi:application"], env=os.environ.copy())

    def _wait(self, children: list[subprocess.Popen[bytes]]) -> None:
        try:
            while all(child.poll() is None for child in children):
                time.sleep(0.5)
        except KeyboardInterrupt:
            self.stdout.write("Stopping…")

    def _stop(self, children: list[subprocess.Popen[bytes]]) -> None:
        for child in children:
            if child.poll() is None:
                child.send_signal(signal.SIGTERM)
        deadline = time.monotonic() + 10
        for child in children:
            try:
                child.wait(timeout=max(0.1, deadline - time.monotonic()))
            except subprocess.TimeoutExpired:
                child.kill()
