"""The hook URLs are served by their own lean Django handler (`api/hook_handler.py`):
the same answers, without the site's middleware chain and its thread hops."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import httpx
import pytest
from asgiref.sync import async_to_sync
from django.contrib.auth.models import User
from django.core.signals import request_finished, request_started
from django.db import close_old_connections

from agentweb.asgi import application
from tools_app import services
from tools_app.models import ToolCall

pytestmark = pytest.mark.django_db

EVENT = {
    "session_id": "s-1", "cwd": "/home/alice/project", "hook_event_name": "PreToolUse",
    "tool_name": "Bash", "tool_input": {"command": "ls"}, "tool_use_id": "toolu_1",
}  # fmt: skip


async def _send(method: str, path: str, token: str, body: Any = None) -> httpx.Response:
    transport = httpx.ASGITransport(app=application)
    async with httpx.AsyncClient(transport=transport, base_url="http://127.0.0.1") as client:
        headers = {"Authorization": f"Bearer {token}"}
        content = None if body is None else json.dumps(body)
        return await client.request(method, path, headers=headers, content=content)


def send(method: str, path: str, token: str, body: Any = None) -> httpx.Response:
    # async_to_sync from the test's thread: the view's database work runs back in this
    # thread, in the test's transaction.
    return async_to_sync(_send)(method, path, token, body)


@pytest.fixture(autouse=True)
def connections_kept() -> Iterator[None]:
    """As Django's test client does: the handler's request signals must not close the
    test's database connection (its transaction holds the test's rows)."""
    request_started.disconnect(close_old_connections)
    request_finished.disconnect(close_old_connections)
    yield
    request_started.connect(close_old_connections)
    request_finished.connect(close_old_connections)


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
    assert "set-cookie" not in answer.headers
    page = send("GET", "/api/sessions/", token)
    assert page.headers["x-frame-options"] == "DENY"


def test_the_lean_handler_still_refuses_what_the_view_refuses(token: str) -> None:
    assert send("GET", "/api/hooks/claude-code", token).status_code == 405
    refused = send("POST", "/api/hooks/claude-code", "aw_not-a-token", EVENT)
    assert "not valid" in refused.json()["hookSpecificOutput"]["permissionDecisionReason"]
    missing = send("POST", "/api/hooks/nowhere", token, EVENT)
    assert missing.status_code == 404
    assert not ToolCall.objects.exists()
