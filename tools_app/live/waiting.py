"""`?wait`: hold an answer until a tool call is final, woken by its final event.

The worker publishes every event to the session's channel-layer group after its
commit. A waiting request joins that group under a fresh channel name *before* its
first database read, so an event that comes between the read and the wait is not
lost; `POST …/tool-calls?wait=` joins before it stores the call, so it sees every
event of the call and reads only once the final one came. The database stays the
truth: a wake-up only says when to read again. When no
event comes (no channel layer, Redis down, an in-memory layer in another process) the
call is read again once a second, never in a fast loop.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections.abc import AsyncIterator, Awaitable, Callable, Coroutine
from typing import Any

from asgiref.sync import sync_to_async
from channels.layers import get_channel_layer
from django.db import connections

from tools_app.live.events import session_group
from tools_app.models import ToolCall

logger = logging.getLogger(__name__)

CHECK_EVERY_SECONDS = 1.0  # the slow database check when no event comes
RECHECK_SECONDS = 60.0  # with a channel layer: a safety net (a reset layer wakes it at once)
LAYER_TIMEOUT_SECONDS = 1.0  # joining or leaving a group never holds a request longer


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
    """The events of one session's group, on a channel of its own; or, without a
    channel layer, nothing but the clock."""

    def __init__(self, layer: Any, channel: str, group: str) -> None:
        self.layer, self.channel, self.group = layer, channel, group
        self.receiving: asyncio.Future[Any] | None = None

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
        deadline = time.monotonic() + wait
        if joined_before_the_call and self.layer is not None:
            await self.until_final(call_id, min(wait, CHECK_EVERY_SECONDS), until)
        while True:
            answer = await read(call_id)
            remaining = deadline - time.monotonic()
            if answer["status"] in until or remaining <= 0:
                return answer
            await sync_to_async(_give_back_connections)()  # the request's thread: its own
            every = CHECK_EVERY_SECONDS if self.layer is None else RECHECK_SECONDS
            await self.until_final(call_id, min(remaining, every), until)

    async def until_final(
        self, call_id: int, timeout: float, until: frozenset[str] = ToolCall.FINAL_STATUSES
    ) -> None:
        """Return when an event says the call is final, or after `timeout` seconds."""

        def final(event: dict[str, Any]) -> bool:
            status = event.get("status")
            return event.get("tool_call") == call_id and status in until

        await self.until(final, timeout)

    async def until(self, matches: Callable[[dict[str, Any]], bool], timeout: float) -> None:
        """Return when an event of the session `matches`, or after `timeout` seconds."""
        end = time.monotonic() + timeout
        while (left := end - time.monotonic()) > 0:
            if self.layer is None:
                await asyncio.sleep(left)
                return
            if self.receiving is None:  # one receive, kept across waits: no message lost
                self.receiving = asyncio.ensure_future(self.layer.receive(self.channel))
            done, _ = await asyncio.wait({self.receiving}, timeout=left)
            if not done:
                return
            received, self.receiving = self.receiving, None
            if received.exception() is not None:
                logger.debug("?wait: channel layer failed (%r)", received.exception())
                self.layer = None  # from now on the clock alone
                continue
            message = received.result()
            if message.get("type") == "layer.reset":  # events may be lost: read again
                return
            if matches(message.get("event") or {}):
                return

    def close(self) -> None:
        """Stop receiving and leave the group, after the answer has gone: leaving costs a
        Redis round trip the client need not wait for."""
        if self.receiving is not None:
            self.receiving.cancel()
        if self.layer is not None:
            _in_background(self._leave())

    async def _leave(self) -> None:
        if self.receiving is not None:
            with contextlib.suppress(BaseException):
                await self.receiving
        with contextlib.suppress(Exception):
            await asyncio.wait_for(
                self.layer.group_discard(self.group, self.channel), LAYER_TIMEOUT_SECONDS
            )


def _give_back_connections() -> None:
    """What the end of a request does (Django's `close_old_connections`), for a request
    that goes on waiting; a connection inside a transaction (a test's) is kept."""
    for connection in connections.all(initialized_only=True):
        if not connection.in_atomic_block:
            connection.close_if_unusable_or_obsolete()


_leaving: set[asyncio.Task[None]] = set()  # referenced until done, so not collected early


def _in_background(coroutine: Coroutine[Any, Any, None]) -> None:
    task = asyncio.ensure_future(coroutine)
    _leaving.add(task)
    task.add_done_callback(_leaving.discard)


@contextlib.asynccontextmanager
async def listening(session_id: int) -> AsyncIterator[Listener]:
    """Wake-ups for the calls of one session while inside; a clock when there is no
    channel layer to join."""
    listener = await _join(session_group(session_id))
    try:
        yield listener
    finally:
        listener.close()


async def _join(group: str) -> Listener:
    layer = get_channel_layer()
    if layer is None:
        return Listener(None, "", group)
    try:
        channel = await asyncio.wait_for(layer.new_channel(), LAYER_TIMEOUT_SECONDS)
        await asyncio.wait_for(layer.group_add(group, channel), LAYER_TIMEOUT_SECONDS)
    except Exception as exc:
        logger.debug("?wait: no channel layer (%r); reading once a second", exc)
        return Listener(None, "", group)
    return Listener(layer, channel, group)
