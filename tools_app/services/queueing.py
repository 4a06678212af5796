"""The one way a service sends work to the workers: after the commit, to the right queue.

A task sent inside a transaction could run before the commit (and find nothing) or
after a rollback (and do what was undone), so every send goes through
`transaction.on_commit`, even when a caller wraps a service in its own transaction.
Outside a transaction the hook runs at once, so a broker that is down still surfaces
as Unavailable (HTTP 503) to the caller.

Tasks are sent by the names below, not imported: `tasks.py` calls the services and
registers its tasks under these names, so services never import it and the two never
form an import circle.
"""

from __future__ import annotations

import logging
from typing import Any

from django.conf import settings
from django.db import transaction
from django.utils import timezone
from kombu.exceptions import OperationalError
from kombu.utils.imports import symbol_by_name

from agentweb.celery import app
from tools_app.errors import Unavailable
from tools_app.models import AgentSession, ToolCall

logger = logging.getLogger(__name__)

PREPARE_SESSION = "tools_app.tasks.prepare_session"
EVALUATE_TOOL_CALL = "tools_app.tasks.evaluate_tool_call"
EXECUTE_TOOL_CALL = "tools_app.tasks.execute_tool_call"
AGENT_TURN = "tools_app.tasks.agent_turn"


def notify_queue() -> str:
    """Where notification deliveries go: a queue of their own, consumed by a worker of its
    own, so channels that hang (each up to its timeout, then retries) never hold the slots
    that run tool calls. Derived from the main queue unless AGENTWEB_NOTIFY_QUEUE names it."""
    return settings.AGENTWEB_NOTIFY_QUEUE or f"{settings.CELERY_TASK_DEFAULT_QUEUE}.notify"


def session_queue(session: AgentSession) -> str:
    """A session's calls go to the host holding its clone; before it has one, to any host."""
    return session.worker_queue or settings.CELERY_TASK_DEFAULT_QUEUE


def tool_call_enqueue(*, tool_call_id: int, task: str, session: AgentSession) -> None:
    """Send a call's next task (EVALUATE_ or EXECUTE_TOOL_CALL) and note when it was sent."""
    queue = session_queue(session)

    def send() -> None:
        task_send(task, tool_call_id, queue=queue)
        ToolCall.objects.filter(pk=tool_call_id).update(queued_at=timezone.now())

    transaction.on_commit(send)


def session_prepare_enqueue(*, session_id: int) -> None:
    """Send a session's clone task to whichever worker host picks it up."""
    queue = settings.CELERY_TASK_DEFAULT_QUEUE
    transaction.on_commit(lambda: task_send(PREPARE_SESSION, session_id, queue=queue))


def agent_turn_enqueue(*, session: AgentSession) -> None:
    """Send a session's next model turn to the host holding its workspace."""
    queue = session_queue(session)
    session_id = session.pk
    transaction.on_commit(lambda: task_send(AGENT_TURN, session_id, queue=queue))


def task_send(task: str, *args: Any, queue: str) -> None:
    """Send now; a broker that is down becomes Unavailable (HTTP 503), not a hang."""
    if settings.CELERY_TASK_ALWAYS_EAGER:
        symbol_by_name(task).apply(args=args, throw=True)  # a name is the task's import path
        return
    try:
        app.send_task(task, args=args, queue=queue)
    except (OperationalError, OSError) as exc:
        logger.warning("could not enqueue %s%s: %s", task, args, exc)
        raise Unavailable(
            "The task queue (Redis) is not reachable; the request is stored and "
            "will be processed once it is back."
        ) from exc
