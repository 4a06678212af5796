"""A channel that is down never delays a tool call or a decision (issue #25): with the
real worker, a webhook whose server accepts and never answers holds its deliveries,
while the call waiting for a person is decided and runs; and deliveries have a queue of
their own, so however many hang, they never take the slot a tool call runs in."""

from __future__ import annotations

import time
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.helpers import Worker
from tests.integration.helpers import Api, call, start_session, wait_final
from tests.integration.notify_servers import Hanging
from tools_app.models import Channel, Delivery, DeliveryAttempt
from tools_app.services.queueing import notify_queue

pytestmark = [pytest.mark.django_db(transaction=True, serialized_rollback=True), pytest.mark.worker]


@pytest.fixture
def hanging(stack: Worker) -> Iterator[Hanging]:
    server = Hanging()
    yield server
    server.close()  # the deliveries in flight end (a lost connection: retrying) …
    stack.wait_idle()  # … before the database is emptied under them


def until(condition: Callable[[], bool], what: str, timeout: float = 30) -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        assert time.monotonic() < deadline, f"never: {what}"
        time.sleep(0.05)


def test_a_hanging_channel_delays_neither_the_decision_nor_the_call(
    hanging: Hanging, alice: Api, rita: Api, workspace: Path
) -> None:
    Channel.objects.create(name="down", kind="webhook", url=f"{hanging.url}/hook", secret="k")
    session = start_session(alice, workspace)
    waiting = call(alice, session, "write_file", wait=0.01, path=".env", content="A=1\n")
    assert waiting["status"] == "awaiting_approval"
    until(lambda: len(hanging.held) == 1, "the worker sends the waiting call's message")

    decided = rita.post(f"/tool-calls/{waiting['id']}/decision", {"decision": "approve"})
    assert decided.status_code == 200
    assert wait_final(alice, waiting["id"])["status"] == "succeeded"
    assert (Path(session["workspace"]) / ".env").read_text() == "A=1\n"

    until(lambda: len(hanging.held) == 3, "the worker sends the decision's and run's too")
    # the call ran while the channel still had not answered a single message
    deliveries = Delivery.objects.filter(channel__name="down")
    assert sorted(deliveries.values_list("event", flat=True)) == [
        "tool_call.decided", "tool_call.finished", "tool_call.waiting",
    ]  # fmt: skip
    assert set(deliveries.values_list("state", flat=True)) <= {"pending", "retrying"}
    assert not DeliveryAttempt.objects.filter(ok=True).exists()


@pytest.fixture
def one_slot(stack: Worker, settings: Any, tmp_path: Path) -> Iterator[Worker]:
    """`up`'s layout with a single tool slot: a worker of concurrency 1 on queues of its
    own that does not consume the notify queue; the session's worker (the stack) takes
    the notifications, as `up`'s notify worker does."""
    name = uuid.uuid4().hex[:8]
    queue, host_queue = f"agentweb-one-slot-{name}", f"host.one-slot-{name}"
    notify = notify_queue()  # the stack's, which it consumes
    settings.AGENTWEB_NOTIFY_QUEUE, settings.CELERY_TASK_DEFAULT_QUEUE = notify, queue
    env = {**stack.env, "AGENTWEB_QUEUE": queue, "AGENTWEB_WORKER_QUEUE": host_queue}
    env["AGENTWEB_NOTIFY_QUEUE"] = notify  # where it sends the deliveries it makes
    worker = Worker(env, f"{queue},{host_queue}", tmp_path / "one-slot.log", concurrency=1)
    worker.start()
    yield worker
    worker.stop()


def test_hanging_channels_never_take_the_slot_a_decided_call_runs_in(
    hanging: Hanging, one_slot: Worker, alice: Api, rita: Api, workspace: Path
) -> None:
    for number in range(4):
        Channel.objects.create(
            name=f"down-{number}", kind="webhook", url=f"{hanging.url}/hook", secret="k"
        )
    session = start_session(alice, workspace)
    waiting = [
        call(alice, session, "write_file", wait=0.01, path=f".env.{number}", content="A=1\n")
        for number in range(3)
    ]
    assert [c["status"] for c in waiting] == ["awaiting_approval"] * 3
    until(lambda: len(hanging.held) >= 4, "the notify worker sends to the hanging channels")

    for each in waiting:
        decided = rita.post(f"/tool-calls/{each['id']}/decision", {"decision": "approve"})
        assert decided.status_code == 200
    assert [wait_final(alice, c["id"])["status"] for c in waiting] == ["succeeded"] * 3

    # all three ran on the one slot, which never took a delivery (on the main queue it
    # would hold each for its 10 s timeout), while not a single message had been answered
    assert "deliver_notification" not in one_slot.log.read_text()
    assert "execute_tool_call" in one_slot.log.read_text()
    deliveries = Delivery.objects.filter(channel__name__startswith="down-")
    assert deliveries.filter(event="tool_call.waiting").count() == 12
    assert set(deliveries.values_list("state", flat=True)) <= {"pending", "retrying"}
    assert not DeliveryAttempt.objects.filter(ok=True).exists()
