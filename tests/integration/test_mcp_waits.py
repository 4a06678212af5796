"""MCP calls held for a person wait as hooks and `?wait` do (`live/waiting.py`): woken by
the decision's event, holding no database connection while they wait.

daphne runs alone with its tasks in process (`AGENTWEB_TASKS_EAGER`: the clone, the
verdict and an approved write run there) and a pool of ONE connection. MCP calls used to
read their call every second and keep the connection between reads: with a pool of one,
every other request then waited for it. Here three MCP calls are held while the REST API
still answers through that one connection, and each held call answers once a reviewer
decides, long before its once-a-minute re-read."""

from __future__ import annotations

import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import anyio
import anyio.to_thread
import httpx
import psycopg
import pytest
from django.contrib.auth.models import User
from django.db import connection

from tests.browser.server import Daphne
from tests.integration.test_mcp import connected, facts, in_thread, start, text
from tools_app import services
from tools_app.live import hub
from tools_app.models import ToolCall

# serialized_rollback, as every transactional test here: a plain flush re-creates the
# content types, which the next serialized test then inserts again.
pytestmark = [
    pytest.mark.django_db(transaction=True, serialized_rollback=True),
    pytest.mark.postgres,
]

HELD = 3
APP = "agentweb-test-mcp-waits"  # libpq's application name: daphne's connections


@pytest.fixture(scope="module")
def web(services_env: dict[str, str], tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    if connection.vendor != "postgresql":
        pytest.skip("the connection pool is PostgreSQL's: its run of make test")
    env = services_env | {
        "AGENTWEB_TASKS_EAGER": "1",
        "AGENTWEB_DB_POOL_SIZE": "1",
        "AGENTWEB_DB_POOL_TIMEOUT": "10",
        "AGENTWEB_MCP_WAIT_SECONDS": "600",  # every answer here comes from an event
        "PGAPPNAME": APP,
    }
    daphne = Daphne(env, tmp_path_factory.mktemp("daphne-mcp-waits") / "daphne.log")
    daphne.start()
    yield daphne.url
    daphne.stop()


def held_calls(session_id: int) -> list[int]:
    """The ids of the session's calls awaiting a person, once there are HELD of them."""
    deadline = time.monotonic() + 60
    while len(found := awaiting(session_id)) < HELD:
        assert time.monotonic() < deadline, f"{len(found)} of {HELD} calls held"
        time.sleep(0.05)
    return found


def awaiting(session_id: int) -> list[int]:
    calls = ToolCall.objects.filter(session_id=session_id, status="awaiting_approval")
    return list(calls.order_by("pk").values_list("pk", flat=True))


def web_connections() -> int:
    with connection.cursor() as cursor:
        cursor.execute("SELECT count(*) FROM pg_stat_activity WHERE application_name = %s", [APP])
        return int(cursor.fetchone()[0])


@contextmanager
def calls_locked() -> Iterator[None]:
    """Every statement on the tool calls' table blocks while inside (a connection of its
    own holds an exclusive lock): a wait that reads its call would hang there, with
    its pooled connection."""
    params = connection.get_connection_params()
    with psycopg.connect(**params) as locker:
        locker.execute("LOCK TABLE tools_app_toolcall IN ACCESS EXCLUSIVE MODE")
        yield
        locker.rollback()


class Told:
    """The progress an MCP client heard; `twice` is set once every held call was told
    of its wait twice after `locked` messages (the table's lock)."""

    def __init__(self) -> None:
        self.messages: list[str] = []
        self.held: list[str] = []
        self.locked: int | None = None
        self.twice = anyio.Event()

    async def __call__(self, progress: float, total: float | None, message: str | None) -> None:
        self.messages.append(message or "")
        since = self.messages[self.locked :] if self.locked is not None else []
        if self.held and all(since.count(said) >= 2 for said in self.held):
            self.twice.set()


async def decide_when_held(web: str, rita: str, session_id: int, told: Told) -> dict[str, Any]:
    """Once the calls are held: read one through the REST API, lock the calls' table
    until each wait told its client twice, then approve one and deny two."""
    seen: dict[str, Any] = {}
    ids = await in_thread(held_calls, session_id)
    told.held = [f"call {n}: awaiting approval" for n in ids]
    headers = {"Authorization": f"Bearer {rita}"}
    async with httpx.AsyncClient(base_url=f"{web}/api", headers=headers, timeout=30) as api:
        # The pool's one connection is free while the calls wait: the API answers.
        read = await api.get(f"/tool-calls/{ids[0]}")
        seen["read"] = read.status_code, read.json().get("status")
        seen["connections"] = await in_thread(web_connections)
        with calls_locked():  # each wait tells its client twice, reading nothing
            told.locked = len(told.messages)
            await told.twice.wait()
        for call_id, decision in zip(ids, ["approve", "deny", "deny"], strict=True):
            body = {"decision": decision, "reason": f"{decision} {call_id}"}
            answer = await api.post(f"/tool-calls/{call_id}/decision", json=body)
            assert answer.status_code == 200, answer.text
    return seen


def test_held_mcp_calls_read_nothing_keep_no_connection_and_answer_a_decision(
    web: str, creator: User, reviewer: User, workspace: Path
) -> None:
    alice = services.api_token_create(user=creator, scope="agent")
    rita = services.api_token_create(user=reviewer, scope="review")
    told = Told()
    seen: dict[str, Any] = {}

    async def scenario() -> list[Any]:
        async with connected(f"{web}/mcp", alice) as client:
            session_id = await start(client, workspace)
            results: list[Any] = [None] * HELD

            async def write(n: int) -> None:
                args = {"path": ".env", "content": f"A={n}\n", "session": session_id}
                results[n] = await client.call_tool("write_file", args, progress_callback=told)

            with anyio.fail_after(hub.RECHECK_SECONDS / 2):  # answered by the events
                async with anyio.create_task_group() as group:
                    for n in range(HELD):
                        group.start_soon(write, n)
                    seen.update(await decide_when_held(web, rita, session_id, told))
            return results

    results = anyio.run(scenario)
    assert seen["read"] == (200, "awaiting_approval")
    assert seen["connections"] <= 1
    statuses = sorted(facts(result)["status"] for result in results)
    assert statuses == ["denied", "denied", "succeeded"], [text(r) for r in results]
    for result in results:
        if facts(result)["status"] == "denied":
            said = text(result)
            assert "denied by rita" in said and f"deny {facts(result)['id']}" in said
