"""Every held answer's one wait: `?wait`, the gateway's hooks and MCP's calls.

The worker publishes every event to the session's channel-layer group after its
commit. A waiting request joins that group under a fresh channel name *before* its
first database read, so an event that comes between the read and the wait is not
lost; `POST …/tool-calls?wait=` joins before it stores the call, so it sees every
event of the call and reads only once the final one came. The database stays the
truth: a wake-up only says when to read again, and between reads the wait holds no
database connection. With a layer, a call is also read again once a minute (a reset
layer wakes every wait at once); when no event can come (no channel layer, Redis down,
an in-memory layer in another process) it is read again once a second, never in a
fast loop.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import dataclass
from typing import Any, Generic, TypeVar

from asgiref.sync import AsyncToSync, SyncToAsync, sync_to_async
from channels.layers import get_channel_layer
from django.db import connections

from tools_app.live.hub import FAILED, RECHECK, RECHECK_SECONDS, RESET, Hub, Mailbox, hub_for
from tools_app.models import ToolCall

logger = logging.getLogger(__name__)

CHECK_EVERY_SECONDS = 1.0  # the slow database check when no event comes
LAYER_TIMEOUT_SECONDS = 1.0  # joining or leaving a group never holds a request longer

Found = TypeVar("Found")


@dataclass(frozen=True)
class Progress(Generic[Found]):
    """Who hears how a long wait goes (an MCP client's progress notifications)."""

    tell: Callable[[Found], Awaitable[None]]
    every: float


def call_event(
    call_id: int, statuses: frozenset[str] | None = None
) -> Callable[[dict[str, Any]], bool]:
    """Matches the events of one call (those that bring one of `statuses`)."""
    return lambda event: (
        event.get("tool_call") == call_id and (statuses is None or event.get("status") in statuses)
    )


async def answer_when_final(
    *,
    call_id: int,
    session_id: int,
    wait: float,
    read: Callable[[int], Awaitable[dict[str, Any]]],
) -> dict[str, Any]:
    """`read(call_id)` once the call is final, or when `wait` seconds have passed."""
    if wait <= 0:
        return await read(call_id)
    async with listening(session_id) as listener:
        return await listener.answer(call_id, wait, read)


class Listener:
    """The events of one session, from this process's hub (`hub.py`); or, without a
    channel layer, nothing but the clock."""

    def __init__(self, hub: Hub | None, session_id: int, mailbox: Mailbox | None) -> None:
        self.hub, self.session_id, self.mailbox = hub, session_id, mailbox

    async def answer(
        self,
        call_id: int,
        wait: float,
        read: Callable[[int], Awaitable[dict[str, Any]]],
        *,
        joined_before_the_call: bool = False,
        until: frozenset[str] = ToolCall.FINAL_STATUSES,
    ) -> dict[str, Any]:
        """`read(call_id)` once the call is final, or when `wait` seconds have passed.

        Joined before the call was stored, every event of the call comes here: the first
        read can wait for the final event. Otherwise the first read is at once. `until`:
        the statuses that end the wait (a gateway's hook also ends it on `approved`).
        """
        return await self.settle(
            lambda: read(call_id),
            wait=wait,
            done=lambda answer: answer["status"] in until,
            wakes=call_event(call_id, until),
            first_read_waits=joined_before_the_call,
            watched=lambda answer: (call_id, answer["status"]),
        )

    async def settle(
        self,
        read: Callable[[], Awaitable[Found]],
        *,
        wait: float,
        done: Callable[[Found], bool],
        wakes: Callable[[dict[str, Any]], bool],
        first_read_waits: bool = False,
        progress: Progress[Found] | None = None,
        watched: Callable[[Found], tuple[int, str]] | None = None,
    ) -> Found:
        """`read()` until `done` says so, or until `wait` seconds have passed: again after
        each event that `wakes` matches, else once a minute (once a second without a
        layer). No database connection is kept between reads. `progress`, when given,
        hears each read that is not done and, between reads, the last one again every
        `progress.every` seconds. `watched`: the call a read is about and its status,
        for the hub's re-read of all calls at once (then this wait reads only when told)."""
        deadline = time.monotonic() + wait
        if first_read_waits and self.mailbox is not None:  # every event of it comes here
            await self.until(wakes, min(wait, CHECK_EVERY_SECONDS))
        while True:
            found = await read()
            remaining = deadline - time.monotonic()
            if done(found) or remaining <= 0:
                return found
            if await sync_to_async(give_back_connections)():  # the reading thread's own
                _let_go_of_the_thread()
            every = CHECK_EVERY_SECONDS if self.mailbox is None else RECHECK_SECONDS
            if self.hub is not None and self.mailbox is not None and watched is not None:
                self.hub.watch(self.mailbox, *watched(found))
                every = remaining  # the hub re-reads it, with every other call it watches
            await self._between_reads(found, min(remaining, every), wakes, progress)

    async def _between_reads(
        self,
        found: Found,
        timeout: float,
        wakes: Callable[[dict[str, Any]], bool],
        progress: Progress[Found] | None,
    ) -> None:
        """Return after an event that `wakes` matches, or after `timeout` seconds; tell
        `progress` of `found` now and every `progress.every` seconds meanwhile."""
        end = time.monotonic() + timeout
        while (left := end - time.monotonic()) > 0:
            if progress is not None:
                await progress.tell(found)
                left = min(left, progress.every)
            if await self.until(wakes, left):
                return

    async def until(self, matches: Callable[[dict[str, Any]], bool], timeout: float) -> bool:
        """True when an event of the session `matches` (or events may have been lost);
        False after `timeout` seconds without one."""
        end = time.monotonic() + timeout
        while (left := end - time.monotonic()) > 0:
            if self.mailbox is None:
                await asyncio.sleep(left)
                return False
            try:
                message = await asyncio.wait_for(self.mailbox.get(), left)
            except TimeoutError:
                return False
            if message is FAILED:
                self.close()
                self.mailbox = None  # from now on the clock alone, from a read now
                return True
            if message is RECHECK or message.get("type") == RESET:  # read again
                return True
            if matches(message.get("event") or {}):
                return True
        return False

    def close(self) -> None:
        """Take the mailbox off the hub (the session's group is left after the answer
        has gone: a Redis round trip the client need not wait for)."""
        if self.hub is not None and self.mailbox is not None:
            self.hub.leave(self.session_id, self.mailbox)


def give_back_connections(*, keep_sqlite: bool = False) -> bool:
    """What the end of a request does (Django's `close_old_connections`), for a request
    that goes on waiting; a connection inside a transaction (a test's) is kept, and so is
    a usable SQLite one when `keep_sqlite` (a thread kept for the process's life:
    `ops/judging_threads.py`). True when this thread holds no connection now."""
    kept = False
    for connection in connections.all(initialized_only=True):
        if keep_sqlite and connection.vendor == "sqlite":
            connection.close_at = None  # never obsolete by age: closed only when unusable
        if not connection.in_atomic_block:
            connection.close_if_unusable_or_obsolete()
        kept = kept or connection.connection is not None
    return not kept


def _let_go_of_the_thread() -> None:
    """End the request's worker thread while the wait waits; the next read starts one.

    Django runs a request's sync code on a thread of its own (asgiref's per-request
    `ThreadSensitiveContext` executor), kept until the request ends: one idle OS thread
    per held wait, and every thread that ends anywhere in the process costs a walk over
    all the others (`threading._maintain_shutdown_locks`). With 2,000 held that walk
    was a fifth of the process's CPU under load. Outside a request (MCP's transport,
    tests) there is no such thread and nothing is done.
    """
    if getattr(AsyncToSync.executors, "current", None) is not None:
        return  # a sync caller waits on that thread (the site's sync middleware)
    context = SyncToAsync.thread_sensitive_context.get(None)
    if context is None or getattr(context, "_executor", None) is not None:
        return  # no request thread, or an executor its owner keeps
    executor = SyncToAsync.context_to_thread_executor.pop(context, None)
    if executor is not None:
        executor.shutdown(wait=False)  # idle now: the thread ends at once


@contextlib.asynccontextmanager
async def listening(session_id: int) -> AsyncIterator[Listener]:
    """Wake-ups for the calls of one session while inside; a clock when there is no
    channel layer to join."""
    listener = await _join(session_id)
    try:
        yield listener
    finally:
        listener.close()


async def _join(session_id: int) -> Listener:
    layer = get_channel_layer()
    if layer is None:
        return Listener(None, session_id, None)
    found = hub_for(layer)
    try:
        mailbox = await asyncio.wait_for(found.join(session_id), LAYER_TIMEOUT_SECONDS)
    except Exception as exc:
        logger.debug("?wait: no channel layer (%r); reading once a second", exc)
        return Listener(None, session_id, None)
    return Listener(found, session_id, mailbox)
