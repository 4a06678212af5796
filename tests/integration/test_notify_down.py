"""A channel that is down never delays a tool call or a decision (issue #25): with the
real worker, a webhook whose server accepts and never answers holds its deliveries,
while the call waiting for a person is decided and runs."""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from tests.helpers import Worker
from tests.integration.helpers import Api, call, start_session, wait_final
from tests.integration.notify_servers import Hanging
from tools_app.models import Channel, Delivery, DeliveryAttempt

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

    until(lambda: len(hanging.held) == 2, "the worker sends the decision's message too")
    # the call ran while the channel still had not answered a single message
    deliveries = Delivery.objects.filter(channel__name="down")
    assert sorted(deliveries.values_list("event", flat=True)) == [
        "tool_call.decided", "tool_call.waiting",
    ]  # fmt: skip
    assert set(deliveries.values_list("state", flat=True)) <= {"pending", "retrying"}
    assert not DeliveryAttempt.objects.filter(ok=True).exists()
