"""One channel per process for every held wait, and one receive that hands out events.

A wait used to join its session's group on a channel of its own: with the pub/sub layer
that is a Redis subscription and a pending receive per wait (5,000 held hooks, 5,050
channels on one pub/sub connection). Now each process (each event loop) has one channel,
the hub's, in the groups of the sessions that have a wait; a wait registers a mailbox for
its session, and the hub's one receive loop puts each event in the mailboxes of its
session. The guarantees of before hold:

* **Joined before the first read.** `join` returns once the hub's channel is in the
  session's group (confirmed by Redis: `layer.py`); the first wait of a session
  subscribes, the next ones find it subscribed. An event published after that is in the
  mailbox, even when it comes between the wait's read and its sleep.
* **A reset reaches every wait.** `layer.reset` (the pub/sub connection came back, events
  may be lost) goes into every mailbox: every wait reads again.
* **A failed receive is said.** Every mailbox gets `FAILED` (those waits read on the clock
  from then on), and the next join starts over with a new channel.

The database stays the truth, and a call's wait is also re-read when an event was lost
without a reset: once a minute the hub reads the status of every call it watches in one
query per thousand, and tells (`RECHECK`) only the waits whose call moved. One read a
minute per wait was 83 reads and thread hops a second at 5,000 held, a sixth of the
process's CPU while it answered other hooks (BENCHMARKS.md §14).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import weakref
from collections.abc import Coroutine
from typing import Any

from asgiref.sync import sync_to_async
from django.db import close_old_connections

from tools_app.live.events import SESSION_EVENT, SESSION_EVENTS, session_group
from tools_app.models import ToolCall

logger = logging.getLogger(__name__)

FAILED = {"type": "hub.failed"}  # the hub's receive failed: no more events will come
RECHECK = {"type": "hub.recheck"}  # the watched call moved without an event: read it
RESET = "layer.reset"
RECHECK_SECONDS = 60.0  # how often the watched calls' statuses are read, all at once
RECHECK_CHUNK = 1000  # ids per query
Mailbox = asyncio.Queue[dict[str, Any]]


class Hub:
    """The waits of one event loop on one channel layer."""

    def __init__(self, layer: Any) -> None:
        self.layer = layer
        self.channel: str | None = None
        self.mailboxes: dict[int, set[Mailbox]] = {}
        self.joined: set[int] = set()  # sessions whose group has the hub's channel
        self.locks: dict[int, asyncio.Lock] = {}  # one add or discard of a group at a time
        self.starting = asyncio.Lock()
        self.receiving: asyncio.Task[None] | None = None
        self.watched: dict[Mailbox, tuple[int, str]] = {}  # (call, status last read)
        self.rechecking: asyncio.Task[None] | None = None

    async def join(self, session_id: int) -> Mailbox:
        """A mailbox for the session's events, once they are sure to reach it."""
        mailbox: Mailbox = asyncio.Queue()
        self.mailboxes.setdefault(session_id, set()).add(mailbox)
        try:
            channel = await self._channel()
            async with self._lock(session_id):
                if session_id not in self.joined:
                    await self.layer.group_add(session_group(session_id), channel)
                    self.joined.add(session_id)
        except BaseException:
            self.leave(session_id, mailbox)
            raise
        return mailbox

    def watch(self, mailbox: Mailbox, call_id: int, status: str) -> None:
        """The wait of `mailbox` last read its call with `status`: tell it if that changes."""
        self.watched[mailbox] = (call_id, status)
        if self.rechecking is None or self.rechecking.done():
            self.rechecking = asyncio.ensure_future(self._recheck_forever())

    def leave(self, session_id: int, mailbox: Mailbox) -> None:
        """Forget the mailbox; the session's group is left (in the background: the
        answer need not wait for Redis) once no wait of the session is left."""
        self.watched.pop(mailbox, None)
        waiting = self.mailboxes.get(session_id)
        if waiting is None:
            return
        waiting.discard(mailbox)
        if not waiting:
            del self.mailboxes[session_id]
            _in_background(self._discard(session_id))

    async def _discard(self, session_id: int) -> None:
        async with self._lock(session_id):
            if session_id in self.joined and session_id not in self.mailboxes:
                self.joined.discard(session_id)
                with contextlib.suppress(Exception):
                    await self.layer.group_discard(session_group(session_id), self.channel)
        if session_id not in self.mailboxes and not self._lock(session_id).locked():
            self.locks.pop(session_id, None)

    def _lock(self, session_id: int) -> asyncio.Lock:
        return self.locks.setdefault(session_id, asyncio.Lock())

    async def _channel(self) -> str:
        async with self.starting:
            if self.channel is None:
                self.channel = await self.layer.new_channel()
            if self.receiving is None or self.receiving.done():
                self.receiving = asyncio.ensure_future(self._receive(self.channel))
            return self.channel

    async def _receive(self, channel: str) -> None:
        while True:
            try:
                message = await self.layer.receive(channel)
            except asyncio.CancelledError:
                raise
            except Exception as exc:
                logger.debug("wait hub: channel layer failed (%r)", exc)
                self._fail()
                return
            self.dispatch(message)

    def dispatch(self, message: dict[str, Any]) -> None:
        """Into the mailboxes of the event's session; a reset into every mailbox. A batch
        (`events.publish_all`) is taken apart: a wait reads one event a message."""
        if message.get("type") == SESSION_EVENTS:
            for event in message.get("events") or ():
                self.dispatch({"type": SESSION_EVENT, "event": event})
            return
        if message.get("type") == RESET:
            mailboxes = [box for boxes in self.mailboxes.values() for box in boxes]
        else:
            session = (message.get("event") or {}).get("session")
            mailboxes = list(self.mailboxes.get(session, ()))  # type: ignore[arg-type]
        for mailbox in mailboxes:
            mailbox.put_nowait(message)

    def _fail(self) -> None:
        """Tell every wait; the next join makes a new channel and joins its groups."""
        for boxes in self.mailboxes.values():
            for mailbox in boxes:
                mailbox.put_nowait(FAILED)
        self.mailboxes.clear()
        self.watched.clear()
        self.joined.clear()
        self.locks.clear()
        self.channel = None

    async def _recheck_forever(self) -> None:
        while self.watched:
            await asyncio.sleep(RECHECK_SECONDS)
            try:
                await self.recheck()
            except Exception as exc:  # the next round tries again; events still wake
                logger.warning("wait hub: re-reading the held calls failed (%r)", exc)

    async def recheck(self) -> None:
        """One read of every watched call; a `RECHECK` for each wait whose call moved."""
        watched = list(self.watched.items())
        ids = sorted({call_id for _, (call_id, _) in watched})
        statuses = await sync_to_async(_statuses, thread_sensitive=False)(ids)
        for mailbox, (call_id, status) in watched:
            if statuses.get(call_id) != status and self.watched.get(mailbox):
                mailbox.put_nowait(RECHECK)

    def subscriptions(self) -> int:
        """The groups this hub is in (each a Redis subscription on the pub/sub layer)."""
        return len(self.joined)


def _statuses(ids: list[int]) -> dict[int, str]:
    """The status of each call, a thousand ids a query; the connection given back."""
    try:
        found: dict[int, str] = {}
        for start in range(0, len(ids), RECHECK_CHUNK):
            chunk = ids[start : start + RECHECK_CHUNK]
            found.update(ToolCall.objects.filter(pk__in=chunk).values_list("pk", "status"))
        return found
    finally:
        close_old_connections()


_hubs: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, Hub] = weakref.WeakKeyDictionary()


def hub_for(layer: Any) -> Hub:
    """The running loop's hub on `layer` (a new one when the layer was replaced)."""
    loop = asyncio.get_running_loop()
    hub = _hubs.get(loop)
    if hub is None or hub.layer is not layer:
        for task in (hub.receiving, hub.rechecking) if hub is not None else ():
            if task is not None:
                task.cancel()
        hub = _hubs[loop] = Hub(layer)
    return hub


_background: set[asyncio.Task[None]] = set()  # referenced until done, so not collected early


def _in_background(coroutine: Coroutine[Any, Any, None]) -> None:
    task = asyncio.ensure_future(coroutine)
    _background.add(task)
    task.add_done_callback(_background.discard)
