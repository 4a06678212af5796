"""Which tool workers are alive: each says so in Redis every few seconds.

A tool worker (one that consumes the main queue) writes a key of its own with a short
TTL from its consumer's timer, the loop that takes tasks: a worker that stopped, lost
its broker or hangs stops renewing it, and the key is gone within `TTL_SECONDS`. A worker
stopping cleanly removes it at once. The key's value holds the worker's queues (for the
queue-depth gauge) and whether its copy-on-write sandbox works (probed once at start),
since commands run on the worker's host, not the web's.
"""

from __future__ import annotations

import functools
import json
import logging
from dataclasses import dataclass, field
from typing import Any

import redis
from celery import bootsteps
from django.conf import settings

from tools_app.core.tools.overlay import cow_unavailable_reason

logger = logging.getLogger(__name__)

INTERVAL_SECONDS = 2.0
TTL_SECONDS = 6
REDIS_TIMEOUT_SECONDS = 1.0


class RedisDown(Exception):
    """Redis did not answer within REDIS_TIMEOUT_SECONDS."""


def _prefix() -> str:
    """Keys scoped by the main queue: two installations sharing a Redis keep apart."""
    return f"agentweb:workers:{settings.CELERY_TASK_DEFAULT_QUEUE}"


@functools.cache
def _client(url: str) -> redis.Redis:
    return redis.Redis.from_url(
        url, socket_timeout=REDIS_TIMEOUT_SECONDS, socket_connect_timeout=REDIS_TIMEOUT_SECONDS
    )


def client() -> redis.Redis:
    return _client(settings.REDIS_URL)


@dataclass
class Seen:
    """The live tool workers and the queues' depths, read in one round trip or two."""

    workers: int = 0
    sandboxed: int = 0
    depths: dict[str, int] = field(default_factory=dict)


def live_workers() -> list[dict[str, Any]]:
    """What each live tool worker said in its last heartbeat; RedisDown when Redis is."""
    try:
        names = _names()
        values = client().mget([f"{_prefix()}:{name}" for name in names]) if names else []
    except (redis.RedisError, OSError) as exc:
        raise RedisDown(str(exc)) from exc
    return [json.loads(value) for value in values if value is not None]


def queue_depths() -> Seen:
    """Live workers and how many tasks wait in the main, notification and host queues."""
    workers = live_workers()
    queues = {settings.CELERY_TASK_DEFAULT_QUEUE, _notify_queue()}
    queues.update(queue for worker in workers for queue in worker.get("queues", []))
    ordered = sorted(queues)
    try:
        pipe = client().pipeline(transaction=False)
        for queue in ordered:
            pipe.llen(queue)
        counts = pipe.execute()
    except (redis.RedisError, OSError) as exc:
        raise RedisDown(str(exc)) from exc
    sandboxed = sum(1 for worker in workers if worker.get("sandbox"))
    return Seen(len(workers), sandboxed, dict(zip(ordered, counts, strict=True)))


def _names() -> list[str]:
    found = client().smembers(_prefix())
    return sorted(name.decode() if isinstance(name, bytes) else name for name in found)


def _notify_queue() -> str:
    return settings.AGENTWEB_NOTIFY_QUEUE or f"{settings.CELERY_TASK_DEFAULT_QUEUE}.notify"


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


def _forget_dead() -> None:
    """Drop the names of workers whose key expired (a worker starting tidies the set)."""
    try:
        names = _names()
        if not names:
            return
        keys = [f"{_prefix()}:{name}" for name in names]
        dead = [name for name, value in zip(names, client().mget(keys), strict=True) if not value]
        if dead:
            client().srem(_prefix(), *dead)
    except (redis.RedisError, OSError) as exc:
        logger.debug("dead workers not forgotten: %s", exc)


class WorkerHeartbeat(bootsteps.StartStopStep):
    """A consumer step (`app.steps["consumer"]`): renews this worker's key from the
    consumer's timer while it takes tasks; removes it on a clean stop."""

    requires = ("celery.worker.consumer.tasks:Tasks",)

    def __init__(self, parent: Any, **kwargs: Any) -> None:
        super().__init__(parent, **kwargs)
        self.timer_ref: Any = None
        self.worker = self.key = self.value = ""

    def start(self, parent: Any) -> None:
        queues = sorted(parent.app.amqp.queues.consume_from or [settings.CELERY_TASK_DEFAULT_QUEUE])
        if settings.CELERY_TASK_DEFAULT_QUEUE not in queues:
            return  # a notification worker runs no tool call
        self.worker = parent.hostname
        self.key = f"{_prefix()}:{self.worker}"
        sandbox = cow_unavailable_reason() == ""
        self.value = json.dumps({"queues": queues, "sandbox": sandbox})
        _forget_dead()
        self.beat()
        serve_metrics()
        self.timer_ref = parent.timer.call_repeatedly(INTERVAL_SECONDS, self.beat, priority=10)

    def beat(self) -> None:
        try:
            pipe = client().pipeline(transaction=False)
            pipe.set(self.key, self.value, ex=TTL_SECONDS)
            pipe.sadd(_prefix(), self.worker)
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
