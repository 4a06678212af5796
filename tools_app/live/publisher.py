"""One long-lived event loop per process for publishing to the channel layer.

`async_to_sync` starts an event loop for every call when no loop is running (a Celery
worker): about 2 ms and a new Redis connection per event. This loop, on a daemon
thread, keeps the layer's connection pool between events; a publish costs one Redis
round trip per group.
"""

from __future__ import annotations

import asyncio
import os
import threading
from collections.abc import Coroutine
from typing import Any

PUBLISH_TIMEOUT = 5.0

_state: dict[str, Any] = {"pid": None, "loop": None, "thread": None, "send_lock": None}
_lock = threading.Lock()


def run(coroutine: Coroutine[Any, Any, None], timeout: float = PUBLISH_TIMEOUT) -> None:
    """Run `coroutine` on this process's publishing loop and wait for it; its exception
    is raised here. Calls from several threads run one after another, in call order."""
    future = asyncio.run_coroutine_threadsafe(_serialised(coroutine), _loop())
    future.result(timeout=timeout)


async def _serialised(coroutine: Coroutine[Any, Any, None]) -> None:
    async with _send_lock():
        await coroutine


def _send_lock() -> asyncio.Lock:
    lock: asyncio.Lock | None = _state.get("send_lock")
    if lock is None:
        lock = _state["send_lock"] = asyncio.Lock()
    return lock


def _loop() -> asyncio.AbstractEventLoop:
    """The loop of this process; a forked child (Celery's prefork pool) starts its own."""
    with _lock:
        if _state["pid"] != os.getpid() or not _state["thread"].is_alive():
            loop = asyncio.new_event_loop()  # the parent's loop thread did not survive a fork
            thread = threading.Thread(
                target=loop.run_forever, name="agentweb-publisher", daemon=True
            )
            thread.start()
            _state.update(pid=os.getpid(), loop=loop, thread=thread, send_lock=None)
        found: asyncio.AbstractEventLoop = _state["loop"]
        return found
