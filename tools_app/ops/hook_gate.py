"""How many hooks of a web process judge and store at once, and which goes first.

At most AGENTWEB_HOOKS_AT_ONCE hooks judge and store at once; the others wait their turn
on the event loop, holding no thread and no connection. So the process holds a bounded
number of database connections however many agents send at once (one per hook at work,
on SQLite too, where there is no pool), and a burst queues here instead of in SQLite's
busy loop or the pool's queue.

A hook whose agent waits to act (a `PreToolUse`: its answer lets the tool run or not)
takes a free turn before a report of what a tool did (a `PostToolUse`, answered `{}`
whatever it says). Both keep their order among their own kind. Under a burst, a report
queued ahead of a decision no longer adds its work (a third of an allowed tool use's:
BENCHMARKS.md §16) to the decision's wait. A report cannot starve: its agent sends
nothing else until it is answered, so only the other agents' decisions, arriving without
pause, keep it waiting, and a gate busy without pause is already past what it can do.
"""

from __future__ import annotations

import asyncio
import contextlib
import weakref
from collections import deque
from collections.abc import AsyncIterator

# Per event loop (daphne has one; a test's async_to_sync makes its own).
_GATES: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, HookGate] = weakref.WeakKeyDictionary()


class HookGate:
    """`size` turns; a waiting decision is handed the next free one before any report.
    A turn freed is handed straight to the waiter it goes to, so none is taken past one
    waiting."""

    def __init__(self, size: int) -> None:
        self._free = size
        self._decisions: deque[asyncio.Future[None]] = deque()
        self._reports: deque[asyncio.Future[None]] = deque()

    @contextlib.asynccontextmanager
    async def turn(self, *, report: bool) -> AsyncIterator[None]:
        await self._take(self._reports if report else self._decisions)
        try:
            yield
        finally:
            self._hand_on()

    async def _take(self, lane: deque[asyncio.Future[None]]) -> None:
        if self._free:  # none waits: a freed turn goes to a waiter when there is one
            self._free -= 1
            return
        handed: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        lane.append(handed)
        try:
            await handed
        except asyncio.CancelledError:
            if handed.done() and not handed.cancelled():
                self._hand_on()  # cancelled once handed its turn: the turn goes on
            else:
                lane.remove(handed)
            raise

    def _hand_on(self) -> None:
        for lane in (self._decisions, self._reports):
            while lane:
                waiter = lane.popleft()
                if not waiter.done():
                    waiter.set_result(None)
                    return
        self._free += 1


def hook_gate(size: int) -> HookGate:
    """This event loop's gate, made with `size` turns the first time."""
    loop = asyncio.get_running_loop()
    gate = _GATES.get(loop)
    if gate is None:
        gate = _GATES[loop] = HookGate(size)
    return gate
