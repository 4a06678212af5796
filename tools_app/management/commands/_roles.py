"""The command line of each process role, shared by `up` (all of them on one box) and
`serve` (one role a process, as the systemd units and the Procfile start them).

Roles: `web` (daphne: pages, API, websockets, the gateway's hooks), `worker` (tool calls,
agent turns, session clones: the default queue and this host's own), `notify` (notification
deliveries, threads in a worker of its own) and `clock` (Celery beat: one per cluster, made
safe to start twice by agentweb/clock.py).
"""

from __future__ import annotations

import socket
import sys

from django.conf import settings

from tools_app.services.queueing import notify_queue

SCHEDULER = "agentweb.clock:SingletonScheduler"
# --quiet: no banner (the queues and tasks it lists are in the settings and tasks.py).
CELERY = [sys.executable, "-m", "celery", "-A", "agentweb", "--quiet"]


def web_command(
    *,
    host: str,
    port: int,
    access_log: bool = True,
    listener: socket.socket | None = None,
) -> list[str]:
    """daphne on HOST:PORT, or on `listener` (an IPv4 socket bound there, passed to it).
    Without `access_log` (`up`'s terminal), no line per request on stdout. Not daphne's
    --proxy-headers: it takes X-Forwarded-For's first address, which the client writes;
    agentweb reads the header itself, through the proxies it trusts (`core/addresses.py`)."""
    quiet = [] if access_log else ["-v", "0"]
    where = ["-b", host, "-p", str(port)]
    if listener is not None:  # IPv4 only: daphne adopts a socket as AF_INET
        where = ["--fd", str(listener.fileno())]
    return [
        sys.executable, "-m", "daphne", *where, *quiet, "agentweb.asgi:application",
    ]  # fmt: skip


def worker_command(*, concurrency: int, beat: bool = False) -> list[str]:
    """The tool worker: the shared queue (any host may take a new session) and this host's
    own (AGENTWEB_WORKER_QUEUE: the sessions whose workspace lives here). `beat` embeds
    the clock, as `up` does on one box."""
    queues = f"{settings.CELERY_TASK_DEFAULT_QUEUE},{settings.AGENTWEB_WORKER_QUEUE}"
    clock = ["--beat", "--scheduler", SCHEDULER] if beat else []
    return [
        *CELERY, "worker", "--hostname", "tool@%h", "--loglevel", "INFO",
        "--queues", queues, "--concurrency", str(concurrency), *clock,
    ]  # fmt: skip


def notify_command() -> list[str]:
    """Deliveries wait on other people's servers (up to a timeout each, then retries):
    threads in a worker of their own, so they never take a tool call's slot."""
    return [
        *CELERY, "worker", "--hostname", "notify@%h", "--loglevel", "INFO",
        "--queues", notify_queue(), "--pool", "threads",
        "--concurrency", str(settings.AGENTWEB_NOTIFY_CONCURRENCY),
    ]  # fmt: skip


def clock_command() -> list[str]:
    """Celery beat with the scheduler that ticks only while it holds the cluster's lock."""
    return [*CELERY, "beat", "--scheduler", SCHEDULER, "--loglevel", "INFO"]
