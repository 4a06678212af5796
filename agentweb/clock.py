"""The clock: Celery beat made safe to start twice.

A cluster needs exactly one beat, but an operator may start a second one (a clock unit on
two hosts, `up` beside the units). Each beat ticks only while it holds a lock in Redis
whose TTL it renews as it ticks; another beat stays idle, says why once, and takes over
when the holder stops (at once after a clean stop, within the TTL after a crash). The
sweep itself also runs under a lock of its own, so two sweeps never overlap whoever sent
them.
"""

from __future__ import annotations

import logging
import os
import socket
from collections.abc import Iterator
from contextlib import contextmanager, suppress
from functools import cache
from typing import Any

import redis
from celery.beat import Scheduler
from django.conf import settings

logger = logging.getLogger(__name__)

CLOCK_TTL = 30  # seconds a crashed clock holds the lock before another takes over
STANDBY_POLL = 5.0  # how often an idle clock asks for the lock
SWEEP_TTL = 60  # a sweep longer than this may overlap the next one


def lock_key(name: str) -> str:
    """Named after the installation's queue: two installations sharing a Redis keep apart."""
    return f"agentweb:{settings.CELERY_TASK_DEFAULT_QUEUE}:{name}"


@cache
def _client(url: str) -> redis.Redis:
    return redis.Redis.from_url(url, socket_timeout=5, socket_connect_timeout=5)


class SingletonScheduler(Scheduler):
    """Beat's in-memory scheduler, ticking only while it holds the clock lock. (The
    schedule is a 5-second sweep: nothing worth a schedule file that two clocks on one
    host would share.)"""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        self.holder = f"{socket.gethostname()}:{os.getpid()}"  # the lock's value: who holds it
        self.lock = _client(settings.REDIS_URL).lock(
            lock_key("clock"), timeout=CLOCK_TTL, blocking=False, thread_local=False
        )
        self.standing_by: bool | None = None  # not yet known
        super().__init__(*args, **kwargs)

    def tick(self, *args: Any, **kwargs: Any) -> float:
        if not self._hold():
            return STANDBY_POLL
        return float(min(super().tick(*args, **kwargs), STANDBY_POLL))

    def _hold(self) -> bool:
        """Renew the lock while it is ours, else try to take it; say when that changes."""
        try:
            held = self._renew_or_acquire()
        except (redis.RedisError, OSError) as exc:
            logger.warning("clock %s idle: Redis does not answer (%s)", self.holder, exc)
            return False
        if held and self.standing_by is not False:  # news when it takes over, else DEBUG
            level = logging.INFO if self.standing_by else logging.DEBUG
            logger.log(level, "clock %s holds the clock lock: it sends the sweeps", self.holder)
        if not held and not self.standing_by:
            logger.warning(
                "clock %s stands by: clock %s already runs (one clock per cluster; this one "
                "takes over when that one stops)",
                self.holder,
                self._owner(),
            )
        self.standing_by = not held
        return held

    def _renew_or_acquire(self) -> bool:
        if self.lock.owned():
            with suppress(redis.exceptions.LockNotOwnedError):  # expired while asleep
                return bool(self.lock.reacquire())
        return bool(self.lock.acquire(token=self.holder))

    def _owner(self) -> str:
        owner = _client(settings.REDIS_URL).get(lock_key("clock"))
        return owner.decode() if isinstance(owner, bytes) else "another process"

    def close(self) -> None:
        """Let a standing-by clock take over at once."""
        with suppress(redis.RedisError, OSError):
            if self.lock.owned():
                self.lock.release()
        super().close()


@contextmanager
def sweep_turn() -> Iterator[bool]:
    """Yield whether this process may sweep now: False while another sweep runs. Without
    Redis it sweeps anyway: every step of the sweep claims its rows (a conditional update
    or a row lock), so the lock only spares the database a second pass."""
    lock = _client(settings.REDIS_URL).lock(lock_key("sweep"), timeout=SWEEP_TTL, blocking=False)
    try:
        won = bool(lock.acquire())
    except (redis.RedisError, OSError):
        yield True
        return
    try:
        yield won
    finally:
        if won:
            with suppress(redis.RedisError, OSError):
                lock.release()  # LockNotOwnedError: the sweep outlasted SWEEP_TTL
