"""`?wait` wakes on the call's final event, reads the database after each wake-up, and
without a channel layer reads it about once a second: never a fast polling loop.

The events that wake a wait come from a real worker in another process (`worker`); the
reads of a call that waits for a person need no task to run (`eager`)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from channels.layers import channel_layers
from django.db import connection
from django.test.utils import CaptureQueriesContext

from tests.integration.helpers import Api, call, start_session
from tools_app.api import routes
from tools_app.live import waiting

pytestmark = [
    pytest.mark.django_db(transaction=True, serialized_rollback=True),
    pytest.mark.eager,
]


@pytest.fixture
def reads(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """Every database read of a call that `?wait` makes, by call id."""
    seen: list[int] = []
    current = routes._current

    def counted(call_id: int) -> dict[str, Any]:
        seen.append(call_id)
        return current(call_id)

    monkeypatch.setattr(routes, "_current", counted)
    return seen


@pytest.fixture
def no_layer(settings: Any) -> Iterator[None]:
    """This process has no channel layer (the worker still publishes to Redis)."""
    settings.CHANNEL_LAYERS = {}
    channel_layers.backends = {}
    yield
    channel_layers.backends = {}


@pytest.fixture
def unreachable_layer(settings: Any) -> Iterator[None]:
    """This process's channel layer points at a Redis that does not answer."""
    settings.CHANNEL_LAYERS = {
        "default": {
            "BACKEND": "channels_redis.core.RedisChannelLayer",
            "CONFIG": {"hosts": ["redis://127.0.0.1:1/0"]},
        }
    }
    channel_layers.backends = {}
    yield
    channel_layers.backends = {}


def awaiting_call(alice: Api, session: dict[str, Any]) -> dict[str, Any]:
    waiting_call = call(alice, session, "write_file", wait=0.01, path=".env", content="A=1\n")
    assert waiting_call["status"] == "awaiting_approval"
    return waiting_call


@pytest.mark.worker
def test_wait_answers_with_the_final_status_read_after_the_final_event(
    alice: Api, workspace: Path, reads: list[int]
) -> None:
    session = start_session(alice, workspace)
    answer = alice.post(
        f"/sessions/{session['id']}/tool-calls?wait=30",
        {"tool": "read_file", "args": {"path": "README.md"}},
    ).json()
    assert answer["status"] == "succeeded"
    assert answer["result"].startswith("1 | # Title")
    # The first read, then one per final event (and one a second if the worker is slow):
    # not the dozens of a 5-50 ms polling loop.
    assert reads.count(answer["id"]) <= 4


def test_a_call_awaiting_a_person_is_read_about_once_a_second_while_waiting(
    alice: Api, workspace: Path, reads: list[int]
) -> None:
    session = start_session(alice, workspace)
    waiting_call = awaiting_call(alice, session)
    reads.clear()
    with CaptureQueriesContext(connection) as queries:
        answer = alice.get(f"/tool-calls/{waiting_call['id']}?wait=2").json()
    assert answer["status"] == "awaiting_approval"
    assert 2 <= len(reads) <= 4  # at 0, 1 and 2 seconds
    assert len(queries) <= 8  # the token, the access check and those three reads


@pytest.mark.worker
def test_wait_wakes_when_a_reviewer_decides(
    alice: Api, rita: Api, workspace: Path, reads: list[int]
) -> None:
    """The decision's events (approved, then the worker's running and succeeded) end the
    wait with the final status."""
    session = start_session(alice, workspace)
    waiting_call = awaiting_call(alice, session)
    decided = rita.post(f"/tool-calls/{waiting_call['id']}/decision", {"decision": "approve"})
    assert decided.status_code == 200
    answer = alice.get(f"/tool-calls/{waiting_call['id']}?wait=30").json()
    assert answer["status"] == "succeeded"
    assert (Path(session["workspace"]) / ".env").read_text() == "A=1\n"


@pytest.mark.worker
@pytest.mark.usefixtures("no_layer")
def test_without_a_channel_layer_wait_reads_once_a_second(
    alice: Api, workspace: Path, reads: list[int]
) -> None:
    session = start_session(alice, workspace)
    answer = call(alice, session, "read_file", wait=30, path="README.md")
    assert answer["status"] == "succeeded"
    waiting_call = awaiting_call(alice, session)
    reads.clear()
    assert alice.get(f"/tool-calls/{waiting_call['id']}?wait=2").json()["status"] == (
        "awaiting_approval"
    )
    assert 2 <= len(reads) <= 4


@pytest.mark.worker
@pytest.mark.usefixtures("unreachable_layer")
def test_with_redis_unreachable_wait_still_answers(
    alice: Api, workspace: Path, reads: list[int]
) -> None:
    session = start_session(alice, workspace)
    waiting_call = awaiting_call(alice, session)
    reads.clear()
    assert alice.get(f"/tool-calls/{waiting_call['id']}?wait=2").json()["status"] == (
        "awaiting_approval"
    )
    assert 2 <= len(reads) <= 4


def test_no_wait_is_one_read(alice: Api, workspace: Path, reads: list[int]) -> None:
    session = start_session(alice, workspace)
    waiting_call = awaiting_call(alice, session)
    reads.clear()
    assert alice.get(f"/tool-calls/{waiting_call['id']}").json()["status"] == "awaiting_approval"
    assert reads == [waiting_call["id"]]
    assert waiting.CHECK_EVERY_SECONDS >= 1.0  # the fallback is slow by design


def test_the_layers_redis_reads_outlast_its_blocking_receive() -> None:
    """channels_redis blocks 5 s in BZPOPMIN; a socket timeout at or under that closed
    every websocket (and ended every `?wait` receive) after 5 quiet seconds."""
    from channels_redis.core import RedisChannelLayer

    from agentweb.settings import channel_layer_host

    layer = RedisChannelLayer(hosts=[channel_layer_host("redis://127.0.0.1:6379/0")])
    assert channel_layer_host("redis://127.0.0.1:6379/0")["socket_timeout"] > layer.brpop_timeout
