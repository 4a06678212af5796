"""Threads kept for the life of a web process, on which hooks are judged and stored.

Under daphne, Django runs a request's sync code on a thread made for that request
(asgiref's per-request `ThreadSensitiveContext`), which opens a database connection of its
own and closes it when the request ends. On SQLite, where there is no pool, that is a
file opened and Django's SQL functions registered again for every hook: a thread start,
a connect and a close were a fifth of an allowed hook's CPU (BENCHMARKS.md §16). Here a
hook's judging runs on one of AGENTWEB_HOOKS_AT_ONCE threads that live as long as the
process. On SQLite each keeps its connection from one hook to the next (closed only when
it became unusable); on PostgreSQL each gives its connection back to the pool after every
hook, as at the end of a request, so held waits and pages always find one.

When a sync caller waits above the event loop (Django's test client, a sync middleware),
the work runs on that caller's thread as before: its connection (a test's transaction)
is the one to use.
"""

from __future__ import annotations

import os
import threading
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from typing import Any, TypeVar

from asgiref.sync import AsyncToSync, sync_to_async
from django.conf import settings
from django.db import connections

from tools_app.live import publisher, waiting
from tools_app.ops import sqlite_wal

Result = TypeVar("Result")

_state: dict[str, Any] = {"pid": None, "executor": None}
_lock = threading.Lock()


async def run(work: Callable[..., Result], *args: Any) -> Result:
    """`work(*args)` on a kept judging thread, its connections tidied after and what it
    published sent as this loop takes the result (`publisher.defer_here`)."""
    if getattr(AsyncToSync.executors, "current", None) is not None:
        return await sync_to_async(_tidied(work, keep=False))(*args)
    kept = sync_to_async(_tidied(work, keep=True), thread_sensitive=False, executor=_executor())
    try:
        return await kept(*args)
    finally:
        publisher.send_deferred()  # what the work published, sent now it is done


def _executor() -> ThreadPoolExecutor:
    with _lock:
        if _state["pid"] != os.getpid():  # a forked child starts its own threads
            _state["executor"] = ThreadPoolExecutor(
                max_workers=settings.AGENTWEB_HOOKS_AT_ONCE,
                thread_name_prefix="agentweb-judge",
                initializer=publisher.defer_here,  # the gate is held while it publishes
            )
            _state["pid"] = os.getpid()
        executor: ThreadPoolExecutor = _state["executor"]
        return executor


def _tidied(work: Callable[..., Result], *, keep: bool) -> Callable[..., Result]:
    """`work`, then this thread's connections tidied as at the end of a request (a
    usable SQLite one kept when `keep`)."""

    def tidied(*args: Any) -> Result:
        try:
            return work(*args)
        finally:
            for connection in connections.all(initialized_only=True):
                sqlite_wal.tend(connection.settings_dict)
            waiting.give_back_connections(keep_sqlite=keep)

    return tidied
