"""Which tool workers are alive: each says so in Redis every few seconds.

A tool worker (one that consumes the main queue) writes a key of its own with a short
TTL from its consumer's timer, the loop that takes tasks: a worker that stopped, lost
its broker or hangs stops renewing it, and the key is gone within `TTL_SECONDS`. A worker
stopping cleanly removes it at once. The key's value holds the worker's queues (for the
queue-depth gauge) and whether its copy-on-write sandbox works (as the worker's probe
last found: a failed probe is tried again after `cow_probe.PROBE_RETRY_SECONDS`, on a
thread of its own, not in the timer that renews the key), since commands run on the
worker's host, not the web's.
"""

from __future__ import annotations

import json
import logging
from typing import Any

import redis
from celery import bootsteps
from django.conf import settings

from tools_app.core.tools.cow_probe import cow_available
from tools_app.ops.workers import INTERVAL_SECONDS, TTL_SECONDS, client, forget_dead, prefix

logger = logging.getLogger(__name__)


def serve_metrics() -> None:
    """With AGENTWEB_METRICS_ADDRESS (HOST:PORT), serve this host's metrics there, off the
    site: from a tool worker, since every host that runs calls has one."""
    if not settings.AGENTWEB_METRICS_ADDRESS:
        return
    from prometheus_client import start_http_server

    from tools_app.ops.metrics import registry  # needs Django's models: ready by now

    host, _, port = settings.AGENTWEB_METRICS_ADDRESS.rpartition(":")
    try:
        start_http_server(int(port), host.strip("[]") or "127.0.0.1", registry=registry())
    except OSError as exc:
        logger.warning("metrics not served on %s: %s", settings.AGENTWEB_METRICS_ADDRESS, exc)


class WorkerHeartbeat(bootsteps.StartStopStep):
    """A consumer step (`app.steps["consumer"]`): renews this worker's key from the
    consumer's timer while it takes tasks; removes it on a clean stop."""

    requires = ("celery.worker.consumer.tasks:Tasks",)

    def __init__(self, parent: Any, **kwargs: Any) -> None:
        super().__init__(parent, **kwargs)
        self.timer_ref: Any = None
        self.worker = self.key = ""
        self.queues: list[str] = []

    def start(self, parent: Any) -> None:
        queues = sorted(parent.app.amqp.queues.consume_from or [settings.CELERY_TASK_DEFAULT_QUEUE])
        if settings.CELERY_TASK_DEFAULT_QUEUE not in queues:
            return  # a notification worker runs no tool call
        self.worker = parent.hostname
        self.key = f"{prefix()}:{self.worker}"
        self.queues = queues
        forget_dead()
        self.beat()
        serve_metrics()
        self.timer_ref = parent.timer.call_repeatedly(INTERVAL_SECONDS, self.beat, priority=10)

    def beat(self) -> None:
        value = json.dumps({"queues": self.queues, "sandbox": cow_available()})
        try:
            pipe = client().pipeline(transaction=False)
            pipe.set(self.key, value, ex=TTL_SECONDS)
            pipe.sadd(prefix(), self.worker)
            pipe.execute()
        except (redis.RedisError, OSError) as exc:
            logger.debug("worker heartbeat not written: %s", exc)

    def stop(self, parent: Any) -> None:
        if self.timer_ref is not None:
            self.timer_ref.cancel()
            self.timer_ref = None
        if self.key:
            try:
                client().delete(self.key)
            except (redis.RedisError, OSError) as exc:
                logger.debug("worker heartbeat not removed: %s", exc)

    shutdown = stop
