"""A thread that defers its sends (a hook's judging thread) returns without sending or
waiting; its owner sends the line later, in call order, and the thread still hears a
failure. The others wait, as before (`live/publisher.py`)."""

from __future__ import annotations

import asyncio
import threading
import time
from collections import deque
from collections.abc import Callable, Coroutine
from typing import Any

import pytest

from tools_app.live import publisher


def blocked_send(started: threading.Event, release: threading.Event) -> Coroutine[Any, Any, None]:
    async def send() -> None:
        started.set()
        await asyncio.get_running_loop().run_in_executor(None, release.wait, 30)
        raise RuntimeError("the layer is gone")

    return send()


def until(condition: Callable[[], bool], seconds: float = 10) -> bool:
    deadline = time.monotonic() + seconds
    while not condition() and time.monotonic() < deadline:
        time.sleep(0.01)
    return bool(condition())


def in_a_deferring_thread(work: Callable[[], None]) -> None:
    def deferring() -> None:
        publisher.defer_here()
        work()

    thread = threading.Thread(target=deferring)
    thread.start()
    thread.join(10)
    assert not thread.is_alive(), "the deferring thread waited for its send"


@pytest.fixture
def fresh(monkeypatch: pytest.MonkeyPatch) -> None:
    """This process as if it had published nothing yet."""
    state = {"pid": None, "loop": None, "thread": None, "send_lock": None}
    monkeypatch.setattr(publisher, "_state", state)
    monkeypatch.setattr(publisher, "_deferred", deque())
    monkeypatch.setattr(publisher, "_on_their_way", {"count": 0})


@pytest.mark.usefixtures("fresh")
def test_a_deferring_thread_sends_nothing_until_its_line_is_sent_then_hears_the_failure() -> None:
    started, release = threading.Event(), threading.Event()
    failures: list[BaseException] = []
    in_a_deferring_thread(
        lambda: publisher.run(blocked_send(started, release), failed=failures.append)
    )
    assert not started.wait(0.2), "a deferred send went out before its line was sent"
    publisher.send_deferred()  # from here, a thread that is not the loop's: not waited for
    assert started.wait(10) and failures == []
    release.set()
    assert until(lambda: len(failures) == 1)
    assert str(failures[0]) == "the layer is gone"
    assert until(lambda: publisher._on_their_way["count"] == 0)


def test_another_thread_waits_and_hears_the_failure_itself() -> None:
    started, release = threading.Event(), threading.Event()
    failures: list[BaseException] = []
    done = threading.Event()

    def worker() -> None:
        publisher.run(blocked_send(started, release), failed=failures.append)
        done.set()

    threading.Thread(target=worker, daemon=True).start()
    assert started.wait(10)
    assert not done.is_set(), "it returned before its send was done"
    release.set()
    assert done.wait(10) and [str(f) for f in failures] == ["the layer is gone"]


class ServerLoop:
    """A loop running on a thread of its own, as daphne's, which adopts the publishing."""

    def __init__(self) -> None:
        self.loop = asyncio.new_event_loop()
        self.thread = threading.Thread(target=self.loop.run_forever, daemon=True)
        self.thread.start()
        asyncio.run_coroutine_threadsafe(self._adopt(), self.loop).result(10)

    async def _adopt(self) -> None:
        publisher.adopt_running_loop()

    def stop(self) -> None:
        self.loop.call_soon_threadsafe(self.loop.stop)
        self.thread.join(10)
        self.loop.close()


def where_sent(seen: list[tuple[asyncio.AbstractEventLoop, str]]) -> Coroutine[Any, Any, None]:
    async def send() -> None:
        seen.append((asyncio.get_running_loop(), threading.current_thread().name))

    return send()


@pytest.mark.usefixtures("fresh")
def test_the_servers_loop_publishes_and_a_thread_of_its_own_takes_over_when_it_stops() -> None:
    server = ServerLoop()
    seen: list[tuple[asyncio.AbstractEventLoop, str]] = []
    publisher.run(where_sent(seen), failed=pytest.fail)  # from this thread: waited for
    assert seen == [(server.loop, server.thread.name)]
    server.stop()
    publisher.run(where_sent(seen), failed=pytest.fail)
    assert seen[1][1] == "agentweb-publisher", seen


@pytest.mark.usefixtures("fresh")
def test_a_send_from_the_servers_own_loop_is_not_waited_for(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Waiting there would wait for itself: it goes out after, in order, even when more
    than HANDED_OFF_MAX are on their way."""
    monkeypatch.setattr(publisher, "HANDED_OFF_MAX", 0)
    server = ServerLoop()
    seen: list[tuple[asyncio.AbstractEventLoop, int]] = []

    async def send(number: int) -> None:
        seen.append((asyncio.get_running_loop(), number))

    async def on_the_loop() -> int:
        publisher.run(send(1), failed=pytest.fail)
        publisher.run(send(2), failed=pytest.fail)
        return len(seen)

    assert asyncio.run_coroutine_threadsafe(on_the_loop(), server.loop).result(10) == 0
    assert until(lambda: len(seen) == 2)
    assert seen == [(server.loop, 1), (server.loop, 2)]
    server.stop()


@pytest.mark.usefixtures("fresh")
def test_a_process_that_already_publishes_from_its_thread_keeps_it() -> None:
    seen: list[tuple[asyncio.AbstractEventLoop, str]] = []
    publisher.run(where_sent(seen), failed=pytest.fail)
    server = ServerLoop()
    publisher.run(where_sent(seen), failed=pytest.fail)
    assert [name for _, name in seen] == ["agentweb-publisher"] * 2
    server.stop()


@pytest.mark.usefixtures("fresh")
def test_several_threads_lines_go_out_in_call_order_when_the_loop_sends_them() -> None:
    server = ServerLoop()
    seen: list[tuple[asyncio.AbstractEventLoop, int]] = []

    async def send(number: int) -> None:
        seen.append((asyncio.get_running_loop(), number))

    def two_sends(first: int) -> None:
        publisher.run(send(first), failed=pytest.fail)
        publisher.run(send(first + 1), failed=pytest.fail)

    in_a_deferring_thread(lambda: two_sends(1))  # two threads, one after the other
    in_a_deferring_thread(lambda: two_sends(3))
    assert seen == []

    async def on_the_loop() -> None:
        publisher.send_deferred()

    asyncio.run_coroutine_threadsafe(on_the_loop(), server.loop).result(10)
    assert until(lambda: len(seen) == 4)
    assert seen == [(server.loop, n) for n in (1, 2, 3, 4)]
    server.stop()


@pytest.mark.usefixtures("fresh")
def test_past_the_limit_a_deferring_thread_sends_its_line_first_and_waits_for_its_own(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Redis slow or gone: the line does not grow without bound, and stays in order."""
    monkeypatch.setattr(publisher, "HANDED_OFF_MAX", 1)
    server = ServerLoop()
    seen: list[int] = []

    async def send(number: int) -> None:
        await asyncio.sleep(0.05)
        seen.append(number)

    def two_sends() -> None:
        publisher.run(send(1), failed=pytest.fail)  # deferred: one on its way
        publisher.run(send(2), failed=pytest.fail)  # the second: sent, after the first

    in_a_deferring_thread(two_sends)
    assert seen == [1, 2], "it did not wait for its own send, or the line went after it"
    assert not publisher._deferred
    server.stop()
