"""A thread that hands its sends off (a hook's judging thread) returns before they are
done, and still hears a failure; the others wait, as before (`live/publisher.py`)."""

from __future__ import annotations

import asyncio
import threading
import time
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


def test_a_handing_off_thread_returns_while_its_send_is_on_its_way() -> None:
    started, release = threading.Event(), threading.Event()
    failures: list[BaseException] = []

    def judge() -> None:
        publisher.hand_off_here()
        publisher.run(blocked_send(started, release), failed=failures.append)

    thread = threading.Thread(target=judge)
    thread.start()
    thread.join(10)
    assert not thread.is_alive(), "the judging thread waited for its send"
    assert started.wait(10) and failures == []
    release.set()
    assert until(lambda: len(failures) == 1)
    assert str(failures[0]) == "the layer is gone"


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


@pytest.fixture
def fresh(monkeypatch: pytest.MonkeyPatch) -> None:
    """This process as if it had published nothing yet."""
    state = {"pid": None, "loop": None, "thread": None, "send_lock": None}
    monkeypatch.setattr(publisher, "_state", state)


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
