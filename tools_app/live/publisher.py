"""One long-lived event loop per process for publishing to the channel layer.

`async_to_sync` starts an event loop for every call when no loop is running (a Celery
worker): about 2 ms and a new Redis connection per event. This loop, on a daemon
thread, keeps the layer's connection pool between events; a publish (a commit's events)
costs one Redis round trip on the pub/sub layer, one per group on the others
(`events.publish_all`).

Under daphne the publishing loop is daphne's own (`adopt_running_loop`, called by the ASGI
application): a hook's judging thread wakes that loop anyway to hand back its answer,
where a loop on a thread of its own cost every hook a third thread's wake-up and turn
(BENCHMARKS.md §16). Should that loop stop (a test's), a thread of its own takes over.

A thread that must not wait for Redis (a hook's judging thread holds the hook gate while
it publishes: `ops/judging_threads.py`) defers its sends instead (`defer_here`): they wait
in one line, in call order, until the loop takes that thread's result and sends them
(`send_deferred`), so a hook wakes the loop once, for its answer, not once more mid-hook
for its events (a tenth of a hook's CPU at an agent's pace, BENCHMARKS.md §16). A
failure is reported by its callback; when more than HANDED_OFF_MAX are on their way
(Redis slow or gone), the thread sends the line itself and waits for its own send.
"""

from __future__ import annotations

import asyncio
import functools
import os
import threading
from collections import deque
from collections.abc import Callable, Coroutine
from concurrent.futures import Future
from typing import Any

PUBLISH_TIMEOUT = 5.0
HANDED_OFF_MAX = 1000

# The loop of process `pid`: daphne's when `thread` is None, else the thread's own.
_state: dict[str, Any] = {"pid": None, "loop": None, "thread": None, "send_lock": None}
_lock = threading.Lock()
_here = threading.local()
_on_their_way = {"count": 0}
Failed = Callable[[BaseException], None]
# Deferring threads' sends, in call order, until `send_deferred`; the lock sends the line
# from one thread at a time, so it goes out in order.
_deferred: deque[tuple[Coroutine[Any, Any, None], Failed]] = deque()
_deferred_lock = threading.Lock()


def defer_here() -> None:
    """From now on, this thread's `run` neither sends nor waits: its sends join the line
    that `send_deferred` sends. For a thread whose every piece of work ends with its
    owner calling `send_deferred` (`ops/judging_threads.run`)."""
    _here.defer = True


def run(
    coroutine: Coroutine[Any, Any, None],
    timeout: float = PUBLISH_TIMEOUT,
    *,
    failed: Failed,
) -> None:
    """Run `coroutine` on this process's publishing loop; calls from several threads run
    one after another, in call order (a deferring thread's when its line is sent).
    `failed` hears its exception: here, after waiting for it, or on the loop for a
    deferring thread's send or the loop's own."""
    if getattr(_here, "defer", False):
        if _count_on_their_way(+1) <= HANDED_OFF_MAX:
            _deferred.append((coroutine, failed))
            return
        _count_on_their_way(-1)  # too many on their way: the line goes, this one waited for
        send_deferred()
    loop = _loop()
    future = asyncio.run_coroutine_threadsafe(_serialised(coroutine), loop)
    if _runs(loop):  # waiting there would wait for itself, however many are on their way
        _count_on_their_way(+1)
        future.add_done_callback(functools.partial(_sent, failed=failed))
        return
    try:
        future.result(timeout=timeout)
    except Exception as exc:
        failed(exc)


def send_deferred() -> None:
    """Send the deferring threads' line, in order, without waiting for it: on the
    publishing loop itself, or from any other thread."""
    with _deferred_lock:
        if not _deferred:
            return
        loop = _loop()
        on_the_loop = _runs(loop)
        while _deferred:
            coroutine, failed = _deferred.popleft()
            sending: Future[None] | asyncio.Task[None] = (
                loop.create_task(_serialised(coroutine))
                if on_the_loop
                else asyncio.run_coroutine_threadsafe(_serialised(coroutine), loop)
            )
            sending.add_done_callback(functools.partial(_sent, failed=failed))


def adopt_running_loop() -> None:
    """Publish on the running loop from now on, unless this process already publishes
    from a thread of its own (what it sent stays in order)."""
    if _state["pid"] == os.getpid():  # adopted already, or publishing from its thread
        return
    loop = asyncio.get_running_loop()
    with _lock:
        if _state["pid"] != os.getpid():
            _state.update(pid=os.getpid(), loop=loop, thread=None, send_lock=None)


def _runs(loop: asyncio.AbstractEventLoop) -> bool:
    """Whether this thread runs `loop`, so cannot wait for what it sends there."""
    try:
        return asyncio.get_running_loop() is loop
    except RuntimeError:
        return False


def _count_on_their_way(change: int) -> int:
    with _lock:
        _on_their_way["count"] += change
        return _on_their_way["count"]


def _sent(future: Future[None] | asyncio.Task[None], *, failed: Failed) -> None:
    _count_on_their_way(-1)
    error = None if future.cancelled() else future.exception()
    if error is not None:
        failed(error)


async def _serialised(coroutine: Coroutine[Any, Any, None]) -> None:
    async with _send_lock():
        await coroutine


def _send_lock() -> asyncio.Lock:
    lock: asyncio.Lock | None = _state.get("send_lock")
    if lock is None:
        lock = _state["send_lock"] = asyncio.Lock()
    return lock


def _loop() -> asyncio.AbstractEventLoop:
    """The loop of this process: daphne's, or one on a thread of its own, which a forked
    child (Celery's prefork pool) starts again."""
    with _lock:
        adopted = _state["thread"] is None and _state["pid"] == os.getpid()
        if adopted and _state["loop"].is_running():
            running: asyncio.AbstractEventLoop = _state["loop"]
            return running
        if adopted or _state["pid"] != os.getpid() or not _state["thread"].is_alive():
            loop = asyncio.new_event_loop()  # the parent's loop thread did not survive a fork
            thread = threading.Thread(
                target=loop.run_forever, name="agentweb-publisher", daemon=True
            )
            thread.start()
            _state.update(pid=os.getpid(), loop=loop, thread=thread, send_lock=None)
        found: asyncio.AbstractEventLoop = _state["loop"]
        return found
