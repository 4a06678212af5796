"""A thread that hands its sends off (a hook's judging thread) returns before they are
done, and still hears a failure; the others wait, as before (`live/publisher.py`)."""

from __future__ import annotations

import asyncio
import threading
import time
from collections.abc import Callable, Coroutine
from typing import Any

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
