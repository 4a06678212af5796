"""Thin Celery tasks: ids in, one service call each.

Services send these by the names in `services/queueing.py`, never by importing this
module, so the import runs one way: tasks → services.
"""

from __future__ import annotations

import logging
from typing import Any

from celery import shared_task
from celery.signals import worker_ready
from django.conf import settings

from agentweb import clock
from tools_app import services
from tools_app.services import delivery, notifications, queueing

logger = logging.getLogger(__name__)


@shared_task(name=queueing.PREPARE_SESSION)
def prepare_session(session_id: int) -> None:
    services.session_prepare(session_id=session_id, queue=settings.AGENTWEB_WORKER_QUEUE)


@shared_task(name=queueing.EVALUATE_TOOL_CALL)
def evaluate_tool_call(tool_call_id: int) -> None:
    services.tool_call_evaluate(tool_call_id=tool_call_id)


@shared_task(name=queueing.EXECUTE_TOOL_CALL)
def execute_tool_call(tool_call_id: int) -> None:
    services.tool_call_execute(tool_call_id=tool_call_id)


@shared_task(name=queueing.AGENT_TURN)
def agent_turn(session_id: int) -> None:
    services.agent_turn(session_id=session_id)


@shared_task(name=notifications.DELIVER)
def deliver_notification(delivery_id: int) -> None:
    delivery.delivery_send(delivery_id=delivery_id)


@shared_task(name="tools_app.tasks.sweep")
def sweep() -> None:
    """Every few seconds: expire overdue approvals, resend lost work, recover crashed runs,
    prune the audit trail past its retention and the MCP connections unused for a week.
    One sweep at a time in the cluster: a sweep sent while another runs (a second clock, a
    slow database) does nothing."""
    with clock.sweep_turn() as mine:
        if mine:
            _sweep()


def _sweep() -> None:
    services.tool_call_expire_overdue()
    services.tool_call_recover_interrupted()
    services.tool_call_requeue_orphans()
    services.session_requeue_unprepared()
    services.agent_requeue_stalled()
    services.audit_prune()
    services.mcp_connection_prune()
    services.sign_in_prune()
    notifications.notify_sweep()


@worker_ready.connect
def recover_on_start(**kwargs: Any) -> None:
    """A restarted worker first settles the calls its dead predecessor left running, and
    removes the command scratch dirs it left behind."""
    try:
        services.sandbox_sweep_scratch()
        services.tool_call_recover_interrupted()
        services.agent_recover_turns()
    except Exception:
        logger.exception("recovering interrupted tool calls and model turns failed")
