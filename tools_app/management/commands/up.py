"""Start the whole stack on this machine: Redis (embedded unless REDIS_URL), migrations,
a Celery worker for tool calls (with the beat that expires approvals), a small one for
notification deliveries, and daphne on 127.0.0.1 (--host or AGENTWEB_BIND: elsewhere).
Ctrl-C stops everything it started."""

from __future__ import annotations

import contextlib
import os
import secrets
import signal
import subprocess
import time
from pathlib import Path
from typing import Any

from django.conf import settings
from django.contrib.auth import get_user_model
from django.core.management import call_command
from django.core.management.base import BaseCommand, CommandError, CommandParser

from agentweb.site_names import is_loopback
from tools_app.live import redis_server
from tools_app.management.commands import _roles
from tools_app.management.commands.demo import start_demo
from tools_app.models import AgentSession
from tools_app.ops import metrics
from tools_app.runtime import demo

Child = subprocess.Popen[bytes]


class Command(BaseCommand):
    help = "Start agentweb (Redis, migrations, Celery workers, daphne) until Ctrl-C."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--port", type=int, default=8000)
        parser.add_argument(
            "--host",
            default=settings.AGENTWEB_BIND,
            help="the address daphne binds (default: AGENTWEB_BIND, else 127.0.0.1)",
        )
        parser.add_argument(
            "--concurrency", type=int, default=int(os.environ.get("AGENTWEB_CONCURRENCY", "4"))
        )

    def handle(self, *args: Any, **options: Any) -> None:
        children: list[Child] = []
        signal.signal(signal.SIGTERM, _raise_interrupt)
        try:
            children += self._redis()
            call_command("migrate", interactive=False, verbosity=0)
            self._first_admin()
            metrics.counts_reset()
            children.append(self._start_celery(options["concurrency"]))
            children.append(self._start_notify_worker())
            children.append(self._start_daphne(options["host"], options["port"]))
            self._announce(site_url(options["port"]), options["host"])
            self._demo(site_url(options["port"]))
            self._wait(children)
        except KeyboardInterrupt:
            self.stdout.write("Stopping…")
        finally:
            _stop(children)

    def _redis(self) -> list[Child]:
        if os.environ.get("REDIS_URL"):
            if not redis_server.is_reachable(settings.REDIS_URL):
                raise CommandError(f"REDIS_URL {settings.REDIS_URL} does not answer.")
            return []
        var = Path(settings.AGENTWEB_VAR)
        try:
            process = redis_server.start_embedded(Path(settings.REDIS_SOCKET), var / "redis")
        except RuntimeError as exc:
            raise CommandError(str(exc)) from exc
        self.stdout.write(f"Embedded Redis on {settings.REDIS_SOCKET}")
        return [process]

    def _first_admin(self) -> None:
        """On the first run, make an admin with a random password and say how to log in."""
        users = get_user_model().objects
        if users.filter(is_superuser=True).exists():
            self.stdout.write("Log in with your admin account (manage.py changepassword to reset).")
            return
        password = secrets.token_urlsafe(12)
        users.create_superuser("admin", "", password)
        self.stdout.write(f"Created the admin user: username 'admin', password '{password}'")
        self.stdout.write("(shown once; change it with `python manage.py changepassword admin`).")

    def _start_celery(self, concurrency: int) -> Child:
        command = _roles.worker_command(concurrency=concurrency, beat=True)
        return subprocess.Popen(command, stdin=subprocess.DEVNULL, start_new_session=True)

    def _start_notify_worker(self) -> Child:
        command = _roles.notify_command()
        return subprocess.Popen(command, stdin=subprocess.DEVNULL, start_new_session=True)

    def _start_daphne(self, host: str, port: int) -> Child:
        command = _roles.web_command(host=host, port=port)
        return subprocess.Popen(command, stdin=subprocess.DEVNULL, start_new_session=True)

    def _announce(self, url: str, host: str) -> None:
        if not os.environ.get("AGENTWEB_BASE_URL") and not is_loopback(host.strip("[]")):
            self.stderr.write(
                f"daphne listens on {host}, but agentweb answers only to loopback names until "
                "AGENTWEB_BASE_URL is the URL people use (http://agentweb.internal:8000 …)."
            )
        self.stdout.write(f"agentweb is running at {url}/ (Ctrl-C stops it)")
        self.stdout.write(f"Log in: {url}/login/ (admin: /admin/)")
        self.stdout.write(f"API: {url}/api/docs")

    def _demo(self, url: str) -> None:
        """On the first run, a scripted demo session that ends up waiting in the inbox."""
        if not settings.AGENTWEB_DEMO or AgentSession.objects.filter(task=demo.TASK).exists():
            return
        try:
            session = start_demo()
        except CommandError as exc:
            self.stderr.write(f"The demo session could not start: {exc}")
            return
        self.stdout.write(
            f"Demo: session {session.pk}, a scripted agent, is working on a generated "
            f"repository; in a few seconds a call of it waits for your decision in the "
            f"approvals inbox: {url}/approvals/ (AGENTWEB_DEMO=0 turns "
            "this off)."
        )

    def _wait(self, children: list[Child]) -> None:
        """Until Ctrl-C, or until one child dies: then stop the rest too."""
        while True:
            for child in children:
                if child.poll() is not None:
                    self.stderr.write(f"process {child.pid} exited with code {child.returncode}")
                    return
            time.sleep(0.5)


def site_url(port: int) -> str:
    """AGENTWEB_BASE_URL when set: the name agentweb answers to; unset, it answers to the
    loopback names only, wherever daphne listens."""
    if os.environ.get("AGENTWEB_BASE_URL"):
        return str(settings.AGENTWEB_BASE_URL).rstrip("/")
    return f"http://127.0.0.1:{port}"


def _raise_interrupt(signum: int, frame: Any) -> None:
    raise KeyboardInterrupt


def _stop(children: list[Child]) -> None:
    """SIGTERM each child's process group (Celery's pool too), then SIGKILL what lingers."""
    for child in reversed(children):
        _signal_group(child, signal.SIGTERM)
    deadline = time.monotonic() + 15
    for child in reversed(children):
        try:
            child.wait(timeout=max(0.1, deadline - time.monotonic()))
        except subprocess.TimeoutExpired:
            _signal_group(child, signal.SIGKILL)
            child.wait()


def _signal_group(child: Child, signum: int) -> None:
    try:
        os.killpg(child.pid, signum)
    except (ProcessLookupError, PermissionError):
        with contextlib.suppress(ProcessLookupError):
            child.send_signal(signum)
