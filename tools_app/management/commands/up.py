"""Start the whole stack on this machine: Redis (embedded unless REDIS_URL), migrations,
a Celery worker for tool calls (with the beat that expires approvals), a small one for
notification deliveries, and daphne on 127.0.0.1 (--host or AGENTWEB_BIND: elsewhere).
Ctrl-C stops everything it started."""

from __future__ import annotations

import contextlib
import os
import secrets
import signal
import socket
import time
from pathlib import Path
from typing import Any

from django.conf import settings
from django.contrib.auth import get_user_model
from django.core.management import call_command
from django.core.management.base import BaseCommand, CommandError, CommandParser

from agentweb.site_names import is_loopback
from tools_app.core import supervision
from tools_app.live import redis_server
from tools_app.management.commands import _roles
from tools_app.management.commands.demo import start_demo
from tools_app.models import AgentSession
from tools_app.ops import metrics
from tools_app.runtime import demo

Child = supervision.Child
MOST_WEBS = 32


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
        parser.add_argument(
            "--webs",
            type=int,
            default=settings.AGENTWEB_WEB_PROCESSES,
            help="daphne processes on the one port, the kernel spreading the connections "
            f"over them (default: AGENTWEB_WEB_PROCESSES, else 1; at most {MOST_WEBS})",
        )

    def handle(self, *args: Any, **options: Any) -> None:
        # SIGINT too: a shell starts a background job with SIGINT ignored; SIGHUP: its
        # terminal closed.
        for signum in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP):
            signal.signal(signum, _raise_interrupt)
        if not 1 <= options["webs"] <= MOST_WEBS:
            raise CommandError(
                f"--webs (AGENTWEB_WEB_PROCESSES) must be 1 to {MOST_WEBS}, not {options['webs']}"
            )
        if options["webs"] > 1 and _family(options["host"]) == socket.AF_INET6:
            raise CommandError(
                "--webs above 1 needs an IPv4 address to bind (daphne takes its listening "
                f"socket as IPv4), not {options['host']}"
            )
        _require_free_port(options["host"], options["port"])
        stack = supervision.Supervisor(leftovers=_leftovers())
        try:
            self._redis(stack)
            call_command("migrate", interactive=False, verbosity=0)
            password = self._first_admin()
            metrics.counts_reset()
            stack.start(_roles.worker_command(concurrency=options["concurrency"], beat=True))
            stack.start(_roles.notify_command())
            webs = _start_webs(stack, options["host"], options["port"], options["webs"])
            _await_port(options["host"], options["port"], webs)
            self._announce(site_url(options["port"]), options["host"])
            self._demo(site_url(options["port"]))
            self._log_in(password)
            self._wait(stack)
        except KeyboardInterrupt:
            with contextlib.suppress(OSError):  # a closed terminal takes stdout with it
                self.stdout.write("Stopping…")
        finally:
            stack.stop()

    def _redis(self, stack: supervision.Supervisor) -> None:
        if os.environ.get("REDIS_URL"):
            if not redis_server.is_reachable(settings.REDIS_URL):
                raise CommandError(f"REDIS_URL {settings.REDIS_URL} does not answer.")
            return
        var = Path(settings.AGENTWEB_VAR)
        try:
            process = redis_server.start_embedded(Path(settings.REDIS_SOCKET), var / "redis")
        except RuntimeError as exc:
            raise CommandError(str(exc)) from exc
        stack.adopt(process, infrastructure=True)
        self.stdout.write(f"Embedded Redis on {settings.REDIS_SOCKET}")

    def _first_admin(self) -> str | None:
        """On the first run, an admin with a random password: returned, to be shown last."""
        users = get_user_model().objects
        if users.filter(is_superuser=True).exists():
            return None
        password = secrets.token_urlsafe(12)
        users.create_superuser("admin", "", password)
        return password

    def _log_in(self, password: str | None) -> None:
        """How to log in, last, where a newcomer looks: the one-time password in a block."""
        reset = "python manage.py changepassword admin"
        if password is None:
            self.stdout.write(f"Log in with your admin account (forgot its password? {reset}).")
            return
        rule = "=" * 64
        self.stdout.write("\n".join([
            "", rule, "  First run: agentweb made an admin account.",
            "    username  admin", f"    password  {password}",
            "  Shown only this once. Change it after logging in (Password, in the",
            f"  menu), or here: {reset}", rule,
        ]))  # fmt: skip

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

    def _wait(self, stack: supervision.Supervisor) -> None:
        """Until Ctrl-C, or until one child dies: then stop the rest too."""
        while (ended := stack.first_exit()) is None:
            time.sleep(0.5)
        self.stderr.write(f"process {ended.pid} exited with code {ended.returncode}")


