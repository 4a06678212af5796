"""The hook URLs are served by their own lean Django handler (`api/hook_handler.py`):
the same answers, without the site's middleware chain and its thread hops."""

from __future__ import annotations

import asyncio
import gc
import json
import time
from typing import Any

import httpx
import pytest
from asgiref.sync import async_to_sync, sync_to_async
from asgiref.testing import ApplicationCommunicator
from django.contrib.auth.models import User
from django.db import connection
from django.test.utils import CaptureQueriesContext

from agentweb.asgi import application
from tools_app import services
from tools_app.models import ToolCall
from tools_app.selectors import records

pytestmark = [pytest.mark.django_db, pytest.mark.usefixtures("connections_kept")]

EVENT = {
    "session_id": "s-1", "cwd": "/home/alice/project", "hook_event_name": "PreToolUse",
    "tool_name": "Bash", "tool_input": {"command": "ls"}, "tool_use_id": "toolu_1",
}  # fmt: skip


async def _send(
    method: str, path: str, token: str, body: Any = None, host: str = "127.0.0.1",
    origin: str = "",
) -> httpx.Response:  # fmt: skip
    transport = httpx.ASGITransport(app=application)
    async with httpx.AsyncClient(transport=transport, base_url=f"http://{host}") as client:
        headers = {"Authorization": f"Bearer {token}", **({"Origin": origin} if origin else {})}
        content = None if body is None else json.dumps(body)
        return await client.request(method, path, headers=headers, content=content)


def send(method: str, path: str, token: str, body: Any = None) -> httpx.Response:
    # async_to_sync from the test's thread: the view's database work runs back in this
    # thread, in the test's transaction.
    return async_to_sync(_send)(method, path, token, body)


@pytest.fixture
def token(creator: User) -> str:
    return services.api_token_create(user=creator, scope="agent")


def test_a_hook_event_through_daphnes_application_is_judged_by_the_lean_handler(
    token: str,
) -> None:
    answer = send("POST", "/api/hooks/claude-code", token, EVENT)
    assert answer.status_code == 200
    assert answer.json()["hookSpecificOutput"]["permissionDecision"] == "allow"
    assert ToolCall.objects.get(tool_use_id="toolu_1").status == "running"
    # The site's chain did not run: none of the headers its middleware adds.
    assert "x-frame-options" not in answer.headers
    page = send("GET", "/api/sessions/", token)
    assert page.headers["x-frame-options"] == "DENY"


def test_the_lean_handler_still_refuses_what_the_view_refuses(token: str) -> None:
    assert send("GET", "/api/hooks/claude-code", token).status_code == 405
    refused = send("POST", "/api/hooks/claude-code", "aw_not-a-token", EVENT)
    assert "not valid" in refused.json()["hookSpecificOutput"]["permissionDecisionReason"]
    missing = send("POST", "/api/hooks/nowhere", token, EVENT)
    assert missing.status_code == 404
    assert not ToolCall.objects.exists()


@pytest.mark.parametrize(
    ("host", "origin", "expected"),
    [
        ("agentweb.evil.example", "", "The Host header 'agentweb.evil.example' is not a name"),
        ("agentweb.evil.example", "http://agentweb.evil.example", "AGENTWEB_BASE_URL"),
        ("127.0.0.1", "http://evil.example", "The Origin 'http://evil.example' is not this"),
        ("127.0.0.1", "null", "DJANGO_CSRF_TRUSTED_ORIGINS"),
    ],
)
def test_a_hook_from_a_foreign_host_or_browser_origin_is_denied_and_nothing_is_stored(
    token: str, host: str, origin: str, expected: str
) -> None:
    """A hook answers 200 with a decision (anything else lets the tool run): a deny."""
    answer = async_to_sync(_send)(
        "POST", "/api/hooks/claude-code", token, EVENT, host=host, origin=origin
    )
    assert answer.status_code == 200
    decision = answer.json()["hookSpecificOutput"]
    assert decision["permissionDecision"] == "deny"
    assert decision["permissionDecisionReason"].startswith("agentweb refused the hook: ")
    assert expected in decision["permissionDecisionReason"]
    assert not ToolCall.objects.exists()


def test_a_hook_with_the_sites_own_origin_is_judged(token: str) -> None:
    answer = async_to_sync(_send)(
        "POST", "/api/hooks/claude-code", token, EVENT, origin="http://127.0.0.1"
    )
    assert answer.json()["hookSpecificOutput"]["permissionDecision"] == "allow"


@pytest.mark.postgres
@pytest.mark.django_db(transaction=True, serialized_rollback=True)
@pytest.mark.parametrize("durable", [False, True])
def test_an_allowed_hooks_record_waits_for_the_disks_flush_only_when_set_to(
    token: str, settings: Any, durable: bool
) -> None:
    """AGENTWEB_DURABLE_ALLOWED_CALLS (off: on PostgreSQL the record's commit does not
    wait for the write-ahead log's flush, `live/events.py`; SQLite's commits are
    `synchronous=NORMAL` either way)."""
    settings.AGENTWEB_DURABLE_ALLOWED_CALLS = durable
    with CaptureQueriesContext(connection) as queries:
        answer = send("POST", "/api/hooks/claude-code", token, EVENT)
    assert answer.json()["hookSpecificOutput"]["permissionDecision"] == "allow"
    lazy = [query for query in queries.captured_queries if "synchronous_commit" in query["sql"]]
    assert len(lazy) == (0 if durable or connection.vendor != "postgresql" else 1)
    assert ToolCall.objects.get(tool_use_id="toolu_1").status == "running"


