"""The Celery app: settings from Django's CELERY_ namespace, tasks from tools_app."""

from __future__ import annotations

import contextlib
import logging.config
import os
import warnings
from typing import Any

from celery import Celery
from celery.exceptions import SecurityWarning
from celery.signals import setup_logging, worker_process_init

from tools_app.ops.heartbeat import WorkerHeartbeat

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "agentweb.settings")

# Celery warns a worker started as root, twice a start. Its risk is pickle (Celery refuses
# to start as root with it; agentweb accepts JSON only), and a root worker is by design in
# a container: the commands agents run never run as the host's uid 0 (the sandbox).
warnings.filterwarnings("ignore", category=SecurityWarning, module="celery.platforms")

app = Celery("agentweb")
app.config_from_object("django.conf:settings", namespace="CELERY")
app.autodiscover_tasks(["tools_app"])
app.steps["consumer"].add(WorkerHeartbeat)  # /readyz asks for a live tool worker


@setup_logging.connect
def use_django_logging(**kwargs: Any) -> None:
    """Django's LOGGING in workers and beat too, not Celery's own: one format, one set of
    levels (Celery's per-task lines, the 5-second sweep's among them, show at DEBUG)."""
    from django.conf import settings

    logging.config.dictConfig(settings.LOGGING)


@worker_process_init.connect
def forget_inherited_pools(**kwargs: Any) -> None:
    """A prefork child never uses a database pool its parent opened: the pool's connections
    are the parent's sockets (a query or a close here would break the parent's) and its
    threads did not survive the fork. Their descriptors are closed without a word to the
    server, the pool forgotten; the child opens its own on first use."""
    from django.db.backends.postgresql.base import DatabaseWrapper

    pools: dict[str, Any] = DatabaseWrapper._connection_pools  # type: ignore[attr-defined]
    for pool in list(pools.values()):
        for connection in list(getattr(pool, "_pool", ())):
            with contextlib.suppress(Exception):
                os.close(connection.fileno())
    pools.clear()