def site_url(port: int) -> str:
    """AGENTWEB_BASE_URL when set: the name agentweb answers to; unset, it answers to the
    loopback names only, wherever daphne listens."""
    if os.environ.get("AGENTWEB_BASE_URL"):
        return str(settings.AGENTWEB_BASE_URL).rstrip("/")
    return f"http://127.0.0.1:{port}"


def _raise_interrupt(signum: int, frame: Any) -> None:
    raise KeyboardInterrupt


def _leftovers() -> list[Path]:
    """What the watchdog removes if `up` dies: the embedded Redis's socket."""
    return [] if os.environ.get("REDIS_URL") else [Path(settings.REDIS_SOCKET)]


def _require_free_port(host: str, port: int) -> None:
    """Before anything starts: a port taken (another agentweb?) would answer for daphne."""
    with socket.socket(_family(host)) as probe:
        probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            probe.bind((host.strip("[]"), port))
        except OSError as exc:
            raise CommandError(
                f"{host}:{port} is taken ({exc.strerror}): another agentweb "
                "running? Stop it, or choose another --port."
            ) from exc


def _start_webs(stack: supervision.Supervisor, host: str, port: int, count: int) -> list[Child]:
    """One daphne on HOST:PORT; or `count` of them, each on a listening socket of its own
    on that port (SO_REUSEPORT): the kernel spreads the connections over them, and each
    process's interpreter works on its own core."""
    if count == 1:
        return [stack.start(_roles.web_command(host=host, port=port, access_log=False))]
    webs = []
    for _ in range(count):
        with _listener(host, port) as listener:  # the child's copy stays open, not ours
            command = _roles.web_command(host=host, port=port, access_log=False, listener=listener)
            webs.append(stack.start(command, pass_fds=(listener.fileno(),)))
    return webs


def _listener(host: str, port: int) -> socket.socket:
    listener = socket.socket(_family(host))
    try:
        listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEPORT, 1)
        listener.bind((host.strip("[]"), port))
        listener.listen(socket.SOMAXCONN)
    except OSError as exc:
        listener.close()
        raise CommandError(f"{host}:{port} cannot be listened on ({exc.strerror}).") from exc
    return listener


def _await_port(host: str, port: int, webs: list[Child], timeout: float = 120) -> None:
    """Until daphne accepts connections: only then is agentweb running."""
    target = (_connectable(host), port)
    deadline = time.monotonic() + timeout
    while all(web.poll() is None for web in webs) and time.monotonic() < deadline:
        try:
            with socket.create_connection(target, timeout=1):
                return
        except OSError:
            time.sleep(0.1)
    raise CommandError(f"daphne did not answer on {host}:{port} (its output is above).")


def _connectable(host: str) -> str:
    """Where to reach a server bound to `host`: a wildcard address means this machine."""
    bare = host.strip("[]")
    wildcards = {"0.0.0.0": "127.0.0.1", "::": "::1", "": "127.0.0.1"}  # noqa: S104 (read, not bound)
    return wildcards.get(bare, bare)


def _family(host: str) -> socket.AddressFamily:
    return socket.AF_INET6 if ":" in host else socket.AF_INET
