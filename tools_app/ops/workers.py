"""Which tool workers are alive, as their heartbeats in Redis say (`heartbeat` writes them).

Each tool worker keeps a key of its own with a short TTL, and its name in a set; these
reads serve `/readyz` and the metrics' gauges.
"""

from __future__ import annotations

import functools
import json
import logging
from dataclasses import dataclass, field
from typing import Any

import redis
from django.conf import settings

logger = logging.getLogger(__name__)

INTERVAL_SECONDS = 2.0
TTL_SECONDS = 6
REDIS_TIMEOUT_SECONDS = 1.0


class RedisDown(Exception):
    """Redis did not answer within REDIS_TIMEOUT_SECONDS."""


def prefix() -> str:
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
        values = client().mget([f"{prefix()}:{name}" for name in names]) if names else []
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
    found = client().smembers(prefix())
    return sorted(name.decode() if isinstance(name, bytes) else name for name in found)


def _notify_queue() -> str:
    return settings.AGENTWEB_NOTIFY_QUEUE or f"{settings.CELERY_TASK_DEFAULT_QUEUE}.notify"


def forget_dead() -> None:
    """Drop the names of workers whose key expired (a worker starting tidies the set)."""
    try:
        names = _names()
        if not names:
            return
        keys = [f"{prefix()}:{name}" for name in names]
        dead = [name for name, value in zip(names, client().mget(keys), strict=True) if not value]
        if dead:
            client().srem(prefix(), *dead)
    except (redis.RedisError, OSError) as exc:
        logger.debug("dead workers not forgotten: %s", exc)