# Committed rows: under ApplicationCommunicator the view's database work runs in Django's
# own thread for the request, on a connection of its own.
@pytest.mark.django_db(transaction=True, serialized_rollback=True)
def test_a_call_whose_agent_hangs_up_while_it_waits_leaves_the_inbox(
    token: str, settings: Any
) -> None:
    settings.AGENTWEB_HOOK_WAIT_SECONDS = 60
    event = _env_write("toolu_w")

    async def hang_up() -> None:
        hook = ApplicationCommunicator(application, _scope(token))
        await hook.send_input({"type": "http.request", "body": json.dumps(event).encode()})
        deadline = time.monotonic() + 30
        while not await sync_to_async(_waits)("toolu_w"):
            assert time.monotonic() < deadline, "the call never came to wait for a person"
            await asyncio.sleep(0.05)
        await hook.send_input({"type": "http.disconnect"})  # Claude Code stopped
        await hook.wait(timeout=10)

    async_to_sync(hang_up)()
    call = ToolCall.objects.get(tool_use_id="toolu_w")
    assert call.status == "cancelled"
    assert "the agent stopped waiting" in call.result
    assert not records.approvals_awaiting().filter(pk=call.pk).exists()
    kinds = list(call.session.events.values_list("type", flat=True))
    assert kinds[-2:] == ["tool_call.cancelled", "session.running"]  # no longer waiting


@pytest.mark.django_db(transaction=True, serialized_rollback=True)
def test_an_agent_that_hangs_up_while_its_call_is_judged_leaves_nothing_waiting(
    token: str, settings: Any
) -> None:
    """The hang-up arrives with the body, while the judging thread stores the call: the
    thread finishes, and the call it stored as waiting is abandoned as above."""
    settings.AGENTWEB_HOOK_WAIT_SECONDS = 60
    event = _env_write("toolu_j")

    async def hang_up_at_once() -> None:
        hook = ApplicationCommunicator(application, _scope(token))
        await hook.send_input({"type": "http.request", "body": json.dumps(event).encode()})
        await hook.send_input({"type": "http.disconnect"})
        await hook.wait(timeout=10)

    async_to_sync(hang_up_at_once)()
    call = ToolCall.objects.get(tool_use_id="toolu_j")
    assert call.status == "cancelled"
    assert "the agent stopped waiting" in call.result
    assert not records.approvals_awaiting().exists()


def _env_write(tool_use_id: str) -> dict[str, Any]:
    """A write of `.env`: it waits for a person."""
    env_write = {"file_path": "/home/alice/project/.env", "content": "API_KEY=1\n"}
    return {**EVENT, "tool_name": "Write", "tool_input": env_write, "tool_use_id": tool_use_id}


def _waits(tool_use_id: str) -> bool:
    return ToolCall.objects.filter(tool_use_id=tool_use_id, status="awaiting_approval").exists()


def _scope(token: str) -> dict[str, Any]:
    return {
        "type": "http", "asgi": {"version": "3.0"}, "http_version": "1.1", "method": "POST",
        "scheme": "http", "path": "/api/hooks/claude-code", "raw_path": b"/api/hooks/claude-code",
        "query_string": b"", "root_path": "", "client": ("127.0.0.1", 50000),
        "server": ("127.0.0.1", 8000),
        "headers": [
            (b"host", b"127.0.0.1"), (b"content-type", b"application/json"),
            (b"authorization", f"Bearer {token}".encode()),
        ],
    }  # fmt: skip


async def _bare_hook(token: str, use: str) -> list[dict[str, Any]]:
    """One hook through the ASGI application with nothing else around it (no HTTP
    client): the messages it sent; the client hangs up once the answer is whole."""
    body = json.dumps(EVENT | {"tool_use_id": use}).encode()
    headers = [(b"host", b"127.0.0.1"), (b"authorization", f"Bearer {token}".encode())]
    scope = {"type": "http", "asgi": {"version": "3.0"}, "http_version": "1.1",
             "method": "POST", "scheme": "http", "path": "/api/hooks/claude-code",
             "raw_path": b"/api/hooks/claude-code", "query_string": b"", "root_path": "",
             "headers": headers, "client": ("127.0.0.1", 5000),
             "server": ("127.0.0.1", 80)}  # fmt: skip
    sent: list[dict[str, Any]] = []
    answered = asyncio.Event()
    requests = [{"type": "http.request", "body": body, "more_body": False}]

    async def receive() -> dict[str, Any]:
        if requests:
            return requests.pop()
        await answered.wait()
        return {"type": "http.disconnect"}

    async def send(message: dict[str, Any]) -> None:
        sent.append(message)
        if message["type"] == "http.response.body" and not message.get("more_body"):
            answered.set()

    await application(scope, receive, send)
    return sent


def test_an_answered_hook_leaves_no_cycles_for_the_garbage_collector(token: str) -> None:
    """Its request, response and tasks are freed as soon as it is answered: before, the
    client's hang-up raised into the handler tied 80 objects a hook into cycles, and the
    collector's full passes through daphne's heap (120-190 ms) set the p99 under load."""
    for n in range(3):  # warm: the first hooks make what later ones reuse
        async_to_sync(_bare_hook)(token, f"warm-{n}")
    gc.collect()
    gc.set_debug(gc.DEBUG_SAVEALL)
    try:
        for n in range(20):
            sent = async_to_sync(_bare_hook)(token, f"t{n}")
            assert b'"allow"' in sent[-1]["body"]
        gc.collect()
        cyclic = len(gc.garbage)
    finally:
        gc.set_debug(0)
        gc.garbage.clear()
    assert cyclic / 20 < 20, f"{cyclic / 20:.0f} objects a hook were left in cycles"
