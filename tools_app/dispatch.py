"""Enqueue Celery tasks by name (no import of tasks.py, which imports the services)."""

from __future__ import annotations

import logging
from typing import Any

from django.conf import settings
from kombu.exceptions import OperationalError

from agentweb.celery import app
from tools_app.services.errors import Unavailable

logger = logging.getLogger(__name__)


def enqueue(task: str, *args: Any, queue: str | None = None) -> None:
    """Send a task; a broker that is down becomes Unavailable (HTTP 503), not a hang."""
    if settings.CELERY_TASK_ALWAYS_EAGER:
        from tools_app import tasks  # noqa: F401  (registers the tasks in this process)

        app.tasks[task].apply(args=args, throw=True)
        return
    try:
        app.send_task(task, args=args, queue=queue or settings.CELERY_TASK_DEFAULT_QUEUE)
    except (OperationalError, OSError) as exc:
        logger.warning("could not enqueue %s%s: %s", task, args, exc)
        raise Unavailable(
            "The task queue (Redis) is not reachable; the request is stored and "
            "will be processed once it is back."
        ) from exc
